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
//
// Errors found by kernels (kernel_error_record below): a value an op reads on the device when
// it runs (the step input of adam_update and dropout, ABI 1.4) may be invalid; the kernel then
// writes nothing and records the error in mapped pinned host memory, and stream_synchronize
// reports it (INVALID_ARGUMENT, the text of the cpu and reference backends). Kernels launched
// directly record into their stream's record; kernels recorded in a graph record into their
// device's record, because a graph may be launched on any stream of its device and may outlive
// the stream that captured it. stream::synchronize checks the stream's record and, when the
// stream has launched graphs since its last check, the device's: an error of a graph is
// reported by the next synchronisation of a stream of that device that launched a graph (the
// launching stream's unless several streams launch graphs at once). Streams that launch no
// graphs (e.g. libnnplug's internal copy streams) never report a graph's error.
#pragma once

#include "errors.hpp"

#include <nnplug/nnplug_plugin.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_set>
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

// Every device_free bumps its device's count: caches of pointers checked to be memory of the
// device (stream::known_device_pointer) are stale from then on.
uint64_t device_free_count(int32_t device);

// ---- errors found by kernels --------------------------------------------------------------------
// What a kernel found wrong (kernel_error_record::code); each names the op and the rule, and
// check_kernel_errors turns it into the message of the cpu and reference backends.
enum kernel_error : int {
  kKernelErrorNone = 0,
  kKernelErrorAdamStep = 1,             // adam_update: step not a whole number >= 1
  kKernelErrorDropoutForwardStep = 2,   // dropout_forward: step not a whole number >= 0
  kKernelErrorDropoutBackwardStep = 3,  // dropout_backward: step not a whole number >= 0
};

// In mapped pinned host memory (cudaHostAlloc, cudaHostAllocMapped): written by kernels through
// its device address, read and cleared by the host after cudaStreamSynchronize. The first error
// wins: a kernel claims the record (atomicCAS on `claimed`), writes `value`, fences, then writes
// `code`; the host reads `code`, then `value`, then clears `code` and `claimed`. A kernel that
// finds the record claimed drops its error (an earlier one is pending). Host-side accesses are
// atomic (__atomic builtins); device atomics on host memory are atomic among the GPU's threads
// only, so an error of work queued after a synchronisation began, landing while that
// synchronisation reads the record, may be reported late or dropped (never invented).
struct kernel_error_record {
  int claimed;   // 0, or 1 once a kernel owns the record
  int code;      // kernel_error; 0 until the owner has written value
  double value;  // the offending value (a float step read as double: exact)
};

#ifdef __CUDACC__
// Records an error from device code (any one thread; the others may call it too). `r` may be
// NULL (no record: the error is dropped).
__device__ inline void report_kernel_error(kernel_error_record* r, int code, double value) {
  if (r == nullptr || atomicCAS(&r->claimed, 0, 1) != 0) return;
  *reinterpret_cast<volatile double*>(&r->value) = value;
  __threadfence_system();
  *reinterpret_cast<volatile int*>(&r->code) = code;
  __threadfence_system();
}

// A step counter as the cpu and reference backends accept it (nnp::checked_step of
// nnplug/kit/step.hpp): a whole number >= lowest and below 2^64 (NaN and infinities fail).
__device__ inline bool valid_step(float step, float lowest) {
  return isfinite(step) && step >= lowest && step < 18446744073709551616.0f && floorf(step) == step;
}
#endif

// Scratch slots of a stream; one op may use several at once, each for one purpose.
enum scratch_slot : int {
  kScratchWorkspace = 0,  // cuDNN workspace
  kScratchTemp0 = 1,      // temporary tensors (padded input, per-row partials, ...)
  kScratchTemp1 = 2,      // more temporaries (conv2d: float32 copies of 16-bit operands)
  kScratchGuard = 3,      // the convolutions' non-finite flag (written on the side stream)
  kScratchTemp2 = 4,      // 16-bit attention: float32 copies of the operands, or cuDNN's lse
  kScratchSlots = 5
};

struct stream {
  int32_t device = 0;
  cudaStream_t handle = nullptr;
  bool allow_tf32 = false;

  // Handles bound to this stream, created on first use.
  cublasHandle_t blas();
  cublasLtHandle_t blas_lt();  // cuBLASLt (gemm.cpp's bias epilogue)
  cudnnHandle_t dnn();
  // A device buffer of at least `bytes` for `slot` (grow-only; growing waits for the stream
  // so no queued work still uses the old buffer). Valid until the next call for that slot.
  void* scratch(int slot, size_t bytes);
  // As scratch, but NULL instead of an OUT_OF_MEMORY error (the caller has another way, e.g. an
  // algorithm with a smaller workspace).
  void* try_scratch(int slot, size_t bytes);
  void set_allow_tf32(bool on);
  // Work beside the caller's stream: fork() makes the side stream (created on first use, and by
  // begin_capture) wait for everything queued on `handle` so far, side() is where that work is
  // queued, join() makes `handle` wait for everything queued on the side stream. An op that
  // forks joins before it returns (conv.cpp's side_work does it even when the op throws), so
  // callers see one stream, and under capture the side work becomes a branch of the graph.
  void fork();
  cudaStream_t side() const { return side_; }
  void join();
  // The device address of the record that kernels queued now report errors to: the stream's,
  // or while capturing the device's (see the file comment). Never NULL after create_stream.
  kernel_error_record* kernel_errors() const {
    return capturing_ ? device_errors_ : stream_errors_;
  }
  // cudaStreamSynchronize, then the errors kernels recorded (see the file comment): throws
  // INVALID_ARGUMENT (cpu's message) for an error in the stream's record, else in the device's
  // when graphs launched on this stream before the synchronisation began; the record read is
  // cleared. May run on another thread than the stream's user (libnnplug waits for a device's
  // streams on behalf of nnp_free and nnp_memcpy).
  void synchronize();
  // Whether data pointer p was found to be memory of this device before (by the caller, with
  // cudaPointerGetAttributes) and no device memory was freed since; remember_device_pointer
  // adds one (the cache is bounded: it is emptied when full).
  bool known_device_pointer(const void* p);
  void remember_device_pointer(const void* p);
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
  cublasLtHandle_t cublas_lt_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  cudaStream_t side_ = nullptr;  // fork/join (created with the greatest priority)
  cudaEvent_t fork_event_ = nullptr, join_event_ = nullptr;
  void create_side();
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
  // Error records (device addresses, equal to the host's under unified addressing): the
  // stream's own (cudaHostAlloc, freed by destroy) and its device's (lives with the process).
  kernel_error_record* stream_errors_ = nullptr;
  kernel_error_record* stream_errors_host_ = nullptr;
  kernel_error_record* device_errors_ = nullptr;
  kernel_error_record* device_errors_host_ = nullptr;
  // Data pointers found to be memory of this device, valid while device_free_count(device)
  // equals checked_frees_.
  std::unordered_set<const void*> checked_pointers_;
  uint64_t checked_frees_ = 0;
  // Graph launches on this stream whose errors (in the device's record) no synchronisation has
  // checked yet: launch_graph adds, synchronize subtracts those queued before it began.
  std::atomic<uint64_t> graph_launches_{0};

  friend stream* create_stream(int32_t device);
  friend void launch_graph(const graph& g, stream& s);
};

stream* create_stream(int32_t device);
// Launches a graph of end_capture on a stream of its device.
void launch_graph(const stream::graph& g, stream& s);
// Releases a graph and its buffers (libnnplug waited for the device's streams).
void destroy_graph(stream::graph* g);

}  // namespace nnp::cuda
