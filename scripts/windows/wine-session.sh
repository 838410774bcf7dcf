# Sourced by the scripts that run Windows programs under Wine (scripts/build-windows.sh,
# scripts/bench/windows.sh): one wineserver for a whole run, in WINEPREFIX.
#
# wine_session_start WINE: stops a server of this prefix that is still there (an earlier run's),
# starts a persistent one, and makes the prefix (on first use, which takes seconds) and starts
# its services (services.exe, winedevice.exe) with nothing as their output. Programs started one
# after another then never meet a server that is shutting down (they would fail to start), and
# the services never hold a program's output open for as long as the server lives (CTest would
# wait for it). wine_session_stop WINE ends it.

wine_session_start() {
  local wine=$1 wineserver=${1%/*}/wineserver
  "$wineserver" -k 2>/dev/null || true
  "$wineserver" -w 2>/dev/null || true
  # The server runs in the prefix's directory: a new prefix's must exist before it starts (Wine
  # makes the prefix in an empty directory), or each program would start a server of its own.
  mkdir -p "$WINEPREFIX"
  "$wineserver" -p </dev/null >/dev/null 2>&1 ||
    echo "wine-session: no persistent wineserver; each program starts its own" >&2
  # A prefix made before Wine's 32-bit half was installed cannot run 32-bit programs ("could not
  # load kernel32.dll"), and updating it does not mend that: the scripts' prefixes are their
  # build's own, made anew.
  if [[ -f $WINEPREFIX/system.reg && -x ${wine%/*}/wine &&
        ! -f $WINEPREFIX/drive_c/windows/syswow64/kernel32.dll ]]; then
    echo "wine-session: $WINEPREFIX runs no 32-bit programs; making it anew" >&2
    "$wineserver" -k 2>/dev/null || true
    "$wineserver" -w 2>/dev/null || true
    rm -rf "$WINEPREFIX"
    "$wineserver" -p </dev/null >/dev/null 2>&1 || true
  fi
  local init=()
  [[ -f $WINEPREFIX/system.reg ]] || init=(--init)
  "$wine" wineboot "${init[@]}" </dev/null >/dev/null 2>&1 || true
  # A new prefix's first program can meet what the making of the prefix still runs (once, a
  # program exited with a page fault there): a program of Wine's own goes first.
  if ((${#init[@]} > 0)); then
    "$wine" cmd.exe /c ver </dev/null >/dev/null 2>&1 || true
  fi
  # Programs that make windows (the hung-window fixture) need a graphics driver, and the tests
  # need no screen: Wine's null driver, whatever DISPLAY says. With a driver, a program that
  # crashes (the capture-crash test's, on purpose) would wait on winedbg's crash dialog, which
  # nobody closes: the dialog is turned off. The desktop process reads the driver when it starts,
  # once per server: a prefix that lacked these is started again with them.
  if ! grep -qs '^"Graphics"="null"' "$WINEPREFIX/user.reg" ||
     ! grep -qs '^"ShowCrashDialog"=dword:00000000' "$WINEPREFIX/user.reg"; then
    { "$wine" reg add 'HKCU\Software\Wine\Drivers' /v Graphics /d null /f &&
      "$wine" reg add 'HKCU\Software\Wine\WineDbg' /v ShowCrashDialog /t REG_DWORD /d 0 /f
    } </dev/null >/dev/null 2>&1 ||
      echo "wine-session: cannot select Wine's null graphics driver without crash dialogs" >&2
    "$wineserver" -k 2>/dev/null || true
    "$wineserver" -w 2>/dev/null || true
    "$wineserver" -p </dev/null >/dev/null 2>&1 || true
    "$wine" wineboot </dev/null >/dev/null 2>&1 || true
  fi
}

wine_session_stop() {
  "${1%/*}/wineserver" -k 2>/dev/null || true
}
