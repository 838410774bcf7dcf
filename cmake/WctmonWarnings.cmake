# Warning flags applied to every wctmon target (not to generated code).
add_library(wctmon_warnings INTERFACE)
if(MSVC)
  target_compile_options(wctmon_warnings INTERFACE /W4 /permissive- $<$<BOOL:${WCTMON_WERROR}>:/WX>)
else()
  target_compile_options(wctmon_warnings INTERFACE
    -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
    -Wunused -Woverloaded-virtual -Wdouble-promotion -Wformat=2
    $<$<BOOL:${WCTMON_WERROR}>:-Werror>)
endif()
option(WCTMON_WERROR "Treat warnings as errors" OFF)
