// test_graphs.cpp — graph capture and replay (nnplug.h, "graphs") on every backend: a small
// training-like step (a GEMM forward, a scale, an in-place GEMM update of the weights and a
// device-to-device copy) is run eagerly for several steps with new inputs each step, then
// captured once and launched for the same steps. The launches must give bitwise the eager
// results: a graph replays the same kernels in the same order, reading its buffers as they are
// at launch time. A call refused during the capture must not be recorded.
#include <doctest/doctest.h>

#include "harness.hpp"

#include <string>
#include <vector>

namespace {

using namespace conf;

constexpr int64_t kM = 24, kK = 20, kN = 12;
constexpr int kSteps = 3;

struct step_buffers {
  device_entry* d = nullptr;
  void *x = nullptr, *w = nullptr, *y = nullptr, *z = nullptr, *zc = nullptr;
  int64_t sx[2] = {kM, kK}, sw[2] = {kK, kN}, sy[2] = {kM, kN};
  DLTensor tx{}, tw{}, ty{}, tz{}, tzc{};

  explicit step_buffers(device_entry* dev) : d(dev) {
    for (void** p : {&x, &w, &y, &z, &zc}) {
      const size_t n = p == &x ? kM * kK : p == &w ? kK * kN : kM * kN;
      REQUIRE(nnp_malloc(d->dev, n * sizeof(float), p) == NNP_STATUS_OK);
    }
    tx = tensor2(x, sx);
    tw = tensor2(w, sw);
    ty = tensor2(y, sy);
    tz = tensor2(z, sy);
    tzc = tensor2(zc, sy);
  }
  ~step_buffers() {
    for (void* p : {x, w, y, z, zc}) (void)nnp_free(d->dev, p);
  }
  step_buffers(const step_buffers&) = delete;
  step_buffers& operator=(const step_buffers&) = delete;

  DLTensor tensor2(void* data, int64_t* shape) const {
    DLTensor t{};
    t.data = data;
    t.device = d->dl;
    t.ndim = 2;
    t.dtype = DLDataType{kDLFloat, 32, 1};
    t.shape = shape;
    return t;
  }

  // One step on `s`: Y = X W; Z = -0.5 Y; W = -0.01 X^T Z + W; Zc = Z. Returns the first
  // failure (UNSUPPORTED: a plugin without GEMM, such as the template).
  nnp_status queue_step(nnp_stream* s) {
    auto fwd = make_params<nnp_gemm_params>();
    if (nnp_status st = nnp_gemm(s, &fwd, &tx, &tw, nullptr, &ty)) return st;
    auto half = make_params<nnp_scale_params>();
    half.alpha = -0.5;
    if (nnp_status st = nnp_scale(s, &half, &ty, &tz)) return st;
    auto upd = make_params<nnp_gemm_params>();
    upd.trans_a = 1;
    upd.alpha = -0.01;
    upd.beta = 1;
    if (nnp_status st = nnp_gemm(s, &upd, &tx, &tz, &tw, &tw)) return st;
    return nnp_memcpy_async(s, d->dev, zc, d->dev, z, kM * kN * sizeof(float));
  }
};

std::vector<float> ramp(size_t n, float scale, float shift) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * static_cast<float>(static_cast<int>(i % 17) - 8) + shift;
  return v;
}

// The input of step k.
std::vector<float> input_of(int k) { return ramp(kM * kK, 0.125f, 0.03f * static_cast<float>(k)); }

struct results {
  std::vector<float> w, zc;
};

results read_back(const step_buffers& b) {
  results r{std::vector<float>(kK * kN), std::vector<float>(kM * kN)};
  REQUIRE(nnp_memcpy(nullptr, r.w.data(), b.d->dev, b.w, r.w.size() * sizeof(float)) ==
          NNP_STATUS_OK);
  REQUIRE(nnp_memcpy(nullptr, r.zc.data(), b.d->dev, b.zc, r.zc.size() * sizeof(float)) ==
          NNP_STATUS_OK);
  return r;
}

}  // namespace

