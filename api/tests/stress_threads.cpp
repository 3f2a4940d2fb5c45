// stress_threads.cpp — nnplug_stress: libnnplug under many threads, built and run under
// ThreadSanitizer (NNPLUG_TSAN, scripts/test.sh) and in the ordinary builds.
//
//   nnplug_stress [--threads N] [--rounds R] [--ms M]     (defaults 8, 4, 250)
//   nnplug_stress --bench                                 per-call cost of a few functions
//
// The stress run, for R rounds of M milliseconds each:
//  - N op threads, each with its own streams, spread over the devices found (cpu:0,
//    reference:0, sim:0, sim:1, and cuda:0 on a machine with a GPU: several threads on the
//    same device, and different devices at once): allocations, copies both ways, fill and
//    binary ops (a large fill now and then, parallel on the cpu backend), results checked;
//    streams and allocations are recreated now and then;
//  - two threads sharing one stream (calls on it are serialised by libnnplug): dropout forward
//    and backward, the backward checked against the forward's mask;
//  - two discovery threads: device enumeration and lookup, props, op_supported, load records;
//  - the main thread calls nnp_shutdown() at the end of every round while all of them run.
//    Their calls then fail with INVALID_ARGUMENT ("stale"); they look their device up again
//    (which reloads the plugins) and go on.
// Any other failure, or a wrong result, is a problem; the exit status is 0 when there is none.
#include <nnplug/nnplug.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kU8{kDLUInt, 8, 1};

std::atomic<bool> g_stop{false};
std::mutex g_problems_mutex;
std::vector<std::string> g_problems;

void problem(const std::string& what) {
  std::lock_guard<std::mutex> lock(g_problems_mutex);
  if (g_problems.size() < 20) g_problems.push_back(what);
}

// True for the refusal a handle gets after a concurrent nnp_shutdown.
bool is_stale(nnp_status st) {
  return st == NNP_STATUS_INVALID_ARGUMENT &&
         std::strstr(nnp_last_error_message(), "stale") != nullptr;
}

// OK: true. Stale: false (the caller starts over). Anything else: a problem, false.
bool ok(nnp_status st, const std::string& where) {
  if (st == NNP_STATUS_OK) return true;
  if (!is_stale(st))
    problem(where + ": " + nnp_status_string(st) + ": " + nnp_last_error_message());
  return false;
}

DLTensor tensor(void* data, DLDevice device, DLDataType dtype, int64_t* shape) {
  DLTensor t{};
  t.data = data;
  t.device = device;
  t.ndim = 1;
  t.dtype = dtype;
  t.shape = shape;
  return t;
}

// ---------------------------------------------------------------------------- op threads --
struct op_counts {
  std::atomic<long> ok{0}, restarts{0};
};

