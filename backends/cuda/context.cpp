// context.cpp — device discovery (once per process) and the stream object: lazily created
// cuBLAS/cuDNN handles bound to the stream, grow-only scratch (no allocation per op once warm),
// and pinned staging so copies from pageable host memory stay asynchronous for the caller.
#include "context.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

namespace nnp::cuda {

namespace {

device_registry discover() {
  device_registry reg;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    reg.reason = cudaGetErrorString(e);
    return reg;
  }
  if (count <= 0) {
    reg.reason = "no CUDA-capable device is detected";
    return reg;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop;
    e = cudaGetDeviceProperties(&prop, i);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      reg.devices.clear();
      reg.reason = cudaGetErrorString(e);
      return reg;
    }
    device_info d;
    d.name = "cuda:" + std::to_string(i);
    d.description = prop.name;
    d.memory_bytes = prop.totalGlobalMem;
    d.multiprocessors = prop.multiProcessorCount;
    d.compute_major = prop.major;
    d.compute_minor = prop.minor;
    reg.devices.push_back(std::move(d));
  }
  return reg;
}

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kStagingChunk = 16 * kMiB;

}  // namespace

const device_registry& devices() {
  static const device_registry reg = discover();
  return reg;
}

void use_device(int32_t index) {
  const auto& reg = devices();
  if (index < 0 || static_cast<size_t>(index) >= reg.devices.size())
    fail(NNP_STATUS_INVALID_ARGUMENT,
         format("device index %d out of range (the cuda backend has %zu device(s))", index,
                reg.devices.size()));
  NNP_CUDA_CHECK(cudaSetDevice(index));
}

stream* create_stream(int32_t device) {
  use_device(device);
  auto s = std::make_unique<stream>();
  s->device = device;
  NNP_CUDA_CHECK(cudaStreamCreateWithFlags(&s->handle, cudaStreamNonBlocking));
  return s.release();
}

cublasHandle_t stream::blas() {
  if (cublas_ == nullptr) {
    cublasHandle_t h = nullptr;
    NNP_CUBLAS_CHECK(cublasCreate(&h));
    cublas_ = h;
    NNP_CUBLAS_CHECK(cublasSetStream(cublas_, handle));
    NNP_CUBLAS_CHECK(
        cublasSetMathMode(cublas_, allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  }
  return cublas_;
}

cudnnHandle_t stream::dnn() {
  if (cudnn_ == nullptr) {
    cudnnHandle_t h = nullptr;
    NNP_CUDNN_CHECK(cudnnCreate(&h));
    cudnn_ = h;
    NNP_CUDNN_CHECK(cudnnSetStream(cudnn_, handle));
  }
  return cudnn_;
}

void stream::set_allow_tf32(bool on) {
  allow_tf32 = on;
  if (cublas_ != nullptr)
    NNP_CUBLAS_CHECK(
        cublasSetMathMode(cublas_, on ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  // cuDNN's math type is set per convolution descriptor (conv.cpp) from allow_tf32.
}

void* stream::scratch(int slot, size_t bytes) {
  if (slot < 0 || slot >= kScratchSlots) fail(NNP_STATUS_INTERNAL, "bad scratch slot");
  if (bytes == 0) bytes = 1;
  if (scratch_size_[slot] >= bytes) return scratch_ptr_[slot];
  if (scratch_ptr_[slot] != nullptr) {
    // Queued work may still read the old buffer.
    NNP_CUDA_CHECK(cudaStreamSynchronize(handle));
    NNP_CUDA_CHECK(cudaFree(scratch_ptr_[slot]));
    scratch_ptr_[slot] = nullptr;
    scratch_size_[slot] = 0;
  }
  const size_t size = std::max(bytes + bytes / 4, kMiB);
  void* p = nullptr;
  NNP_CUDA_CHECK(cudaMalloc(&p, size));
  scratch_ptr_[slot] = p;
  scratch_size_[slot] = size;
  return p;
}

bool stream::host_is_pinned(const void* p) const {
  cudaPointerAttributes attr;
  std::memset(&attr, 0, sizeof(attr));
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeHost || attr.type == cudaMemoryTypeManaged;
}

void stream::memcpy_async(void* dst, const void* src, size_t bytes, int32_t kind) {
  switch (kind) {
    case NNP_MEMCPY_DEVICE_TO_DEVICE:
      NNP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, handle));
      return;
    case NNP_MEMCPY_DEVICE_TO_HOST:
      // Into pageable memory the runtime completes the copy before returning; into pinned
      // memory it is asynchronous. Either way it is done when the stream is synchronised.
      NNP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, handle));
      return;
    case NNP_MEMCPY_HOST_TO_DEVICE:
      break;
    default:
      fail(NNP_STATUS_INVALID_ARGUMENT, format("unknown memcpy kind %d", kind));
  }
  if (host_is_pinned(src)) {
    NNP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, handle));
    return;
  }
  // Pageable source: copy chunk by chunk into the pinned staging buffer (the caller may reuse
  // its memory at once) and DMA from there in stream order.
  if (staging_free_ == nullptr)
    NNP_CUDA_CHECK(cudaEventCreateWithFlags(&staging_free_, cudaEventDisableTiming));
  const size_t want = std::min(bytes, kStagingChunk);
  if (staging_size_ < want) {
    NNP_CUDA_CHECK(cudaEventSynchronize(staging_free_));
    if (staging_ != nullptr) NNP_CUDA_CHECK(cudaFreeHost(staging_));
    staging_ = nullptr;
    staging_size_ = 0;
    const size_t size = std::min(std::max(want, kMiB), kStagingChunk);
    NNP_CUDA_CHECK(cudaHostAlloc(&staging_, size, cudaHostAllocDefault));
    staging_size_ = size;
  }
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(bytes - done, staging_size_);
    NNP_CUDA_CHECK(cudaEventSynchronize(staging_free_));  // previous DMA out of staging done
    std::memcpy(staging_, s + done, n);
    NNP_CUDA_CHECK(cudaMemcpyAsync(d + done, staging_, n, cudaMemcpyHostToDevice, handle));
    NNP_CUDA_CHECK(cudaEventRecord(staging_free_, handle));
    done += n;
  }
}

