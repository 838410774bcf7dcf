#!/usr/bin/env bash
# Builds the Windows installer with wixl (msitools) from cross-built executables:
#
#   scripts/windows/build-msi.sh BIN_DIR VERSION OUT_DIR
#
# BIN_DIR holds wctmond.exe, wctmon.exe, wctctl.exe and the installer's own
# wctmon-release-wait.exe (build/windows/bin); the package is
# OUT_DIR/wctmon-VERSION-x64.msi, whose path is the last line printed. The executables are
# stripped into it (the service names the frames of other processes, not its own), the
# default configuration is config/wctmon.windows.json, and the Prometheus rules and the Grafana
# dashboard go under the install directory's prometheus and grafana.
#
# wixl writes what WiX's core elements say; what its version (0.101) leaves out is set in the
# built database with msibuild: the configuration's component attributes (Permanent,
# NeverOverwrite), the event source's message files as REG_EXPAND_SZ, the optional PATH entry (an
# Environment table and its two actions), the sequence of the removal's custom actions and the
# wait for the stopped service's process (WaitForRelease).
set -euo pipefail
cd "$(dirname "$0")/../.."

if (($# != 3)); then
  echo "usage: scripts/windows/build-msi.sh BIN_DIR VERSION OUT_DIR" >&2
  exit 2
fi
bin=$1 version=$2 out=$3
readonly executables=(wctmond.exe wctmon.exe wctctl.exe wctmon-release-wait.exe)
for exe in "${executables[@]}"; do
  [[ -f $bin/$exe ]] || { echo "build-msi.sh: $bin/$exe is missing" >&2; exit 1; }
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for exe in "${executables[@]}"; do
  x86_64-w64-mingw32-strip -o "$stage/$exe" "$bin/$exe"
done

mkdir -p "$out"
msi="$(cd "$out" && pwd)/wctmon-$version-x64.msi"
cp installer/windows/wctmon.wxs "$stage/"
cp config/wctmon.windows.json "$stage/wctmon.json"
cp installer/prometheus/wctmon.rules.yml installer/prometheus/wctmon.rules.test.yml "$stage/"
cp installer/grafana/wctmon.json "$stage/dashboard.json"
# wixl finds sources by paths relative to where it runs only. It names the attributes it does
# not know (Permanent, NeverOverwrite, Platform) on stderr: they are set below.
(cd "$stage" && wixl -a x64 -D Version="$version" -D BinDir=. -D ConfigFile=wctmon.json \
  -o "$msi" wctmon.wxs) 2> >(grep -v -e "has no property named" -e '^$' >&2)

# 256 (64-bit) + 16 (permanent) + 128 (never overwrite).
msibuild "$msi" -q "UPDATE Component SET Attributes = 400 WHERE Component = 'Config'"
for name in EventMessageFile CategoryMessageFile; do
  msibuild "$msi" -q "UPDATE Registry SET Value = '#%[#wctmond.exe]' WHERE Name = '$name'"
done
# The removal's custom actions right after StopServices (wixl numbers them 5803 and 1901).
msibuild "$msi" \
  -q "UPDATE InstallExecuteSequence SET Sequence = 1901 WHERE Action = 'RemoveServiceConfig'" \
  -q "UPDATE InstallExecuteSequence SET Sequence = 1902 WHERE Action = 'PurgeState'"
# WaitForRelease: a service reports STOPPED before its process is gone (under Wine a second
# later); replacing or removing wctmond.exe while it is still mapped fails the installation.
# wctmon-release-wait.exe, in the Binary table (wixl takes no BinaryKey), waits for it right after
# StopServices: 2 (an exe of the Binary table) + 64 (result ignored) + 1024 (deferred) + 2048 (as
# LocalSystem).
mkdir -p "$stage/idt/Binary"
cp "$stage/wctmon-release-wait.exe" "$stage/idt/Binary/ReleaseWait.exe"
printf 'Name\tData\ns72\tv0\nBinary\tName\nReleaseWait\tReleaseWait.exe\n' >"$stage/idt/Binary.idt"
(cd "$stage/idt" && msibuild "$msi" -i Binary.idt)
msibuild "$msi" \
  -q "INSERT INTO \`CustomAction\` (\`Action\`, \`Type\`, \`Source\`, \`Target\`) VALUES ('WaitForRelease', 3138, 'ReleaseWait', '\"[INSTALLDIR]wctmond.exe\"')" \
  -q "INSERT INTO \`InstallExecuteSequence\` (\`Action\`, \`Sequence\`) VALUES ('WaitForRelease', 1905)"
# The PATH entry: appended to the system PATH on install, removed on uninstall, with the
# feature OnPath.
msibuild "$msi" \
  -q "CREATE TABLE \`Environment\` (\`Environment\` CHAR(72) NOT NULL, \`Name\` CHAR(255) NOT NULL LOCALIZABLE, \`Value\` CHAR(255) LOCALIZABLE, \`Component_\` CHAR(72) NOT NULL PRIMARY KEY \`Environment\`)" \
  -q "INSERT INTO \`Environment\` (\`Environment\`, \`Name\`, \`Value\`, \`Component_\`) VALUES ('WctmonPath', '=-*Path', '[~];[INSTALLDIR]', 'PathEntry')" \
  -q "INSERT INTO \`InstallExecuteSequence\` (\`Action\`, \`Sequence\`) VALUES ('RemoveEnvironmentStrings', 3300)" \
  -q "INSERT INTO \`InstallExecuteSequence\` (\`Action\`, \`Sequence\`) VALUES ('WriteEnvironmentStrings', 5200)"
echo "$msi"