// One life of an op thread between two nnp_shutdown() calls (returns when its handles went
// stale or at the end). Device memory is reached by copies only (sim memory is not host memory).
void op_life(const std::string& name, int id, op_counts& counts) {
  nnp_device* dev = nullptr;
  if (nnp_get_device(name.c_str(), &dev) != NNP_STATUS_OK) {
    // A lookup never sees a shutdown half done: it runs before or after (and reloads).
    problem("nnp_get_device(" + name + "): " + nnp_last_error_message());
    return;
  }
  DLDevice dl{};
  if (!ok(nnp_device_get_dldevice(dev, &dl), "nnp_device_get_dldevice")) return;
  constexpr int64_t kN = 512;
  constexpr int64_t kBig = 1 << 17;  // above the cpu backend's grain: runs on oneTBB workers
  int64_t shape[1] = {kN}, big_shape[1] = {kBig};
  std::vector<float> host(kN), big_host(kBig);
  nnp_stream* s = nullptr;
  void *a = nullptr, *b = nullptr, *y = nullptr, *big = nullptr;
  if (!ok(nnp_stream_create(dev, &s), "nnp_stream_create")) return;
  if (!ok(nnp_malloc(dev, kN * 4, &a), "nnp_malloc") ||
      !ok(nnp_malloc(dev, kN * 4, &b), "nnp_malloc") ||
      !ok(nnp_malloc(dev, kN * 4, &y), "nnp_malloc") ||
      !ok(nnp_malloc(dev, kBig * 4, &big), "nnp_malloc"))
    return;
  nnp_fill_params fp{};
  fp.struct_size = sizeof(fp);
  nnp_binary_params bp{};
  bp.struct_size = sizeof(bp);
  bp.op = NNP_BINARY_ADD;
  for (long it = 0; !g_stop.load(std::memory_order_relaxed); ++it) {
    DLTensor ta = tensor(a, dl, kF32, shape), tb = tensor(b, dl, kF32, shape),
             ty = tensor(y, dl, kF32, shape);
    const float v = static_cast<float>((it * 7 + id) % 1000);
    fp.value = v;
    if (!ok(nnp_fill(s, &fp, &ta), "nnp_fill")) return;
    std::fill(host.begin(), host.end(), 2.0f);
    if (!ok(nnp_memcpy_async(s, dev, b, nullptr, host.data(), kN * 4), "nnp_memcpy_async H2D"))
      return;
    if (!ok(nnp_stream_synchronize(s), "nnp_stream_synchronize")) return;  // host is reused
    if (!ok(nnp_binary(s, &bp, &ta, &tb, &ty), "nnp_binary")) return;
    std::fill(host.begin(), host.end(), -1.0f);
    if (it % 2 == 0) {
      if (!ok(nnp_memcpy(nullptr, host.data(), dev, y, kN * 4), "nnp_memcpy D2H")) return;
    } else {
      if (!ok(nnp_memcpy_async(s, nullptr, host.data(), dev, y, kN * 4), "nnp_memcpy_async D2H") ||
          !ok(nnp_stream_synchronize(s), "nnp_stream_synchronize"))
        return;
    }
    for (float h : host)
      if (h != v + 2.0f) {
        problem(name + ": wrong result " + std::to_string(h) + ", expected " +
                std::to_string(v + 2.0f));
        break;
      }
    if (it % 8 == 0) {  // a large op: parallel on the cpu backend
      DLTensor tbig = tensor(big, dl, kF32, big_shape);
      fp.value = v + 1.0f;
      if (!ok(nnp_fill(s, &fp, &tbig), "nnp_fill (large)") ||
          !ok(nnp_memcpy_async(s, nullptr, big_host.data(), dev, big, kBig * 4),
              "nnp_memcpy_async D2H (large)") ||
          !ok(nnp_stream_synchronize(s), "nnp_stream_synchronize"))
        return;
      if (big_host.front() != v + 1.0f || big_host.back() != v + 1.0f)
        problem(name + ": wrong result of the large fill");
    }
    counts.ok.fetch_add(1, std::memory_order_relaxed);
    if (it % 16 == 15) {  // recreate the stream and one allocation
      if (!ok(nnp_stream_destroy(s), "nnp_stream_destroy")) return;
      s = nullptr;
      if (!ok(nnp_stream_create(dev, &s), "nnp_stream_create")) return;
      if (!ok(nnp_free(dev, y), "nnp_free")) return;
      y = nullptr;
      if (!ok(nnp_malloc(dev, kN * 4, &y), "nnp_malloc")) return;
    }
  }
  // At the end: release what this life holds (a stale handle here is fine too).
  for (void* p : {a, b, y, big}) (void)nnp_free(dev, p);
  (void)nnp_stream_destroy(s);
}

void op_thread(const std::string& name, int id, op_counts& counts) {
  while (!g_stop.load()) {
    op_life(name, id, counts);
    counts.restarts.fetch_add(1, std::memory_order_relaxed);
  }
}

// ------------------------------------------------------------------------ shared stream --
// Two threads share one stream; the first creates it (again after each nnp_shutdown).
struct shared_stream {
  std::mutex mutex;
  nnp_stream* stream = nullptr;
  long generation = 0;
  std::atomic<long> ok{0};
};

