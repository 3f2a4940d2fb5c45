// context.cpp — device discovery (once per process), device memory from a stream-ordered pool
// per device, and the stream object: lazily created cuBLAS/cuDNN handles bound to the stream,
// grow-only scratch (no allocation per op once warm), and a ring of pinned staging buffers so
// copies from pageable host memory stay asynchronous for the caller. Also the records kernels
// report errors to (context.hpp): one per stream and one per device, in mapped pinned memory.
#include "context.hpp"
#include "ops.hpp"

#include "lib_loader.hpp"

#include <nnplug/kit/step.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>

namespace nnp::cuda {

std::string open_cuda_libraries() {
  std::string reasons;
  for (const loaded_library* lib : {&cublas_library(), &cudnn_library()})
    if (lib->handle == nullptr) reasons += (reasons.empty() ? "" : "; ") + lib->reason;
  return reasons;
}

namespace {

// The order of the checks decides the reason a machine without devices gets:
//  1. the driver (cudaGetDeviceCount): no driver, a driver too old, or no GPU → that reason
//     (discovery_failure_reason: "no NVIDIA driver found" without a driver);
//  2. only then cuBLAS and cuDNN (lib_loader.hpp): a GPU but a library missing → its reason.
// So a process on a machine without a GPU never maps cuBLAS/cuDNN (hundreds of MiB), and their
// absence there is not what the user is told. NNPLUG_CUDA_PROBE_LIBRARIES=1 (diagnostics and the
// tests, docs/cuda-backend.md) opens the libraries first, so their search can be checked on a
// machine without a GPU: a library missing is then the reason even without a driver.
device_registry discover() {
  device_registry reg;
  const bool libraries_first = env_flag("NNPLUG_CUDA_PROBE_LIBRARIES");
  if (libraries_first) {
    reg.reason = open_cuda_libraries();
    if (!reg.reason.empty()) return reg;
  }
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    reg.reason = discovery_failure_reason(e);
    return reg;
  }
  if (count <= 0) {
    reg.reason = "no CUDA-capable device is detected";
    return reg;
  }
  if (!libraries_first) {
    reg.reason = open_cuda_libraries();
    if (!reg.reason.empty()) return reg;
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

// ---- device memory -----------------------------------------------------------------------------
// One per device, set up on first use: a memory pool of our own (so the process-wide default
// pool's settings, which other libraries may use, stay as they are) that keeps what is freed
// (release threshold UINT64_MAX: a freed block is reused, not handed back to the driver), and a
// non-blocking "allocation stream" on which mem_alloc and mem_free queue their operations.
// Devices without memory-pool support use cudaMalloc / cudaFree.
struct device_memory {
  std::once_flag once;
  cudaError_t init_error = cudaSuccess;
  cudaMemPool_t pool = nullptr;
  cudaStream_t stream = nullptr;
  std::atomic<uint64_t> frees{0};  // device_free calls so far (device_free_count)
  // The device's kernel error record (context.hpp), allocated by the first create_stream.
  std::once_flag errors_once;
  cudaError_t errors_error = cudaSuccess;
  kernel_error_record* errors_host = nullptr;
  kernel_error_record* errors_device = nullptr;
};

std::atomic<bool> g_memory_used{false};

device_memory* all_memory() {
  static const std::unique_ptr<device_memory[]> all(
      new device_memory[std::max<size_t>(devices().devices.size(), 1)]);
  return all.get();
}

void init_memory(int32_t device, device_memory& m) {
  int supported = 0;
  cudaError_t e = cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking);
  if (e == cudaSuccess && supported != 0) {
    cudaMemPoolProps props;
    std::memset(&props, 0, sizeof(props));
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t pool = nullptr;
    e = cudaMemPoolCreate(&pool, &props);
    if (e == cudaSuccess) {
      uint64_t keep_all = UINT64_MAX;
      e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all);
      if (e == cudaSuccess)
        m.pool = pool;
      else
        (void)cudaMemPoolDestroy(pool);
    }
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    m.init_error = e;
  }
}

// The memory state of `device` (valid and current).
device_memory& memory_of(int32_t device) {
  device_memory& m = all_memory()[device];
  std::call_once(m.once, [&] { init_memory(device, m); });
  if (m.init_error != cudaSuccess)
    throw_cuda(m.init_error, "setting up the device memory pool", __FILE__, __LINE__);
  g_memory_used.store(true, std::memory_order_release);
  return m;
}

// Allocates in `stream`'s order from the pool (or with cudaMalloc). Out of memory, it waits for
// the device (frees queued on other streams complete), hands the pool's unused memory back to
// the driver and tries once more. Returns the runtime's status; *p is set on success.
cudaError_t alloc_on(device_memory& m, size_t bytes, cudaStream_t stream, void** p) {
  if (m.pool == nullptr) return cudaMalloc(p, bytes);
  cudaError_t e = cudaMallocFromPoolAsync(p, bytes, m.pool, stream);
  if (e != cudaErrorMemoryAllocation) return e;
  (void)cudaGetLastError();
  e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaMemPoolTrimTo(m.pool, 0);
  if (e != cudaSuccess) return e;
  return cudaMallocFromPoolAsync(p, bytes, m.pool, stream);
}

// A zeroed kernel error record in mapped pinned host memory (portable: pinned for every
// context) and its device address; on failure nothing stays allocated.
cudaError_t alloc_error_record(kernel_error_record** host, kernel_error_record** dev) {
  void* p = nullptr;
  cudaError_t e =
      cudaHostAlloc(&p, sizeof(kernel_error_record), cudaHostAllocMapped | cudaHostAllocPortable);
  if (e != cudaSuccess) return e;
  std::memset(p, 0, sizeof(kernel_error_record));
  void* d = nullptr;
  e = cudaHostGetDevicePointer(&d, p, 0);
  if (e != cudaSuccess) {
    (void)cudaFreeHost(p);
    return e;
  }
  *host = static_cast<kernel_error_record*>(p);
  *dev = static_cast<kernel_error_record*>(d);
  return cudaSuccess;
}

// Throws the error a kernel recorded: INVALID_ARGUMENT with the message of nnp::checked_step,
// the check of the cpu and reference backends, for the value the kernel refused.
[[noreturn]] void throw_kernel_error(int code, double value) {
  const float step = static_cast<float>(value);  // a float read as double: exact
  switch (code) {
    case kKernelErrorAdamStep:
      (void)nnp::checked_step("adam_update", step, 1.0f);
      break;
    case kKernelErrorDropoutForwardStep:
      (void)nnp::checked_step("dropout_forward", step, 0.0f);
      break;
    case kKernelErrorDropoutBackwardStep:
      (void)nnp::checked_step("dropout_backward", step, 0.0f);
      break;
    default:
      fail(NNP_STATUS_INTERNAL, format("a kernel recorded the unknown error code %d", code));
  }
  fail(NNP_STATUS_INTERNAL,
       format("a kernel refused the step %.9g, which is valid (error code %d)", value, code));
}

}  // namespace

