#!/usr/bin/env bash
# Installs the Debian package built in $1 (build_deb.sh) on this machine, checks what it set up,
# runs the installed service as its unit would and wctctl as a member of the group wctmon with no
# flag, then purges the package and checks that nothing is left behind. It changes the machine:
# it refuses (exit 77, skipped) where a wctmon package is installed, so that an operator's is never
# removed, and puts back what it found (the group, when it made it).
set -euo pipefail
out=$1
deb=$(ls "$out"/wctmon_*.deb)
skip=77
fail() { echo "FAIL: $*"; exit 1; }

if dpkg-query -W -f='${Status}' wctmon 2>/dev/null | grep -q "installed\|config-files\|unpacked"; then
  echo "SKIP: a wctmon package is installed here ($(dpkg-query -W -f='${Version} ${Status}' wctmon));"
  echo "this test installs and purges its own and never touches an operator's: remove it first"
  exit $skip
fi
for path in /etc/wctmon /var/lib/wctmon /run/wctmon; do
  [[ ! -e $path ]] || { echo "SKIP: $path exists without the package: not this test's to remove"; exit $skip; }
done
had_group=no
getent group wctmon >/dev/null && had_group=yes
service_pid=
cleanup() {
  [[ -n $service_pid ]] && kill "$service_pid" 2>/dev/null && wait "$service_pid" 2>/dev/null
  if dpkg-query -W -f='${Status}' wctmon 2>/dev/null | grep -q .; then
    dpkg --purge wctmon >/dev/null 2>&1 || true
  fi
  rm -rf /run/wctmon
  if [[ $had_group == no ]] && getent group wctmon >/dev/null; then groupdel wctmon; fi
}
trap cleanup EXIT
pid1=$(ps -p 1 -o comm=)

# Install.
DEBIAN_FRONTEND=noninteractive dpkg -i "$deb"
for f in /usr/bin/wctmon /usr/bin/wctmond /usr/bin/wctctl /usr/lib/systemd/system/wctmon.service \
         /etc/wctmon/wctmon.json /usr/share/doc/wctmon/copyright \
         /usr/share/man/man8/wctmond.8.gz /usr/share/wctmon/prometheus/wctmon.rules.test.yml; do
  [[ -e $f ]] || fail "not installed: $f"
done
getent group wctmon >/dev/null || fail "no group wctmon after install"
[[ $(getent group wctmon | cut -d: -f3) -lt 1000 ]] || fail "wctmon is not a system group"
if [[ $pid1 == systemd ]]; then
  systemctl is-enabled --quiet wctmon.service || fail "wctmon.service is not enabled"
else
  # No systemd here (PID 1 is $pid1): the links deb-systemd-helper made say it is enabled.
  link=/etc/systemd/system/multi-user.target.wants/wctmon.service
  [[ -L $link ]] || fail "not enabled: no $link"
  [[ $(readlink -f "$link") == /usr/lib/systemd/system/wctmon.service ]] || fail "$link points elsewhere"
  echo "systemd is not PID 1 ($pid1): enablement checked by its links"
fi
systemd-analyze verify /usr/lib/systemd/system/wctmon.service || fail "systemd-analyze verify"
# The rules' tests run where they are installed.
(cd /usr/share/wctmon/prometheus && promtool test rules wctmon.rules.test.yml >/dev/null) ||
  fail "the installed rules' tests fail"
# A second configure of the same version (a reinstall) goes through too.
DEBIAN_FRONTEND=noninteractive dpkg -i "$deb" >/dev/null

if [[ $pid1 == systemd ]]; then
  systemctl start wctmon.service
  service_pid=
else
  # As the unit runs it, as far as it can be without systemd: no CAP_CHOWN, the group wctmon as
  # a supplementary group, UMask=0077, the runtime and state directories of the unit's modes.
  install -d -m 0755 /run/wctmon
  install -d -m 0711 /var/lib/wctmon
  gid=$(getent group wctmon | cut -d: -f3)
  setpriv --bounding-set -chown --groups "$gid" \
    sh -c 'umask 0077; exec /usr/bin/wctmon run --config /etc/wctmon/wctmon.json' \
    >/tmp/wctmon-install-test.log 2>&1 &
  service_pid=$!
fi
for _ in $(seq 1 100); do [[ -S /run/wctmon/api.sock ]] && break; sleep 0.1; done
[[ -S /run/wctmon/api.sock ]] || fail "no API socket: $(cat /tmp/wctmon-install-test.log 2>/dev/null)"
[[ $(stat -c '%U:%G %a' /run/wctmon/api.sock) == "root:wctmon 660" ]] ||
  fail "socket $(stat -c '%U:%G %a' /run/wctmon/api.sock)"
[[ $(stat -c '%U:%G %a' /var/lib/wctmon/api-reader.token) == "root:wctmon 640" ]] ||
  fail "reader token $(stat -c '%U:%G %a' /var/lib/wctmon/api-reader.token)"
[[ $(stat -c '%U:%G %a' /var/lib/wctmon/api-admin.token) == "root:root 600" ]] ||
  fail "admin token $(stat -c '%U:%G %a' /var/lib/wctmon/api-admin.token)"
# A member of the group, not root, with no flag at all.
gid=$(getent group wctmon | cut -d: -f3)
status=$(setpriv --reuid nobody --regid nogroup --groups "$gid" /usr/bin/wctctl status) ||
  fail "wctctl status as a member of wctmon: $status"
grep -q "healthy" <<<"$status" || fail "status: $status"
# Not a member: refused at the socket.
if setpriv --reuid nobody --regid nogroup --clear-groups /usr/bin/wctctl status >/dev/null 2>&1; then
  fail "a user outside the group reads the status"
fi
if [[ $pid1 == systemd ]]; then
  systemctl stop wctmon.service
else
  kill "$service_pid"
  wait "$service_pid" || true
  service_pid=
  rm -rf /run/wctmon
fi

# Purge: nothing left but the group (kept, as Debian keeps system groups).
DEBIAN_FRONTEND=noninteractive dpkg --purge wctmon
left=()
for path in /etc/wctmon /var/lib/wctmon /var/log/wctmon /usr/bin/wctmon /usr/bin/wctmond \
            /usr/bin/wctctl /usr/lib/systemd/system/wctmon.service /usr/share/doc/wctmon \
            /usr/share/wctmon /usr/share/man/man8/wctmon.8.gz /usr/share/man/man1/wctctl.1.gz; do
  [[ -e $path || -L $path ]] && left+=("$path")
done
while IFS= read -r link; do left+=("$link"); done < <(find /etc/systemd/system -name 'wctmon*')
while IFS= read -r state; do left+=("$state"); done < \
  <(find /var/lib/systemd/deb-systemd-helper-enabled /var/lib/systemd/deb-systemd-helper-masked \
      -name 'wctmon*' 2>/dev/null)
((${#left[@]} == 0)) || fail "left after purge: ${left[*]}"
dpkg-query -W wctmon >/dev/null 2>&1 && fail "dpkg still knows wctmon"
getent group wctmon >/dev/null || fail "purge removed the group wctmon"
echo "install, service as a group member, purge: OK"
