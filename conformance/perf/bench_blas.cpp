// bench_blas.cpp — nnplug-bench's model GEMM shapes, --vs-blas (nnplug against cblas_sgemm
// called directly) and --limits (the machine's bandwidth and SGEMM ceilings).
#include "bench.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>

namespace nnp_bench {

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

gemm_operands make_gemm(context& ctx, const gemm_shape& s) {
  dtensor& a =
      ctx.make(s.ta ? std::vector<int64_t>{s.k, s.m} : std::vector<int64_t>{s.m, s.k}, 1.0f);
  dtensor& b =
      ctx.make(s.tb ? std::vector<int64_t>{s.n, s.k} : std::vector<int64_t>{s.k, s.n}, 1.0f);
  dtensor& y = ctx.make({s.m, s.n});
  return {a, b, y, nnp_gemm_params{sizeof(nnp_gemm_params), s.ta, s.tb, 1.0, 0.0}};
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
    const gemm_operands g = make_gemm(ctx, s);
    dtensor &a = g.a, &b = g.b, &y = g.y;
    const nnp_gemm_params p = g.p;
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

}  // namespace nnp_bench
