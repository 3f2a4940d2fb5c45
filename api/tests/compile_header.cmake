# Compiles one public header alone as C99 with -pedantic -Wall -Wextra -Wpadded -Werror (CTest
# script): -Wpadded makes any hidden padding in a public struct an error (docs/abi.md).
# -DCOMPILER=<cc> -DHEADER=nnplug/<file>.h "-DFLAGS=<-I...;...>" -DWORKDIR=<dir>
string(REPLACE "/" "_" _stem "${HEADER}")
set(_src "${WORKDIR}/header_${_stem}.c")
file(WRITE "${_src}" "#include <${HEADER}>\n#include <${HEADER}> /* include guard */\nint nnplug_header_test_dummy;\n")
execute_process(
  COMMAND ${COMPILER} -std=c99 -pedantic -Wall -Wextra -Wpadded -Werror ${FLAGS} -c "${_src}"
          -o "${WORKDIR}/header_${_stem}.o"
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${HEADER} does not compile alone as C99:\n${_out}${_err}")
endif()
message(STATUS "${HEADER}: compiles alone as C99 -pedantic -Wpadded")