void stream::destroy() {
  cudaError_t first = cudaSetDevice(device);
  auto keep = [&first](cudaError_t e) {
    if (first == cudaSuccess && e != cudaSuccess) first = e;
  };
  keep(cudaStreamSynchronize(handle));
  nnp_status lib_status = NNP_STATUS_OK;
  std::string lib_message;
  // The first library handle that fails to go gives lib_status and lib_message.
  auto keep_lib = [&](nnp_status status, const char* call, const char* text) {
    if (status != NNP_STATUS_OK && lib_status == NNP_STATUS_OK) {
      lib_status = status;
      lib_message = format("%s failed: %s", call, text);
    }
  };
  if (cublas_ != nullptr) {
    const cublasStatus_t s = cublasDestroy(cublas_);
    keep_lib(status_of(s), "cublasDestroy", cublasGetStatusString(s));
    cublas_ = nullptr;
  }
  if (cudnn_ != nullptr) {
    const cudnnStatus_t s = cudnnDestroy(cudnn_);
    keep_lib(status_of(s), "cudnnDestroy", cudnnGetErrorString(s));
    cudnn_ = nullptr;
  }
  for (int i = 0; i < kScratchSlots; ++i) {
    if (scratch_ptr_[i] != nullptr) keep(cudaFree(scratch_ptr_[i]));
    scratch_ptr_[i] = nullptr;
    scratch_size_[i] = 0;
  }
  if (staging_ != nullptr) keep(cudaFreeHost(staging_));
  staging_ = nullptr;
  if (staging_free_ != nullptr) keep(cudaEventDestroy(staging_free_));
  staging_free_ = nullptr;
  if (handle != nullptr) keep(cudaStreamDestroy(handle));
  handle = nullptr;
  if (first != cudaSuccess) {
    (void)cudaGetLastError();
    fail(status_of(first),
         format("CUDA error while destroying a stream: %s", cudaGetErrorString(first)));
  }
  if (lib_status != NNP_STATUS_OK) fail(lib_status, lib_message);
}

}  // namespace nnp::cuda
