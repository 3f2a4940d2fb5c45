# Checks the dynamic section of the CUDA plugin (readelf -d):
#  - DT_NEEDED lists neither the driver library (libcuda.so) nor any CUDA library (libcudart,
#    libcublas, libcublasLt, libcudnn): the runtime is linked in statically and cuBLAS / cuDNN are
#    opened with dlopen, so the plugin loads on machines without them and reports 0 devices;
#  - DT_NEEDED holds nothing beyond libc and libstdc++ and their companions (libm, libgcc_s, libdl,
#    librt, libpthread, the dynamic loader), so the installed plugin needs no RUNPATH;
#  - FLAGS_1 has NODELETE (-z nodelete): nnp_shutdown's dlclose must not unload the CUDA runtime.
# Usage: cmake -DPLUGIN=<path> -DREADELF=<readelf> -P check_no_driver_link.cmake
execute_process(COMMAND ${READELF} -d "${PLUGIN}" OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf -d ${PLUGIN} failed")
endif()
if(out MATCHES "\\[libcuda\\.so")
  message(FATAL_ERROR "${PLUGIN} links the CUDA driver library:\n${out}")
endif()
string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*\\[([^]\n]*)\\]" needed_lines "${out}")
set(allowed "^(libc\\.so\\.6|libstdc\\+\\+\\.so\\.6|libm\\.so\\.6|libgcc_s\\.so\\.1|libdl\\.so\\.2|librt\\.so\\.1|libpthread\\.so\\.0|ld-linux-x86-64\\.so\\.2|ld-linux-aarch64\\.so\\.1)$")
set(needed "")
foreach(line IN LISTS needed_lines)
  string(REGEX REPLACE ".*\\[([^]]*)\\].*" "\\1" lib "${line}")
  list(APPEND needed "${lib}")
  if(lib MATCHES "^lib(cudart|cublas|cublasLt|cudnn)")
    message(FATAL_ERROR "${PLUGIN} has DT_NEEDED ${lib}: CUDA libraries must be linked "
                        "statically (cudart) or opened with dlopen (cuBLAS, cuDNN):\n${out}")
  endif()
  if(NOT lib MATCHES "${allowed}")
    message(FATAL_ERROR "${PLUGIN} has DT_NEEDED ${lib}, beyond libc/libstdc++:\n${out}")
  endif()
endforeach()
if(NOT out MATCHES "\\(FLAGS_1\\)[^\n]*NODELETE")
  message(FATAL_ERROR "${PLUGIN} is not linked with -z nodelete:\n${out}")
endif()
message(STATUS "${PLUGIN}: DT_NEEDED ${needed}; no libcuda, no CUDA library; NODELETE")
