#!/usr/bin/env bash
# `npm run package`: podwarden as a Debian package, built from this checkout's build (issue #51
# item 1), and with --sign an offline bundle for sites with no package repository.
#
#   npm run package -- [--arch amd64|arm64|armhf] [--version <v>] [--out <dir>] [--sign <fleet.key>]
#
# The package holds the built JavaScript and WebAssembly, the production dependencies only (no
# compiler, test runner or browser driver: the controller builds nothing) with the serialport
# native binding for that architecture alone, the unit, the config template, device profiles
# and /usr/bin/podwarden; it depends on nodejs (>= 20.19). Its maintainer scripts (deploy/deb/)
# create the user and directories, install the template as /etc/podwarden/pod.yaml only where
# there is none, and restart the service on an upgrade only if it was running.
#
# The production dependencies come from the npm cache (`npm ci --omit=dev --offline`): `npm ci`
# filled it, so packaging needs no registry. --sign <key> (an Ed25519 PEM private key, as
# `podwarden keygen` writes) makes <out>/bundle/: the .deb, SHA256SUMS and SHA256SUMS.sig, which
# a site checks with the fleet's public key and openssl alone (docs/operations.md).
set -euo pipefail
cd "$(dirname "$0")/.."

arch="$(dpkg --print-architecture)"
version=""
out="build/package"
sign=""
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) arch="$2"; shift 2 ;;
    --version) version="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --sign) sign="$2"; shift 2 ;;
    *) echo "package: unknown option $1 (--arch, --version, --out, --sign)" >&2; exit 2 ;;
  esac
done
for tool in dpkg-deb fakeroot; do
  command -v "$tool" >/dev/null || { echo "package: needs $tool (apt-get install dpkg-dev fakeroot)" >&2; exit 1; }
done
[ -f dist/cli/podwarden.js ] && [ -f build/hotpath.release.wasm ] || { echo "package: build first (npm run build)" >&2; exit 1; }
# the serialport prebuild for the package's architecture (node-gyp-build's names)
case "$arch" in
  amd64) prebuild="linux-x64" ;;
  arm64) prebuild="linux-arm64" ;;
  armhf) prebuild="linux-arm" ;;
  *) echo "package: architecture $arch: amd64, arm64 or armhf" >&2; exit 2 ;;
esac
[ -n "$version" ] || version="$(node -p 'require("./package.json").version')"
[[ "$version" =~ ^[0-9][A-Za-z0-9.+~-]*$ ]] || { echo "package: $version is not a Debian version" >&2; exit 2; }

deb="podwarden_${version}_${arch}.deb"
stage="$(mktemp -d "${TMPDIR:-/tmp}/podwarden-deb-XXXXXX")"
trap 'rm -rf "$stage"' EXIT
root="$stage/root"
lib="$root/usr/lib/podwarden"
install -d -m 0755 "$lib" "$root/usr/bin" "$root/lib/systemd/system" "$root/usr/share/podwarden" "$root/usr/share/doc/podwarden" "$root/DEBIAN"

