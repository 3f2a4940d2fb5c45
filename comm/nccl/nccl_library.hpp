// nccl_library.hpp — NCCL is not linked: the plugin opens libnccl.so.2 with dlopen on first use
// (the initialize slot), with the cuda backend's search (nnplug_cuda_libs, plugins/cuda_libs:
// nnplug/cuda_libs/library_search.hpp has the steps of NNPLUG_CUDA_LIB_SEARCH —
// NNPLUG_CUDA_LIB_PATH folders, the soname, Python wheels site-packages/nvidia/nccl/lib, the
// folder where CMake found NCCL). nccl.h gives the types and
// the functions' signatures only; every call goes through a pointer resolved here.
#pragma once

#include <nccl.h>

#include <string>

namespace nnp::nccl {

// The opened library and the functions the plugin calls. Never closed.
struct library {
  void* handle = nullptr;
  std::string path;    // the file opened
  std::string reason;  // when handle is NULL: "NCCL not found: ..." with every place tried
  int major = 0, minor = 0, patch = 0;
  std::string version;  // "2.28.9"

  decltype(&::ncclGetVersion) get_version = nullptr;
  decltype(&::ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&::ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&::ncclCommDestroy) comm_destroy = nullptr;
  decltype(&::ncclCommAbort) comm_abort = nullptr;
  decltype(&::ncclCommGetAsyncError) comm_get_async_error = nullptr;
  decltype(&::ncclCommCuDevice) comm_cu_device = nullptr;
  decltype(&::ncclGetErrorString) get_error_string = nullptr;
  decltype(&::ncclGetLastError) get_last_error = nullptr;  // NCCL >= 2.13; else NULL
  decltype(&::ncclAllReduce) all_reduce = nullptr;
  decltype(&::ncclBroadcast) broadcast = nullptr;
  decltype(&::ncclAllGather) all_gather = nullptr;

  // Whether this NCCL is major.minor or newer.
  bool at_least(int want_major, int want_minor) const {
    return major > want_major || (major == want_major && minor >= want_minor);
  }
};

// NCCL, searched and opened on the first call (thread-safe); handle is NULL when it was not
// found, with the reason.
const library& nccl();

// NCCL's text for a result: ncclGetErrorString, and ncclGetLastError's message when NCCL has one
// (comm may be NULL).
std::string error_text(const library& lib, ncclResult_t result, ncclComm_t comm);

}  // namespace nnp::nccl
