// nnplug-bench: performance of one backend through the public C API (libnnplug), per op and
// shape, and for whole training steps of the two Fashion-MNIST models (examples/c/train).
//
//   nnplug-bench --backend cpu [--reps 20] [--warmup 3] [--json out.json] [--filter conv]
//   nnplug-bench --backend cpu --step mlp|cnn|all [--steps 20]
//   nnplug-bench --backend cpu --vs-blas 9 [--reps 20] [--filter fc1]
//   nnplug-bench --backend cpu --set large|all     (GEMM 1024-4096, ResNet conv, long attention)
//   nnplug-bench --backend cpu --limits            (copy/triad GB/s, direct cblas_sgemm GFLOP/s)
//
// Per-op rows: the median (and minimum) microseconds per call over --reps timed calls after
// --warmup untimed ones, each call followed by nnp_stream_synchronize, and GFLOP/s (compute
// ops) or GB/s (memory-bound ops, bytes read + written once). Shapes are the mlp's and cnn's
// at batch 128: GEMM forward and both backward GEMMs, a 1024 GEMM, batched matmul at attention
// shapes ([512, 17, 16] x [512, 16, 17]), the cnn's convolutions (forward,
// backward-data, backward-filter), max-pool, relu, dropout, softmax cross-entropy and Adam on
// the cnn's 1.2M parameters. --vs-blas times the same GEMMs against cblas_sgemm called directly
// (1 OpenBLAS thread, and the device's thread count), interleaved (bench_vs_blas).
// The dispatch row is the mean cost of a 1-element FILL through nnp_op_execute.
// --step runs forward + backward + Adam of a model at batch 128 with nnplug ops and prints
// images/s and the implied seconds per 60000-image epoch.
// Timings are wall-clock (steady_clock) around synchronised calls: fine for CPU backends and
// for GPU ops of more than a few tens of microseconds.
// A row the backend refuses (UNSUPPORTED) is printed as "unsupported: <message>" and the run
// goes on; a row that fails otherwise is printed as "FAILED: <message>" and the run goes on too.
// Both lists are in the JSON ("unsupported", "failed"); the last line counts the rows; the exit
// status is 1 when a row failed (or the run could not start), else 0.
#include <nnplug/nnplug.h>

#include <CLI/CLI.hpp>
#include <dlfcn.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

// A failed nnplug call, with its status (measure() reports UNSUPPORTED rows and goes on).
struct call_error : std::runtime_error {
  nnp_status status;
  call_error(nnp_status s, const std::string& what) : std::runtime_error(what), status(s) {}
};

void check(nnp_status s, const char* what) {
  if (s != NNP_STATUS_OK)
    throw call_error(
        s, std::string(what) + ": " + nnp_status_string(s) + ": " + nnp_last_error_message());
}

DLDataType f32() { return DLDataType{kDLFloat, 32, 1}; }
DLDataType i64() { return DLDataType{kDLInt, 64, 1}; }

// A tensor in device memory. Shapes live in the object, so it must not move after bind().
struct dtensor {
  std::vector<int64_t> shape;
  DLTensor t{};
  void* ptr = nullptr;
  size_t bytes = 0;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

class context {
 public:
  nnp_device* dev = nullptr;
  nnp_stream* stream = nullptr;
  DLDevice dl{};
  nnp_device_props props{};

  explicit context(const std::string& backend) {
    check(nnp_get_device(backend.c_str(), &dev), "nnp_get_device");
    props.struct_size = sizeof(props);
    check(nnp_device_get_props(dev, &props), "nnp_device_get_props");
    check(nnp_device_get_dldevice(dev, &dl), "nnp_device_get_dldevice");
    check(nnp_stream_create(dev, &stream), "nnp_stream_create");
  }
  ~context() {
    for (dtensor* t : owned_) {
      if (t->ptr != nullptr) nnp_free(dev, t->ptr);
      delete t;
    }
    nnp_stream_destroy(stream);
  }
  context(const context&) = delete;
  context& operator=(const context&) = delete;

  // Allocates a tensor; `scale` > 0 fills it with uniform values in [-scale, scale].
  dtensor& make(std::vector<int64_t> shape, float scale = 0.0f, DLDataType dt = f32()) {
    auto* t = new dtensor();
    owned_.push_back(t);
    t->shape = std::move(shape);
    t->bytes = static_cast<size_t>(t->numel()) * (dt.bits / 8);
    check(nnp_malloc(dev, std::max<size_t>(t->bytes, 64), &t->ptr), "nnp_malloc");
    t->t.data = t->ptr;
    t->t.device = dl;
    t->t.ndim = static_cast<int>(t->shape.size());
    t->t.dtype = dt;
    t->t.shape = t->shape.data();
    if (dt.code == kDLFloat) {
      std::vector<float> host(static_cast<size_t>(t->numel()));
      std::uniform_real_distribution<float> dist(-scale, scale);
      for (float& v : host) v = scale > 0 ? dist(rng_) : 0.0f;
      upload(*t, host.data());
    }
    return *t;
  }
  dtensor& labels(int64_t n, int64_t classes) {
    dtensor& t = make({n}, 0.0f, i64());
    std::vector<int64_t> host(static_cast<size_t>(n));
    std::uniform_int_distribution<int64_t> dist(0, classes - 1);
    for (int64_t& v : host) v = dist(rng_);
    upload(t, host.data());
    return t;
  }
  void upload(dtensor& t, const void* host) {
    if (t.bytes > 0) check(nnp_memcpy(dev, t.ptr, nullptr, host, t.bytes), "nnp_memcpy");
  }
  void sync() { check(nnp_stream_synchronize(stream), "nnp_stream_synchronize"); }

 private:
  std::vector<dtensor*> owned_;
  std::mt19937 rng_{1234};
};

// A view of a tensor with another shape (same data), e.g. [128, 64, 12, 12] as [128, 9216].
struct view {
  std::vector<int64_t> shape;
  DLTensor t;
  view(const dtensor& base, std::vector<int64_t> s) : shape(std::move(s)), t(base.t) {
    t.shape = shape.data();
    t.ndim = static_cast<int>(shape.size());
  }
};

// ---- results ---------------------------------------------------------------------------------
struct row {
  std::string name, shape;
  double median_us = 0, min_us = 0, rate = 0;
  std::string unit;   // "GFLOP/s" or "GB/s" or ""
  double cpu_us = 0;  // median process CPU time per call (all threads, spinning included)
};

// Process CPU time in microseconds: with one thread (NNPLUG_NUM_THREADS=1) it measures the
// work itself, nearly independent of other load on a shared machine.
double process_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

std::vector<row> g_rows;
// Rows that could not be measured: UNSUPPORTED by the backend (reported, not a failure) and
// failed (any other error; the exit status is 1).
std::vector<std::pair<std::string, std::string>> g_unsupported, g_failed;
int g_reps = 20, g_warmup = 3;
std::string g_filter;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

// Times under 10 us get three decimals, so that sub-microsecond costs (the dispatch row) do not
// print as 0.0.
void print_us(double us) { std::printf(us < 10.0 ? " %12.3f" : " %12.1f", us); }

void print_row(const row& r) {
  std::printf("%-34s %-28s", r.name.c_str(), r.shape.c_str());
  print_us(r.median_us);
  print_us(r.min_us);
  print_us(r.cpu_us);
  if (!r.unit.empty()) std::printf(" %10.1f %s", r.rate, r.unit.c_str());
  std::printf("\n");
  std::fflush(stdout);
}

// The wall-clock and process CPU time of each of `reps` calls of fn, in microseconds.
struct timings {
  std::vector<double> wall_us, cpu_us;
};
timings time_calls(int reps, const std::function<void()>& fn) {
  timings t;
  for (int i = 0; i < reps; ++i) {
    const double c0 = process_cpu_us();
    const auto t0 = clock_type::now();
    fn();
    t.wall_us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
    t.cpu_us.push_back(process_cpu_us() - c0);
  }
  return t;
}

// Times fn (which must leave its work complete) and records a row. flops > 0 gives GFLOP/s,
// else bytes > 0 gives GB/s.
void measure(const std::string& name, const std::string& shape, double flops, double bytes,
             const std::function<void()>& fn) {
  if (!g_filter.empty() && name.find(g_filter) == std::string::npos) return;
  timings t;
  try {
    for (int i = 0; i < g_warmup; ++i) fn();
    t = time_calls(g_reps, fn);
  } catch (const call_error& e) {
    const bool unsupported = e.status == NNP_STATUS_UNSUPPORTED;
    std::printf("%-34s %-28s %s: %s\n", name.c_str(), shape.c_str(),
                unsupported ? "unsupported" : "FAILED", e.what());
    std::fflush(stdout);
    (unsupported ? g_unsupported : g_failed).emplace_back(name, e.what());
    return;
  }
  const std::vector<double>& us = t.wall_us;
  row r{name, shape, median(us), *std::min_element(us.begin(), us.end()), 0, "", median(t.cpu_us)};
  if (flops > 0) {
    r.rate = flops / (r.median_us * 1e3);
    r.unit = "GFLOP/s";
  } else if (bytes > 0) {
    r.rate = bytes / (r.median_us * 1e3);
    r.unit = "GB/s";
  }
  print_row(r);
  g_rows.push_back(r);
}

std::string dims(std::initializer_list<int64_t> d) {
  std::string s;
  for (int64_t v : d) s += (s.empty() ? "" : "x") + std::to_string(v);
  return s;
}

// ---- OpenBLAS, found at run time ---------------------------------------------------------------
struct openblas {
  using sgemm_fn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                            int, float, float*, int);
  sgemm_fn sgemm = nullptr;
  void (*set_threads)(int) = nullptr;
  int (*get_threads)() = nullptr;
  char* (*corename)() = nullptr;
  openblas() {
    void* h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_NOLOAD);
    if (h == nullptr) h = dlopen("libopenblas.so.0", RTLD_NOW);
    if (h == nullptr) h = dlopen("libopenblas.so", RTLD_NOW);
    if (h == nullptr) return;
    sgemm = reinterpret_cast<sgemm_fn>(dlsym(h, "cblas_sgemm"));
    set_threads = reinterpret_cast<void (*)(int)>(dlsym(h, "openblas_set_num_threads"));
    get_threads = reinterpret_cast<int (*)()>(dlsym(h, "openblas_get_num_threads"));
    corename = reinterpret_cast<char* (*)()>(dlsym(h, "openblas_get_corename"));
  }
};

