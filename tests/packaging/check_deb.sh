#!/usr/bin/env bash
# Builds the Debian package from this build tree and checks what it installs: the binaries,
# the systemd unit (Type=notify, watchdog), the default configuration as a conffile.
set -euo pipefail
build=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cpack --config "$build/CPackConfig.cmake" -B "$out" >/dev/null
deb=$(ls "$out"/wctmon_*.deb)
contents=$(dpkg -c "$deb" | awk '{print $6}')
for f in ./usr/bin/wctmon ./usr/bin/wctmond ./usr/bin/wctctl ./usr/lib/systemd/system/wctmon.service \
         ./etc/wctmon/wctmon.json ./usr/share/doc/wctmon/wctmon.schema.json \
         ./usr/share/wctmon/prometheus/wctmon.rules.yml; do
  grep -qx "$f" <<<"$contents" || { echo "missing from the package: $f"; exit 1; }
done
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles | grep -qx /etc/wctmon/wctmon.json
root="$out/root"
dpkg -x "$deb" "$root"
unit="$root/usr/lib/systemd/system/wctmon.service"
grep -qx "Type=notify" "$unit"
grep -q "^WatchdogSec=" "$unit"
grep -q "^ExecStart=/usr/bin/wctmon run --config /etc/wctmon/wctmon.json" "$unit"
"$root/usr/bin/wctmon" validate-config "$root/etc/wctmon/wctmon.json" >/dev/null
"$root/usr/bin/wctctl" version --client | grep -qx "wctctl [0-9.]*"
echo "package OK: $(basename "$deb")"
