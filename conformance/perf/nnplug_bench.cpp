// nnplug-bench: performance of one backend through the public C API (libnnplug), per op and
// shape, and for whole training steps of the two Fashion-MNIST models (examples/c/train).
//
//   nnplug-bench --backend cpu [--reps 20] [--warmup 3] [--json out.json] [--filter conv]
//   nnplug-bench --backend cpu --step mlp|cnn|all [--steps 20]
//   nnplug-bench --backend cpu --vs-blas 9 [--reps 20] [--filter fc1]
//   nnplug-bench --backend cpu --set large|all     (GEMM 1024-4096, ResNet conv, long attention,
//                                                 a full reduction)
//   nnplug-bench --backend cpu --limits            (copy/triad GB/s, direct cblas_sgemm GFLOP/s)
//
// Per-op rows: the median (and minimum) microseconds per call over --reps timed calls after
// --warmup untimed ones, each call followed by nnp_stream_synchronize, and GFLOP/s (compute
// ops) or GB/s (memory-bound ops, bytes read + written once). Shapes are the mlp's and cnn's
// at batch 128: GEMM forward and both backward GEMMs, a 1024 GEMM, batched matmul at attention
// shapes ([512, 17, 16] x [512, 16, 17]), the cnn's convolutions (forward,
// backward-data, backward-filter), max-pool, relu, dropout, softmax cross-entropy, the vit's
// attention transposes (and a [64, 256, 256] one) and Adam on the cnn's 1.2M parameters. --vs-blas
// times the same GEMMs against cblas_sgemm called directly (1 OpenBLAS thread, and the device's
// thread count), interleaved (bench_vs_blas). The dispatch row is the mean cost of a 1-element FILL
// through nnp_op_execute.
// --step runs forward + backward + Adam of a model at batch 128 with nnplug ops and prints
// images/s and the implied seconds per 60000-image epoch.
// Timings are wall-clock (steady_clock) around synchronised calls: fine for CPU backends and
// for GPU ops of more than a few tens of microseconds.
// A row the backend refuses (UNSUPPORTED) is printed as "unsupported: <message>" and the run
// goes on; a row that fails otherwise is printed as "FAILED: <message>" and the run goes on too.
// Both lists are in the JSON ("unsupported", "failed"); the last line counts the rows; the exit
#include "bench.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using namespace nnp_bench;

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
      if (large) {
        bench_resnet_conv(ctx);
        bench_full_reduce(ctx);
      }
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