// ---- per-op benchmarks --------------------------------------------------------------------------
struct gemm_shape {
  const char* what;
  int64_t m, n, k;
  int32_t ta, tb;
};

// Dense layers of the three models at batch 128 (the vit's on its 128 * 17 token rows, its patch
// embedding on 128 * 16 patches): forward X.W, backward-data dY.W^T, backward-weights X^T.dY,
// written with W stored [in, out] (the vit stores [out, in]; the GEMM shapes are the same).
std::vector<gemm_shape> model_gemms() {
  std::vector<gemm_shape> g;
  struct layer {
    const char* name;
    int64_t rows, in, out;
  };
  const layer layers[] = {{"mlp.fc1", 128, 784, 512},       {"mlp.fc2", 128, 512, 512},
                          {"mlp.fc3", 128, 512, 10},        {"cnn.fc1", 128, 9216, 128},
                          {"cnn.fc2", 128, 128, 10},        {"vit.embed", 2048, 49, 64},
                          {"vit.q/k/v/proj", 2176, 64, 64}, {"vit.fc1", 2176, 64, 128},
                          {"vit.fc2", 2176, 128, 64},       {"vit.head", 128, 64, 10}};
  for (const layer& l : layers) {
    g.push_back({l.name, l.rows, l.out, l.in, 0, 0});  // forward
    g.push_back({l.name, l.rows, l.in, l.out, 0, 1});  // backward data
    g.push_back({l.name, l.in, l.out, l.rows, 1, 0});  // backward weights
  }
  return g;
}

const char* gemm_kind(const gemm_shape& s) { return s.ta ? "bwd_w" : (s.tb ? "bwd_x" : "fwd"); }

// --vs-blas: every model GEMM through nnplug against cblas_sgemm called directly on the same
// shapes, interleaved so that drift on a shared machine falls on all contenders alike. Each
// round times one block of calls (at least --reps and 20 ms of them) of each contender --
// nnplug, cblas_sgemm with 1 OpenBLAS thread, cblas_sgemm with the device's thread count --
// in an order that rotates from round to round. Each block first makes untimed calls for at
// least 30 ms: on a VM an idle vCPU is descheduled and wakes slowly, and an idle pause before a
// block was measured to halve a 2-thread contender's speed in some rounds. After each threaded
// direct block, untimed nnplug calls run for 250 ms: OpenBLAS's workers spin for 2^28 TSC
// cycles (0.10-0.15 s measured here) after a threaded call, taking a core from whatever runs
// next, and these untimed calls absorb that. Per round, ratio = nnplug block median / the faster
// direct block median of the same round; the row reports each contender's median over rounds and
// the median, minimum and maximum of the per-round ratios. The nnplug blocks run with OpenBLAS at
// 1 thread, the setting the cpu backend's threading policy makes.
void bench_vs_blas(context& ctx, const openblas& blas, int rounds) {
  if (blas.sgemm == nullptr || blas.set_threads == nullptr || blas.get_threads == nullptr)
    throw std::runtime_error("--vs-blas needs OpenBLAS (libopenblas.so.0) loadable");
  if (ctx.dl.device_type != kDLCPU)
    throw std::runtime_error("--vs-blas compares against host cblas_sgemm: it needs a CPU device");
  const int before = blas.get_threads();
  const int n_threads = std::max(1, ctx.props.num_threads);
  // OpenBLAS's workers also spin for the first 0.10-0.15 s after the library loads.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::printf("%-26s %-22s %10s %10s %10s   %s\n", "gemm (medians of rounds, us)", "shape",
              "nnplug", "cblas 1t",
              (std::string("cblas ") + std::to_string(n_threads) + "t").c_str(),
              "nnplug / best direct: median [min, max] of rounds");
  // Untimed calls for at least --warmup calls and 30 ms, so both cores are awake and clocked up;
  // then timed calls, at least --reps and at least 20 ms of them (thousands for the small
  // GEMMs, whose per-call medians are otherwise as noisy as the 5% being measured); returns
  // their median.
  const auto block = [](const std::function<void()>& fn) {
    const auto w0 = clock_type::now();
    int warm = 0;
    for (; warm < g_warmup || clock_type::now() - w0 < std::chrono::milliseconds(30); ++warm) fn();
    const double per_call_us =
        std::chrono::duration<double, std::micro>(clock_type::now() - w0).count() / warm;
    const int reps = std::max(g_reps, static_cast<int>(std::ceil(20000.0 / per_call_us)));
    std::vector<double> us;
    us.reserve(static_cast<size_t>(reps));
    for (int i = 0; i < reps; ++i) {
      const auto t0 = clock_type::now();
      fn();
      us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
    }
    return median(us);
  };
  // The model GEMMs, then a 1x1x1 GEMM: its nnplug - direct difference is the per-call cost of
  // nnplug's path (validation, dispatch, synchronize) with everything in cache.
  std::vector<gemm_shape> shapes = model_gemms();
  shapes.push_back({"tiny", 1, 1, 1, 0, 0});
  for (const gemm_shape& s : shapes) {
    const std::string name = std::string(s.what) + " " + gemm_kind(s);
    if (!g_filter.empty() && name.find(g_filter) == std::string::npos) continue;
    dtensor& a =
        ctx.make(s.ta ? std::vector<int64_t>{s.k, s.m} : std::vector<int64_t>{s.m, s.k}, 1.0f);
    dtensor& b =
        ctx.make(s.tb ? std::vector<int64_t>{s.n, s.k} : std::vector<int64_t>{s.k, s.n}, 1.0f);
    dtensor& y = ctx.make({s.m, s.n});
    const nnp_gemm_params p{sizeof(p), s.ta, s.tb, 1.0, 0.0};
    // The direct calls read and write the very buffers nnplug's calls do (the cpu device's
    // memory is host memory), so placement and alignment cannot tell the contenders apart.
    const float* ha = static_cast<const float*>(a.ptr);
    const float* hb = static_cast<const float*>(b.ptr);
    float* hy = static_cast<float*>(y.ptr);
    const int lda = static_cast<int>(s.ta ? s.m : s.k), ldb = static_cast<int>(s.tb ? s.k : s.n);
    const auto direct = [&] {
      blas.sgemm(101, s.ta ? 112 : 111, s.tb ? 112 : 111, static_cast<int>(s.m),
                 static_cast<int>(s.n), static_cast<int>(s.k), 1.0f, ha, lda, hb, ldb, 0.0f, hy,
                 static_cast<int>(s.n));
    };
    const auto nnplug = [&] {
      check(nnp_gemm(ctx.stream, &p, &a.t, &b.t, nullptr, &y.t), "gemm");
      ctx.sync();
    };
    // Contender c: 0 = nnplug, 1 = direct with 1 thread, 2 = direct with n_threads.
    const auto run = [&](int c) {
      if (c == 0) return block(nnplug);
      blas.set_threads(c == 1 ? 1 : n_threads);
      const double t = block(direct);
      blas.set_threads(1);
      if (c == 2 && n_threads > 1) {
        // Settle: untimed nnplug calls for 250 ms while OpenBLAS's workers spin down.
        const auto s0 = clock_type::now();
        while (clock_type::now() - s0 < std::chrono::milliseconds(250)) nnplug();
      }
      return t;
    };
    std::vector<double> t[3], ratio;
    for (int r = 0; r < rounds; ++r) {
      double round_t[3];
      for (int i = 0; i < 3; ++i) {
        const int c = (r + i) % 3;
        round_t[c] = run(c);
        t[c].push_back(round_t[c]);
      }
      ratio.push_back(round_t[0] / std::min(round_t[1], round_t[2]));
    }
    const std::string shape =
        "M=" + std::to_string(s.m) + " N=" + std::to_string(s.n) + " K=" + std::to_string(s.k);
    const double r_med = median(ratio);
    const double r_min = *std::min_element(ratio.begin(), ratio.end());
    const double r_max = *std::max_element(ratio.begin(), ratio.end());
    std::printf("%-26s %-22s %10.2f %10.2f %10.2f   %.3f [%.3f, %.3f]\n", name.c_str(),
                shape.c_str(), median(t[0]), median(t[1]), median(t[2]), r_med, r_min, r_max);
    std::fflush(stdout);
    const double flops = 2.0 * s.m * s.n * s.k;
    const std::string who[3] = {"gemm ", "cblas_sgemm/1t ",
                                "cblas_sgemm/" + std::to_string(n_threads) + "t "};
    for (int c = 0; c < 3; ++c) {
      const double med = median(t[c]);
      g_rows.push_back(row{who[c] + name, shape, med, *std::min_element(t[c].begin(), t[c].end()),
                           flops / (med * 1e3), "GFLOP/s", 0.0});
    }
    g_rows.push_back(row{"ratio nnplug/best direct " + name, shape, 0.0, 0.0, r_med,
                         "x (median of rounds)", 0.0});
  }
  blas.set_threads(before);
}