const device_registry& devices() {
  static const device_registry reg = discover();
  return reg;
}

void* device_alloc(int32_t device, size_t bytes) {
  device_memory& m = memory_of(device);
  void* p = nullptr;
  NNP_CUDA_CHECK(alloc_on(m, bytes, m.stream, &p));
  // Usable on every stream once the allocation stream has reached it (at once when the pool
  // had the memory; the wait is short either way, and far shorter than a cudaMalloc).
  if (m.pool != nullptr) {
    const cudaError_t e = cudaStreamSynchronize(m.stream);
    if (e != cudaSuccess) {
      (void)cudaFreeAsync(p, m.stream);
      NNP_CUDA_CHECK(e);
    }
  }
  return p;
}

void device_free(int32_t device, void* ptr) {
  device_memory& m = memory_of(device);
  // Checked pointers (stream::known_device_pointer) may name this memory: stale from now on.
  m.frees.fetch_add(1, std::memory_order_acq_rel);
  if (m.pool == nullptr) {
    NNP_CUDA_CHECK(cudaFree(ptr));
    return;
  }
  // No device-wide synchronisation: the block goes back to the pool when the allocation stream
  // reaches this point; the caller guarantees no queued work still uses it.
  NNP_CUDA_CHECK(cudaFreeAsync(ptr, m.stream));
}

