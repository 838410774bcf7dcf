#!/usr/bin/env bash
# Proves the lock rules written as annotations (service/model/mutex.h): every source of service/
# that uses them is compiled by Clang with -Wthread-safety, as errors, syntax only (nothing is
# built). The flags come from the build's compile_commands.json (scripts/build.sh makes it).
#
#   scripts/check-thread-safety.sh [BUILD_DIR]     default build/default
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/default}"
clang="$(command -v clang++-14 || command -v clang++ || true)"
[[ -n "$clang" ]] ||
  { echo "check-thread-safety: clang++ is not installed (scripts/bootstrap.sh)" >&2; exit 2; }
[[ -f "$build/compile_commands.json" ]] ||
  { echo "check-thread-safety: no $build/compile_commands.json: build first" >&2; exit 2; }

# The sources that include an annotated header, directly or through their own header.
mapfile -t annotated < <(grep -rl --include='*.h' -e 'model/mutex.h' service)
patterns=(-e 'model/mutex.h')
for h in "${annotated[@]}"; do patterns+=(-e "\"${h#service/}\""); done
mapfile -t sources < <(grep -rl --include='*.cpp' "${patterns[@]}" service | sort)

python3 - "$build/compile_commands.json" "$clang" "${sources[@]}" <<'EOF'
import json, os, shlex, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
db, clang, sources = sys.argv[1], sys.argv[2], sys.argv[3:]
by_file = {os.path.realpath(e["file"]): e for e in json.load(open(db))}
# What makes an object file, and -Werror: GCC's warning set is not Clang's; only the analysis
# (and an error of Clang's) fails this check.
dropped = {"-o", "-c", "-Werror"}
def command(path):
    entry = by_file.get(os.path.realpath(path))
    if entry is None:
        return None
    args = shlex.split(entry["command"])[1:]
    out, skip = [clang], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in dropped:
            skip = a == "-o"
            continue
        if a.startswith("-ffile-prefix-map") or a == os.path.realpath(path) or a == entry["file"]:
            continue
        out.append(a)
    return out + ["-fsyntax-only", "-Wthread-safety", "-Wthread-safety-beta",
                  "-Werror=thread-safety", "-Wno-unknown-warning-option", entry["file"]], entry["directory"]
def check(path):
    made = command(path)
    if made is None:
        return path, 0, ""  # not part of this platform's build
    cmd, cwd = made
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    lines = [l for l in r.stderr.splitlines() if "error:" in l]
    return path, (1 if r.returncode != 0 else 0), "\n".join(lines) or r.stderr
failed = 0
with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
    for path, bad, text in pool.map(check, sources):
        if bad:
            failed += 1
            print(text)
print(f"check-thread-safety: {len(sources)} sources, {failed} with lock rules broken")
sys.exit(1 if failed else 0)
EOF
