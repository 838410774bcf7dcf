# Each library sees only the rooms of service/ it owns or depends on: a target's include
# directory holds one link per room it owns, and the rooms of what it links come with those
# targets. An include of a room a target does not depend on fails to compile;
# scripts/check-deps.sh checks the direction of the rest.
function(wctmon_rooms target scope)
  set(dir "${PROJECT_BINARY_DIR}/rooms/${target}")
  file(MAKE_DIRECTORY "${dir}")
  foreach(room IN LISTS ARGN)
    if(NOT EXISTS "${dir}/${room}")
      file(CREATE_LINK "${PROJECT_SOURCE_DIR}/service/${room}" "${dir}/${room}" SYMBOLIC)
    endif()
  endforeach()
  target_include_directories(${target} ${scope} "${dir}")
endfunction()