void trim_device_pools() {
  if (!g_memory_used.load(std::memory_order_acquire)) return;
  device_memory* all = all_memory();
  for (size_t i = 0; i < devices().devices.size(); ++i) {
    device_memory& m = all[i];
    if (m.pool == nullptr) continue;
    if (cudaSetDevice(static_cast<int>(i)) != cudaSuccess ||
        cudaStreamSynchronize(m.stream) != cudaSuccess ||
        cudaMemPoolTrimTo(m.pool, 0) != cudaSuccess)
      (void)cudaGetLastError();
  }
}

void use_device(int32_t index) {
  const auto& reg = devices();
  if (index < 0 || static_cast<size_t>(index) >= reg.devices.size())
    fail(NNP_STATUS_INVALID_ARGUMENT,
         format("device index %d out of range (the cuda backend has %zu device(s))", index,
                reg.devices.size()));
  NNP_CUDA_CHECK(cudaSetDevice(index));
}

uint64_t device_free_count(int32_t device) {
  return all_memory()[device].frees.load(std::memory_order_acquire);
}

stream* create_stream(int32_t device) {
  use_device(device);
  device_memory& m = all_memory()[device];
  std::call_once(m.errors_once, [&] {
    m.errors_error = alloc_error_record(&m.errors_host, &m.errors_device);
    if (m.errors_error != cudaSuccess) (void)cudaGetLastError();
  });
  if (m.errors_error != cudaSuccess)
    throw_cuda(m.errors_error, "allocating the device's kernel error record", __FILE__, __LINE__);
  auto s = std::make_unique<stream>();
  s->device = device;
  s->device_errors_ = m.errors_device;
  s->device_errors_host_ = m.errors_host;
  NNP_CUDA_CHECK(alloc_error_record(&s->stream_errors_host_, &s->stream_errors_));
  const cudaError_t e = cudaStreamCreateWithFlags(&s->handle, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    (void)cudaFreeHost(s->stream_errors_host_);
    NNP_CUDA_CHECK(e);
  }
  return s.release();
}

void stream::synchronize() {
  // Launches counted now are complete once cudaStreamSynchronize returns; later ones (from
  // another thread) stay counted for the next synchronisation.
  const uint64_t launches = graph_launches_.load(std::memory_order_acquire);
  NNP_CUDA_CHECK(cudaStreamSynchronize(handle));
  if (launches != 0) graph_launches_.fetch_sub(launches, std::memory_order_acq_rel);
  kernel_error_record* const device_record = launches != 0 ? device_errors_host_ : nullptr;
  for (kernel_error_record* r : {stream_errors_host_, device_record}) {
    if (r == nullptr) continue;
    // The exchange hands an error to one caller (synchronisations may run on several threads).
    const int code = __atomic_exchange_n(&r->code, 0, __ATOMIC_ACQ_REL);
    if (code == kKernelErrorNone) continue;
    double value = 0;
    __atomic_load(&r->value, &value, __ATOMIC_ACQUIRE);
    __atomic_store_n(&r->claimed, 0, __ATOMIC_RELEASE);  // open for the next error
    // A graph's error waiting behind the stream's own: the next synchronisation reports it.
    if (r != device_record && device_record != nullptr &&
        __atomic_load_n(&device_record->code, __ATOMIC_ACQUIRE) != kKernelErrorNone)
      graph_launches_.fetch_add(launches, std::memory_order_acq_rel);
    throw_kernel_error(code, value);
  }
}

bool stream::known_device_pointer(const void* p) {
  const uint64_t frees = device_free_count(device);
  if (frees != checked_frees_) {
    checked_pointers_.clear();
    checked_frees_ = frees;
    return false;
  }
  return checked_pointers_.count(p) != 0;
}

