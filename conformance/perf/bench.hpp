// bench.hpp — the pieces nnplug-bench's files share: device tensors and a context on one
// device and stream, the row table and its timing helpers, OpenBLAS found at run time, and the
// benchmark sets (bench_common.cpp, bench_blas.cpp, bench_ops.cpp, bench_steps.cpp; main in
// nnplug_bench.cpp, whose header comment describes the rows).
#pragma once

#include <nnplug/nnplug.h>

#include <nnplug/kit/half.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace nnp_bench {

using clock_type = std::chrono::steady_clock;

// A failed nnplug call, with its status (measure() reports UNSUPPORTED rows and goes on).
struct call_error : std::runtime_error {
  nnp_status status;
  call_error(nnp_status s, const std::string& what) : std::runtime_error(what), status(s) {}
};

// Throws call_error unless s is NNP_STATUS_OK; `what` names the call.
void check(nnp_status s, const char* what);

inline DLDataType f32() { return DLDataType{kDLFloat, 32, 1}; }
inline DLDataType f16() { return DLDataType{kDLFloat, 16, 1}; }
inline DLDataType bf16() { return DLDataType{kDLBfloat, 16, 1}; }
inline DLDataType i64() { return DLDataType{kDLInt, 64, 1}; }

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
    if (dt.code == kDLFloat || dt.code == kDLBfloat) {
      std::vector<float> host(static_cast<size_t>(t->numel()));
      std::uniform_real_distribution<float> dist(-scale, scale);
      for (float& v : host) v = scale > 0 ? dist(rng_) : 0.0f;
      if (dt.bits == 16) {  // float16 / bfloat16: the values rounded to nearest even
        std::vector<uint16_t> half(host.size());
        for (size_t i = 0; i < host.size(); ++i)
          half[i] =
              dt.code == kDLBfloat ? nnp::float_to_bf16(host[i]) : nnp::float_to_half(host[i]);
        upload(*t, half.data());
      } else {
        upload(*t, host.data());
      }
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
double process_cpu_us();

// The rows measured so far; rows that could not be measured: UNSUPPORTED by the backend
// (reported, not a failure) and failed (any other error; the exit status is 1).
extern std::vector<row> g_rows;
extern std::vector<std::pair<std::string, std::string>> g_unsupported, g_failed;
// --reps, --warmup and --filter.
extern int g_reps, g_warmup;
extern std::string g_filter;

double median(std::vector<double> v);
void print_row(const row& r);

// The wall-clock and process CPU time of each of `reps` calls of fn, in microseconds.
struct timings {
  std::vector<double> wall_us, cpu_us;
};
timings time_calls(int reps, const std::function<void()>& fn);

// Times fn (which must leave its work complete) and records a row. flops > 0 gives GFLOP/s,
// else bytes > 0 gives GB/s. A row the backend refuses is reported and the run goes on.
void measure(const std::string& name, const std::string& shape, double flops, double bytes,
             const std::function<void()>& fn);

// "8x64x56x56".
std::string dims(std::initializer_list<int64_t> d);

// ---- OpenBLAS, found at run time (dlopen; members stay null without it) ----------------------
struct openblas {
  using sgemm_fn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                            int, float, float*, int);
  sgemm_fn sgemm = nullptr;
  void (*set_threads)(int) = nullptr;
  int (*get_threads)() = nullptr;
  char* (*corename)() = nullptr;
  openblas();
};

// ---- the benchmark sets ----------------------------------------------------------------------
// bench_blas.cpp: --vs-blas and --limits.
void bench_vs_blas(context& ctx, const openblas& blas, int rounds);
void bench_limits(context& ctx, const openblas& blas, const std::vector<int64_t>& sizes,
                  int64_t stream_mib);
// bench_ops.cpp: the per-op rows.
void bench_ops(context& ctx);
void bench_square_gemms(context& ctx, const std::vector<int64_t>& sizes);
void bench_resnet_conv(context& ctx);
// A reduction over all axes of a [4096, 4096] float32 tensor (the large set).
void bench_full_reduce(context& ctx);
void bench_attention(context& ctx, const std::vector<std::string>& which);
void bench_dispatch(context& ctx);
// bench_steps.cpp: whole training steps of a model ("mlp" or "cnn") at batch 128; returns the
// median milliseconds per step.
double run_steps(context& ctx, const std::string& model, int steps);

struct gemm_shape {
  const char* what;
  int64_t m, n, k;
  int32_t ta, tb;
};

// The dense layers' GEMMs of the three models at batch 128 (bench_blas.cpp).
std::vector<gemm_shape> model_gemms();
// The operands of one GEMM of shape s on ctx's device: A and B filled with values in [-1, 1]
// (stored transposed where s says so), Y zeroed, and the params (alpha 1, beta 0).
struct gemm_operands {
  dtensor &a, &b, &y;
  nnp_gemm_params p;
};
gemm_operands make_gemm(context& ctx, const gemm_shape& s);
// "fwd", "bwd_x" or "bwd_w".
const char* gemm_kind(const gemm_shape& s);

}  // namespace nnp_bench