# the build, as `podwarden` finds it: package.json marks the root (lib/package-root.ts)
cp -r dist build package.json package-lock.json profiles "$lib/"
# what runs on a controller: not the benchmarks, the test helpers, the repository's scripts
# (test lanes, doc generation) or the source maps and text formats
rm -rf "$lib/dist/bench" "$lib/dist/test" "$lib/dist/scripts"
# the package's version in the build's record: what --version prints, and the health window's
# name for this build (agent/version.ts)
node -e 'const f=process.argv[1]; const i=JSON.parse(require("fs").readFileSync(f,"utf8")); i.version=process.argv[2]; require("fs").writeFileSync(f, JSON.stringify(i)+"\n")' "$lib/dist/build-info.json" "$version"
find "$lib/dist" -name '*.js.map' -delete
rm -f "$lib"/build/*.wat "$lib"/build/*.map
install -d -m 0755 "$lib/agent/hmi"
cp -r agent/hmi/static "$lib/agent/hmi/"
# the production dependencies, from the npm cache; install scripts are not run (serialport's
# binding is a prebuild shipped in its npm package)
(cd "$lib" && npm ci --omit=dev --offline --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
# only this architecture's glibc binding: another architecture's binary is a package error
prebuilds="$lib/node_modules/@serialport/bindings-cpp/prebuilds"
[ -d "$prebuilds/$prebuild" ] || { echo "package: serialport has no prebuild for $prebuild" >&2; exit 1; }
find "$prebuilds" -mindepth 1 -maxdepth 1 ! -name "$prebuild" -exec rm -rf {} +
find "$prebuilds/$prebuild" -name '*.node' ! -name '*glibc*' -delete
[ "$arch" != armhf ] || find "$prebuilds/$prebuild" -name '*armv6*' -delete
# the binding's C++ sources and build files are not needed at run time
rm -rf "$lib/node_modules/@serialport/bindings-cpp/src" "$lib/node_modules/@serialport/bindings-cpp/binding.gyp"
# nor the dependencies' own tests, benchmarks, examples, docs sites, type declarations and
# development command lines (protobufjs's pbjs/pbts and their jsdoc toolchain, 15 MB of 45)
rm -rf "$lib/node_modules/@types" "$lib/node_modules/protobufjs/cli"
find "$lib/node_modules" -depth -type d \( -name test -o -name tests -o -name benchmarks -o -name example -o -name examples -o -name docs -o -name .github -o -name .husky \) -exec rm -rf {} +
find "$lib/node_modules" -type f \( -name '*.md' -o -name '*.markdown' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.ts.map' -o -name '*.js.map' -o -name '.npmignore' -o -name '.eslintrc*' -o -name '.travis.yml' -o -name 'Makefile' -o -name '.gitignore' -o -name '.gitattributes' -o -name '*.sh' -o -name '*.html' \) -delete
find "$lib/node_modules" -depth -type d -empty -delete
find "$lib" -type d -exec chmod 0755 {} +
find "$lib" -type f -exec chmod 0644 {} +
# a dependency's command-line script keeps its execute bit (as npm would have left it)
find "$lib" -type f -exec sh -c 'for f; do [ "$(head -c 2 "$f")" = "#!" ] && chmod 0755 "$f"; done; true' sh {} +
ln -s ../lib/podwarden/dist/cli/podwarden.js "$root/usr/bin/podwarden"

# the unit of deploy/, pointed at the package's files
sed -e 's|/opt/podwarden|/usr/lib/podwarden|g' -e 's|Install with deploy/install.sh|Installed by the podwarden package|' deploy/podwarden.service > "$root/lib/systemd/system/podwarden.service"
chmod 0644 "$root/lib/systemd/system/podwarden.service"
install -m 0644 configs/pod-template.yaml "$root/usr/share/podwarden/pod-template.yaml"

doc="$root/usr/share/doc/podwarden"
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
{
  echo "podwarden ($version) unstable; urgency=medium"
  echo
  echo "  * Built from commit $commit. The changes are the project's history:"
  echo "    git log, or docs/ in the source."
  echo
  echo " -- podwarden maintainers <maintainers@podwarden.invalid>  $(git log -1 --format=%cD 2>/dev/null || date -R)"
} | gzip -9n > "$doc/changelog.gz"
{
  echo "podwarden: a per-pod agent for liquid-cooled GPU racks."
  echo
  echo "Copyright 2026 the podwarden authors"
  echo "License: Apache-2.0 (/usr/share/common-licenses/Apache-2.0)"
  echo
  echo "Bundled under /usr/lib/podwarden/node_modules, each under its own license (its"
  echo "package.json and license file there):"
  (cd "$lib/node_modules" && for p in $(find . -mindepth 2 -maxdepth 3 -name package.json -path '*/package.json' | sort); do
    node -e 'const p=require(process.argv[1]); if (p.name && p.version) console.log(`  ${p.name} ${p.version}: ${typeof p.license === "string" ? p.license : "see its license file"}`)' "$PWD/$p"
  done | sort -u)
} > "$doc/copyright"
chmod 0644 "$doc/copyright" "$doc/changelog.gz"
# a manual page: the usage text, as `podwarden --help` prints it
man="$root/usr/share/man/man1"
install -d -m 0755 "$man"
{
  echo ".TH PODWARDEN 1 \"$(git log -1 --format=%cs 2>/dev/null || date +%F)\" \"podwarden $version\" \"User Commands\""
  echo ".SH NAME"
  echo "podwarden \\- per-pod agent for liquid-cooled GPU racks"
  echo ".SH DESCRIPTION"
  echo ".nf"
  node dist/cli/podwarden.js --help | sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
  echo ".fi"
  echo ".SH SEE ALSO"
  echo "The operator's guide and the rest of the documentation: docs/ in the source, operations.md first."
} | gzip -9n > "$man/podwarden.1.gz"
chmod 0644 "$man/podwarden.1.gz"

for s in preinst postinst prerm postrm; do install -m 0755 "deploy/deb/$s" "$root/DEBIAN/$s"; done
size="$(du -sk --exclude=DEBIAN "$root" | cut -f1)"
cat > "$root/DEBIAN/control" <<EOF
Package: podwarden
Version: $version
Architecture: $arch
Maintainer: podwarden maintainers <maintainers@podwarden.invalid>
Installed-Size: $size
Depends: nodejs (>= 20.19), adduser, libc6 (>= 2.28), libstdc++6 (>= 8)
Section: admin
Priority: optional
Homepage: https://podwarden.invalid/
Description: per-pod agent for liquid-cooled GPU racks
 podwarden reads a pod's leak, flow, temperature, pressure and power sensors
 over Modbus and MQTT, runs its valve and pump loops and safety interlocks,
 isolates a leaking rack and keeps the pod inside its power budget, and
 reports to mission control over MQTT and Sparkplug B.
EOF
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -print0 | sort -z | xargs -0 md5sum | sed 's|  \./|  |') > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"

mkdir -p "$out"
fakeroot dpkg-deb -Zxz -z6 --build "$root" "$out/$deb" >/dev/null
echo "$out/$deb"

if [ -n "$sign" ]; then
  command -v openssl >/dev/null || { echo "package: --sign needs openssl" >&2; exit 1; }
  bundle="$out/bundle"
  rm -rf "$bundle" && mkdir -p "$bundle"
  cp "$out/$deb" "$bundle/"
  (cd "$bundle" && sha256sum "$deb" > SHA256SUMS)
  openssl pkeyutl -sign -inkey "$sign" -rawin -in "$bundle/SHA256SUMS" -out "$bundle/SHA256SUMS.sig"
  echo "$bundle/SHA256SUMS.sig"
fi
