// errors.cpp — maps cudaError_t, cublasStatus_t and cudnnStatus_t to nnp_status, with the
// library's own message text (cudaGetErrorString, cublasGetStatusString, cudnnGetErrorString)
// and the failing call. This is the only file that knows the vendor codes.
#include "errors.hpp"

#include <cstring>

namespace nnp::cuda {

nnp_status status_of(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return NNP_STATUS_OK;
    case cudaErrorMemoryAllocation:
      return NNP_STATUS_OUT_OF_MEMORY;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevice:
    case cudaErrorInvalidResourceHandle:
      return NNP_STATUS_INVALID_ARGUMENT;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInitializationError:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorStubLibrary:
    case cudaErrorCallRequiresNewerDriver:
    case cudaErrorSystemNotReady:
      return NNP_STATUS_UNAVAILABLE;
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorNotSupported:
      return NNP_STATUS_UNSUPPORTED;
    default:
      return NNP_STATUS_DEVICE_ERROR;
  }
}

nnp_status status_of(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return NNP_STATUS_OK;
    case CUBLAS_STATUS_ALLOC_FAILED:
      return NNP_STATUS_OUT_OF_MEMORY;
    case CUBLAS_STATUS_INVALID_VALUE:
      return NNP_STATUS_INVALID_ARGUMENT;
    case CUBLAS_STATUS_NOT_SUPPORTED:
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return NNP_STATUS_UNSUPPORTED;
    case CUBLAS_STATUS_NOT_INITIALIZED:
    case CUBLAS_STATUS_LICENSE_ERROR:
      return NNP_STATUS_UNAVAILABLE;
    default:
      return NNP_STATUS_DEVICE_ERROR;
  }
}

// cuDNN 9 groups its codes by thousands: 1xxx setup, 2xxx bad parameter, 3xxx not supported,
// 4xxx internal, 5xxx execution failed.
nnp_status status_of(cudnnStatus_t s) {
  const int code = static_cast<int>(s);
  if (code == 0) return NNP_STATUS_OK;
  if (code == static_cast<int>(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED) ||
      code == static_cast<int>(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED))
    return NNP_STATUS_OUT_OF_MEMORY;
  if (code == static_cast<int>(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER) ||
      code == static_cast<int>(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART) ||
      code == static_cast<int>(CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE) ||
      code == static_cast<int>(CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING))
    return NNP_STATUS_UNAVAILABLE;
  switch (code / 1000) {
    case 1:
      return NNP_STATUS_UNAVAILABLE;
    case 2:
      return NNP_STATUS_INVALID_ARGUMENT;
    case 3:
      return NNP_STATUS_UNSUPPORTED;
    default:
      return NNP_STATUS_DEVICE_ERROR;
  }
}

namespace {
std::string cuda_version(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}
}  // namespace

std::string discovery_failure_reason(cudaError_t e) {
  // The runtime loads the driver library (libcuda.so.1) itself; the plugin never links or opens
  // it. Without it the runtime's error reads "CUDA driver version is insufficient for CUDA
  // runtime version", which misleads on a machine that has no driver at all.
  int driver = 0;
  const bool known = cudaDriverGetVersion(&driver) == cudaSuccess;
  (void)cudaGetLastError();
  if (known && driver == 0) return "no NVIDIA driver found (libcuda.so.1 could not be loaded)";
  std::string reason = cudaGetErrorString(e);
  int runtime = 0;
  if (e == cudaErrorInsufficientDriver && known && cudaRuntimeGetVersion(&runtime) == cudaSuccess)
    reason += " (the driver supports CUDA " + cuda_version(driver) + ", this plugin's runtime is " +
              cuda_version(runtime) + ")";
  return reason;
}

namespace {
const char* base_name(const char* file) {
  const char* slash = std::strrchr(file, '/');
  return slash != nullptr ? slash + 1 : file;
}
}  // namespace

void throw_cuda(cudaError_t e, const char* call, const char* file, int line) {
  // Clear the (non-sticky) error state of this thread so it does not leak into the next call.
  (void)cudaGetLastError();
  fail(status_of(e),
       format("CUDA error %d (%s: %s) in %s at %s:%d", static_cast<int>(e), cudaGetErrorName(e),
              cudaGetErrorString(e), call, base_name(file), line));
}

void throw_cublas(cublasStatus_t s, const char* call, const char* file, int line) {
  fail(status_of(s),
       format("cuBLAS error %d (%s: %s) in %s at %s:%d", static_cast<int>(s),
              cublasGetStatusName(s), cublasGetStatusString(s), call, base_name(file), line));
}

void throw_cudnn(cudnnStatus_t s, const char* call, const char* file, int line) {
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  fail(status_of(s),
       format("cuDNN error %d (%s%s%s) in %s at %s:%d", static_cast<int>(s), cudnnGetErrorString(s),
              detail[0] ? ": " : "", detail, call, base_name(file), line));
}

}  // namespace nnp::cuda
