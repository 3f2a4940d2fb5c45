# Checks the dynamic section of the CUDA plugin (readelf -d):
#  - DT_NEEDED lists neither the driver library (libcuda.so) nor any CUDA library (libcudart,
#    libcublas, libcublasLt, libcudnn): the runtime is linked in statically and cuBLAS / cuDNN are
#    opened with dlopen, so the plugin loads on machines without them and reports 0 devices;
#  - DT_NEEDED holds nothing beyond libc and libstdc++ and their companions (libm, libgcc_s, libdl,
#    librt, libpthread, the dynamic loader), so the installed plugin needs no RUNPATH;
#  - FLAGS_1 has NODELETE (-z nodelete): nnp_shutdown's dlclose must not unload the CUDA runtime.
# Usage: cmake -DPLUGIN=<path> -DREADELF=<readelf> -P check_no_driver_link.cmake
include(${CMAKE_CURRENT_LIST_DIR}/../../../cmake/NnplugReadelfNeeded.cmake)
nnplug_readelf_needed("${PLUGIN}" "${READELF}" out needed beyond)
if(out MATCHES "\\[libcuda\\.so")
  message(FATAL_ERROR "${PLUGIN} links the CUDA driver library:\n${out}")
endif()
foreach(lib IN LISTS beyond)
  if(lib MATCHES "^lib(cudart|cublas|cublasLt|cudnn)")
    message(FATAL_ERROR "${PLUGIN} has DT_NEEDED ${lib}: CUDA libraries must be linked "
                        "statically (cudart) or opened with dlopen (cuBLAS, cuDNN):\n${out}")
  endif()
endforeach()
if(beyond)
  message(FATAL_ERROR "${PLUGIN} has DT_NEEDED ${beyond}, beyond libc/libstdc++:\n${out}")
endif()
if(NOT out MATCHES "\\(FLAGS_1\\)[^\n]*NODELETE")
  message(FATAL_ERROR "${PLUGIN} is not linked with -z nodelete:\n${out}")
endif()
message(STATUS "${PLUGIN}: DT_NEEDED ${needed}; no libcuda, no CUDA library; NODELETE")
