# Checks the built nccl communication plugin (CTest script):
#  - the file exists;
#  - its dynamic symbol table defines exactly one symbol, nnp_comm_plugin_get_api (nm -D);
#  - DT_NEEDED (readelf -d) holds nothing beyond libc and libstdc++ and their companions: no
#    libnccl (opened with dlopen at first use), no libcuda / libcudart, no libnnplug.
# Usage: cmake -DPLUGIN=<path> -DNM=<nm> -DREADELF=<readelf> -P check_plugin_file.cmake
if(NOT EXISTS "${PLUGIN}")
  message(FATAL_ERROR "${PLUGIN} does not exist")
endif()
execute_process(COMMAND ${NM} -D --defined-only "${PLUGIN}" OUTPUT_VARIABLE out
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm -D ${PLUGIN} failed: ${err}")
endif()
string(REGEX MATCHALL "[^\n]+" lines "${out}")
set(symbols "")
foreach(line IN LISTS lines)
  if(line MATCHES " ([^ ]+)$")
    list(APPEND symbols "${CMAKE_MATCH_1}")
  endif()
endforeach()
if(NOT symbols STREQUAL "nnp_comm_plugin_get_api")
  message(FATAL_ERROR "${PLUGIN} must define exactly nnp_comm_plugin_get_api; it defines: "
                      "${symbols}")
endif()

include(${CMAKE_CURRENT_LIST_DIR}/../../../cmake/NnplugReadelfNeeded.cmake)
nnplug_readelf_needed("${PLUGIN}" "${READELF}" out needed beyond)
if(beyond)
  message(FATAL_ERROR "${PLUGIN} has DT_NEEDED ${beyond}, beyond libc/libstdc++ (NCCL is opened "
                      "with dlopen; no CUDA library and no libnnplug may be linked):\n${out}")
endif()
message(STATUS "${PLUGIN}: exports nnp_comm_plugin_get_api only; DT_NEEDED ${needed}")
