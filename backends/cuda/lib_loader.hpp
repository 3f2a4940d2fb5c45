// lib_loader.hpp — cuBLAS and cuDNN are not linked: the plugin opens them with dlopen when a GPU
// is found (context.cpp), so it loads, and reports "0 devices" with a reason, on machines without
// them. cublas_loader.cpp and cudnn_loader.cpp define every cublas* / cudnn* function the backend
// calls, with the headers' signatures; each resolves its symbol with dlsym on first call
// (NNP_CUDA_LAZY_FUNCTION). The rest of the backend calls the libraries as if they were linked.
// The search itself (open_library, its order, its messages and its log line) is the shared
// component nnplug_cuda_libs (plugins/cuda_libs, nnplug/cuda_libs/library_search.hpp), which the
// nccl communication plugin links too.
#pragma once

#include <nnplug/cuda_libs/library_search.hpp>

#include <string>

namespace nnp::cuda {

// cuBLAS (cublas_loader.cpp) and cuDNN (cudnn_loader.cpp): searched once, on first call
// (thread-safe). The wrappers call these; so does context.cpp's device discovery.
const loaded_library& cublas_library();
const loaded_library& cudnn_library();

// Opens cuBLAS and cuDNN; "" when both are usable, else the reasons of those that are not,
// joined with "; " (context.cpp).
std::string open_cuda_libraries();

}  // namespace nnp::cuda