void shared_thread(const std::string& name, int id, shared_stream& shared) {
  constexpr int64_t kN = 1 << 16;  // above the cpu backend's grain: runs on oneTBB workers
  std::vector<float> x(kN, 1.0f), y(kN), dy(kN, 2.0f), dx(kN);
  std::vector<uint8_t> mask(kN);
  int64_t shape[1] = {kN};
  const DLDevice host{kDLCPU, 0};
  DLTensor tx = tensor(x.data(), host, kF32, shape), ty = tensor(y.data(), host, kF32, shape),
           tm = tensor(mask.data(), host, kU8, shape), tdy = tensor(dy.data(), host, kF32, shape),
           tdx = tensor(dx.data(), host, kF32, shape);
  nnp_dropout_params p{};
  p.struct_size = sizeof(p);
  p.ratio = 0.5;
  long seen = -1;
  nnp_stream* s = nullptr;
  for (long it = 0; !g_stop.load(std::memory_order_relaxed); ++it) {
    {
      std::lock_guard<std::mutex> lock(shared.mutex);
      if (shared.stream == nullptr) {
        nnp_device* dev = nullptr;
        if (nnp_get_device(name.c_str(), &dev) != NNP_STATUS_OK ||
            !ok(nnp_stream_create(dev, &shared.stream), "shared nnp_stream_create")) {
          shared.stream = nullptr;
          continue;
        }
        ++shared.generation;
      }
      s = shared.stream;
      seen = shared.generation;
    }
    p.seed = static_cast<uint64_t>(id * 100000 + it);
    const bool done = ok(nnp_dropout_forward(s, &p, &tx, &ty, &tm), "shared dropout_forward") &&
                      ok(nnp_dropout_backward(s, &p, &tdy, &tdx), "shared dropout_backward") &&
                      ok(nnp_stream_synchronize(s), "shared nnp_stream_synchronize");
    if (!done) {  // stale: the next user creates a new one
      std::lock_guard<std::mutex> lock(shared.mutex);
      if (shared.generation == seen) shared.stream = nullptr;
      continue;
    }
    for (int64_t i = 0; i < kN; ++i) {
      const size_t k = static_cast<size_t>(i);
      if (y[k] != (mask[k] ? 2.0f : 0.0f) || dx[k] != (mask[k] ? 4.0f : 0.0f)) {
        problem("shared stream: dropout backward does not match the forward's mask");
        break;
      }
    }
    shared.ok.fetch_add(1, std::memory_order_relaxed);
  }
  std::lock_guard<std::mutex> lock(shared.mutex);
  if (shared.stream != nullptr) {
    (void)nnp_stream_destroy(shared.stream);
    shared.stream = nullptr;
  }
}

// ---------------------------------------------------------------------------- discovery --
void discovery_thread(std::atomic<long>& count) {
  while (!g_stop.load(std::memory_order_relaxed)) {
    size_t n = 0;
    if (!ok(nnp_get_devices(nullptr, &n), "nnp_get_devices")) continue;
    std::vector<nnp_device*> devs(n + 4);
    n = devs.size();
    if (!ok(nnp_get_devices(devs.data(), &n), "nnp_get_devices")) continue;
    devs.resize(std::min(n, devs.size()));
    for (nnp_device* d : devs) {
      // The handles may go stale at any moment (nnp_shutdown on the main thread): stale is
      // an expected answer, and strings from props are not read (they die with the handle).
      nnp_device_props props{};
      props.struct_size = sizeof(props);
      if (!ok(nnp_device_get_props(d, &props), "nnp_device_get_props")) continue;
      DLDevice dl{};
      if (!ok(nnp_device_get_dldevice(d, &dl), "nnp_device_get_dldevice")) continue;
      float v = 0;
      int64_t shape[1] = {1};
      DLTensor t = tensor(&v, dl, kF32, shape);
      t.data = nullptr;
      nnp_fill_params fp{};
      fp.struct_size = sizeof(fp);
      const DLTensor* outs[] = {&t};
      const nnp_status st = nnp_op_supported(d, NNP_OP_FILL, &fp, 0, nullptr, 1, outs);
      if (st != NNP_STATUS_UNSUPPORTED) ok(st, "nnp_op_supported");
    }
    nnp_device* autodev = nullptr;
    const nnp_status st = nnp_get_device("auto", &autodev);
    if (st != NNP_STATUS_NOT_FOUND) ok(st, "nnp_get_device(auto)");
    size_t nrec = 0;
    ok(nnp_get_load_records(nullptr, &nrec), "nnp_get_load_records");
    ok(nnp_load_default_plugins(), "nnp_load_default_plugins");
    count.fetch_add(1, std::memory_order_relaxed);
  }
}

// -------------------------------------------------------------------------------- bench --
// Nanoseconds per call of `body` (best of 5 runs of `iters`).
template <typename F>
double ns_per_call(long iters, F&& body) {
  double best = 1e30;
  for (int run = 0; run < 5; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < iters; ++i) body();
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / iters);
  }
  return best;
}