// --limits: what the machine itself reaches with the device's thread count, the ceilings beside
// nnplug's rows. STREAM-like bandwidth first (copy c = a: 8 bytes per element; triad
// a = b + s * c: 12 bytes per element; write-allocate traffic not counted, as STREAM does), on
// three arrays of --stream-mib MiB each, split into contiguous chunks over that many threads
// (each chunk first touched by its own thread). Then cblas_sgemm called directly, square, with
// OpenBLAS at the same thread count (after the bandwidth rows: OpenBLAS's workers spin for a
// while after a threaded call and would take a core from them).
void bench_limits(context& ctx, const openblas& blas, const std::vector<int64_t>& sizes,
                  int64_t stream_mib) {
  if (blas.sgemm == nullptr || blas.set_threads == nullptr || blas.get_threads == nullptr)
    throw std::runtime_error("--limits needs OpenBLAS (libopenblas.so.0) loadable");
  if (ctx.dl.device_type != kDLCPU)
    throw std::runtime_error(
        "--limits measures the host (cblas_sgemm, memory bandwidth): it "
        "needs a CPU device");
  const int n_threads = std::max(1, ctx.props.num_threads);
  const size_t n = static_cast<size_t>(stream_mib) * (1u << 20) / sizeof(float);
  std::unique_ptr<float[]> a(new float[n]), b(new float[n]), c(new float[n]);
  const auto parallel = [&](const std::function<void(size_t, size_t)>& body) {
    std::vector<std::thread> pool;
    for (int t = 0; t < n_threads; ++t)
      pool.emplace_back([&, t] { body(n * t / n_threads, n * (t + 1) / n_threads); });
    for (std::thread& th : pool) th.join();
  };
  parallel([&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) {
      a[i] = 1.0f;
      b[i] = 2.0f;
      c[i] = 0.5f;
    }
  });
  const std::string tshape =
      "3 x " + std::to_string(stream_mib) + " MiB, " + std::to_string(n_threads) + " threads";
  float* pa = a.get();
  float* pb = b.get();
  float* pc = c.get();
  measure("limit copy", tshape, 0, 8.0 * static_cast<double>(n), [&] {
    parallel(
        [&](size_t lo, size_t hi) { std::memcpy(pc + lo, pa + lo, (hi - lo) * sizeof(float)); });
  });
  measure("limit triad", tshape, 0, 12.0 * static_cast<double>(n), [&] {
    parallel([&](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) pa[i] = pb[i] + 3.0f * pc[i];
    });
  });
  a.reset();
  b.reset();
  c.reset();
  const int before = blas.get_threads();
  blas.set_threads(n_threads);
  for (const int64_t m : sizes) {
    const std::string name = "limit sgemm " + std::to_string(m);
    if (!g_filter.empty() && name.find(g_filter) == std::string::npos) continue;
    const size_t mm = static_cast<size_t>(m * m);
    std::vector<float> x(mm, 1.0f), w(mm, 0.5f), y(mm, 0.0f);
    const int k = static_cast<int>(m);
    measure(name, "M=N=K=" + std::to_string(m) + ", " + std::to_string(n_threads) + " threads",
            2.0 * m * m * m, 0, [&] {
              blas.sgemm(101, 111, 111, k, k, k, 1.0f, x.data(), k, w.data(), k, 0.0f, y.data(), k);
            });
  }
  blas.set_threads(before);
}