TEST_CASE("graphs: a captured step replays bitwise as the eager steps") {
  for (device_entry* d : backends_under_test()) {
    if (!d->available) continue;
    CAPTURE(d->name);
    step_buffers b(d);
    const std::vector<float> w0 = ramp(kK * kN, 0.0625f, 0.01f);
    nnp_stream* s = nullptr;
    REQUIRE(nnp_stream_create(d->dev, &s) == NNP_STATUS_OK);

    // Eager.
    REQUIRE(nnp_memcpy(d->dev, b.w, nullptr, w0.data(), w0.size() * sizeof(float)) ==
            NNP_STATUS_OK);
    bool unsupported = false;
    for (int k = 0; k < kSteps && !unsupported; ++k) {
      const std::vector<float> x = input_of(k);
      REQUIRE(nnp_memcpy_async(s, d->dev, b.x, nullptr, x.data(), x.size() * sizeof(float)) ==
              NNP_STATUS_OK);
      const nnp_status st = b.queue_step(s);
      unsupported = st == NNP_STATUS_UNSUPPORTED;
      REQUIRE_MESSAGE((st == NNP_STATUS_OK || unsupported), nnp_last_error_message());
      REQUIRE(nnp_stream_synchronize(s) == NNP_STATUS_OK);
    }
    if (unsupported) {  // the step's ops are missing: nothing to capture
      report({d->name, "graph", "f32", "graph gemm+scale+gemm_update+copy x3",
              case_outcome::unsupported, 0, 0, nnp_last_error_message()});
      CHECK(nnp_stream_destroy(s) == NNP_STATUS_OK);
      continue;
    }
    const results eager = read_back(b);

    // Captured once, launched kSteps times.
    REQUIRE(nnp_memcpy(d->dev, b.w, nullptr, w0.data(), w0.size() * sizeof(float)) ==
            NNP_STATUS_OK);
    const std::vector<float> zeros(kM * kN, 0.0f);
    REQUIRE(nnp_memcpy(d->dev, b.zc, nullptr, zeros.data(), zeros.size() * sizeof(float)) ==
            NNP_STATUS_OK);
    const nnp_status begun = nnp_stream_begin_capture(s);
    REQUIRE_MESSAGE(begun == NNP_STATUS_OK, nnp_last_error_message());
    REQUIRE_MESSAGE(b.queue_step(s) == NNP_STATUS_OK, nnp_last_error_message());
    // Refused at capture (Y's shape is wrong): not recorded, the capture goes on.
    int64_t bad_shape[2] = {kM, kN + 1};
    DLTensor bad = b.tensor2(b.y, bad_shape);
    auto fwd = make_params<nnp_gemm_params>();
    CHECK(nnp_gemm(s, &fwd, &b.tx, &b.tw, nullptr, &bad) == NNP_STATUS_INVALID_ARGUMENT);
    nnp_graph* g = nullptr;
    REQUIRE_MESSAGE(nnp_stream_end_capture(s, &g) == NNP_STATUS_OK, nnp_last_error_message());
    // Nothing ran during the capture.
    const results idle = read_back(b);
    CHECK_MESSAGE(idle.w == w0, d->name << ": work ran while the stream was capturing");
    CHECK_MESSAGE(idle.zc == zeros, d->name << ": a copy ran while the stream was capturing");

    for (int k = 0; k < kSteps; ++k) {
      const std::vector<float> x = input_of(k);
      REQUIRE(nnp_memcpy_async(s, d->dev, b.x, nullptr, x.data(), x.size() * sizeof(float)) ==
              NNP_STATUS_OK);
      REQUIRE_MESSAGE(nnp_graph_launch(g, s) == NNP_STATUS_OK, nnp_last_error_message());
      REQUIRE(nnp_stream_synchronize(s) == NNP_STATUS_OK);
    }
    const results replayed = read_back(b);
    const bool same = replayed.w == eager.w && replayed.zc == eager.zc;
    CHECK_MESSAGE(same, d->name << ": the replayed steps differ from the eager ones");
    report({d->name, "graph", "f32", "graph gemm+scale+gemm_update+copy x3",
            same ? case_outcome::pass : case_outcome::fail, 0, 0, ""});

    CHECK(nnp_graph_destroy(g) == NNP_STATUS_OK);
    CHECK(nnp_graph_launch(g, s) == NNP_STATUS_INVALID_ARGUMENT);  // stale
    CHECK(nnp_stream_destroy(s) == NNP_STATUS_OK);
  }
}