void stream::remember_device_pointer(const void* p) {
  constexpr size_t kMaxCheckedPointers = 4096;
  if (checked_pointers_.size() >= kMaxCheckedPointers) checked_pointers_.clear();
  checked_pointers_.insert(p);
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

cublasLtHandle_t stream::blas_lt() {
  if (cublas_lt_ == nullptr) {
    cublasLtHandle_t h = nullptr;
    NNP_CUBLAS_CHECK(cublasLtCreate(&h));
    cublas_lt_ = h;
  }
  return cublas_lt_;
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
  // cuDNN's math type is set per convolution descriptor (conv_cudnn.cpp) from allow_tf32.
}

cudaError_t stream::grow_scratch(int slot, size_t bytes) {
  device_memory& m = memory_of(device);
  if (capturing_) {
    // Recorded kernels keep the old buffer's address: it stays, owned by the capture. The new
    // one is allocated outside the stream's order (a pool allocation on a capturing stream
    // would become a graph node).
    if (scratch_ptr_[slot] != nullptr) capture_buffers_.push_back(scratch_ptr_[slot]);
    scratch_ptr_[slot] = nullptr;
    scratch_size_[slot] = 0;
    const size_t size = std::max(bytes, kMiB);
    try {
      scratch_ptr_[slot] = device_alloc(device, size);
    } catch (const error& e) {
      return e.status() == NNP_STATUS_OUT_OF_MEMORY ? cudaErrorMemoryAllocation : cudaErrorUnknown;
    }
    scratch_size_[slot] = size;
    return cudaSuccess;
  }
  if (scratch_ptr_[slot] != nullptr) {
    // Queued work may still read the old buffer: a pool frees it in stream order; cudaFree
    // needs the stream to be idle first.
    cudaError_t e = cudaSuccess;
    if (pool_ != nullptr) {
      e = cudaFreeAsync(scratch_ptr_[slot], handle);
    } else {
      e = cudaStreamSynchronize(handle);
      if (e == cudaSuccess) e = cudaFree(scratch_ptr_[slot]);
    }
    if (e != cudaSuccess) return e;
    scratch_ptr_[slot] = nullptr;
    scratch_size_[slot] = 0;
  }
  pool_ = m.pool;
  // 1.25x the request (at least 1 MiB) so that slowly growing requests do not reallocate each
  // time; out of memory, exactly the request.
  void* p = nullptr;
  size_t size = std::max(bytes + bytes / 4, kMiB);
  cudaError_t e = alloc_on(m, size, handle, &p);
  if (e == cudaErrorMemoryAllocation && size > bytes) {
    (void)cudaGetLastError();
    size = bytes;
    e = alloc_on(m, size, handle, &p);
  }
  if (e != cudaSuccess) return e;
  scratch_ptr_[slot] = p;
  scratch_size_[slot] = size;
  return cudaSuccess;
}

void* stream::try_scratch(int slot, size_t bytes) {
  if (slot < 0 || slot >= kScratchSlots) fail(NNP_STATUS_INTERNAL, "bad scratch slot");
  if (bytes == 0) bytes = 1;
  if (scratch_size_[slot] >= bytes) return scratch_ptr_[slot];
  const cudaError_t e = grow_scratch(slot, bytes);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    return nullptr;
  }
  NNP_CUDA_CHECK(e);
  return scratch_ptr_[slot];
}

