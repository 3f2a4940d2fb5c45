# Checks that train links no MPI library (readelf -d: no DT_NEEDED libmpi*): its MPI calls live
# in libnnplug-train-mpi.so, opened only for --distributed mpi, so train starts on a machine
# without MPI (a GPU machine, say).
# Usage: cmake -DTRAIN=<path> -DREADELF=<readelf> -P check_no_mpi_link.cmake
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/NnplugReadelfNeeded.cmake)
nnplug_readelf_needed("${TRAIN}" "${READELF}" out needed beyond)
foreach(lib IN LISTS needed)
  if(lib MATCHES "^lib(mpi|open-pal|open-rte|pmix)")
    message(FATAL_ERROR "${TRAIN} has DT_NEEDED ${lib}: MPI belongs in libnnplug-train-mpi.so")
  endif()
endforeach()
message(STATUS "${TRAIN}: DT_NEEDED ${needed}; no MPI library")
