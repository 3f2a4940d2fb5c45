// nnplug/cuda_libs/library_search.hpp — the run-time search for a CUDA library, shared by the
// plugins that open one with dlopen instead of linking it: cuBLAS and cuDNN of the cuda backend
// (backends/cuda/lib_loader.hpp), NCCL of the nccl communication plugin (comm/nccl). Built once,
// as the static library nnplug_cuda_libs (plugins/cuda_libs), which both plugins link; it
// links no CUDA library itself (libdl only), so neither plugin gains a DT_NEEDED entry.
//
// Search order for one library (docs/cuda-backend.md), the steps NNPLUG_CUDA_LIB_SEARCH names
// (default "path,soname,pip,build"):
//   path   — each folder of NNPLUG_CUDA_LIB_PATH (':'-separated), <folder>/<soname>;
//   soname — dlopen("<soname>") through the dynamic linker: already loaded, LD_LIBRARY_PATH,
//            the plugin's RUNPATH ($ORIGIN), /etc/ld.so.cache, the default folders;
//   pip    — Python wheels: <prefix>/lib*/python3*/{site,dist}-packages/nvidia/<subdir>/<soname>
//            for the prefixes $VIRTUAL_ENV, $CONDA_PREFIX, the parent of every $PATH folder
//            holding python3, ~/.local, /usr/local, /usr;
//   build  — the folder where CMake found the library at configure time.
// A candidate is used when dlopen succeeds, every needed symbol is there and the library's own
// version check passes (e.g. a cuDNN built for another CUDA major is skipped); the library
// found is logged at level info with its path, the step and its version (host_log of the
// plugin kit). Every variable above is read with secure_getenv: in a set-uid or set-gid process
// (AT_SECURE) none of them counts, so no library is opened from a folder the calling user names
// (docs/security.md).
#pragma once

#include <string>
#include <vector>

namespace nnp::cuda {

// A library a plugin opens at run time.
struct library_spec {
  const char* title;                     // "cuBLAS", for messages
  const char* soname;                    // "libcublas.so.13"
  std::vector<std::string> pip_subdirs;  // below site-packages/nvidia: "cu13/lib", "cublas/lib"
  const char* build_dir;                 // folder found at configure time, or ""
  const char* const* symbols;            // every function the plugin calls; NULL-terminated
  // Checks an opened candidate (versions): "" when usable, else why not.
  std::string (*check)(void* handle);
  // The version of the library opened ("13.1.0"), for the log line that says where it was found.
  std::string (*version)(void* handle);
};

// The result of a search. The handle is never dlclose'd (the library stays mapped for the
// life of the process: the cuda backend is linked -z nodelete).
struct loaded_library {
  void* handle = nullptr;
  std::string path;    // the file opened (as the dynamic linker names it)
  std::string reason;  // when handle is NULL: "<title> not found: ..." with every place tried
};

loaded_library open_library(const library_spec& spec);

// The address of `name` in `lib`, or NULL when the library is not open or lacks it.
void* library_symbol(const loaded_library& lib, const char* name);

// True when the environment variable is set to a non-empty value other than "0".
bool env_flag(const char* name);

}  // namespace nnp::cuda

// Defines the C function `name` (declared by the library's header) as a call through the
// library's symbol, resolved with dlsym on first call. `fail` is returned when the library is
// not open (nothing calls a wrapper before device discovery opened it). Needs <atomic>.
#define NNP_CUDA_LAZY_FUNCTION(library, fail, ret, name, params, args) \
  extern "C" ret name params {                                         \
    static std::atomic<void*> nnp_fn_{nullptr};                        \
    void* nnp_p_ = nnp_fn_.load(std::memory_order_acquire);            \
    if (nnp_p_ == nullptr) {                                           \
      nnp_p_ = ::nnp::cuda::library_symbol(library(), #name);          \
      if (nnp_p_ == nullptr) return fail;                              \
      nnp_fn_.store(nnp_p_, std::memory_order_release);                \
    }                                                                  \
    return reinterpret_cast<ret(*) params>(nnp_p_) args;               \
  }