void* stream::scratch(int slot, size_t bytes) {
  void* p = try_scratch(slot, bytes);
  if (p == nullptr)
    fail(NNP_STATUS_OUT_OF_MEMORY,
         format("out of device memory for %zu bytes of scratch on cuda:%d", bytes, device));
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
  // Pageable source: copy chunk by chunk through the ring of pinned staging buffers (the caller
  // may reuse its memory at once) and DMA from there in stream order. Each buffer has an event
  // recorded after its last DMA; the host waits only for the buffer it is about to refill, which
  // was queued kStagingBuffers copies ago, so it can run that far ahead of the GPU (and a large
  // copy fills one buffer while the DMA engine drains another).
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  for (size_t done = 0; done < bytes;) {
    staging_buffer& b = staging_[staging_next_];
    staging_next_ = (staging_next_ + 1) % kStagingBuffers;
    if (b.free == nullptr)
      NNP_CUDA_CHECK(cudaEventCreateWithFlags(&b.free, cudaEventDisableTiming));
    else
      NNP_CUDA_CHECK(cudaEventSynchronize(b.free));  // its previous DMA is done
    const size_t want = std::min(bytes - done, kStagingChunk);
    if (b.size < want) {
      if (b.ptr != nullptr) NNP_CUDA_CHECK(cudaFreeHost(b.ptr));
      b.ptr = nullptr;
      b.size = 0;
      const size_t size = std::min(std::max(want, kMiB), kStagingChunk);
      NNP_CUDA_CHECK(cudaHostAlloc(&b.ptr, size, cudaHostAllocDefault));
      b.size = size;
    }
    const size_t n = std::min(bytes - done, b.size);
    std::memcpy(b.ptr, s + done, n);
    NNP_CUDA_CHECK(cudaMemcpyAsync(d + done, b.ptr, n, cudaMemcpyHostToDevice, handle));
    NNP_CUDA_CHECK(cudaEventRecord(b.free, handle));
    done += n;
  }
}

void stream::create_side() {
  if (side_ != nullptr) return;
  int least = 0, greatest = 0;
  NNP_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t side = nullptr;
  cudaEvent_t fork_event = nullptr, join_event = nullptr;
  cudaError_t e = cudaStreamCreateWithPriority(&side, cudaStreamNonBlocking, greatest);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&fork_event, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&join_event, cudaEventDisableTiming);
  if (e != cudaSuccess) {
    if (join_event != nullptr) (void)cudaEventDestroy(join_event);
    if (fork_event != nullptr) (void)cudaEventDestroy(fork_event);
    if (side != nullptr) (void)cudaStreamDestroy(side);
    NNP_CUDA_CHECK(e);
  }
  side_ = side;
  fork_event_ = fork_event;
  join_event_ = join_event;
}

void stream::fork() {
  create_side();
  NNP_CUDA_CHECK(cudaEventRecord(fork_event_, handle));
  NNP_CUDA_CHECK(cudaStreamWaitEvent(side_, fork_event_, 0));
}

void stream::join() {
  NNP_CUDA_CHECK(cudaEventRecord(join_event_, side_));
  NNP_CUDA_CHECK(cudaStreamWaitEvent(handle, join_event_, 0));
}

void stream::begin_capture() {
  if (capturing_) fail(NNP_STATUS_INVALID_ARGUMENT, "the stream is already capturing");
  (void)blas();  // the handles allocate when created: not inside the capture
  (void)blas_lt();
  (void)dnn();
  create_side();
  for (int i = 0; i < kScratchSlots; ++i) {
    eager_ptr_[i] = scratch_ptr_[i];
    eager_size_[i] = scratch_size_[i];
    scratch_ptr_[i] = nullptr;
    scratch_size_[i] = 0;
  }
  const cudaError_t e = cudaStreamBeginCapture(handle, cudaStreamCaptureModeRelaxed);
  if (e != cudaSuccess) {
    for (int i = 0; i < kScratchSlots; ++i) {
      scratch_ptr_[i] = eager_ptr_[i];
      scratch_size_[i] = eager_size_[i];
    }
    NNP_CUDA_CHECK(e);
  }
  capturing_ = true;
}

cudaError_t stream::stop_capture(cudaGraph_t* recorded, std::vector<void*>* buffers) {
  cudaGraph_t g = nullptr;
  const cudaError_t e = cudaStreamEndCapture(handle, &g);
  capturing_ = false;
  for (int i = 0; i < kScratchSlots; ++i) {
    if (scratch_ptr_[i] != nullptr) capture_buffers_.push_back(scratch_ptr_[i]);
    scratch_ptr_[i] = eager_ptr_[i];
    scratch_size_[i] = eager_size_[i];
    eager_ptr_[i] = nullptr;
    eager_size_[i] = 0;
  }
  buffers->swap(capture_buffers_);
  capture_buffers_.clear();
  *recorded = e == cudaSuccess ? g : nullptr;
  if (e != cudaSuccess && g != nullptr) (void)cudaGraphDestroy(g);
  return e;
}

