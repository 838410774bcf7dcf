# Run by CPack after the packages are built (CPACK_POST_BUILD_SCRIPTS): makes the -dbgsym package
# what Debian's own are. CMake 3.25's lists its files in md5sums by their paths in CPack's build
# tree, which dpkg and lintian cannot match; and Debian's dbgsym packages point their
# documentation directory at their package's (copyright and changelog), as dh_strip does.
foreach(package IN LISTS CPACK_PACKAGE_FILES)
  if(NOT package MATCHES "-dbgsym_.*\\.ddeb$")
    continue()
  endif()
  set(root "${package}.d")
  file(REMOVE_RECURSE "${root}")
  execute_process(COMMAND dpkg-deb -R "${package}" "${root}" COMMAND_ERROR_IS_FATAL ANY)
  file(GLOB_RECURSE files LIST_DIRECTORIES false RELATIVE "${root}" "${root}/usr/*")
  list(SORT files)
  set(md5sums "")
  foreach(f IN LISTS files)
    file(MD5 "${root}/${f}" sum)
    string(APPEND md5sums "${sum}  ${f}\n")
  endforeach()
  file(WRITE "${root}/DEBIAN/md5sums" "${md5sums}")
  file(MAKE_DIRECTORY "${root}/usr/share/doc")
  file(CREATE_LINK wctmon "${root}/usr/share/doc/wctmon-dbgsym" SYMBOLIC)
  # gzip: xz takes minutes over 180 MB of debug information on two cores.
  execute_process(COMMAND dpkg-deb --root-owner-group -Zgzip -b "${root}" "${package}"
                  OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
  file(REMOVE_RECURSE "${root}")
endforeach()
