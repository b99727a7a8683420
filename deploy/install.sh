#!/usr/bin/env bash
# Installs podwarden from this checkout under /opt/podwarden with its systemd unit.
# Run as root on the pod controller:  sudo deploy/install.sh
# Upgrades: run it again from the new checkout; the config in /etc/podwarden is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "run as root" >&2; exit 1; }
command -v node >/dev/null || { echo "node (20) is required" >&2; exit 1; }

id -u podwarden >/dev/null 2>&1 || useradd --system --home-dir /var/lib/podwarden --shell /usr/sbin/nologin podwarden
install -d -m 0755 /opt/podwarden /etc/podwarden
npm ci --no-audit --no-fund
npm run build
cp -r dist build node_modules package.json configs docs profiles /opt/podwarden/
# the HMI's page is served as it is, from the package's agent/hmi/static (agent/hmi/server.ts)
install -d -m 0755 /opt/podwarden/agent/hmi
cp -r agent/hmi/static /opt/podwarden/agent/hmi/
[ -f /etc/podwarden/pod.yaml ] || install -m 0640 -g podwarden configs/pod-template.yaml /etc/podwarden/pod.yaml
install -m 0644 deploy/podwarden.service /etc/systemd/system/podwarden.service
systemd-analyze verify /etc/systemd/system/podwarden.service
systemctl daemon-reload
echo "installed. Edit /etc/podwarden/pod.yaml, check it, then start:"
echo "  node /opt/podwarden/dist/cli/podwarden.js check-config -c /etc/podwarden/pod.yaml"
echo "  systemctl enable --now podwarden && journalctl -u podwarden -f -o cat | npx pino-pretty"
