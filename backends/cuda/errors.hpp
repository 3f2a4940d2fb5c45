// errors.hpp — the one place where CUDA runtime, cuBLAS and cuDNN status codes become nnplug
// statuses (errors.cpp). Every library call goes through NNP_CUDA_CHECK / NNP_CUBLAS_CHECK /
// NNP_CUDNN_CHECK, which throw nnp::error carrying the mapped status, the library's own message
// and the call that failed; nnp::guard at the plugin boundary turns that into a status.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <nnplug/kit/error.hpp>

#include <string>

namespace nnp::cuda {

nnp_status status_of(cudaError_t e);
nnp_status status_of(cublasStatus_t s);
nnp_status status_of(cudnnStatus_t s);

// The reason device discovery reports when cudaGetDeviceCount failed with e: "no NVIDIA driver
// found" when there is no driver at all (cudaDriverGetVersion gives 0: libcuda.so.1 could not be
// loaded), else the runtime's text for e, with both CUDA versions when the driver is too old.
std::string discovery_failure_reason(cudaError_t e);

[[noreturn]] void throw_cuda(cudaError_t e, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas(cublasStatus_t s, const char* call, const char* file, int line);
[[noreturn]] void throw_cudnn(cudnnStatus_t s, const char* call, const char* file, int line);

}  // namespace nnp::cuda

// The body of the CHECK macros: evaluates call once and, unless it returned `ok`, throws
// through nnp::cuda::thrower with the call's text (call_text) and the place.
#define NNP_CUDA_CHECK_STATUS_(Status, ok, thrower, call, call_text)                 \
  do {                                                                               \
    const Status nnp_s_ = (call);                                                    \
    if (nnp_s_ != (ok)) ::nnp::cuda::thrower(nnp_s_, call_text, __FILE__, __LINE__); \
  } while (0)

#define NNP_CUDA_CHECK(call) \
  NNP_CUDA_CHECK_STATUS_(cudaError_t, cudaSuccess, throw_cuda, call, #call)

// After a kernel launch: reports launch-configuration errors at once (errors of the running
// kernel surface at stream_synchronize).
#define NNP_CUDA_CHECK_LAUNCH() NNP_CUDA_CHECK(cudaGetLastError())

#define NNP_CUBLAS_CHECK(call) \
  NNP_CUDA_CHECK_STATUS_(cublasStatus_t, CUBLAS_STATUS_SUCCESS, throw_cublas, call, #call)

#define NNP_CUDNN_CHECK(call) \
  NNP_CUDA_CHECK_STATUS_(cudnnStatus_t, CUDNN_STATUS_SUCCESS, throw_cudnn, call, #call)
