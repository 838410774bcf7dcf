#!/usr/bin/env bash
# Checks what the Debian package built in $1 (build_deb.sh) installs: the binaries, stripped, with
# their debug information by build id in the -dbgsym package; the systemd unit (Type=notify,
# watchdog, hardened); the default configuration as a conffile; copyright, changelog, the man
# pages and wctctl's bash completion as the programs write them; the rules with their tests and
# the Grafana dashboard; the maintainer scripts.
set -euo pipefail
out=$1
deb=$(ls "$out"/wctmon_*.deb)
dbgsym=$(ls "$out"/wctmon-dbgsym_*.ddeb)
fail() { echo "FAIL: $*"; exit 1; }
contents=$(dpkg -c "$deb" | awk '{print $6}')
for f in ./usr/bin/wctmon ./usr/bin/wctmond ./usr/bin/wctctl ./usr/lib/wctmon/wctmon-demo \
         ./usr/lib/systemd/system/wctmon.service ./usr/lib/systemd/catalog/wctmon.catalog \
         ./etc/wctmon/wctmon.json ./usr/share/doc/wctmon/wctmon.schema.json \
         ./usr/share/doc/wctmon/copyright ./usr/share/doc/wctmon/changelog.Debian.gz \
         ./usr/share/man/man8/wctmon.8.gz ./usr/share/man/man8/wctmond.8.gz \
         ./usr/share/man/man1/wctctl.1.gz ./usr/share/bash-completion/completions/wctctl \
         ./usr/share/wctmon/prometheus/wctmon.rules.yml \
         ./usr/share/wctmon/prometheus/wctmon.rules.test.yml \
         ./usr/share/wctmon/grafana/wctmon.json; do
  grep -qx "$f" <<<"$contents" || fail "missing from the package: $f"
done
control=$(mktemp -d)
trap 'rm -rf "$control"' EXIT
dpkg-deb -e "$deb" "$control/DEBIAN"
grep -qx /etc/wctmon/wctmon.json "$control/DEBIAN/conffiles"
for script in postinst prerm postrm; do
  [[ -x $control/DEBIAN/$script ]] || fail "no executable $script"
done
# Never a restart on every configure: postinst knows its version and only try-restarts.
version=$(dpkg-deb -f "$deb" Version)
grep -q "\"\$2\" != \"$version\"" "$control/DEBIAN/postinst" || fail "postinst does not know $version"
grep -q "deb-systemd-invoke try-restart" "$control/DEBIAN/postinst" || fail "no try-restart"
if grep -E "deb-systemd-invoke (restart|start)" "$control/DEBIAN/postinst" | grep -q restart; then
  fail "postinst restarts"
fi
grep -q "rm -rf /var/lib/wctmon" "$control/DEBIAN/postrm" || fail "purge keeps /var/lib/wctmon"
dpkg-deb -f "$deb" Depends | grep -q adduser || fail "addgroup without Depends: adduser"
# The extended description is more than its first line.
[[ $(dpkg-deb -f "$deb" Description | wc -l) -gt 5 ]] || fail "no extended description"

root="$control/root"
dpkg -x "$deb" "$root"
unit="$root/usr/lib/systemd/system/wctmon.service"
grep -qx "Type=notify" "$unit"
grep -q "^WatchdogSec=" "$unit"
grep -q "^ExecStart=/usr/bin/wctmon run --config /etc/wctmon/wctmon.json" "$unit"
for key in "SystemCallFilter=@system-service ptrace perf_event_open" "ProtectKernelLogs=yes" \
           "UMask=0077" "PrivateMounts=yes" "IPAddressDeny=any" "IPAddressAllow=localhost" \
           "User=wctmon" "Group=wctmon" "RemoveIPC=yes" "ProtectHome=yes"; do
  grep -qx "$key" "$unit" || fail "the unit lacks $key"
done
"$root/usr/bin/wctmon" validate-config "$root/etc/wctmon/wctmon.json" >/dev/null
"$root/usr/bin/wctctl" version --client | grep -qx "wctctl [0-9.]*"
# The man pages and the completion are those the programs write from their option tables.
for page in man8/wctmon.8 man8/wctmond.8 man1/wctctl.1; do
  program=$(basename "${page%.*}")
  gzip -dc "$root/usr/share/man/$page.gz" | cmp -s - <("$root/usr/bin/$program" __man --date \
    "$(gzip -dc "$root/usr/share/man/$page.gz" | sed -n 's/^\.TH [A-Z]* [18] "\([^"]*\)".*/\1/p')") ||
    fail "$page is not what $program writes from its option tables"
done
cmp -s "$root/usr/share/bash-completion/completions/wctctl" <("$root/usr/bin/wctctl" completion bash) ||
  fail "the bash completion is not what wctctl completion bash writes"
gzip -dc "$root/usr/share/doc/wctmon/changelog.Debian.gz" | head -1 | grep -q "^wctmon (${version})"
head -1 "$root/usr/share/doc/wctmon/copyright" |
  grep -qx "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"

# Stripped, each with its debug information in the -dbgsym package under its build id.
dbg_contents=$(dpkg -c "$dbgsym" | awk '{print $6}')
for binary in wctmon wctmond wctctl; do
  file "$root/usr/bin/$binary" | grep -q ", stripped" || fail "$binary is not stripped"
  id=$(readelf -n "$root/usr/bin/$binary" | sed -n 's/.*Build ID: //p')
  grep -qx "./usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug" <<<"$dbg_contents" ||
    fail "no debug file for $binary (build id $id) in $(basename "$dbgsym")"
done
dpkg-deb -f "$dbgsym" Depends | grep -q "wctmon (= $version)" || fail "dbgsym not tied to $version"
echo "package OK: $(basename "$deb") $(du -k "$deb" | cut -f1) KiB, $(basename "$dbgsym")"
