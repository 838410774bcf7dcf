# shellcheck shell=bash
# re2, for gRPC. A recipe of scripts/windows/build-deps.sh (deps/lib.sh says how recipes are run).
# shellcheck disable=SC2154 # the driver's variables

build_re2() {
  extract re2
  local src="$work/src/re2"
  # Debian's tarball lacks the generated tables; its patch points the generators at unicode-data.
  (cd "$src" && perl re2/make_perl_groups.pl >re2/perl_groups.cc &&
    python3 re2/make_unicode_casefold.py >re2/unicode_casefold.cc &&
    python3 re2/make_unicode_groups.py >re2/unicode_groups.cc)
  cmake_dep re2 "$src" -DRE2_BUILD_TESTING=OFF
}
