// nccl_library.cpp — finds and opens libnccl.so.2 (nccl_library.hpp), checks its version and
// resolves the functions the plugin calls.
#include "nccl_library.hpp"

#include <nnplug/cuda_libs/library_search.hpp>  // the run-time search

#include <nnplug/kit/error.hpp>

#include <dlfcn.h>

namespace nnp::nccl {
namespace {

#ifndef NNPLUG_NCCL_BUILD_DIR
#define NNPLUG_NCCL_BUILD_DIR ""
#endif

// Every function the plugin needs; a candidate without one of them is skipped (too old).
// ncclGetLastError (NCCL 2.13) is optional.
const char* const kSymbols[] = {"ncclGetVersion",   "ncclGetUniqueId",    "ncclCommInitRank",
                                "ncclCommDestroy",  "ncclCommAbort",      "ncclCommGetAsyncError",
                                "ncclCommCuDevice", "ncclGetErrorString", "ncclAllReduce",
                                "ncclBroadcast",    "ncclAllGather",      nullptr};

// ncclGetVersion's code: major * 1000 + minor * 100 + patch up to 2.8, major * 10000 +
// minor * 100 + patch from 2.9 (nccl.h, NCCL_VERSION).
void decode_version(int code, int* major, int* minor, int* patch) {
  if (code < 10000) {
    *major = code / 1000;
    *minor = (code % 1000) / 100;
  } else {
    *major = code / 10000;
    *minor = (code % 10000) / 100;
  }
  *patch = code % 100;
}

// The version of the library behind `handle` (its ncclGetVersion, decoded); false when it has
// no ncclGetVersion or the call fails.
bool version_of(void* handle, int* major, int* minor, int* patch) {
  auto get = reinterpret_cast<decltype(&::ncclGetVersion)>(dlsym(handle, "ncclGetVersion"));
  int code = 0;
  if (get == nullptr || get(&code) != ncclSuccess) return false;
  decode_version(code, major, minor, patch);
  return true;
}

// The soname pins the major version; the library must agree.
std::string check_nccl(void* handle) {
  int major = 0, minor = 0, patch = 0;
  if (!version_of(handle, &major, &minor, &patch)) return "ncclGetVersion failed";
  if (major != NCCL_MAJOR)
    return format("is NCCL %d.%d.%d, the plugin was built for NCCL %d", major, minor, patch,
                  NCCL_MAJOR);
  return "";
}

std::string nccl_version(void* handle) {
  int major = 0, minor = 0, patch = 0;
  if (!version_of(handle, &major, &minor, &patch)) return "unknown";
  return format("%d.%d.%d", major, minor, patch);
}

template <typename F>
void resolve(void* handle, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(handle, name));
}

library open_nccl() {
  const cuda::loaded_library found = cuda::open_library(cuda::library_spec{"NCCL",
                                                                           "libnccl.so.2",
                                                                           {"nccl/lib"},
                                                                           NNPLUG_NCCL_BUILD_DIR,
                                                                           kSymbols,
                                                                           check_nccl,
                                                                           nccl_version});
  library lib;
  lib.path = found.path;
  lib.reason = found.reason;
  if (found.handle == nullptr) return lib;
  void* h = found.handle;
  resolve(h, "ncclGetVersion", &lib.get_version);
  resolve(h, "ncclGetUniqueId", &lib.get_unique_id);
  resolve(h, "ncclCommInitRank", &lib.comm_init_rank);
  resolve(h, "ncclCommDestroy", &lib.comm_destroy);
  resolve(h, "ncclCommAbort", &lib.comm_abort);
  resolve(h, "ncclCommGetAsyncError", &lib.comm_get_async_error);
  resolve(h, "ncclCommCuDevice", &lib.comm_cu_device);
  resolve(h, "ncclGetErrorString", &lib.get_error_string);
  resolve(h, "ncclGetLastError", &lib.get_last_error);
  resolve(h, "ncclAllReduce", &lib.all_reduce);
  resolve(h, "ncclBroadcast", &lib.broadcast);
  resolve(h, "ncclAllGather", &lib.all_gather);
  int code = 0;
  lib.get_version(&code);  // succeeded in check_nccl
  decode_version(code, &lib.major, &lib.minor, &lib.patch);
  lib.version = format("%d.%d.%d", lib.major, lib.minor, lib.patch);
  lib.handle = h;
  return lib;
}

}  // namespace

const library& nccl() {
  static const library lib = open_nccl();
  return lib;
}

std::string error_text(const library& lib, ncclResult_t result, ncclComm_t comm) {
  const char* text = lib.get_error_string != nullptr ? lib.get_error_string(result) : nullptr;
  std::string out = text != nullptr ? text : format("ncclResult_t %d", static_cast<int>(result));
  if (lib.get_last_error != nullptr) {
    const char* last = lib.get_last_error(comm);
    if (last != nullptr && last[0] != '\0') out += format(" (%s)", last);
  }
  return out;
}

}  // namespace nnp::nccl