stream::graph* stream::end_capture() {
  if (!capturing_) fail(NNP_STATUS_INVALID_ARGUMENT, "the stream is not capturing");
  auto out = std::make_unique<graph>();
  out->device = device;
  cudaGraph_t recorded = nullptr;
  const cudaError_t e = stop_capture(&recorded, &out->buffers);
  if (e != cudaSuccess) {
    // Nothing recorded ever ran: the capture's buffers can go at once.
    for (void* p : out->buffers) device_free(device, p);
    NNP_CUDA_CHECK(e);
  }
  const cudaError_t ie = cudaGraphInstantiate(&out->exec, recorded, 0);
  (void)cudaGraphDestroy(recorded);  // the executable graph is independent of it
  if (ie != cudaSuccess) {
    for (void* p : out->buffers) device_free(device, p);
    NNP_CUDA_CHECK(ie);
  }
  return out.release();
}

void launch_graph(const stream::graph& g, stream& s) {
  if (g.device != s.device)
    fail(NNP_STATUS_INVALID_ARGUMENT,
         format("graph of cuda:%d launched on a stream of cuda:%d", g.device, s.device));
  NNP_CUDA_CHECK(cudaGraphLaunch(g.exec, s.handle));
  s.graph_launches_.fetch_add(1, std::memory_order_acq_rel);
}

void destroy_graph(stream::graph* g) {
  std::unique_ptr<stream::graph> owned(g);
  use_device(g->device);
  const cudaError_t e = cudaGraphExecDestroy(g->exec);
  for (void* p : g->buffers) device_free(g->device, p);
  NNP_CUDA_CHECK(e);
}

void stream::destroy() {
  cudaError_t first = cudaSetDevice(device);
  auto keep = [&first](cudaError_t e) {
    if (first == cudaSuccess && e != cudaSuccess) first = e;
  };
  if (capturing_) {  // discarded: nothing it recorded ran, its buffers go at once
    cudaGraph_t recorded = nullptr;
    std::vector<void*> buffers;
    (void)stop_capture(&recorded, &buffers);
    if (recorded != nullptr) keep(cudaGraphDestroy(recorded));
    for (void* p : buffers) keep(cudaFreeAsync(p, handle));
  }
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
  if (cublas_lt_ != nullptr) {
    const cublasStatus_t s = cublasLtDestroy(cublas_lt_);
    keep_lib(status_of(s), "cublasLtDestroy", cublasGetStatusString(s));
    cublas_lt_ = nullptr;
  }
  if (cudnn_ != nullptr) {
    const cudnnStatus_t s = cudnnDestroy(cudnn_);
    keep_lib(status_of(s), "cudnnDestroy", cudnnGetErrorString(s));
    cudnn_ = nullptr;
  }
  for (int i = 0; i < kScratchSlots; ++i) {
    if (scratch_ptr_[i] != nullptr)
      keep(pool_ != nullptr ? cudaFreeAsync(scratch_ptr_[i], handle) : cudaFree(scratch_ptr_[i]));
    scratch_ptr_[i] = nullptr;
    scratch_size_[i] = 0;
  }
  for (staging_buffer& b : staging_) {  // idle: the stream was synchronised above
    if (b.ptr != nullptr) keep(cudaFreeHost(b.ptr));
    if (b.free != nullptr) keep(cudaEventDestroy(b.free));
    b = staging_buffer{};
  }
  if (side_ != nullptr) {  // its work was joined into `handle`, synchronised above
    keep(cudaStreamSynchronize(side_));
    keep(cudaStreamDestroy(side_));
    keep(cudaEventDestroy(fork_event_));
    keep(cudaEventDestroy(join_event_));
    side_ = nullptr;
    fork_event_ = join_event_ = nullptr;
  }
  if (handle != nullptr) keep(cudaStreamDestroy(handle));
  handle = nullptr;
  // An error still in the record is dropped with the stream (it was never synchronised).
  if (stream_errors_host_ != nullptr) keep(cudaFreeHost(stream_errors_host_));
  stream_errors_host_ = nullptr;
  stream_errors_ = nullptr;
  if (first != cudaSuccess) {
    (void)cudaGetLastError();
    fail(status_of(first),
         format("CUDA error while destroying a stream: %s", cudaGetErrorString(first)));
  }
  if (lib_status != NNP_STATUS_OK) fail(lib_status, lib_message);
}