void bench_ops(context& ctx) {
  // GEMM rows through nnplug.
  for (const gemm_shape& s : model_gemms()) {
    dtensor& a =
        ctx.make(s.ta ? std::vector<int64_t>{s.k, s.m} : std::vector<int64_t>{s.m, s.k}, 1.0f);
    dtensor& b =
        ctx.make(s.tb ? std::vector<int64_t>{s.n, s.k} : std::vector<int64_t>{s.k, s.n}, 1.0f);
    dtensor& y = ctx.make({s.m, s.n});
    const nnp_gemm_params p{sizeof(p), s.ta, s.tb, 1.0, 0.0};
    const std::string name = std::string("gemm ") + s.what + " " + gemm_kind(s);
    measure(name,
            "M=" + std::to_string(s.m) + " N=" + std::to_string(s.n) + " K=" + std::to_string(s.k),
            2.0 * s.m * s.n * s.k, 0, [&] {
              check(nnp_gemm(ctx.stream, &p, &a.t, &b.t, nullptr, &y.t), "gemm");
              ctx.sync();
            });
  }
  // Batched matmul at attention shapes: 128 sequences x 4 heads, 17 tokens, head size 16.
  // Scores Q K^T ([512, 17, 16] x [512, 16, 17]) and the same with K stored [512, 17, 16]
  // (trans_b = 1), then the weighted values P V ([512, 17, 17] x [512, 17, 16]).
  {
    const int64_t bh = 128 * 4, t = 17, d = 16;
    dtensor& q = ctx.make({bh, t, d}, 1.0f);
    dtensor& kt = ctx.make({bh, d, t}, 1.0f);
    dtensor& k = ctx.make({bh, t, d}, 1.0f);
    dtensor& s = ctx.make({bh, t, t});
    dtensor& v = ctx.make({bh, t, d}, 1.0f);
    dtensor& o = ctx.make({bh, t, d});
    const nnp_matmul_params nn{sizeof(nn), 0, 0}, nt{sizeof(nt), 0, 1};
    const double flops = 2.0 * bh * t * t * d;
    measure("matmul attention q.kT", dims({bh, t, d}) + " x " + dims({bh, d, t}), flops, 0, [&] {
      check(nnp_matmul(ctx.stream, &nn, &q.t, &kt.t, &s.t), "matmul");
      ctx.sync();
    });
    measure("matmul attention q.k trans_b", dims({bh, t, d}) + " x " + dims({bh, t, d}) + " tb1",
            flops, 0, [&] {
              check(nnp_matmul(ctx.stream, &nt, &q.t, &k.t, &s.t), "matmul");
              ctx.sync();
            });
    measure("matmul attention p.v", dims({bh, t, t}) + " x " + dims({bh, t, d}), flops, 0, [&] {
      check(nnp_matmul(ctx.stream, &nn, &s.t, &v.t, &o.t), "matmul");
      ctx.sync();
    });
  }
  // The cnn's convolutions at batch 128.
  struct conv_layer {
    const char* name;
    int64_t c, h, k;
  };
  const int64_t batch = 128;
  for (const conv_layer& l :
       {conv_layer{"cnn.conv1", 1, 28, 32}, conv_layer{"cnn.conv2", 32, 26, 64}}) {
    const int64_t out = l.h - 2;
    dtensor& x = ctx.make({batch, l.c, l.h, l.h}, 1.0f);
    dtensor& w = ctx.make({l.k, l.c, 3, 3}, 0.1f);
    dtensor& b = ctx.make({l.k}, 0.1f);
    dtensor& y = ctx.make({batch, l.k, out, out});
    dtensor& dy = ctx.make({batch, l.k, out, out}, 1.0f);
    dtensor& dx = ctx.make({batch, l.c, l.h, l.h});
    dtensor& dw = ctx.make({l.k, l.c, 3, 3});
    dtensor& db = ctx.make({l.k});
    const nnp_conv2d_params p{sizeof(p), 1, 1, 0, 0, 0, 0, 1, 1, 1, 0};
    const double flops = 2.0 * batch * l.k * out * out * l.c * 9;
    const std::string shape = dims({batch, l.c, l.h, l.h}) + " k" + std::to_string(l.k) + " 3x3";
    measure(std::string("conv fwd ") + l.name, shape, flops, 0, [&] {
      check(nnp_conv2d_forward(ctx.stream, &p, &x.t, &w.t, &b.t, &y.t), "conv fwd");
      ctx.sync();
    });
    measure(std::string("conv bwd_data ") + l.name, shape, flops, 0, [&] {
      check(nnp_conv2d_backward_data(ctx.stream, &p, &dy.t, &w.t, &dx.t), "conv bwd data");
      ctx.sync();
    });
    measure(std::string("conv bwd_filter ") + l.name, shape, flops, 0, [&] {
      check(nnp_conv2d_backward_filter(ctx.stream, &p, &x.t, &dy.t, &dw.t), "conv bwd filter");
      ctx.sync();
    });
    measure(std::string("conv bwd_bias ") + l.name, dims({batch, l.k, out, out}), 0,
            4.0 * batch * l.k * out * out, [&] {
              check(nnp_conv2d_backward_bias(ctx.stream, &dy.t, &db.t), "conv bwd bias");
              ctx.sync();
            });
  }

  // N-D convolution and transposed convolution (ABI 1.2): a 1-D and a 3-D conv, a 2-D conv
  // transpose (stride 2, the decoder's upsampling). A backend without them (UNSUPPORTED) gets
  // a note instead of rows (measure()).
  const auto measure_nd = [&](const std::string& name, const std::string& shape, double flops,
                              const std::function<nnp_status()>& call) {
    measure(name, shape, flops, 0, [&] {
      check(call(), name.c_str());
      ctx.sync();
    });
  };
  {
    // 1-D: [32, 64, 1024], k64, kernel 5, pads 2 (same size)
    nnp_conv_params p{};
    p.struct_size = sizeof p;
    p.pads[0] = p.pads[1] = 2;
    dtensor& x = ctx.make({32, 64, 1024}, 1.0f);
    dtensor& w = ctx.make({64, 64, 5}, 0.1f);
    dtensor& b = ctx.make({64}, 0.1f);
    dtensor& y = ctx.make({32, 64, 1024});
    const double flops = 2.0 * 32 * 64 * 1024 * 64 * 5;
    measure_nd("conv_nd fwd 1-D", dims({32, 64, 1024}) + " k64 5", flops,
               [&] { return nnp_conv_forward(ctx.stream, &p, &x.t, &w.t, &b.t, &y.t); });
  }
  {
    // 3-D: [4, 16, 16, 24, 24], k32, 3x3x3, pads 1 (same size)
    nnp_conv_params p{};
    p.struct_size = sizeof p;
    for (int i = 0; i < 6; ++i) p.pads[i] = 1;
    dtensor& x = ctx.make({4, 16, 16, 24, 24}, 1.0f);
    dtensor& w = ctx.make({32, 16, 3, 3, 3}, 0.1f);
    dtensor& b = ctx.make({32}, 0.1f);
    dtensor& y = ctx.make({4, 32, 16, 24, 24});
    dtensor& dy = ctx.make({4, 32, 16, 24, 24}, 1.0f);
    dtensor& dx = ctx.make({4, 16, 16, 24, 24});
    dtensor& dw = ctx.make({32, 16, 3, 3, 3});
    const double flops = 2.0 * 4 * 32 * 16 * 24 * 24 * 16 * 27;
    const std::string shape = dims({4, 16, 16, 24, 24}) + " k32 3x3x3";
    measure_nd("conv_nd fwd 3-D", shape, flops,
               [&] { return nnp_conv_forward(ctx.stream, &p, &x.t, &w.t, &b.t, &y.t); });
    measure_nd("conv_nd bwd_data 3-D", shape, flops,
               [&] { return nnp_conv_backward_data(ctx.stream, &p, &dy.t, &w.t, &dx.t); });
    measure_nd("conv_nd bwd_filter 3-D", shape, flops,
               [&] { return nnp_conv_backward_filter(ctx.stream, &p, &x.t, &dy.t, &dw.t); });
  }
  {
    // 2-D conv transpose: [32, 64, 16, 16] -> [32, 32, 32, 32], kernel 4x4, stride 2, pads 1
    nnp_conv_transpose_params p{};
    p.struct_size = sizeof p;
    p.strides[0] = p.strides[1] = 2;
    for (int i = 0; i < 4; ++i) p.pads[i] = 1;
    dtensor& x = ctx.make({32, 64, 16, 16}, 1.0f);
    dtensor& w = ctx.make({64, 32, 4, 4}, 0.1f);
    dtensor& b = ctx.make({32}, 0.1f);
    dtensor& y = ctx.make({32, 32, 32, 32});
    dtensor& dy = ctx.make({32, 32, 32, 32}, 1.0f);
    dtensor& dx = ctx.make({32, 64, 16, 16});
    dtensor& dw = ctx.make({64, 32, 4, 4});
    const double flops = 2.0 * 32 * 64 * 16 * 16 * 32 * 16;
    const std::string shape = dims({32, 64, 16, 16}) + " k32 4x4 s2";
    measure_nd("conv_transpose fwd 2-D", shape, flops,
               [&] { return nnp_conv_transpose_forward(ctx.stream, &p, &x.t, &w.t, &b.t, &y.t); });
    measure_nd("conv_transpose bwd_data 2-D", shape, flops, [&] {
      return nnp_conv_transpose_backward_data(ctx.stream, &p, &dy.t, &w.t, &dx.t);
    });
    measure_nd("conv_transpose bwd_filter 2-D", shape, flops, [&] {
      return nnp_conv_transpose_backward_filter(ctx.stream, &p, &x.t, &dy.t, &dw.t);
    });
  }

  // Max-pool 2x2, relu, dropout on the cnn's activations.
  {
    dtensor& x = ctx.make({batch, 64, 24, 24}, 1.0f);
    dtensor& y = ctx.make({batch, 64, 12, 12});
    dtensor& dy = ctx.make({batch, 64, 12, 12}, 1.0f);
    dtensor& dx = ctx.make({batch, 64, 24, 24});
    const nnp_pool2d_params pp{sizeof(pp), NNP_POOL_MAX, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0};
    const double in_bytes = 4.0 * x.numel(), out_bytes = 4.0 * y.numel();
    measure("maxpool2 fwd", dims({batch, 64, 24, 24}), 0, in_bytes + out_bytes, [&] {
      check(nnp_pool2d_forward(ctx.stream, &pp, &x.t, &y.t), "pool fwd");
      ctx.sync();
    });
    measure("maxpool2 bwd", dims({batch, 64, 24, 24}), 0, 2 * in_bytes + 2 * out_bytes, [&] {
      check(nnp_pool2d_backward(ctx.stream, &pp, &x.t, &y.t, &dy.t, &dx.t), "pool bwd");
      ctx.sync();
    });
    const nnp_activation_params ap{sizeof(ap), NNP_ACTIVATION_RELU, 0, 0.0};
    measure("relu fwd", dims({batch, 64, 24, 24}), 0, 2 * in_bytes, [&] {
      check(nnp_activation_forward(ctx.stream, &ap, &x.t, &dx.t), "relu fwd");
      ctx.sync();
    });
    measure("relu bwd", dims({batch, 64, 24, 24}), 0, 3 * in_bytes, [&] {
      check(nnp_activation_backward(ctx.stream, &ap, &x.t, &dx.t, &dx.t), "relu bwd");
      ctx.sync();
    });
    nnp_dropout_params dp{sizeof(dp), 0.25, 42, 0, 0};
    measure("dropout fwd", dims({batch, 9216}), 0, 2 * out_bytes, [&] {
      check(nnp_dropout_forward(ctx.stream, &dp, &y.t, &y.t, nullptr), "dropout fwd");
      ctx.sync();
    });
  }

  // N-D pooling (pool_forward / pool_backward): a 1-D max-pool (kernel 3, stride 2, padding 1;
  // with Indices) and a 3-D max-pool (3x3x3, stride 2, padding 1) and average pool (2x2x2).
  {
    struct nd_case {
      const char* name;
      std::vector<int64_t> x, y;
      int32_t mode, k[3], s[3], pads[6];
      bool indices;
    };
    const std::vector<nd_case> cases{
        {"maxpool1d k3s2",
         {batch, 64, 1024},
         {batch, 64, 512},
         NNP_POOL_MAX,
         {3},
         {2},
         {1, 1},
         true},
        {"maxpool3d k3s2",
         {8, 32, 16, 32, 32},
         {8, 32, 8, 16, 16},
         NNP_POOL_MAX,
         {3, 3, 3},
         {2, 2, 2},
         {1, 1, 1, 1, 1, 1},
         false},
        {"avgpool3d k2s2",
         {8, 32, 16, 32, 32},
         {8, 32, 8, 16, 16},
         NNP_POOL_AVERAGE,
         {2, 2, 2},
         {2, 2, 2},
         {0},
         false},
    };
    const auto shape_of = [](const std::vector<int64_t>& d) {
      std::string r;
      for (int64_t v : d) r += (r.empty() ? "" : "x") + std::to_string(v);
      return r;
    };
    for (const nd_case& c : cases) {
      nnp_pool_params pp{};
      pp.struct_size = sizeof(pp);
      pp.mode = c.mode;
      const size_t k = c.x.size() - 2;
      for (size_t i = 0; i < k; ++i) {
        pp.kernel_shape[i] = c.k[i];
        pp.strides[i] = c.s[i];
        pp.pads[i] = c.pads[i];
        pp.pads[k + i] = c.pads[k + i];
      }
      dtensor& x = ctx.make(c.x, 1.0f);
      dtensor& y = ctx.make(c.y);
      dtensor& dy = ctx.make(c.y, 1.0f);
      dtensor& dx = ctx.make(c.x);
      dtensor* idx = c.indices ? &ctx.make(c.y, 0.0f, i64()) : nullptr;
      const double in_bytes = 4.0 * x.numel(), out_bytes = 4.0 * y.numel();
      measure(std::string(c.name) + " fwd", shape_of(c.x), 0,
              in_bytes + out_bytes * (c.indices ? 3 : 1), [&] {
                check(nnp_pool_forward(ctx.stream, &pp, &x.t, &y.t, idx ? &idx->t : nullptr),
                      "pool_nd fwd");
                ctx.sync();
              });
      measure(std::string(c.name) + " bwd", shape_of(c.x), 0, 2 * in_bytes + 2 * out_bytes, [&] {
        check(nnp_pool_backward(ctx.stream, &pp, &x.t, &y.t, &dy.t, &dx.t), "pool_nd bwd");
        ctx.sync();
      });
    }
  }

  // The vit's layer norm and GELU on its 128 * 17 token rows.
  {
    const int64_t rows = 128 * 17;
    dtensor& x = ctx.make({rows, 64}, 1.0f);
    dtensor& y = ctx.make({rows, 64});
    dtensor& scale = ctx.make({64}, 1.0f);
    dtensor& bias = ctx.make({64}, 0.1f);
    dtensor& mean = ctx.make({rows, 1});
    dtensor& inv = ctx.make({rows, 1});
    dtensor& dx = ctx.make({rows, 64});
    dtensor& ds = ctx.make({64});
    dtensor& db = ctx.make({64});
    const nnp_layer_norm_params lp{sizeof(lp), -1, 0, 1e-5};
    const double bytes = 4.0 * rows * 64;
    measure("layer_norm fwd vit", dims({rows, 64}), 0, 2 * bytes, [&] {
      check(nnp_layer_norm_forward(ctx.stream, &lp, &x.t, &scale.t, &bias.t, &y.t, &mean.t, &inv.t),
            "layer norm fwd");
      ctx.sync();
    });
    measure("layer_norm bwd vit", dims({rows, 64}), 0, 3 * bytes, [&] {
      check(nnp_layer_norm_backward(ctx.stream, &lp, &x.t, &y.t, &scale.t, &mean.t, &inv.t, &dx.t,
                                    &ds.t, &db.t),
            "layer norm bwd");
      ctx.sync();
    });
    dtensor& h = ctx.make({rows, 128}, 0.5f);
    dtensor& g = ctx.make({rows, 128});
    const nnp_activation_params gp{sizeof(gp), NNP_ACTIVATION_GELU_ERF, 0, 0.0};
    measure("gelu fwd vit", dims({rows, 128}), 0, 8.0 * rows * 128, [&] {
      check(nnp_activation_forward(ctx.stream, &gp, &h.t, &g.t), "gelu fwd");
      ctx.sync();
    });
    measure("gelu bwd vit", dims({rows, 128}), 0, 12.0 * rows * 128, [&] {
      check(nnp_activation_backward(ctx.stream, &gp, &h.t, &g.t, &g.t), "gelu bwd");
      ctx.sync();
    });
  }

  // Softmax cross-entropy on [128, 10].
  {
    dtensor& logits = ctx.make({batch, 10}, 2.0f);
    dtensor& labels = ctx.labels(batch, 10);
    dtensor& loss = ctx.make({});
    dtensor& dloss = ctx.make({});
    const float one = 1.0f;
    ctx.upload(dloss, &one);
    dtensor& dlogits = ctx.make({batch, 10});
    const nnp_softmax_cross_entropy_params p{sizeof(p), NNP_REDUCTION_MEAN, 0, -100};
    measure("softmax_xent fwd", dims({batch, 10}), 0, 4.0 * batch * 10, [&] {
      check(
          nnp_softmax_cross_entropy_forward(ctx.stream, &p, &logits.t, &labels.t, &loss.t, nullptr),
          "xent fwd");
      ctx.sync();
    });
    measure("softmax_xent bwd", dims({batch, 10}), 0, 8.0 * batch * 10, [&] {
      check(nnp_softmax_cross_entropy_backward(ctx.stream, &p, &logits.t, &labels.t, &dloss.t,
                                               &dlogits.t),
            "xent bwd");
      ctx.sync();
    });
  }

  // Adam on the cnn's parameter count (one flat tensor).
  {
    const int64_t n = 32 * 9 + 32 + 64 * 32 * 9 + 64 + 9216 * 128 + 128 + 128 * 10 + 10;
    dtensor& g = ctx.make({n}, 0.01f);
    dtensor& w = ctx.make({n}, 0.1f);
    dtensor& m = ctx.make({n});
    dtensor& v = ctx.make({n});
    nnp_adam_params p{sizeof(p), 1e-3, 0.9, 0.999, 1e-8, 0.0, 1, 0, 0};
    measure("adam", std::to_string(n) + " params", 0, 28.0 * n, [&] {
      check(nnp_adam_update(ctx.stream, &p, &g.t, &w.t, &m.t, &v.t), "adam");
      ctx.sync();
      ++p.step;
    });
  }
}

