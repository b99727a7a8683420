#!/usr/bin/env bash
# The Debian packages `npm test` uses as real peers, checked first thing: as root, the missing
# ones are installed (apt-get); otherwise the run stops at once, naming each missing package and
# the command that installs it. A test never skips for a missing peer: without this check, on a
# machine without socat, faketime and nats-server, the RTU files failed with every test skipped,
# the wall-clock test failed in 9 ms and the fleet cluster with `spawn nats-server ENOENT`
# (issue #54). `.ci/run` is `npm ci && npm test`, so CI goes through this same check.
#
# What each is for: mosquitto (+ clients) a second real broker; nats-server the clustered broker
# (three nodes, JetStream-backed MQTT: docs/fleet.md); python3-pymodbus (+ serial) the
# independent Modbus peer; mbpoll an independent Modbus client; socat the serial pty pairs;
# systemd for systemd-analyze verify and systemd-notify; openssl the test TLS certificates;
# faketime to jump the wall clock under the daemon; util-linux for unshare (a tmpfs that fills
# up); strace to see the spool's fsyncs; chromium the HMI's browser tests (driven headless by
# playwright-core); lintian and fakeroot to build and check the Debian package (npm run package).
set -euo pipefail
packages=(mosquitto mosquitto-clients nats-server python3-pymodbus python3-serial python3-serial-asyncio mbpoll socat systemd openssl faketime util-linux strace chromium lintian fakeroot)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
[ "${#missing[@]}" -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  for p in "${missing[@]}"; do echo "npm test: missing the Debian package $p" >&2; done
  echo "npm test: install them with: sudo apt-get install --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
echo "npm test: installing the peers the tests use: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
