# Fails if the CUDA plugin lists the driver library (libcuda.so) among its DT_NEEDED entries:
# the plugin must load on machines without a driver and report zero devices instead.
# Usage: cmake -DPLUGIN=<path> -DREADELF=<readelf> -P check_no_driver_link.cmake
execute_process(COMMAND ${READELF} -d "${PLUGIN}" OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf -d ${PLUGIN} failed")
endif()
if(out MATCHES "\\[libcuda\\.so")
  message(FATAL_ERROR "${PLUGIN} links the CUDA driver library:\n${out}")
endif()
message(STATUS "${PLUGIN}: no libcuda in DT_NEEDED")