// Square GEMMs of n (the classic BLAS figure; the large set adds 2048 and 4096).
void bench_square_gemms(context& ctx, const std::vector<int64_t>& sizes) {
  for (const int64_t n : sizes) {
    const std::string name = "gemm " + std::to_string(n);
    if (!g_filter.empty() && name.find(g_filter) == std::string::npos) continue;
    dtensor& a = ctx.make({n, n}, 1.0f);
    dtensor& b = ctx.make({n, n}, 1.0f);
    dtensor& y = ctx.make({n, n});
    const nnp_gemm_params p{sizeof(p), 0, 0, 1.0, 0.0};
    measure(name, "M=N=K=" + std::to_string(n), 2.0 * n * n * n, 0, [&] {
      check(nnp_gemm(ctx.stream, &p, &a.t, &b.t, nullptr, &y.t), "gemm");
      ctx.sync();
    });
  }
}

// A ResNet-style 3x3 convolution (the large set): batch 8, 64 -> 64 channels at 56x56, pad 1,
// stride 1 (ResNet-18/34's conv2_x layers): forward, backward-data and backward-filter.
void bench_resnet_conv(context& ctx) {
  const int64_t n = 8, c = 64, k = 64, hw = 56;
  dtensor& x = ctx.make({n, c, hw, hw}, 1.0f);
  dtensor& w = ctx.make({k, c, 3, 3}, 0.1f);
  dtensor& b = ctx.make({k}, 0.1f);
  dtensor& y = ctx.make({n, k, hw, hw});
  dtensor& dy = ctx.make({n, k, hw, hw}, 1.0f);
  dtensor& dx = ctx.make({n, c, hw, hw});
  dtensor& dw = ctx.make({k, c, 3, 3});
  const nnp_conv2d_params p{sizeof(p), 1, 1, 1, 1, 1, 1, 1, 1, 1, 0};
  const double flops = 2.0 * n * k * hw * hw * c * 9;
  const std::string shape = dims({n, c, hw, hw}) + " k64 3x3 p1";
  measure("conv fwd resnet56", shape, flops, 0, [&] {
    check(nnp_conv2d_forward(ctx.stream, &p, &x.t, &w.t, &b.t, &y.t), "conv fwd");
    ctx.sync();
  });
  measure("conv bwd_data resnet56", shape, flops, 0, [&] {
    check(nnp_conv2d_backward_data(ctx.stream, &p, &dy.t, &w.t, &dx.t), "conv bwd data");
    ctx.sync();
  });
  measure("conv bwd_filter resnet56", shape, flops, 0, [&] {
    check(nnp_conv2d_backward_filter(ctx.stream, &p, &x.t, &dy.t, &dw.t), "conv bwd filter");
    ctx.sync();
  });
}