// ---- row helpers (ops.hpp) ----
// What cudaPointerGetAttributes says a pointer is, for messages.
static const char* memory_type_name(cudaMemoryType type) {
  switch (type) {
    case cudaMemoryTypeUnregistered:
      return "unregistered host memory";
    case cudaMemoryTypeHost:
      return "pinned host memory";
    case cudaMemoryTypeDevice:
      return "device memory";
    case cudaMemoryTypeManaged:
      return "managed memory";
  }
  return "unknown memory";
}

// libnnplug checked that every tensor is labelled with the stream's device (kDLCUDA, its index);
// a kernel given host memory so labelled would fault and poison the CUDA context (a sticky
// error), so the data pointers are checked too: device memory of the stream's device, or
// managed memory (any device may access it). Pointers once found good are cached in the stream
// until memory of its device is freed (stream::known_device_pointer): in the steady state a
// tensor costs one hash lookup. Tensors without elements (whose data may be NULL) are skipped.
void check_tensor_memory(stream& s, const DLTensor* t, const char* role, size_t index) {
  if (t == nullptr || t->data == nullptr || numel(*t) == 0) return;
  const void* p = t->data;
  if (s.known_device_pointer(p)) return;
  cudaPointerAttributes attr{};
  const cudaError_t e = cudaPointerGetAttributes(&attr, p);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // CUDA < 11 refused host pointers with an error
    attr.type = cudaMemoryTypeUnregistered;
  }
  const bool ok = (attr.type == cudaMemoryTypeDevice && attr.device == s.device) ||
                  attr.type == cudaMemoryTypeManaged;
  if (!ok) {
    std::string what = memory_type_name(attr.type);
    if (attr.type == cudaMemoryTypeDevice) what += format(" of cuda:%d", attr.device);
    fail(NNP_STATUS_INVALID_ARGUMENT,
         format("%s %zu: data %p is not memory of cuda:%d (cudaPointerGetAttributes says %s)", role,
                index, const_cast<void*>(p), s.device, what.c_str()));
  }
  s.remember_device_pointer(p);
}

// The row kernel of a family: runs `family` on the call's stream (op_execute's c.stream), with
// the stream's device current, once every tensor's data is known to be memory of that device.
// fill and cast: every operand is a floating-point tensor (the row matches the first one only).
void check_float_operands(const op_call& c) {
  for (size_t i = 0; i < c.n_inputs + c.n_outputs; ++i) {
    const DLTensor* t = i < c.n_inputs ? c.in(i) : c.out(i - c.n_inputs);
    if (t != nullptr && !is_float_dtype(t->dtype))
      unsupported(format("dtype %s is not implemented by the cuda backend for this op",
                         dtype_name(t->dtype).c_str()));
  }
}
// copy and transpose move elements of 1, 2, 4 or 8 bytes (one lane).
void check_element_size(const op_call& c) {
  const DLTensor* x = c.in(0);
  if (x == nullptr) return;
  const int bits = x->dtype.bits;
  if (x->dtype.lanes != 1 || (bits != 8 && bits != 16 && bits != 32 && bits != 64))
    unsupported(
        format("dtype %s is not implemented by the cuda backend for this op "
               "(implemented: any 1-, 2-, 4- or 8-byte dtype)",
               dtype_name(x->dtype).c_str()));
}
void check_implemented(const char* what, int32_t v, int32_t lo, int32_t hi,
                       const char* implemented) {
  if (v < lo || v > hi)
    unsupported(format("%s %d is not implemented by the cuda backend (implemented: %s)", what, v,
                       implemented));
}

}  // namespace nnp::cuda
