// The CPU backend's registration file: the plugin table of libnnplug-cpu.so, its one device
// "cpu:0" (host memory), synchronous streams, op dispatch and the threading policy.
//
// THREADING POLICY (one policy for the whole backend; docs/cpu-backend.md has the figures):
//  - All parallelism comes from oneTBB, inside one tbb::task_arena per device, sized by the
//    environment variable NNPLUG_NUM_THREADS if set (>= 1), else by the machine
//    (tbb::info::default_concurrency()).
//  - OpenBLAS is single-threaded: initialize() calls openblas_set_num_threads(1) once, so an
//    SGEMM never starts OpenBLAS's own thread pool beside TBB's workers (no oversubscription:
//    after a threaded call OpenBLAS's worker spins 0.10-0.15 s, taking a core from the TBB
//    ops that follow; handing large GEMMs to it made training steps 0-65% slower, measured).
//    Note the process-wide effect: the OpenBLAS library is shared, so other users of it in the
//    same process also run it with one thread after this plugin initialises.
//  - A large GEMM is parallelised by TBB (gemm.cpp): one panel of output rows or columns per
//    thread, or for deep GEMMs one slice of K per thread with partials summed after; each task
//    calls single-threaded SGEMM. Measured as fast as OpenBLAS's own 2-thread SGEMM
//    (nnplug-bench --vs-blas). Batched GEMMs and convolutions run parallel over batch/images
//    with single-threaded SGEMM each.
//  - Small ops (fewer elements than one grain) run inline on the calling thread: no arena
//    entry, so the per-call dispatch cost stays far below a microsecond.
//  - Streams run synchronously on the calling thread: op_execute returns when the op is done,
//    stream_synchronize has nothing to wait for. Different streams may be used from different
//    threads at once; they share the arena (TBB shares workers between them fairly). A stream
//    object holds per-stream state only (the dropout mask cache).
//  - shutdown() destroys the arena and waits for TBB's workers to exit (tbb::finalize), so no
//    worker runs this library's code after the host unloads it.
//
// Speed: dispatch is a scan of the kernel rows with no allocation; see each op family's file for
// where that op's speed comes from.
#include "cpu_backend.hpp"

#include <nnplug/kit/host_plugin.hpp>
#include <nnplug/nnplug_version.h>

#include <cblas.h>
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <new>
#include <string>

namespace nnp::cpu {
namespace {

// Per-thread scratch: kScratchSlots growing buffers per thread.
struct scratch_set {
  std::vector<float> slot[kScratchSlots];
};

struct device_state {
  int threads = 1;
  std::unique_ptr<tbb::task_arena> arena;
  std::string description;
  uint64_t memory_bytes = 0;
  // Lets shutdown() wait for TBB's worker threads to exit before the host unloads this
  // library (and libtbb with it): a worker left running would execute unmapped code.
  tbb::task_scheduler_handle scheduler;
  // Per-thread scratch of every worker, freed with the device at shutdown.
  tbb::enumerable_thread_specific<scratch_set> scratch;
};

std::atomic<device_state*> g_device{nullptr};
std::mutex g_device_mutex;

int threads_from_env() {
  const char* env = std::getenv("NNPLUG_NUM_THREADS");
  if (env != nullptr && *env != '\0') {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v >= 1 && v <= 4096) return static_cast<int>(v);
    host_log(NNP_LOG_WARNING,
             format("cpu: ignoring NNPLUG_NUM_THREADS='%s' (expected an integer >= 1)", env));
  }
  const int n = tbb::info::default_concurrency();
  return n >= 1 ? n : 1;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        size_t b = colon + 1;
        while (b < line.size() && line[b] == ' ') ++b;
        return line.substr(b);
      }
    }
  }
  return "unknown CPU";
}

device_state* init_device() {
  auto* d = new device_state();
  d->scheduler = tbb::task_scheduler_handle{tbb::attach{}};
  d->threads = threads_from_env();
  d->arena = std::make_unique<tbb::task_arena>(d->threads);
  d->arena->initialize();
  openblas_set_num_threads(1);
  const char* core = openblas_get_corename();
  d->description = format("%s (%d threads, oneTBB + OpenBLAS %s)", cpu_model_name().c_str(),
                          d->threads, core != nullptr ? core : "?");
  d->memory_bytes = kit::host_memory_bytes();
  host_log(NNP_LOG_INFO, "cpu: " + d->description);
  return d;
}