// Attention at the named shapes ("vit", "T256", "T1024").
void bench_attention(context& ctx, const std::vector<std::string>& which) {
  // Attention (rank-4 [B, H, T, D]): the vit's blocks (B 128, 4 heads of 16, 17 tokens) and
  // longer sequences. Forward 4*B*H*T^2*D flops (two matmuls); backward 10*B*H*T^2*D (S
  // recomputed, then dP, dV, dQ, dK).
  struct attention_shape {
    const char* name;
    int64_t b, h, t, d;
  };
  for (const attention_shape& a :
       {attention_shape{"vit", 128, 4, 17, 16}, attention_shape{"T256", 8, 8, 256, 64},
        attention_shape{"T1024", 2, 8, 1024, 64}}) {
    if (std::find(which.begin(), which.end(), a.name) == which.end()) continue;
    dtensor& q = ctx.make({a.b, a.h, a.t, a.d}, 1.0f);
    dtensor& k = ctx.make({a.b, a.h, a.t, a.d}, 1.0f);
    dtensor& v = ctx.make({a.b, a.h, a.t, a.d}, 1.0f);
    dtensor& y = ctx.make({a.b, a.h, a.t, a.d});
    dtensor& lse = ctx.make({a.b, a.h, a.t});
    dtensor& dy = ctx.make({a.b, a.h, a.t, a.d}, 1.0f);
    dtensor& dq = ctx.make({a.b, a.h, a.t, a.d});
    dtensor& dk = ctx.make({a.b, a.h, a.t, a.d});
    dtensor& dv = ctx.make({a.b, a.h, a.t, a.d});
    nnp_attention_params p{};
    p.struct_size = sizeof p;
    const double fwd = 4.0 * a.b * a.h * a.t * a.t * a.d;
    const std::string shape = dims({a.b, a.h, a.t, a.d});
    measure(std::string("attention fwd ") + a.name, shape, fwd, 0, [&] {
      check(nnp_attention_forward(ctx.stream, &p, &q.t, &k.t, &v.t, nullptr, &y.t, &lse.t),
            "attention fwd");
      ctx.sync();
    });
    measure(std::string("attention bwd ") + a.name, shape, 2.5 * fwd, 0, [&] {
      check(nnp_attention_backward(ctx.stream, &p, &q.t, &k.t, &v.t, nullptr, &y.t, &dy.t, &lse.t,
                                   &dq.t, &dk.t, &dv.t),
            "attention bwd");
      ctx.sync();
    });
  }
}

void bench_dispatch(context& ctx) {
  // Dispatch overhead: a 1-element FILL through the full C API (validation included).
  if (g_filter.empty() || std::string("dispatch").find(g_filter) != std::string::npos) {
    dtensor& one = ctx.make({1});
    const nnp_fill_params p{sizeof(p), 1.0};
    const int calls = 200000;
    timings t = time_calls(5, [&] {
      for (int i = 0; i < calls; ++i) check(nnp_fill(ctx.stream, &p, &one.t), "fill");
      ctx.sync();
    });
    std::vector<double>&per_call = t.wall_us, &cpu_per_call = t.cpu_us;
    for (double& us : per_call) us /= calls;
    for (double& us : cpu_per_call) us /= calls;
    row r{"dispatch (fill 1 element)",
          "nnp_op_execute",
          median(per_call),
          *std::min_element(per_call.begin(), per_call.end()),
          0,
          "",
          median(cpu_per_call)};
    print_row(r);
    g_rows.push_back(r);
  }
}

// ---- whole training steps
// --------------------------------------------------------------------------
struct adam_state {
  dtensor *w, *g, *m, *v;
};

class trainer {
 public:
  explicit trainer(context& ctx) : ctx_(ctx) {}

