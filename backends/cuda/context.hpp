// context.hpp — devices and streams of the CUDA backend.
//
// A stream is a cudaStream_t (cudaStreamNonBlocking) that owns its cuBLAS and cuDNN handles
// (created on first use, bound to the stream), grow-only device scratch buffers (library
// workspace and temporaries), and a pinned staging buffer for copies from pageable host memory.
// One stream is used by one thread at a time (nnplug_plugin.h), so a stream needs no lock.
#pragma once

#include "errors.hpp"

#include <nnplug/nnplug_plugin.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nnp::cuda {

// Devices found once per process by cudaGetDeviceCount / cudaGetDeviceProperties.
struct device_info {
  std::string name;         // "cuda:<i>"
  std::string description;  // cudaDeviceProp::name
  uint64_t memory_bytes = 0;
  int32_t multiprocessors = 0;
  int32_t compute_major = 0, compute_minor = 0;
};
struct device_registry {
  std::vector<device_info> devices;
  const char* reason = nullptr;  // why there are no devices (static string of the runtime)
};
const device_registry& devices();
// Throws INVALID_ARGUMENT unless 0 <= index < number of devices; then makes it current.
void use_device(int32_t index);

// Scratch slots of a stream; one op may use several at once, each for one purpose.
enum scratch_slot : int {
  kScratchWorkspace = 0,  // cuDNN workspace
  kScratchTemp0 = 1,      // temporary tensors (padded input, per-row partials, ...)
  kScratchTemp1 = 2,
  kScratchSlots = 3
};

struct stream {
  int32_t device = 0;
  cudaStream_t handle = nullptr;
  bool allow_tf32 = false;

  // Handles bound to this stream, created on first use.
  cublasHandle_t blas();
  cudnnHandle_t dnn();
  // A device buffer of at least `bytes` for `slot` (grow-only; growing waits for the stream
  // so no queued work still uses the old buffer). Valid until the next call for that slot.
  void* scratch(int slot, size_t bytes);
  void set_allow_tf32(bool on);
  // Copies in stream order; pageable host memory is staged through pinned memory.
  void memcpy_async(void* dst, const void* src, size_t bytes, int32_t kind);
  // Waits for queued work and releases everything (first error is thrown after cleanup).
  void destroy();

 private:
  cublasHandle_t cublas_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  void* scratch_ptr_[kScratchSlots] = {};
  size_t scratch_size_[kScratchSlots] = {};
  void* staging_ = nullptr;  // pinned host buffer
  size_t staging_size_ = 0;
  cudaEvent_t staging_free_ = nullptr;  // recorded after the last DMA out of staging_
  bool host_is_pinned(const void* p) const;
};

stream* create_stream(int32_t device);

}  // namespace nnp::cuda