int bench() {
  nnp_device* dev = nullptr;
  if (nnp_get_device("reference", &dev) != NNP_STATUS_OK) {
    std::fprintf(stderr, "bench: %s\n", nnp_last_error_message());
    return 1;
  }
  nnp_stream* s = nullptr;
  if (nnp_stream_create(dev, &s) != NNP_STATUS_OK) return 1;
  float v = 0;
  int64_t shape[1] = {1};
  DLTensor t = tensor(&v, DLDevice{kDLCPU, 0}, kF32, shape);
  nnp_fill_params fp{};
  fp.struct_size = sizeof(fp);
  fp.value = 1.0;
  const DLTensor* outs[] = {&t};
  constexpr long kIters = 2000000;
  DLDevice dl{};
  std::printf("nnp_device_get_dldevice    %6.1f ns/call\n",
              ns_per_call(kIters, [&] { (void)nnp_device_get_dldevice(dev, &dl); }));
  std::printf("nnp_stream_device          %6.1f ns/call\n",
              ns_per_call(kIters, [&] { (void)nnp_stream_device(s); }));
  std::printf("nnp_stream_synchronize     %6.1f ns/call (reference)\n",
              ns_per_call(kIters, [&] { (void)nnp_stream_synchronize(s); }));
  std::printf("nnp_op_execute fill [1]    %6.1f ns/call (reference)\n", ns_per_call(kIters, [&] {
                (void)nnp_op_execute(s, NNP_OP_FILL, &fp, 0, nullptr, 1, outs);
              }));
  std::printf("nnp_op_supported fill [1]  %6.1f ns/call (reference)\n", ns_per_call(kIters, [&] {
                (void)nnp_op_supported(dev, NNP_OP_FILL, &fp, 0, nullptr, 1, outs);
              }));
  nnp_stream_destroy(s);
  nnp_shutdown();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 8, rounds = 4, ms = 250;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--bench") return bench();
    if (i + 1 < argc && arg == "--threads")
      threads = std::max(1, std::atoi(argv[++i]));
    else if (i + 1 < argc && arg == "--rounds")
      rounds = std::max(1, std::atoi(argv[++i]));
    else if (i + 1 < argc && arg == "--ms")
      ms = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: %s [--threads N] [--rounds R] [--ms M] | --bench\n", argv[0]);
      return 2;
    }
  }
  std::vector<std::string> names;
  for (const char* name : {"cpu:0", "reference:0", "sim:0", "sim:1", "cuda:0"}) {
    nnp_device* d = nullptr;
    if (nnp_get_device(name, &d) == NNP_STATUS_OK) names.push_back(name);
  }
  if (names.empty()) {
    std::fprintf(stderr, "nnplug_stress: no device found: %s\n", nnp_last_error_message());
    return 1;
  }
  // The shared stream is on a host-memory device (its tensors are host vectors).
  const std::string shared_name =
      std::find(names.begin(), names.end(), "cpu:0") != names.end() ? "cpu:0" : "reference:0";

  std::vector<op_counts> counts(static_cast<size_t>(threads));
  shared_stream shared;
  std::atomic<long> discoveries{0};
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i)
    pool.emplace_back(op_thread, names[static_cast<size_t>(i) % names.size()], i,
                      std::ref(counts[static_cast<size_t>(i)]));
  for (int i = 0; i < 2; ++i) pool.emplace_back(shared_thread, shared_name, i, std::ref(shared));
  for (int i = 0; i < 2; ++i) pool.emplace_back(discovery_thread, std::ref(discoveries));

  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < rounds; ++r) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    const nnp_status st = nnp_shutdown();
    if (st != NNP_STATUS_OK) problem(std::string("nnp_shutdown: ") + nnp_last_error_message());
  }
  g_stop.store(true);
  for (auto& t : pool) t.join();
  if (nnp_shutdown() != NNP_STATUS_OK)
    problem(std::string("final nnp_shutdown: ") + nnp_last_error_message());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  long total = 0, restarts = 0;
  for (const op_counts& c : counts) {
    total += c.ok.load();
    restarts += c.restarts.load();
  }
  std::printf("nnplug_stress: %d op threads on", threads);
  for (const auto& n : names) std::printf(" %s", n.c_str());
  std::printf(
      "; %d shutdowns in %.1f s: %ld op iterations, %ld restarts after shutdown, "
      "%ld shared-stream iterations, %ld discovery passes\n",
      rounds, seconds, total, restarts, shared.ok.load(), discoveries.load());
  for (const auto& p : g_problems) std::printf("  problem: %s\n", p.c_str());
  bool starved = false;
  for (const op_counts& c : counts) starved = starved || c.ok.load() == 0;
  if (starved) std::printf("  problem: an op thread completed no iteration\n");
  const bool pass = g_problems.empty() && !starved && shared.ok.load() > 0;
  std::printf("%s\n", pass ? "nnplug_stress: passed" : "nnplug_stress: FAILED");
  return pass ? 0 : 1;
}