  adam_state& param(std::vector<int64_t> shape, int64_t fan_in, int64_t fan_out, bool bias) {
    const float limit = bias ? 0.0f : std::sqrt(6.0f / static_cast<float>(fan_in + fan_out));
    adam_state s{&ctx_.make(shape, limit), &ctx_.make(shape), &ctx_.make(shape), &ctx_.make(shape)};
    params_.push_back(s);
    return params_.back();
  }
  void adam() {
    ++step_;
    const nnp_adam_params p{sizeof(p), 1e-3, 0.9, 0.999, 1e-8, 0.0, step_, 0, 0};
    for (adam_state& s : params_)
      check(nnp_adam_update(ctx_.stream, &p, &s.g->t, &s.w->t, &s.m->t, &s.v->t), "adam");
  }
  // y = x.W + b (W [in, out]).
  void dense_fwd(const DLTensor& x, const adam_state& w, const adam_state& b, const DLTensor& y) {
    const nnp_gemm_params p{sizeof(p), 0, 0, 1.0, 1.0};
    check(nnp_gemm(ctx_.stream, &p, &x, &w.w->t, &b.w->t, &y), "dense fwd");
  }
  // dW = x^T.dy, db = sum_rows dy, dx = dy.W^T (dx may be NULL).
  void dense_bwd(const DLTensor& x, const DLTensor& dy, const adam_state& w, const adam_state& b,
                 const DLTensor* dx) {
    const nnp_gemm_params pw{sizeof(pw), 1, 0, 1.0, 0.0};
    check(nnp_gemm(ctx_.stream, &pw, &x, &dy, nullptr, &w.g->t), "dense bwd w");
    nnp_reduce_params pr{};
    pr.struct_size = sizeof(pr);
    pr.op = NNP_REDUCE_SUM;
    pr.n_axes = 1;
    pr.axes[0] = 0;
    check(nnp_reduce(ctx_.stream, &pr, &dy, &b.g->t), "dense bwd b");
    if (dx != nullptr) {
      const nnp_gemm_params px{sizeof(px), 0, 1, 1.0, 0.0};
      check(nnp_gemm(ctx_.stream, &px, &dy, &w.w->t, nullptr, dx), "dense bwd x");
    }
  }
  void relu(const DLTensor& x) {
    const nnp_activation_params p{sizeof(p), NNP_ACTIVATION_RELU, 0, 0.0};
    check(nnp_activation_forward(ctx_.stream, &p, &x, &x), "relu");
  }
  void relu_bwd(const DLTensor& y, const DLTensor& dy) {  // y = relu output (> 0 iff x > 0)
    const nnp_activation_params p{sizeof(p), NNP_ACTIVATION_RELU, 0, 0.0};
    check(nnp_activation_backward(ctx_.stream, &p, &y, &dy, &dy), "relu bwd");
  }
  nnp_dropout_params dropout_params(double ratio, int64_t numel) {
    const nnp_dropout_params p{sizeof(p), ratio, 2024, offset_, 0};
    offset_ += static_cast<uint64_t>((numel + 3) / 4);
    return p;
  }
  // A hidden layer: a = relu(x.W + b), d = dropout(a). Returns the dropout's params, which its
  // backward needs.
  nnp_dropout_params dense_relu_dropout(const DLTensor& x, const adam_state& w, const adam_state& b,
                                        dtensor& a, dtensor& d, double ratio) {
    dense_fwd(x, w, b, a.t);
    relu(a.t);
    const nnp_dropout_params p = dropout_params(ratio, a.numel());
    check(nnp_dropout_forward(ctx_.stream, &p, &a.t, &d.t, nullptr), "dropout");
    return p;
  }
  // Its backward: g holds dL/dd and becomes dL/da in place; then dW, db and dx (dx may be NULL).
  void dense_relu_dropout_bwd(const nnp_dropout_params& p, const DLTensor& x, const DLTensor& a,
                              const DLTensor& g, const adam_state& w, const adam_state& b,
                              const DLTensor* dx) {
    check(nnp_dropout_backward(ctx_.stream, &p, &g, &g), "dropout bwd");
    relu_bwd(a, g);
    dense_bwd(x, g, w, b, dx);
  }
  void loss(const DLTensor& logits, const DLTensor& labels, const DLTensor& loss,
            const DLTensor& dloss, const DLTensor& dlogits) {
    const nnp_softmax_cross_entropy_params p{sizeof(p), NNP_REDUCTION_MEAN, 0, -100};
    check(nnp_softmax_cross_entropy_forward(ctx_.stream, &p, &logits, &labels, &loss, nullptr),
          "xent fwd");
    check(nnp_softmax_cross_entropy_backward(ctx_.stream, &p, &logits, &labels, &dloss, &dlogits),
          "xent bwd");
  }

 private:
  context& ctx_;
  std::deque<adam_state> params_;  // deque: references stay valid as it grows
  int64_t step_ = 0;
  uint64_t offset_ = 0;
};

