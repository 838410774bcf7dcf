#!/usr/bin/env bash
# Installs the Debian package built in $1 (build_deb.sh) on this machine, checks what it set up,
# runs the installed service as its unit would (its account, its capabilities), the demo deadlock
# caught with its evidence, and wctctl as a member of the group wctmon with no flag, then purges
# the package and checks that nothing is left behind. It changes the machine: it refuses (exit
# 77, skipped) where a wctmon package is installed, so that an operator's is never removed, and
# puts back what it found (the account and the group, when it made them).
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
had_account=no
getent passwd wctmon >/dev/null && had_account=yes
service_pid=
demo_pid=
cleanup() {
  [[ -n $demo_pid ]] && kill -9 "$demo_pid" 2>/dev/null
  [[ -n $service_pid ]] && kill "$service_pid" 2>/dev/null && wait "$service_pid" 2>/dev/null
  if dpkg-query -W -f='${Status}' wctmon 2>/dev/null | grep -q .; then
    dpkg --purge wctmon >/dev/null 2>&1 || true
  fi
  rm -rf /run/wctmon
  if [[ $had_account == no ]] && getent passwd wctmon >/dev/null; then userdel wctmon; fi
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
getent passwd wctmon >/dev/null || fail "no account wctmon after install"
[[ $(id -u wctmon) -lt 1000 ]] || fail "wctmon is not a system account"
[[ $(id -gn wctmon) == wctmon ]] || fail "the account wctmon is not in the group wctmon"
[[ $(getent passwd wctmon | cut -d: -f7) == */nologin ]] || fail "the account wctmon has a shell"
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
  # As the unit runs it, as far as it can be without systemd: its account and group, exactly
  # its ambient capabilities (read from the installed unit) and no others, no new privileges,
  # UMask=0077, the runtime and state directories of the unit's modes and owned by the account.
  unit=/usr/lib/systemd/system/wctmon.service
  user=$(sed -n 's/^User=//p' "$unit")
  group=$(sed -n 's/^Group=//p' "$unit")
  caps=$(sed -n 's/^AmbientCapabilities=//p' "$unit" | tr 'A-Z' 'a-z' | sed 's/cap_/+/g; s/ /,/g')
  [[ $user == wctmon && $group == wctmon && -n $caps ]] || fail "the unit's account: $user:$group ($caps)"
  install -d -m 0755 -o "$user" -g "$group" /run/wctmon
  install -d -m 0750 -o "$user" -g "$group" /var/lib/wctmon
  setpriv --reuid "$user" --regid "$group" --init-groups --inh-caps "$caps" \
    --ambient-caps "$caps" --bounding-set "-all,$caps" --no-new-privs \
    sh -c 'umask 0077; exec /usr/bin/wctmon run --config /etc/wctmon/wctmon.json' \
    >/tmp/wctmon-install-test.log 2>&1 &
  service_pid=$!
fi
for _ in $(seq 1 100); do [[ -S /run/wctmon/api.sock ]] && break; sleep 0.1; done
[[ -S /run/wctmon/api.sock ]] || fail "no API socket: $(cat /tmp/wctmon-install-test.log 2>/dev/null)"
[[ $(stat -c '%U:%G %a' /run/wctmon/api.sock) == "wctmon:wctmon 660" ]] ||
  fail "socket $(stat -c '%U:%G %a' /run/wctmon/api.sock)"
[[ $(stat -c '%U:%G %a' /var/lib/wctmon/api-reader.token) == "wctmon:wctmon 640" ]] ||
  fail "reader token $(stat -c '%U:%G %a' /var/lib/wctmon/api-reader.token)"
[[ $(stat -c '%U %a' /var/lib/wctmon/api-admin.token) == "wctmon 600" ]] ||
  fail "admin token $(stat -c '%U:%G %a' /var/lib/wctmon/api-admin.token)"
# The demo, root's, deadlocks: the unprivileged service catches it within its interval (5 s) and
# captures the deadlocked threads' registers.
/usr/lib/wctmon/wctmon-demo >/dev/null 2>&1 &
demo_pid=$!
incident=
for _ in $(seq 1 150); do
  incident=$(wctctl incidents --pid "$demo_pid" -o json 2>/dev/null |
    python3 -c 'import json,sys; print(next((str(i["id"]) for i in json.load(sys.stdin)["incidents"]
      if i.get("kind") == "deadlock"), ""))' 2>/dev/null) || true
  [[ -n $incident ]] && break
  sleep 0.1
done
[[ -n $incident ]] || fail "no deadlock incident for the demo: $(wctctl incidents 2>&1)"
registers=
for _ in $(seq 1 50); do
  registers=$(wctctl incident "$incident" -o json | python3 -c 'import json,sys
print(sum(1 for e in json.load(sys.stdin).get("evidence", []) if e.get("registers")))')
  [[ $registers -ge 2 ]] && break
  sleep 0.1
done
[[ $registers -ge 2 ]] || fail "the demo's incident has no registers: $(wctctl incident "$incident")"
kill -9 "$demo_pid"
demo_pid=
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

# Purge: nothing left but the account and group (kept, as Debian keeps system accounts).
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
getent passwd wctmon >/dev/null || fail "purge removed the account wctmon"
echo "install, the service as its unit's account, wctctl as a group member, purge: OK"
