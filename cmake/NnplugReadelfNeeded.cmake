# Shared by the plugin-file checks that run as CMake scripts (cmake -P): the dynamic section of a
# plugin and its DT_NEEDED entries, against the libraries every nnplug plugin may need (libc,
# libstdc++ and their companions: libm, libgcc_s, libdl, librt, libpthread, the dynamic loader).
#
# nnplug_readelf_needed(<plugin> <readelf> <out-dynamic> <out-needed> <out-beyond>)
#   <out-dynamic>: the output of readelf -d (FATAL_ERROR when readelf fails);
#   <out-needed>: every DT_NEEDED name; <out-beyond>: those beyond the allowed set.
function(nnplug_readelf_needed plugin readelf out_dynamic out_needed out_beyond)
  execute_process(COMMAND ${readelf} -d "${plugin}" OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "readelf -d ${plugin} failed")
  endif()
  string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*\\[([^]\n]*)\\]" needed_lines "${out}")
  set(allowed "^(libc\\.so\\.6|libstdc\\+\\+\\.so\\.6|libm\\.so\\.6|libgcc_s\\.so\\.1|libdl\\.so\\.2|librt\\.so\\.1|libpthread\\.so\\.0|ld-linux-x86-64\\.so\\.2|ld-linux-aarch64\\.so\\.1)$")
  set(needed "")
  set(beyond "")
  foreach(line IN LISTS needed_lines)
    string(REGEX REPLACE ".*\\[([^]]*)\\].*" "\\1" lib "${line}")
    list(APPEND needed "${lib}")
    if(NOT lib MATCHES "${allowed}")
      list(APPEND beyond "${lib}")
    endif()
  endforeach()
  set(${out_dynamic} "${out}" PARENT_SCOPE)
  set(${out_needed} "${needed}" PARENT_SCOPE)
  set(${out_beyond} "${beyond}" PARENT_SCOPE)
endfunction()