double run_steps(context& ctx, const std::string& model, int steps) {
  const int64_t B = 128;
  trainer tr(ctx);
  dtensor& labels = ctx.labels(B, 10);
  dtensor& loss = ctx.make({});
  dtensor& dloss = ctx.make({});
  const float one = 1.0f;
  ctx.upload(dloss, &one);
  std::function<void()> step;
  std::vector<std::unique_ptr<view>> views;  // flattened views used by the steps

  if (model == "mlp") {
    dtensor& x = ctx.make({B, 784}, 1.0f);
    adam_state& w1 = tr.param({784, 512}, 784, 512, false);
    adam_state& b1 = tr.param({512}, 0, 0, true);
    adam_state& w2 = tr.param({512, 512}, 512, 512, false);
    adam_state& b2 = tr.param({512}, 0, 0, true);
    adam_state& w3 = tr.param({512, 10}, 512, 10, false);
    adam_state& b3 = tr.param({10}, 0, 0, true);
    dtensor &a1 = ctx.make({B, 512}), &d1 = ctx.make({B, 512}), &a2 = ctx.make({B, 512});
    dtensor &d2 = ctx.make({B, 512}), &logits = ctx.make({B, 10}), &dlogits = ctx.make({B, 10});
    dtensor &g2 = ctx.make({B, 512}), &g1 = ctx.make({B, 512});
    step = [&] {
      const nnp_dropout_params p1 = tr.dense_relu_dropout(x.t, w1, b1, a1, d1, 0.2);
      const nnp_dropout_params p2 = tr.dense_relu_dropout(d1.t, w2, b2, a2, d2, 0.2);
      tr.dense_fwd(d2.t, w3, b3, logits.t);
      tr.loss(logits.t, labels.t, loss.t, dloss.t, dlogits.t);
      tr.dense_bwd(d2.t, dlogits.t, w3, b3, &g2.t);
      tr.dense_relu_dropout_bwd(p2, d1.t, a2.t, g2.t, w2, b2, &g1.t);
      tr.dense_relu_dropout_bwd(p1, x.t, a1.t, g1.t, w1, b1, nullptr);
      tr.adam();
      ctx.sync();
    };
  } else if (model == "cnn") {
    dtensor& x = ctx.make({B, 1, 28, 28}, 1.0f);
    adam_state& c1w = tr.param({32, 1, 3, 3}, 9, 32 * 9, false);
    adam_state& c1b = tr.param({32}, 0, 0, true);
    adam_state& c2w = tr.param({64, 32, 3, 3}, 32 * 9, 64 * 9, false);
    adam_state& c2b = tr.param({64}, 0, 0, true);
    adam_state& w3 = tr.param({9216, 128}, 9216, 128, false);
    adam_state& b3 = tr.param({128}, 0, 0, true);
    adam_state& w4 = tr.param({128, 10}, 128, 10, false);
    adam_state& b4 = tr.param({10}, 0, 0, true);
    dtensor &y1 = ctx.make({B, 32, 26, 26}), &y2 = ctx.make({B, 64, 24, 24});
    dtensor &pool = ctx.make({B, 64, 12, 12}), &drop1 = ctx.make({B, 64, 12, 12});
    dtensor &a3 = ctx.make({B, 128}), &d3 = ctx.make({B, 128});
    dtensor &logits = ctx.make({B, 10}), &dlogits = ctx.make({B, 10});
    dtensor &g3 = ctx.make({B, 128}), &gd = ctx.make({B, 64, 12, 12});
    dtensor &g2 = ctx.make({B, 64, 24, 24}), &g1 = ctx.make({B, 32, 26, 26});
    views.push_back(std::make_unique<view>(drop1, std::vector<int64_t>{B, 9216}));
    views.push_back(std::make_unique<view>(gd, std::vector<int64_t>{B, 9216}));
    view &flat_drop = *views[0], &flat_gd = *views[1];
    const nnp_conv2d_params cp{sizeof(cp), 1, 1, 0, 0, 0, 0, 1, 1, 1, 0};
    const nnp_pool2d_params pp{sizeof(pp), NNP_POOL_MAX, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0};
    step = [&, cp, pp] {
      check(nnp_conv2d_forward(ctx.stream, &cp, &x.t, &c1w.w->t, &c1b.w->t, &y1.t), "conv1");
      tr.relu(y1.t);
      check(nnp_conv2d_forward(ctx.stream, &cp, &y1.t, &c2w.w->t, &c2b.w->t, &y2.t), "conv2");
      tr.relu(y2.t);
      check(nnp_pool2d_forward(ctx.stream, &pp, &y2.t, &pool.t), "pool");
      const nnp_dropout_params p1 = tr.dropout_params(0.25, pool.numel());
      check(nnp_dropout_forward(ctx.stream, &p1, &pool.t, &drop1.t, nullptr), "dropout");
      const nnp_dropout_params p2 = tr.dense_relu_dropout(flat_drop.t, w3, b3, a3, d3, 0.5);
      tr.dense_fwd(d3.t, w4, b4, logits.t);
      tr.loss(logits.t, labels.t, loss.t, dloss.t, dlogits.t);
      tr.dense_bwd(d3.t, dlogits.t, w4, b4, &g3.t);
      tr.dense_relu_dropout_bwd(p2, flat_drop.t, a3.t, g3.t, w3, b3, &flat_gd.t);
      check(nnp_dropout_backward(ctx.stream, &p1, &gd.t, &gd.t), "dropout bwd");
      check(nnp_pool2d_backward(ctx.stream, &pp, &y2.t, &pool.t, &gd.t, &g2.t), "pool bwd");
      tr.relu_bwd(y2.t, g2.t);
      check(nnp_conv2d_backward_bias(ctx.stream, &g2.t, &c2b.g->t), "conv2 bwd bias");
      check(nnp_conv2d_backward_filter(ctx.stream, &cp, &y1.t, &g2.t, &c2w.g->t), "conv2 bwd w");
      check(nnp_conv2d_backward_data(ctx.stream, &cp, &g2.t, &c2w.w->t, &g1.t), "conv2 bwd x");
      tr.relu_bwd(y1.t, g1.t);
      check(nnp_conv2d_backward_bias(ctx.stream, &g1.t, &c1b.g->t), "conv1 bwd bias");
      check(nnp_conv2d_backward_filter(ctx.stream, &cp, &x.t, &g1.t, &c1w.g->t), "conv1 bwd w");
      tr.adam();
      ctx.sync();
    };
  } else {
    throw std::runtime_error("unknown model '" + model + "' (mlp or cnn)");
  }

  const int warm = std::max(1, std::min(g_warmup, 3));
  for (int i = 0; i < warm; ++i) step();
  timings t = time_calls(steps, step);
  std::vector<double>&ms = t.wall_us, &cpu_ms = t.cpu_us;
  for (double& v : ms) v /= 1e3;
  for (double& v : cpu_ms) v /= 1e3;
  const double med = median(ms), cpu_med = median(cpu_ms);
  const double ips = 128.0 / (med / 1e3);
  const double epoch_s = std::ceil(60000.0 / 128.0) * med / 1e3;
  std::printf(
      "step %-4s batch 128: median %.2f ms/step (min %.2f, cpu %.2f) over %d steps = "
      "%.0f images/s ~ %.1f s per 60000-image epoch\n",
      model.c_str(), med, *std::min_element(ms.begin(), ms.end()), cpu_med, steps, ips, epoch_s);
  std::fflush(stdout);
  row r{
      "step " + model, "batch 128",  med * 1e3, *std::min_element(ms.begin(), ms.end()) * 1e3, ips,
      "images/s",      cpu_med * 1e3};
  g_rows.push_back(r);
  return med;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"nnplug-bench: per-op and training-step performance of an nnplug backend"};
  std::string backend = "auto", json_path, step_model;
  int steps = 20;
  app.add_option("--backend,-b", backend, "device: cpu, cuda, reference, auto, cpu:0 ...");
  app.add_option("--reps,-r", g_reps, "timed calls per row (median reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup,-w", g_warmup, "untimed calls before timing")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--filter,-f", g_filter, "only rows whose name contains this text");
  app.add_option("--json", json_path, "also write the results as JSON to this file");
  app.add_option("--step", step_model, "time whole training steps instead: mlp, cnn or all")
      ->check(CLI::IsMember({"mlp", "cnn", "all"}));
  app.add_option("--steps", steps, "timed training steps (median reported)")
      ->check(CLI::PositiveNumber);
  int vs_blas_rounds = 0;
  app.add_option("--vs-blas", vs_blas_rounds,
                 "compare each model GEMM with cblas_sgemm called directly, in this many "
                 "interleaved rounds of --reps calls each (e.g. 9)")
      ->check(CLI::PositiveNumber);
  std::string set = "models";
  app.add_option("--set", set,
                 "per-op rows: models (the three models' shapes, GEMM 1024, attention at 17, 256 "
                 "and 1024 tokens), large (GEMM 1024/2048/4096, a ResNet 3x3 convolution at "
                 "8x64x56x56, attention at 256 and 1024 tokens) or all")
      ->check(CLI::IsMember({"models", "large", "all"}));
  bool limits = false;
  app.add_flag("--limits", limits,
               "instead: measure the host's limits with the device's thread count: copy and "
               "triad bandwidth, cblas_sgemm called directly at --limit-sizes");
  std::vector<int64_t> limit_sizes{1024, 2048, 4096};
  app.add_option("--limit-sizes", limit_sizes, "square cblas_sgemm sizes of --limits")
      ->check(CLI::Range(int64_t{1}, int64_t{16384}));
  int64_t stream_mib = 64;
  app.add_option("--stream-mib", stream_mib, "array size of --limits' bandwidth rows, MiB")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  CLI11_PARSE(app, argc, argv);
  if (limits && (vs_blas_rounds > 0 || !step_model.empty())) {
    std::fprintf(stderr, "nnplug-bench: --limits goes with neither --vs-blas nor --step\n");
    return 2;
  }

  int rc = 0;
  try {
    context ctx(backend);
    openblas blas;
    const char* core = blas.corename != nullptr ? blas.corename() : nullptr;
    std::printf("nnplug %s, device %s: %s, %d threads\n", nnp_version_string(), ctx.props.name,
                ctx.props.description, ctx.props.num_threads);
    std::printf("OpenBLAS SGEMM kernel: %s; OPENBLAS_CORETYPE=%s; hardware threads %u\n",
                core != nullptr ? core : "(OpenBLAS not loaded)",
                std::getenv("OPENBLAS_CORETYPE") ? std::getenv("OPENBLAS_CORETYPE") : "(unset)",
                std::thread::hardware_concurrency());
    // OpenBLAS's pthreads build starts its worker threads when it loads, and they poll for
    // work for about 0.1-0.15 s before they sleep (docs/cpu-backend.md), taking a core from
    // whatever runs meanwhile: measured, the first rows timed within that window ran at half
    // speed on 2 cores (mlp.fc1 forward 948 us against 483 us later). Wait it out.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    if (vs_blas_rounds > 0) {
      bench_vs_blas(ctx, blas, vs_blas_rounds);
    } else if (limits) {
      std::printf("%-34s %-28s %12s %12s %12s %10s\n", "limit", "shape", "median us", "min us",
                  "cpu us", "rate");
      bench_limits(ctx, blas, limit_sizes, stream_mib);
    } else if (step_model.empty()) {
      std::printf("%-34s %-28s %12s %12s %12s %10s\n", "op", "shape", "median us", "min us",
                  "cpu us", "rate");
      const bool models = set != "large", large = set != "models";
      if (models) bench_ops(ctx);
      bench_square_gemms(
          ctx, large ? std::vector<int64_t>{1024, 2048, 4096} : std::vector<int64_t>{1024});
      if (large) bench_resnet_conv(ctx);
      bench_attention(ctx, models ? std::vector<std::string>{"vit", "T256", "T1024"}
                                  : std::vector<std::string>{"T256", "T1024"});
      if (models) bench_dispatch(ctx);
    } else {
      for (const std::string m : {"mlp", "cnn"})
        if (step_model == "all" || step_model == m) run_steps(ctx, m, steps);
    }
    if (!json_path.empty()) {
      nlohmann::json j;
      j["backend"] = backend;
      j["device"] = ctx.props.name;
      j["description"] = ctx.props.description;
      j["num_threads"] = ctx.props.num_threads;
      j["openblas_core"] = core != nullptr ? core : "";
      j["reps"] = g_reps;
      j["warmup"] = g_warmup;
      j["set"] = limits ? "limits" : set;
      j["rows"] = nlohmann::json::array();
      for (const row& r : g_rows)
        j["rows"].push_back({{"name", r.name},
                             {"shape", r.shape},
                             {"median_us", r.median_us},
                             {"min_us", r.min_us},
                             {"rate", r.rate},
                             {"unit", r.unit},
                             {"cpu_us", r.cpu_us}});
      j["unsupported"] = nlohmann::json::array();
      for (const auto& [name, why] : g_unsupported)
        j["unsupported"].push_back({{"name", name}, {"error", why}});
      j["failed"] = nlohmann::json::array();
      for (const auto& [name, why] : g_failed)
        j["failed"].push_back({{"name", name}, {"error", why}});
      std::ofstream(json_path) << j.dump(2) << "\n";
    }
    std::printf("nnplug-bench: %zu rows measured, %zu unsupported, %zu failed\n", g_rows.size(),
                g_unsupported.size(), g_failed.size());
    if (!g_failed.empty()) rc = 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nnplug-bench: %s\n", e.what());
    rc = 1;
  }
  nnp_shutdown();
  return rc;
}