device_state& device() {
  device_state* d = g_device.load(std::memory_order_acquire);
  if (d != nullptr) return *d;
  std::lock_guard<std::mutex> lock(g_device_mutex);
  d = g_device.load(std::memory_order_relaxed);
  if (d == nullptr) {
    d = init_device();
    g_device.store(d, std::memory_order_release);
  }
  return *d;
}

void release_device() {
  std::lock_guard<std::mutex> lock(g_device_mutex);
  device_state* d = g_device.exchange(nullptr);
  if (d == nullptr) return;
  d->arena.reset();
  // Blocks until TBB's workers have exited; if another user of TBB in the process keeps the
  // scheduler alive, finalize returns false and the workers belong to that user.
  if (!tbb::finalize(d->scheduler, std::nothrow))
    host_log(NNP_LOG_DEBUG, "cpu: TBB workers stay alive (another TBB user in the process)");
  delete d;
}

}  // namespace

tbb::task_arena& arena() { return *device().arena; }
int num_threads() { return device().threads; }

bool cpu_avx2_fma() {
#ifdef NNP_CPU_X86_KERNELS
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
#else
  return false;
#endif
}

float* scratch(int slot, size_t n) {
  std::vector<float>& v = device().scratch.local().slot[slot];
  if (v.size() < n) {
    v.clear();
    v.shrink_to_fit();
    v.resize(n + n / 4);
  }
  return v.data();
}

namespace {

// ---- kernel rows -------------------------------------------------------------------------------
// float32 for every op; copy and transpose move elements of 1, 2, 4 or 8 bytes of any dtype,
// concat, split, slice, slice_backward and gather elements of any size; cast converts between
// any two float dtypes. Each kernel file ends with the rows of the kernels it defines (an
// op_row_list); the plugin kit serves op_supported and op_execute from them (one lookup, so the
// two always agree).
const kit::op_row_list* const kFamilies[] = {
    &kGemmRows,      &kMatmulRows,       &kConvRows,   &kPoolRows,    &kActivationRows,
    &kAttentionRows, &kLossRows,         &kNormRows,   &kDropoutRows, &kElementwiseRows,
    &kCopyRows,      &kDataMovementRows, &kReduceRows, &kOptimRows,
};

// clang-format on
// ---- the device --------------------------------------------------------------------------------
// Every slot comes from the plugin kit's host_plugin.hpp; these hooks add what is specific to
// the cpu backend: the device state (arena, threads, description), per-stream state and copies
// split over the arena.
void cpu_initialize() { (void)device(); }

// Streams and memory were released by the host; stop the arena and TBB's workers so that
// unloading the plugin leaves no thread running its code.
void cpu_shutdown() { release_device(); }

void cpu_props(int32_t /*index*/, nnp_device_props& props) {
  const device_state& d = device();
  props.description = d.description.c_str();
  props.memory_bytes = d.memory_bytes;
  props.num_threads = d.threads;
}

void* cpu_stream_new(int32_t index) {
  auto* st = new stream_state();
  st->device_index = index;
  return st;
}
void cpu_stream_delete(void* stream) { delete static_cast<stream_state*>(stream); }

// Large copies are split over the arena: one thread cannot saturate memory bandwidth.
void cpu_copy(void* dst, const void* src, size_t size_bytes) {
  constexpr size_t kChunk = size_t{1} << 20;
  if (size_bytes < 4 * kChunk) {
    std::memcpy(dst, src, size_bytes);
    return;
  }
  const int64_t chunks = static_cast<int64_t>((size_bytes + kChunk - 1) / kChunk);
  parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
    const size_t lo = static_cast<size_t>(b) * kChunk;
    const size_t hi = std::min(size_bytes, static_cast<size_t>(e) * kChunk);
    std::memcpy(static_cast<char*>(dst) + lo, static_cast<const char*>(src) + lo, hi - lo);
  });
}

constexpr kit::host_backend kBackend = [] {
  kit::host_backend b =
      kit::host_backend_of("cpu", NNP_VERSION_STRING, kFamilies, "cpu (oneTBB + OpenBLAS)");
  b.auto_priority = 100;
  b.props = cpu_props;
  b.initialize = cpu_initialize;
  b.shutdown = cpu_shutdown;
  b.stream_new = cpu_stream_new;
  b.stream_delete = cpu_stream_delete;
  b.copy = cpu_copy;
  return b;
}();

const nnp_plugin_api kTable = kit::host_plugin_table<kBackend>();

}  // namespace
}  // namespace nnp::cpu

NNP_KIT_PLUGIN_ENTRY(nnp::cpu::kTable)
