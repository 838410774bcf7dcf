# shellcheck shell=bash
# What the recipes share: a Debian source package extracted with its patches, and a CMake project
# configured, built and installed into the prefix being built.
#
# The recipes (scripts/windows/deps/<step>.sh, one per dependency, each defining its build function)
# are sourced by scripts/windows/build-deps.sh and run in its shell: triple, toolchain, downloads,
# source_versions and skipped_patches are the driver's; work, stage and jobs are set by build_all.
# Their functions as bash prints them (declare -f) are part of the cache key (recipe_functions in
# the driver): comments and line breaks are not, any other edit builds every dependency again.
# shellcheck disable=SC2154 # the driver's variables, above

# Extracts a downloaded source package into $work/src/<pkg> with Debian's patches (less the skipped
# ones).
extract() {
  local pkg=$1 version dir
  version="${source_versions[$pkg]}"
  dir="$work/src/$pkg"
  rm -rf "$dir"
  mkdir -p "$work/src"
  dpkg-source --no-check --skip-patches -x "$downloads/$(dsc_name "$pkg" "$version")" "$dir" \
    >/dev/null
  local series="$dir/debian/patches/series" name opt
  [[ -f $series ]] || return 0
  while read -r name opt; do
    [[ -z $name || $name == \#* ]] && continue
    if [[ " ${skipped_patches[$pkg]:-} " == *" $name "* ]]; then
      echo "skipping Debian patch $name"
      continue
    fi
    echo "applying Debian patch $name"
    patch -d "$dir" "${opt:--p1}" -s --forward --no-backup-if-mismatch <"$dir/debian/patches/$name"
  done <"$series"
}

# Configures, builds and installs one CMake project (name, source directory, its options) into the
# prefix being built: static, Release, without tests.
cmake_dep() {
  local name=$1 src=$2
  shift 2
  rm -rf "$work/build/$name"
  cmake -S "$src" -B "$work/build/$name" -G Ninja \
    -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DWCTMON_WINDOWS_PREFIX="$stage" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$stage" -DCMAKE_INSTALL_LIBDIR=lib \
    -DBUILD_SHARED_LIBS=OFF -DBUILD_TESTING=OFF "$@"
  cmake --build "$work/build/$name" --parallel "$jobs"
  cmake --install "$work/build/$name"
}
