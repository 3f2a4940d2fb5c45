# Checks that libnnplug reads its environment with secure_getenv only (CTest script): its
# dynamic symbol table must import secure_getenv and must not import getenv. A plain getenv
# anywhere in libnnplug (api/src) shows up here as an undefined 'getenv' symbol; the
# set-uid/set-gid behaviour itself is checked at run time by the api_tests case
# "environment: a set-gid process ignores every NNPLUG_* variable" (when run as root).
# -DNM=<nm> -DLIBNNPLUG=<path>
execute_process(COMMAND ${NM} -D --undefined-only "${LIBNNPLUG}" RESULT_VARIABLE _rc
                OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${LIBNNPLUG}: nm failed: ${_err}")
endif()
string(REPLACE "\n" ";" _lines "${_out}")
set(_has_secure FALSE)
set(_failures "")
foreach(_l IN LISTS _lines)
  if(_l MATCHES " U ([^ @]+)(@.*)?$")
    set(_sym "${CMAKE_MATCH_1}")
    if(_sym STREQUAL "secure_getenv")
      set(_has_secure TRUE)
    elseif(_sym MATCHES "^_*getenv$")
      string(APPEND _failures "${LIBNNPLUG} imports '${_sym}': read the environment "
                              "with nnp::host::env_value (secure_getenv) instead\n")
    endif()
  endif()
endforeach()
if(NOT _has_secure)
  string(APPEND _failures "${LIBNNPLUG} does not import secure_getenv\n")
endif()
if(_failures)
  message(FATAL_ERROR "${_failures}")
endif()
message(STATUS "${LIBNNPLUG}: environment read with secure_getenv only")
