#!/usr/bin/env bash
# Checks that includes follow the direction of the rooms of service/ (service/CMakeLists.txt):
#   app -> api / store / platform / runtime -> core -> model; wire (formats) beside, on model,
#   for store, api, platform (the Event Log's data), runtime (the web hooks' JSON) and app;
#   cli (command-line checks, help, man pages and completion, on CLI11 alone) and os (the OS helpers several rooms share: a
#   descriptor's owner, durable files, a service's state directory) on nothing; core uses os
#   only in its per-platform files. The client (client/, wctctl) uses only
#   model, wire, cli and the generated API, never the engine.
# Tests mirror the tree and may use what the room they test may use, plus fakes/ (core rooms
# only), support/ and contract/ (suites of a port's contract, on core alone); the fuzz targets
# (tests/fuzz) reach the parsers of every room but app.
# model/ and core/ include no OS, SQLite, protobuf, gRPC or Boost header,
# except in their per-platform files (name_windows.cpp, name_linux.cpp, name_posix.cpp).
# Prints every include against the direction and fails when there is one.
set -euo pipefail
cd "$(dirname "$0")/.."

# What each room may include, itself aside.
declare -A allowed=(
  [model]=""
  [core]="model os"
  [wire]="model wctmon"
  [os]=""
  [platform]="core model os wire"
  [store]="core model os wire"
  [runtime]="core model grpc wire"
  [api]="core model os wire wctmon grpc lenient"
  [app]="api cli core model os platform runtime store wire wctmon"
  [cli]=""
  [client]="cli model wire wctmon grpc"
  [fakes]="core model"
  [support]=""
  [contract]="core model"
  [e2e]="support"
  [fixtures]=""
  [fuzz]="api core model os platform store support wire wctmon"
)
# Headers from outside the tree that model/ and core/ may include.
neutral_libraries='^(nlohmann/json\.hpp|spdlog/spdlog\.h|re2/re2\.h)$'

room_of() {  # path -> the room it belongs to
  local path=$1
  case $path in
    service/*) path=${path#service/} ;;
    tests/platform/*) echo platform; return ;;
    tests/*) path=${path#tests/} ;;
    scripts/bench/*) echo app; return ;;
    client/*) echo client; return ;;
  esac
  echo "${path%%/*}"
}

violations=0
report() {
  echo "$1:$2: $3" >&2
  violations=$((violations + 1))
}

# The files to check; none at all (not a git work tree, a wrong directory) is a failure, not a
# pass: a check that checks nothing cannot fail.
files=$(git ls-files -co --exclude-standard -- 'service/*' 'client/*' 'tests/*' 'scripts/bench/*') ||
  { echo "check-deps: cannot list the sources (run it in the repository's work tree)" >&2; exit 1; }
files=$(grep -E '\.(h|hpp|c|cc|cpp)$' <<<"$files" || true)
[[ -n $files ]] || { echo "check-deps: no source found to check" >&2; exit 1; }
checked=0
while IFS= read -r file; do
  checked=$((checked + 1))
  room=$(room_of "$file")
  [[ -v allowed[$room] ]] || { report "$file" 1 "in no known room ($room)"; continue; }
  while IFS=: read -r line text; do
    if [[ $text =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([^\"]+)\" ]]; then
      header=${BASH_REMATCH[1]}
      if [[ $header == *../* || $header != */* ]]; then
        report "$file" "$line" "\"$header\": include by room path (room/file.h)"
        continue
      fi
      target=${header%%/*}
      [[ $target == "$room" ]] && continue
      # A test's own helpers sit in the tests folder of the room they serve.
      if [[ $file == tests/* && -f tests/$header ]]; then
        target=$(room_of "tests/$header")
        [[ $target == "$room" ]] && continue
      fi
      if [[ $file == tests/* ]]; then
        # Tests may use the test support and the contract suites; fakes serve the tests of core
        # and runtime only.
        [[ $target == support || $target == contract ]] && continue
        [[ $target == fakes && ($room == core || $room == runtime) ]] && continue
      fi
      if [[ " ${allowed[$room]} " != *" $target "* ]]; then
        report "$file" "$line" "$room may not include $target (\"$header\")"
      fi
    elif [[ $text =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\<([^\>]+)\> ]]; then
      header=${BASH_REMATCH[1]}
      # The per-platform files CMake chooses (name_windows.cpp, name_linux.cpp, name_posix.cpp)
      # are where model and core meet their OS.
      if [[ $file == service/* && ($room == model || $room == core) && $header == *[./]* &&
            ! $header =~ $neutral_libraries && ! $file =~ _(windows|linux|posix)\.cpp$ ]]; then
        report "$file" "$line" "$room must stay platform-neutral: <$header>"
      fi
    fi
  done < <(grep -n '#[[:space:]]*include' "$file" || true)
done <<<"$files"

if ((violations > 0)); then
  echo "check-deps: $violations include(s) against the direction of the rooms" >&2
  exit 1
fi
echo "check-deps: every include of $checked files follows the direction of the rooms"
