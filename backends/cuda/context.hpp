// context.hpp — devices and streams of the CUDA backend.
//
// A stream is a cudaStream_t (cudaStreamNonBlocking) that owns its cuBLAS and cuDNN handles
// (created on first use, bound to the stream), grow-only device scratch buffers (library
// workspace and temporaries), and a ring of pinned staging buffers for copies from pageable host
// memory.
// One stream is used by one thread at a time (nnplug_plugin.h), so a stream needs no lock.
//
// Device memory (mem_alloc, scratch) comes from one stream-ordered memory pool per device that
// keeps freed memory (release threshold UINT64_MAX): cudaMallocFromPoolAsync / cudaFreeAsync,
// never the device-synchronising cudaFree (docs/cuda-backend.md, "Memory").
#pragma once

#include "errors.hpp"

#include <nnplug/nnplug_plugin.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nnp::cuda {

// Devices found once per process: the driver's GPUs (cudaGetDeviceCount, cudaGetDeviceProperties)
// when cuBLAS and cuDNN could be opened (lib_loader.hpp); else none, with the reason.
struct device_info {
  std::string name;         // "cuda:<i>"
  std::string description;  // cudaDeviceProp::name
  uint64_t memory_bytes = 0;
  int32_t multiprocessors = 0;
  int32_t compute_major = 0, compute_minor = 0;
};
struct device_registry {
  std::vector<device_info> devices;
  std::string reason;  // why there are no devices (empty when there are some)
};
const device_registry& devices();
// Throws INVALID_ARGUMENT unless 0 <= index < number of devices; then makes it current.
void use_device(int32_t index);

// Device memory of mem_alloc: from the device's pool, ready for any stream when it returns.
void* device_alloc(int32_t device, size_t bytes);
// Returns memory of device_alloc to the pool. The memory must be idle (libnnplug synchronises
// the device's streams first); the free is queued on the device's allocation stream.
void device_free(int32_t device, void* ptr);
// Hands the cached memory of every pool back to the driver (plugin shutdown).
void trim_device_pools();

// Scratch slots of a stream; one op may use several at once, each for one purpose.
enum scratch_slot : int {
  kScratchWorkspace = 0,  // cuDNN workspace
  kScratchTemp0 = 1,      // temporary tensors (padded input, per-row partials, ...)
  kScratchTemp1 = 2,      // more temporaries (conv2d: float32 copies of 16-bit operands)
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
  // As scratch, but NULL instead of an OUT_OF_MEMORY error (the caller has another way, e.g. an
  // algorithm with a smaller workspace).
  void* try_scratch(int slot, size_t bytes);
  void set_allow_tf32(bool on);
  // Copies in stream order; pageable host memory is staged through pinned memory.
  void memcpy_async(void* dst, const void* src, size_t bytes, int32_t kind);
  // Waits for queued work and releases everything (first error is thrown after cleanup). A
  // capture in progress is discarded first.
  void destroy();

  // Graph capture (docs/cuda-backend.md, "Graphs"). begin_capture creates the library handles
  // (they allocate), sets the stream's scratch aside and starts cudaStreamBeginCapture in relaxed
  // mode. While capturing, scratch comes from buffers the capture owns: allocated outside stream
  // order (device_alloc) and never freed during it, since recorded kernels keep their addresses.
  // end_capture instantiates the graph, which takes those buffers; the stream gets its own
  // scratch back, so eager work and launches never share a buffer.
  bool capturing() const { return capturing_; }
  void begin_capture();
  struct graph {
    int32_t device = 0;
    cudaGraphExec_t exec = nullptr;
    std::vector<void*> buffers;  // device_alloc memory, freed by destroy_graph
  };
  graph* end_capture();

 private:
  cublasHandle_t cublas_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  void* scratch_ptr_[kScratchSlots] = {};
  size_t scratch_size_[kScratchSlots] = {};
  cudaMemPool_t pool_ = nullptr;  // the pool scratch comes from (NULL: cudaMalloc, no pools)
  // Pinned staging for copies from pageable host memory: a ring, used in turn (memcpy_async).
  struct staging_buffer {
    void* ptr = nullptr;
    size_t size = 0;
    cudaEvent_t free = nullptr;  // recorded after the last DMA out of ptr
  };
  static constexpr int kStagingBuffers = 4;
  staging_buffer staging_[kStagingBuffers];
  int staging_next_ = 0;
  bool host_is_pinned(const void* p) const;
  // Capture state: the stream's own scratch while it is set aside, and retired capture buffers.
  bool capturing_ = false;
  void* eager_ptr_[kScratchSlots] = {};
  size_t eager_size_[kScratchSlots] = {};
  std::vector<void*> capture_buffers_;
  // Ends a capture: stops it (returning the recorded graph, or NULL after an error), gives the
  // stream its scratch back and hands the capture's buffers to *buffers.
  cudaError_t stop_capture(cudaGraph_t* recorded, std::vector<void*>* buffers);
  // cudaSuccess, cudaErrorMemoryAllocation, or another error (thrown by the callers).
  cudaError_t grow_scratch(int slot, size_t bytes);
};

stream* create_stream(int32_t device);
// Launches a graph of end_capture on a stream of its device.
void launch_graph(const stream::graph& g, stream& s);
// Releases a graph and its buffers (libnnplug waited for the device's streams).
void destroy_graph(stream::graph* g);

}  // namespace nnp::cuda
