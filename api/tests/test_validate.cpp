// test_validate.cpp — libnnplug's op validation (api/src/validate.cpp), op by op.
//
// Runs on the fixture device fx_ok:0, whose op_supported answers UNSUPPORTED for everything but
// float32 fill (it has one kernel row). So a description that passes validation reaches the
// plugin and comes back UNSUPPORTED with the plugin's message (which the host prefixes "fx_ok: "),
// while an invalid one stops in libnnplug with INVALID_ARGUMENT and a message naming the
// argument: each case tells the two apart without depending on any real backend.
#include <doctest/doctest.h>

#include <nnplug/nnplug.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

namespace {

constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kF64{kDLFloat, 64, 1};
constexpr DLDataType kI64{kDLInt, 64, 1};
constexpr DLDataType kU8{kDLUInt, 8, 1};

// Tensor descriptions with owned shapes (data NULL: nnp_op_supported allows it).
class descs {
 public:
  DLTensor* operator()(std::vector<int64_t> shape, DLDataType dtype = kF32) {
    shapes_.push_back(std::move(shape));
    DLTensor t{};
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = static_cast<int32_t>(shapes_.back().size());
    t.shape = shapes_.back().data();
    t.dtype = dtype;
    tensors_.push_back(t);
    return &tensors_.back();
  }
  int64_t* strides(std::vector<int64_t> s) {
    shapes_.push_back(std::move(s));
    return shapes_.back().data();
  }

 private:
  std::deque<std::vector<int64_t>> shapes_;
  std::deque<DLTensor> tensors_;
};

nnp_device* fixture_device() {
#ifdef NNPLUG_FIXTURE_DIR
  const std::string path = std::string(NNPLUG_FIXTURE_DIR) + "/libnnplug-fx_ok.so";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return nullptr;
  if (nnp_load_plugin(path.c_str(), nullptr) != NNP_STATUS_OK) return nullptr;
  nnp_device* dev = nullptr;
  if (nnp_get_device("fx_ok:0", &dev) != NNP_STATUS_OK) return nullptr;
  return dev;
#else
  return nullptr;
#endif
}

#define NNP_NEED_FIXTURE()                                                   \
  nnp_device* dev = fixture_device();                                        \
  if (dev == nullptr) {                                                      \
    MESSAGE("fixture plugin fx_ok not available; validation cases skipped"); \
    return;                                                                  \
  }

nnp_status ask(nnp_device* dev, int32_t kind, const void* params, std::vector<const DLTensor*> in,
               std::vector<const DLTensor*> out) {
  return nnp_op_supported(dev, kind, params, in.size(), in.empty() ? nullptr : in.data(),
                          out.size(), out.empty() ? nullptr : out.data());
}

// Valid: validation passed and the plugin was asked (it says UNSUPPORTED with its message).
#define CHECK_VALID(...)                                                   \
  do {                                                                     \
    const nnp_status st_ = ask(dev, __VA_ARGS__);                          \
    INFO("message: " << nnp_last_error_message());                         \
    CHECK(st_ == NNP_STATUS_UNSUPPORTED);                                  \
    CHECK(std::string(nnp_last_error_message()).rfind("fx_ok: ", 0) == 0); \
  } while (0)

// Invalid: INVALID_ARGUMENT, and the message starts with the op and contains each word.
void check_invalid(nnp_status st, const char* op, std::initializer_list<const char*> words) {
  const std::string msg = nnp_last_error_message();
  INFO("message: " << msg);
  CHECK(st == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(msg.rfind(std::string(op) + ": ", 0) == 0);
  for (const char* w : words)
    CHECK_MESSAGE(msg.find(w) != std::string::npos, "missing: " << std::string(w));
}
#define CHECK_INVALID(op, words, ...) check_invalid(ask(dev, __VA_ARGS__), op, words)
#define W(...) \
  { __VA_ARGS__ }

template <typename P>
P params_of() {
  P p{};
  p.struct_size = sizeof(P);
  return p;
}

// The gemm cases' starting point: Y [2, 4] = A [2, 3] . B [3, 4], alpha 1.
struct gemm_2x3x4 {
  nnp_gemm_params p;
  DLTensor *a, *b, *y;
};
gemm_2x3x4 gemm_carrier(descs& d) {
  auto p = params_of<nnp_gemm_params>();
  p.alpha = 1.0;
  return {p, d({2, 3}), d({3, 4}), d({2, 4})};
}

}  // namespace

TEST_CASE("validate: generic tensor checks (gemm as the carrier)") {
  NNP_NEED_FIXTURE();
  descs d;
  const auto [p, a, b, y] = gemm_carrier(d);
  CHECK_VALID(NNP_OP_GEMM, &p, {a, b}, {y});
  CHECK_VALID(NNP_OP_GEMM, &p, {a, b, nullptr}, {y});

  CHECK_INVALID("gemm", W("n_inputs: expected 2..3, got 1"), NNP_OP_GEMM, &p, {a}, {y});
  CHECK_INVALID("gemm", W("n_inputs: expected 2..3, got 4"), NNP_OP_GEMM, &p, {a, b, y, y}, {y});
  CHECK_INVALID("gemm", W("n_outputs: expected 1, got 0"), NNP_OP_GEMM, &p, {a, b}, {});
  CHECK_INVALID("gemm", W("inputs[0] (A) is NULL but required"), NNP_OP_GEMM, &p, {nullptr, b},
                {y});
  CHECK_INVALID("gemm", W("outputs[0] (Y) is NULL but required"), NNP_OP_GEMM, &p, {a, b},
                {nullptr});
  CHECK_INVALID("gemm", W("params is NULL"), NNP_OP_GEMM, nullptr, {a, b}, {y});
  auto small = p;
  small.struct_size = 8;
  CHECK_INVALID("gemm", W("params->struct_size", "got 8"), NNP_OP_GEMM, &small, {a, b}, {y});
  auto bad = p;
  bad.trans_a = 2;
  CHECK_INVALID("gemm", W("params->trans_a: expected 0 or 1, got 2"), NNP_OP_GEMM, &bad, {a, b},
                {y});
  bad = p;
  bad.alpha = std::numeric_limits<double>::quiet_NaN();
  CHECK_INVALID("gemm", W("params->alpha"), NNP_OP_GEMM, &bad, {a, b}, {y});

  // a finite double the call's dtype cannot hold
  bad = p;
  bad.alpha = 1e308;
  CHECK_INVALID("gemm", W("params->alpha = 1e+308", "does not fit", "float32"), NNP_OP_GEMM, &bad,
                {a, b}, {y});
  bad.alpha = 3.0e38;  // representable in float32
  CHECK_VALID(NNP_OP_GEMM, &bad, {a, b}, {y});
  bad.alpha = 1e308;  // and 1e308 is a float64
  CHECK_VALID(NNP_OP_GEMM, &bad, {d({2, 3}, kF64), d({3, 4}, kF64)}, {d({2, 4}, kF64)});
  bad = p;
  bad.beta = -1e100;
  CHECK_INVALID("gemm", W("params->beta"), NNP_OP_GEMM, &bad, {a, b, d({4})}, {y});
  CHECK_INVALID("gemm", W("inputs[1] (B)", "expected dtype float32", "got float64"), NNP_OP_GEMM,
                &p, {a, d({3, 4}, kF64)}, {y});
  CHECK_INVALID("gemm", W("inputs[0] (A)", "float dtype", "int64"), NNP_OP_GEMM, &p,
                {d({2, 3}, kI64), b}, {y});
  CHECK_INVALID("gemm", W("dimension >= 0", "[2, -3]"), NNP_OP_GEMM, &p, {d({2, -3}), b}, {y});
  CHECK_INVALID("gemm", W("rank in [0, 8]", "got 9"), NNP_OP_GEMM, &p,
                {d({1, 1, 1, 1, 1, 1, 1, 2, 3}), b}, {y});
  CHECK_INVALID("gemm", W("overflows"), NNP_OP_GEMM, &p,
                {d({int64_t(1) << 40, int64_t(1) << 40}), b}, {y});
  CHECK_INVALID("gemm", W("byte size", "overflows"), NNP_OP_GEMM, &p,
                {d({int64_t(1) << 31, int64_t(1) << 31}), b}, {y});
  DLTensor* strided = d({2, 3});
  strided->strides = d.strides({1, 2});
  CHECK_INVALID("gemm", W("inputs[0] (A)", "compact", "[1, 2]"), NNP_OP_GEMM, &p, {strided, b},
                {y});
  DLTensor* compact = d({2, 3});
  compact->strides = d.strides({3, 1});
  CHECK_VALID(NNP_OP_GEMM, &p, {compact, b}, {y});
  DLTensor* empty = d({0, 3});  // no elements: strides address nothing (PyTorch gives [1, 1])
  empty->strides = d.strides({1, 1});
  CHECK_VALID(NNP_OP_GEMM, &p, {empty, b}, {d({0, 4})});
  DLTensor* gpu = d({2, 4});
  gpu->device = DLDevice{kDLCUDA, 0};
  CHECK_INVALID("gemm", W("outputs[0] (Y)", "DLDevice", "stream's device"), NNP_OP_GEMM, &p, {a, b},
                {gpu});
}

TEST_CASE("validate: gemm shapes") {
  NNP_NEED_FIXTURE();
  descs d;
  const auto [p, a, b, y] = gemm_carrier(d);
  CHECK_VALID(NNP_OP_GEMM, &p, {a, b, d({4})}, {y});
  CHECK_VALID(NNP_OP_GEMM, &p, {a, b, d({2, 4})}, {y});
  CHECK_VALID(NNP_OP_GEMM, &p, {d({5, 2, 3}), b, d({5, 2, 4})}, {d({5, 2, 4})});
  CHECK_VALID(NNP_OP_GEMM, &p, {d({5, 2, 3}), d({5, 3, 4})}, {d({5, 2, 4})});
  auto t = p;
  t.trans_a = 1;
  t.trans_b = 1;
  CHECK_VALID(NNP_OP_GEMM, &t, {d({3, 2}), d({4, 3})}, {y});
  CHECK_INVALID("gemm", W("inputs[1] (B)", "K = 3", "K = 5"), NNP_OP_GEMM, &p, {a, d({5, 4})}, {y});
  CHECK_INVALID("gemm", W("outputs[0] (Y): expected shape [2, 4]", "got [4, 2]"), NNP_OP_GEMM, &p,
                {a, b}, {d({4, 2})});
  CHECK_INVALID("gemm", W("inputs[2] (C)", "broadcasts unidirectionally to Y [2, 4]", "got [3]"),
                NNP_OP_GEMM, &p, {a, b, d({3})}, {y});
  // ONNX Gemm's bias forms: unidirectional broadcast to [M, N] (ABI 1.2).
  CHECK_VALID(NNP_OP_GEMM, &p, {a, b, d({})}, {y});
  CHECK_VALID(NNP_OP_GEMM, &p, {a, b, d({1})}, {y});
  CHECK_VALID(NNP_OP_GEMM, &p, {a, b, d({1, 4})}, {y});
  CHECK_VALID(NNP_OP_GEMM, &p, {a, b, d({2, 1})}, {y});
  CHECK_VALID(NNP_OP_GEMM, &p, {d({5, 2, 3}), b, d({5, 1, 4})}, {d({5, 2, 4})});
  CHECK_INVALID("gemm", W("inputs[2] (C)", "got [2, 3]"), NNP_OP_GEMM, &p, {a, b, d({2, 3})}, {y});
  CHECK_INVALID("gemm", W("inputs[2] (C)", "got [1, 2, 4]"), NNP_OP_GEMM, &p, {a, b, d({1, 2, 4})},
                {y});
  CHECK_INVALID("gemm", W("inputs[2] (C)"), NNP_OP_GEMM, &p, {a, b, d({5, 2, 4})}, {y});
  CHECK_INVALID("gemm", W("inputs[0] (A)", "rank 2 or 3"), NNP_OP_GEMM, &p, {d({6}), b}, {y});
  CHECK_INVALID("gemm", W("batch 5", "got 4"), NNP_OP_GEMM, &p, {d({5, 2, 3}), d({4, 3, 4})},
                {d({5, 2, 4})});
  CHECK_INVALID("gemm", W("[batch, M, N]"), NNP_OP_GEMM, &p, {d({5, 2, 3}), b}, {y});
}

TEST_CASE("validate: matmul, unary, where shapes") {
  NNP_NEED_FIXTURE();
  descs d;
  auto p = params_of<nnp_matmul_params>();
  CHECK_VALID(NNP_OP_MATMUL, &p, {d({2, 3}), d({3, 4})}, {d({2, 4})});
  CHECK_VALID(NNP_OP_MATMUL, &p, {d({5, 1, 2, 3}), d({7, 3, 4})}, {d({5, 7, 2, 4})});
  CHECK_VALID(NNP_OP_MATMUL, &p, {d({3}), d({2, 3, 4})}, {d({2, 4})});
  CHECK_VALID(NNP_OP_MATMUL, &p, {d({2, 2, 3}), d({3})}, {d({2, 2})});
  CHECK_VALID(NNP_OP_MATMUL, &p, {d({3}), d({3})}, {d({})});
  auto t = p;
  t.trans_a = 1;
  t.trans_b = 1;
  CHECK_VALID(NNP_OP_MATMUL, &t, {d({4, 3, 2}), d({5, 3})}, {d({4, 2, 5})});
  CHECK_INVALID("matmul", W("inputs[1] (B)", "K = 3", "K = 5"), NNP_OP_MATMUL, &p,
                {d({2, 3}), d({5, 4})}, {d({2, 4})});
  CHECK_INVALID("matmul", W("do not broadcast", "batch dimension 0", "3 vs 4"), NNP_OP_MATMUL, &p,
                {d({3, 2, 3}), d({4, 3, 4})}, {d({3, 2, 4})});
  CHECK_INVALID("matmul", W("inputs[0] (A)", "rank >= 1"), NNP_OP_MATMUL, &p, {d({}), d({3})},
                {d({})});
  CHECK_INVALID("matmul", W("outputs[0] (Y): expected shape [2]"), NNP_OP_MATMUL, &p,
                {d({2, 3}), d({3})}, {d({2, 1})});

  auto u = params_of<nnp_unary_params>();
  u.op = NNP_UNARY_LOG;
  CHECK_VALID(NNP_OP_UNARY_FORWARD, &u, {d({3, 5})}, {d({3, 5})});
  CHECK_VALID(NNP_OP_UNARY_BACKWARD, &u, {d({3, 5}), d({3, 5})}, {d({3, 5})});
  CHECK_INVALID("unary_backward", W("inputs[1] (dy)", "[3, 5]"), NNP_OP_UNARY_BACKWARD, &u,
                {d({3, 5}), d({5, 3})}, {d({3, 5})});
  u.op = NNP_UNARY_FLOOR;
  CHECK_VALID(NNP_OP_UNARY_FORWARD, &u, {d({3, 5})}, {d({3, 5})});
  CHECK_INVALID("unary_backward", W("params->op", "FLOOR", "no backward"), NNP_OP_UNARY_BACKWARD,
                &u, {d({3, 5}), d({3, 5})}, {d({3, 5})});
  u.op = NNP_UNARY_ERF + 1;
  CHECK_INVALID("unary_forward", W("params->op", "got 12"), NNP_OP_UNARY_FORWARD, &u, {d({3})},
                {d({3})});

  CHECK_VALID(NNP_OP_WHERE, nullptr, {d({2, 1}, kU8), d({3}), d({1, 3})}, {d({2, 3})});
  CHECK_VALID(NNP_OP_WHERE, nullptr, {d({}, kU8), d({4, 1, 3}), d({2, 1})}, {d({4, 2, 3})});
  CHECK_INVALID("where", W("inputs[0] (condition): expected dtype uint8"), NNP_OP_WHERE, nullptr,
                {d({2, 3}), d({2, 3}), d({2, 3})}, {d({2, 3})});
  CHECK_INVALID("where", W("do not broadcast", "inputs[2] (y)"), NNP_OP_WHERE, nullptr,
                {d({2, 3}, kU8), d({2, 3}), d({2})}, {d({2, 3})});
  CHECK_INVALID("where", W("outputs[0] (output): expected shape [2, 3]"), NNP_OP_WHERE, nullptr,
                {d({2, 1}, kU8), d({3}), d({3})}, {d({2, 1})});
}

TEST_CASE("validate: conv2d forward/backward shapes and params") {
  NNP_NEED_FIXTURE();
  descs d;
  auto p = params_of<nnp_conv2d_params>();
  p.stride_h = p.stride_w = p.dilation_h = p.dilation_w = 1;
  p.groups = 2;
  DLTensor *x = d({2, 6, 7, 7}), *w = d({4, 3, 3, 3}), *y = d({2, 4, 5, 5});
  CHECK_VALID(NNP_OP_CONV2D_FORWARD, &p, {x, w, d({4})}, {y});
  CHECK_VALID(NNP_OP_CONV2D_FORWARD, &p, {x, w}, {y});
  CHECK_INVALID("conv2d_forward",
                W("inputs[1] (w): expected shape [K, C/groups=3, R, S] (C=6, groups=2), "
                  "got [4, 6, 3, 3]"),
                NNP_OP_CONV2D_FORWARD, &p, {x, d({4, 6, 3, 3})}, {y});
  CHECK_INVALID("conv2d_forward", W("outputs[0] (y): expected shape [2, 4, 5, 5]"),
                NNP_OP_CONV2D_FORWARD, &p, {x, w}, {d({2, 4, 7, 7})});
  CHECK_INVALID("conv2d_forward", W("inputs[2] (b): expected shape [4]"), NNP_OP_CONV2D_FORWARD, &p,
                {x, w, d({5})}, {y});
  CHECK_INVALID("conv2d_forward", W("K divisible by groups"), NNP_OP_CONV2D_FORWARD, &p,
                {x, d({5, 3, 3, 3})}, {d({2, 5, 5, 5})});
  CHECK_INVALID("conv2d_forward", W("C divisible by groups"), NNP_OP_CONV2D_FORWARD, &p,
                {d({2, 5, 7, 7}), w}, {y});
  CHECK_INVALID("conv2d_forward", W("inputs[0] (x): expected rank 4"), NNP_OP_CONV2D_FORWARD, &p,
                {d({6, 7, 7}), w}, {y});
  CHECK_INVALID("conv2d_forward", W("P >= 1"), NNP_OP_CONV2D_FORWARD, &p, {d({2, 6, 2, 2}), w},
                {d({2, 4, 1, 1})});
  auto s = p;
  s.stride_h = -1;
  CHECK_INVALID("conv2d_forward", W("params->stride_h: expected >= 0, got -1"),
                NNP_OP_CONV2D_FORWARD, &s, {x, w}, {y});
  s = p;
  s.dilation_w = -1;
  CHECK_INVALID("conv2d_forward", W("params->dilation_w"), NNP_OP_CONV2D_FORWARD, &s, {x, w}, {y});
  s = p;
  s.pad_left = -1;
  CHECK_INVALID("conv2d_forward", W("params->pad_left"), NNP_OP_CONV2D_FORWARD, &s, {x, w}, {y});
  s = p;
  s.groups = -1;
  CHECK_INVALID("conv2d_forward", W("params->groups"), NNP_OP_CONV2D_FORWARD, &s, {x, w}, {y});
  // A stride, dilation or groups of 0 means 1 (nnplug_ops.h): the shapes of stride 1, dilation 1.
  s = p;
  s.stride_h = s.stride_w = s.dilation_h = s.dilation_w = 0;
  CHECK_VALID(NNP_OP_CONV2D_FORWARD, &s, {x, w}, {y});
  CHECK_INVALID("conv2d_forward", W("outputs[0] (y): expected shape [2, 4, 5, 5]"),
                NNP_OP_CONV2D_FORWARD, &s, {x, w}, {d({2, 4, 3, 3})});
  // groups 0 is groups 1: w must then have C/groups = 6 channels.
  s.groups = 0;
  CHECK_INVALID("conv2d_forward",
                W("inputs[1] (w): expected shape [K, C/groups=6, R, S]", "groups=1"),
                NNP_OP_CONV2D_FORWARD, &s, {x, w}, {y});
  CHECK_VALID(NNP_OP_CONV2D_FORWARD, &s, {x, d({4, 6, 3, 3})}, {y});
  // stride 2, pad 1, dilation 2: P = floor((7 + 2 - 2*2 - 1) / 2) + 1 = 3
  s = p;
  s.stride_h = s.stride_w = 2;
  s.pad_top = s.pad_bottom = s.pad_left = s.pad_right = 1;
  s.dilation_h = s.dilation_w = 2;
  CHECK_VALID(NNP_OP_CONV2D_FORWARD, &s, {x, w}, {d({2, 4, 3, 3})});

  CHECK_VALID(NNP_OP_CONV2D_BACKWARD_DATA, &p, {y, w}, {x});
  CHECK_INVALID("conv2d_backward_data", W("inputs[0] (dy): expected shape [2, 4, 5, 5]"),
                NNP_OP_CONV2D_BACKWARD_DATA, &p, {d({2, 4, 6, 6}), w}, {x});
  CHECK_VALID(NNP_OP_CONV2D_BACKWARD_FILTER, &p, {x, y}, {w});
  CHECK_INVALID("conv2d_backward_filter", W("outputs[0] (dw)", "C/groups=3"),
                NNP_OP_CONV2D_BACKWARD_FILTER, &p, {x, y}, {d({4, 6, 3, 3})});
  CHECK_VALID(NNP_OP_CONV2D_BACKWARD_BIAS, nullptr, {y}, {d({4})});
  CHECK_INVALID("conv2d_backward_bias", W("outputs[0] (db): expected shape [4]"),
                NNP_OP_CONV2D_BACKWARD_BIAS, nullptr, {y}, {d({2})});
}

TEST_CASE("validate: pool2d") {
  NNP_NEED_FIXTURE();
  descs d;
  auto p = params_of<nnp_pool2d_params>();
  p.mode = NNP_POOL_MAX;
  p.window_h = p.window_w = 2;
  p.stride_h = p.stride_w = 2;
  DLTensor* x = d({1, 3, 7, 7});
  CHECK_VALID(NNP_OP_POOL2D_FORWARD, &p, {x}, {d({1, 3, 3, 3})});
  auto c = p;
  c.ceil_mode = 1;
  CHECK_VALID(NNP_OP_POOL2D_FORWARD, &c, {x}, {d({1, 3, 4, 4})});
  CHECK_INVALID("pool2d_forward", W("outputs[0] (y): expected shape [1, 3, 3, 3]"),
                NNP_OP_POOL2D_FORWARD, &p, {x}, {d({1, 3, 4, 4})});
  auto bad = p;
  bad.pad_top = 2;
  CHECK_INVALID("pool2d_forward", W("params->pad_top", "< window_h = 2", "got 2"),
                NNP_OP_POOL2D_FORWARD, &bad, {x}, {d({1, 3, 4, 3})});
  bad = p;
  bad.mode = 0;
  CHECK_INVALID("pool2d_forward", W("params->mode"), NNP_OP_POOL2D_FORWARD, &bad, {x},
                {d({1, 3, 3, 3})});
  bad = p;
  bad.window_w = 0;
  CHECK_INVALID("pool2d_forward", W("params->window_w"), NNP_OP_POOL2D_FORWARD, &bad, {x},
                {d({1, 3, 3, 3})});
  auto g = params_of<nnp_pool2d_params>();
  g.mode = NNP_POOL_AVERAGE;
  g.global = 1;  // window fields ignored
  CHECK_VALID(NNP_OP_POOL2D_FORWARD, &g, {x}, {d({1, 3, 1, 1})});
  DLTensor* y = d({1, 3, 3, 3});
  CHECK_VALID(NNP_OP_POOL2D_BACKWARD, &p, {x, y, d({1, 3, 3, 3})}, {d({1, 3, 7, 7})});
  CHECK_INVALID("pool2d_backward", W("inputs[2] (dy)"), NNP_OP_POOL2D_BACKWARD, &p,
                {x, y, d({1, 3, 4, 4})}, {d({1, 3, 7, 7})});
  CHECK_INVALID("pool2d_backward", W("outputs[0] (dx)"), NNP_OP_POOL2D_BACKWARD, &p, {x, y, y},
                {d({1, 3, 6, 6})});
}

TEST_CASE("validate: activation and softmax") {
  NNP_NEED_FIXTURE();
  descs d;
  auto p = params_of<nnp_activation_params>();
  p.function = NNP_ACTIVATION_RELU;
  DLTensor *x = d({4, 5}), *y = d({4, 5});
  CHECK_VALID(NNP_OP_ACTIVATION_FORWARD, &p, {x}, {y});
  CHECK_VALID(NNP_OP_ACTIVATION_BACKWARD, &p, {x, y}, {d({4, 5})});
  auto bad = p;
  bad.function = 8;
  CHECK_INVALID("activation_forward", W("params->function", "got 8"), NNP_OP_ACTIVATION_FORWARD,
                &bad, {x}, {y});
  bad = p;
  bad.reserved0 = 1;
  CHECK_INVALID("activation_forward", W("params->reserved0", "expected 0"),
                NNP_OP_ACTIVATION_FORWARD, &bad, {x}, {y});
  CHECK_INVALID("activation_backward", W("outputs[0] (dx): expected shape [4, 5]"),
                NNP_OP_ACTIVATION_BACKWARD, &p, {x, y}, {d({5, 4})});

  auto s = params_of<nnp_softmax_params>();
  s.axis = -1;
  CHECK_VALID(NNP_OP_SOFTMAX_FORWARD, &s, {x}, {y});
  s.axis = -2;
  CHECK_VALID(NNP_OP_SOFTMAX_BACKWARD, &s, {x, y}, {d({4, 5})});
  s.axis = 2;
  CHECK_INVALID("softmax_forward", W("params->axis", "[-2, 2)", "got 2"), NNP_OP_SOFTMAX_FORWARD,
                &s, {x}, {y});
  s.axis = 0;
  s.log = 3;
  CHECK_INVALID("softmax_forward", W("params->log"), NNP_OP_SOFTMAX_FORWARD, &s, {x}, {y});
}

TEST_CASE("validate: aliasing rules") {
  NNP_NEED_FIXTURE();
  descs d;
  std::vector<float> mem(64);
  auto p = params_of<nnp_activation_params>();
  p.function = NNP_ACTIVATION_TANH;
  DLTensor *x = d({4, 4}), *y = d({4, 4}), *dy = d({4, 4});
  x->data = mem.data();
  y->data = mem.data();  // exactly x: allowed (y may alias x)
  CHECK_VALID(NNP_OP_ACTIVATION_FORWARD, &p, {x}, {y});
  y->data = mem.data() + 1;  // partial overlap: never allowed
  CHECK_INVALID("activation_forward", W("outputs[0] (y) overlaps inputs[0] (x)"),
                NNP_OP_ACTIVATION_FORWARD, &p, {x}, {y});
  y->data = mem.data();
  y->byte_offset = 4;  // same pointer, other offset: overlap
  CHECK_INVALID("activation_forward", W("overlaps"), NNP_OP_ACTIVATION_FORWARD, &p, {x}, {y});
  y->byte_offset = 0;
  dy->data = mem.data() + 32;
  DLTensor* dx = d({4, 4});
  dx->data = mem.data() + 32;  // dx may alias dy
  CHECK_VALID(NNP_OP_ACTIVATION_BACKWARD, &p, {x, dy}, {dx});
  dx->data = mem.data();  // but not x
  CHECK_INVALID("activation_backward", W("outputs[0] (dx) overlaps inputs[0] (x)"),
                NNP_OP_ACTIVATION_BACKWARD, &p, {x, dy}, {dx});
  // conv2d: no aliasing at all
  auto cp = params_of<nnp_conv2d_params>();
  cp.stride_h = cp.stride_w = cp.dilation_h = cp.dilation_w = cp.groups = 1;
  DLTensor *cx = d({1, 1, 3, 3}), *cw = d({1, 1, 1, 1}), *cy = d({1, 1, 3, 3});
  cx->data = mem.data();
  cw->data = mem.data() + 20;
  cy->data = mem.data();
  CHECK_INVALID("conv2d_forward", W("outputs[0] (y) overlaps inputs[0] (x)"), NNP_OP_CONV2D_FORWARD,
                &cp, {cx, cw}, {cy});
  // gemm: Y may alias C of Y's shape
  auto gp = params_of<nnp_gemm_params>();
  DLTensor *a = d({2, 2}), *b = d({2, 2}), *c = d({2, 2}), *gy = d({2, 2});
  a->data = mem.data();
  b->data = mem.data() + 8;
  c->data = mem.data() + 16;
  gy->data = mem.data() + 16;
  CHECK_VALID(NNP_OP_GEMM, &gp, {a, b, c}, {gy});
  gy->data = mem.data() + 8;
  CHECK_INVALID("gemm", W("outputs[0] (Y) overlaps inputs[1] (B)"), NNP_OP_GEMM, &gp, {a, b, c},
                {gy});
  // outputs must not overlap each other
  auto dp = params_of<nnp_dropout_params>();
  DLTensor *dxin = d({8}), *dyout = d({8}), *mask = d({8}, kU8);
  dxin->data = mem.data();
  dyout->data = mem.data() + 16;
  mask->data = mem.data() + 17;
  CHECK_INVALID("dropout_forward", W("outputs[0] (y) overlaps outputs[1] (mask)"),
                NNP_OP_DROPOUT_FORWARD, &dp, {dxin}, {dyout, mask});
}

TEST_CASE("validate: softmax cross-entropy, batch norm, layer norm") {
  NNP_NEED_FIXTURE();
  descs d;
  auto p = params_of<nnp_softmax_cross_entropy_params>();
  p.reduction = NNP_REDUCTION_MEAN;
  DLTensor *logits = d({8, 10}), *labels = d({8}, kI64), *loss = d({});
  CHECK_VALID(NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD, &p, {logits, labels}, {loss, d({8, 10})});
  CHECK_VALID(NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD, &p, {logits, labels, loss}, {d({8, 10})});
  CHECK_INVALID("softmax_cross_entropy_forward", W("inputs[1] (labels): expected dtype int64"),
                NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD, &p, {logits, d({8})}, {loss});
  CHECK_INVALID("softmax_cross_entropy_forward", W("outputs[0] (loss): expected shape []"),
                NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD, &p, {logits, labels}, {d({8})});
  auto none = p;
  none.reduction = NNP_REDUCTION_NONE;
  CHECK_VALID(NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD, &none, {logits, labels}, {d({8})});
  none.reduction = 4;
  CHECK_INVALID("softmax_cross_entropy_forward", W("params->reduction"),
                NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD, &none, {logits, labels}, {loss});
  CHECK_INVALID("softmax_cross_entropy_forward", W("inputs[1] (labels): expected shape [8]"),
                NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD, &p, {logits, d({7}, kI64)}, {loss});

  auto bn = params_of<nnp_batch_norm_params>();
  bn.epsilon = 1e-5;
  bn.momentum = 0.9;
  DLTensor *x = d({4, 3, 5, 5}), *c3 = d({3});
  std::vector<const DLTensor*> outs = {d({4, 3, 5, 5}), d({3}), d({3}), d({3}), d({3})};
  CHECK_VALID(NNP_OP_BATCH_NORM_FORWARD_TRAINING, &bn, {x, c3, d({3})}, outs);
  CHECK_VALID(NNP_OP_BATCH_NORM_FORWARD_INFERENCE, &bn, {d({4, 3}), c3, d({3}), d({3}), d({3})},
              {d({4, 3})});
  CHECK_VALID(NNP_OP_BATCH_NORM_BACKWARD, &bn, {x, d({4, 3, 5, 5}), c3, d({3}), d({3})},
              {d({4, 3, 5, 5}), d({3}), d({3})});
  auto bad = bn;
  bad.epsilon = 0;
  CHECK_INVALID("batch_norm_forward_training", W("params->epsilon", "> 0"),
                NNP_OP_BATCH_NORM_FORWARD_TRAINING, &bad, {x, c3, d({3})}, outs);
  bad = bn;
  bad.momentum = 1.5;
  CHECK_INVALID("batch_norm_forward_training", W("params->momentum", "[0, 1]"),
                NNP_OP_BATCH_NORM_FORWARD_TRAINING, &bad, {x, c3, d({3})}, outs);
  CHECK_INVALID("batch_norm_forward_training", W("inputs[1] (scale): expected shape [3]"),
                NNP_OP_BATCH_NORM_FORWARD_TRAINING, &bn, {x, d({4}), d({3})}, outs);
  CHECK_INVALID("batch_norm_forward_training", W("rank 2", "rank 4", "got rank 3"),
                NNP_OP_BATCH_NORM_FORWARD_TRAINING, &bn, {d({4, 3, 5}), c3, d({3})}, outs);
  CHECK_INVALID("batch_norm_forward_training", W("n_outputs: expected 5, got 4"),
                NNP_OP_BATCH_NORM_FORWARD_TRAINING, &bn, {x, c3, d({3})},
                {outs[0], outs[1], outs[2], outs[3]});

  auto ln = params_of<nnp_layer_norm_params>();
  ln.axis = -1;
  ln.epsilon = 1e-5;
  DLTensor *lx = d({2, 3, 4}), *ls = d({4}), *stats = d({2, 3, 1});
  CHECK_VALID(NNP_OP_LAYER_NORM_FORWARD, &ln, {lx, ls, d({4})},
              {d({2, 3, 4}), stats, d({2, 3, 1})});
  CHECK_VALID(NNP_OP_LAYER_NORM_FORWARD, &ln, {lx, ls}, {d({2, 3, 4})});
  CHECK_VALID(NNP_OP_LAYER_NORM_BACKWARD, &ln, {lx, d({2, 3, 4}), ls, stats, d({2, 3, 1})},
              {d({2, 3, 4}), d({4})});
  CHECK_INVALID("layer_norm_forward", W("inputs[1] (scale): expected shape [4]"),
                NNP_OP_LAYER_NORM_FORWARD, &ln, {lx, d({3, 4})}, {d({2, 3, 4})});
  auto ln2 = ln;
  ln2.axis = 1;
  CHECK_VALID(NNP_OP_LAYER_NORM_FORWARD, &ln2, {lx, d({3, 4})}, {d({2, 3, 4}), d({2, 1, 1})});
  CHECK_INVALID("layer_norm_forward", W("outputs[1] (mean): expected shape [2, 1, 1]"),
                NNP_OP_LAYER_NORM_FORWARD, &ln2, {lx, d({3, 4})}, {d({2, 3, 4}), stats});
  ln2.axis = 3;
  CHECK_INVALID("layer_norm_forward", W("params->axis", "got 3"), NNP_OP_LAYER_NORM_FORWARD, &ln2,
                {lx, ls}, {d({2, 3, 4})});
}

TEST_CASE("validate: dropout, elementwise, transpose, cast, reduce") {
  NNP_NEED_FIXTURE();
  descs d;
  auto dp = params_of<nnp_dropout_params>();
  dp.ratio = 0.5;
  DLTensor* x = d({3, 5});
  CHECK_VALID(NNP_OP_DROPOUT_FORWARD, &dp, {x}, {d({3, 5}), d({3, 5}, kU8)});
  CHECK_VALID(NNP_OP_DROPOUT_BACKWARD, &dp, {x}, {d({3, 5})});
  // ABI 1.4: the step counter, float32 whatever the call's dtype, one element; offset_per_step
  // takes any value.
  dp.offset_per_step = 123;
  CHECK_VALID(NNP_OP_DROPOUT_FORWARD, &dp, {x, d({1})}, {d({3, 5}), d({3, 5}, kU8)});
  CHECK_VALID(NNP_OP_DROPOUT_BACKWARD, &dp, {d({3, 5}, kF64), d({})}, {d({3, 5}, kF64)});
  CHECK_INVALID("dropout_backward", W("inputs[1] (step): expected dtype float32", "got float64"),
                NNP_OP_DROPOUT_BACKWARD, &dp, {d({3, 5}, kF64), d({}, kF64)}, {d({3, 5}, kF64)});
  CHECK_INVALID("dropout_forward", W("inputs[1] (step): expected 1 element", "got [3]"),
                NNP_OP_DROPOUT_FORWARD, &dp, {x, d({3})}, {d({3, 5})});
  dp.offset_per_step = 0;
  CHECK_INVALID("dropout_forward", W("outputs[1] (mask): expected dtype uint8"),
                NNP_OP_DROPOUT_FORWARD, &dp, {x}, {d({3, 5}), d({3, 5})});
  CHECK_INVALID("dropout_forward", W("outputs[1] (mask): expected shape [3, 5]"),
                NNP_OP_DROPOUT_FORWARD, &dp, {x}, {d({3, 5}), d({15}, kU8)});
  auto bad = dp;
  bad.ratio = 1.0;
  CHECK_INVALID("dropout_forward", W("params->ratio", "[0, 1)"), NNP_OP_DROPOUT_FORWARD, &bad, {x},
                {d({3, 5})});
  bad.ratio = std::nan("");
  CHECK_INVALID("dropout_forward", W("params->ratio"), NNP_OP_DROPOUT_FORWARD, &bad, {x},
                {d({3, 5})});

  auto bp = params_of<nnp_binary_params>();
  bp.op = NNP_BINARY_MUL;
  CHECK_VALID(NNP_OP_BINARY, &bp, {d({2, 3}), d({3})}, {d({2, 3})});
  CHECK_VALID(NNP_OP_BINARY, &bp, {d({4, 1, 3}), d({2, 1})}, {d({4, 2, 3})});
  CHECK_INVALID("binary", W("do not broadcast"), NNP_OP_BINARY, &bp, {d({2, 3}), d({2})},
                {d({2, 3})});
  CHECK_INVALID("binary", W("outputs[0] (y): expected shape [4, 2, 3]"), NNP_OP_BINARY, &bp,
                {d({4, 1, 3}), d({2, 1})}, {d({4, 1, 3})});
  bp.op = NNP_BINARY_POW + 1;
  CHECK_INVALID("binary", W("params->op", "got 6"), NNP_OP_BINARY, &bp, {d({3}), d({3})}, {d({3})});

  auto sp = params_of<nnp_scale_params>();
  CHECK_VALID(NNP_OP_SCALE, &sp, {x}, {d({3, 5})});
  CHECK_INVALID("scale", W("outputs[0] (y): expected shape [3, 5]"), NNP_OP_SCALE, &sp, {x},
                {d({5, 3})});
  auto fp = params_of<nnp_fill_params>();
  CHECK_INVALID("fill", W("n_inputs: expected 0, got 1"), NNP_OP_FILL, &fp, {x}, {d({3, 5})});
  CHECK_INVALID("fill", W("params is NULL"), NNP_OP_FILL, nullptr, {}, {d({3, 5})});

  // copy: arbitrary non-negative strides, same dtype
  DLTensor* strided = d({3, 5});
  strided->strides = d.strides({1, 3});
  CHECK_VALID(NNP_OP_COPY, nullptr, {strided}, {d({3, 5})});
  CHECK_INVALID("copy", W("outputs[0] (y): expected dtype float32", "got float64"), NNP_OP_COPY,
                nullptr, {x}, {d({3, 5}, kF64)});
  DLTensor* negative = d({3, 5});
  negative->strides = d.strides({-5, 1});
  CHECK_INVALID("copy", W("strides >= 0"), NNP_OP_COPY, nullptr, {negative}, {d({3, 5})});
  // a strided output must not address one element twice (numpy.broadcast_to, torch.expand)
  DLTensor* transposed_out = d({3, 5});
  transposed_out->strides = d.strides({1, 3});
  CHECK_VALID(NNP_OP_COPY, nullptr, {x}, {transposed_out});
  DLTensor* expanded = d({3, 5});
  expanded->strides = d.strides({0, 1});
  CHECK_INVALID("copy", W("outputs[0] (y)", "overlap", "stride of 0 over an extent of 3"),
                NNP_OP_COPY, nullptr, {x}, {expanded});
  DLTensor* folded = d({3, 5});
  folded->strides = d.strides({2, 1});  // rows overlap: [0..4], [2..6], [4..8]
  CHECK_INVALID("copy", W("outputs[0] (y)", "overlap"), NNP_OP_COPY, nullptr, {x}, {folded});
  CHECK_VALID(NNP_OP_COPY, nullptr, {expanded}, {d({3, 5})});  // inputs may repeat elements
  DLTensor* single = d({1, 5});
  single->strides = d.strides({0, 1});  // extent 1: stride 0 is harmless
  CHECK_VALID(NNP_OP_COPY, nullptr, {d({1, 5})}, {single});
  // byte_offset: a whole number of elements
  DLTensor* misaligned = d({3, 5});
  misaligned->byte_offset = 2;
  CHECK_INVALID("copy", W("inputs[0] (x)", "byte_offset 2", "element size (4 bytes)"), NNP_OP_COPY,
                nullptr, {misaligned}, {d({3, 5})});
  DLTensor* misaligned_out = d({3, 5});
  misaligned_out->byte_offset = 6;
  CHECK_INVALID("scale", W("outputs[0] (y)", "byte_offset 6"), NNP_OP_SCALE, &sp, {x},
                {misaligned_out});

  auto tp = params_of<nnp_transpose_params>();
  tp.perm[0] = 1;
  tp.perm[1] = 0;
  CHECK_VALID(NNP_OP_TRANSPOSE, &tp, {x}, {d({5, 3})});
  CHECK_INVALID("transpose", W("outputs[0] (y): expected shape [5, 3]"), NNP_OP_TRANSPOSE, &tp, {x},
                {d({3, 5})});
  tp.perm[1] = 1;
  CHECK_INVALID("transpose", W("params->perm", "permutation", "repeated"), NNP_OP_TRANSPOSE, &tp,
                {x}, {d({5, 3})});
  tp.perm[1] = 0;
  tp.perm[2] = 1;
  CHECK_INVALID("transpose", W("params->perm[2]", "beyond rank"), NNP_OP_TRANSPOSE, &tp, {x},
                {d({5, 3})});

  CHECK_VALID(NNP_OP_CAST, nullptr, {x}, {d({3, 5}, kF64)});
  CHECK_INVALID("cast", W("inputs[0] (x)", "float16, bfloat16, float32 or float64"), NNP_OP_CAST,
                nullptr, {d({3, 5}, kI64)}, {d({3, 5})});

  auto rp = params_of<nnp_reduce_params>();
  rp.op = NNP_REDUCE_SUM;
  rp.keepdims = 1;
  rp.n_axes = 1;
  rp.axes[0] = -1;
  DLTensor* rx = d({2, 3, 4});
  CHECK_VALID(NNP_OP_REDUCE, &rp, {rx}, {d({2, 3, 1})});
  rp.keepdims = 0;
  CHECK_VALID(NNP_OP_REDUCE, &rp, {rx}, {d({2, 3})});
  rp.n_axes = 0;
  CHECK_VALID(NNP_OP_REDUCE, &rp, {rx}, {d({})});
  CHECK_INVALID("reduce", W("outputs[0] (y): expected shape []"), NNP_OP_REDUCE, &rp, {rx},
                {d({1})});
  rp.n_axes = 2;
  rp.axes[0] = 0;
  rp.axes[1] = -3;
  CHECK_INVALID("reduce", W("params->axes[1]", "repeated"), NNP_OP_REDUCE, &rp, {rx}, {d({3, 4})});
  rp.axes[1] = 3;
  CHECK_INVALID("reduce", W("params->axes[1]", "got 3"), NNP_OP_REDUCE, &rp, {rx}, {d({3, 4})});
  rp.n_axes = 4;
  CHECK_INVALID("reduce", W("params->n_axes"), NNP_OP_REDUCE, &rp, {rx}, {d({})});
}

TEST_CASE("validate: variadic tensors (concat, split) and data movement") {
  NNP_NEED_FIXTURE();
  descs d;
  auto cp = params_of<nnp_concat_params>();
  cp.axis = -1;
  DLTensor *a = d({2, 3}), *b = d({2, 1}), *y = d({2, 4});
  CHECK_VALID(NNP_OP_CONCAT, &cp, {a, b}, {y});
  CHECK_VALID(NNP_OP_CONCAT, &cp, {a}, {d({2, 3})});
  CHECK_INVALID("concat", W("n_inputs: expected 1..64, got 0"), NNP_OP_CONCAT, &cp, {}, {y});
  std::vector<const DLTensor*> many(NNP_MAX_VARIADIC + 1, b);
  CHECK_INVALID("concat", W("n_inputs: expected 1..64, got 65"), NNP_OP_CONCAT, &cp, many, {y});
  many.resize(NNP_MAX_VARIADIC);
  CHECK_VALID(NNP_OP_CONCAT, &cp, many, {d({2, NNP_MAX_VARIADIC})});
  // Each tensor of the list is checked by the list's rules and named with its index.
  CHECK_INVALID("concat", W("inputs[1] (xs[1]) is NULL but required"), NNP_OP_CONCAT, &cp,
                {a, nullptr}, {y});
  CHECK_INVALID("concat", W("inputs[2] (xs[2]): expected dtype float32 (the dtype of inputs[0]"),
                NNP_OP_CONCAT, &cp, {a, b, d({2, 1}, kF64)}, {d({2, 5})});
  CHECK_INVALID("concat", W("inputs[1] (xs[1]): expected rank 2", "except along axis 1"),
                NNP_OP_CONCAT, &cp, {a, d({3, 1})}, {y});
  CHECK_INVALID("concat", W("outputs[0] (y): expected shape [2, 4]"), NNP_OP_CONCAT, &cp, {a, b},
                {d({2, 5})});
  cp.axis = 2;
  CHECK_INVALID("concat", W("params->axis", "[-2, 2)"), NNP_OP_CONCAT, &cp, {a, b}, {y});
  CHECK_VALID(NNP_OP_CONCAT, &cp, {d({2, 3, 1}, kI64), d({2, 3, 1}, kI64)}, {d({2, 3, 2}, kI64)});

  auto sp = params_of<nnp_split_params>();
  DLTensor* x = d({5, 2});
  CHECK_VALID(NNP_OP_SPLIT, &sp, {x}, {d({2, 2}), d({3, 2})});
  CHECK_INVALID("split", W("n_outputs: expected 1..64, got 0"), NNP_OP_SPLIT, &sp, {x}, {});
  CHECK_INVALID("split", W("add up to 5", "got a sum of 4"), NNP_OP_SPLIT, &sp, {x},
                {d({2, 2}), d({2, 2})});
  CHECK_INVALID("split", W("outputs[1] (ys[1]): expected dtype float32"), NNP_OP_SPLIT, &sp, {x},
                {d({2, 2}), d({3, 2}, kF64)});
  sp.num_outputs = 3;  // ONNX: ceil(5 / 3) = 2, 2, 1
  CHECK_VALID(NNP_OP_SPLIT, &sp, {x}, {d({2, 2}), d({2, 2}), d({1, 2})});
  CHECK_INVALID("split", W("params->num_outputs = 3: expected that many outputs, got 2"),
                NNP_OP_SPLIT, &sp, {x}, {d({2, 2}), d({3, 2})});
  CHECK_INVALID("split", W("outputs[2] (ys[2]): expected shape [1, 2]"), NNP_OP_SPLIT, &sp, {x},
                {d({2, 2}), d({2, 2}), d({2, 2})});
  sp.num_outputs = -1;
  CHECK_INVALID("split", W("params->num_outputs: expected >= 0"), NNP_OP_SPLIT, &sp, {x},
                {d({5, 2})});

  auto sl = params_of<nnp_slice_params>();
  sl.n_axes = 1;
  sl.has_axes = 1;
  sl.has_steps = 1;
  sl.starts[0] = std::numeric_limits<int64_t>::max();
  sl.ends[0] = std::numeric_limits<int64_t>::min();
  sl.axes[0] = -1;
  sl.steps[0] = -2;  // from the last element back to the first: 6 -> 3 elements
  DLTensor* x6 = d({4, 6});
  CHECK_VALID(NNP_OP_SLICE, &sl, {x6}, {d({4, 3})});
  CHECK_VALID(NNP_OP_SLICE_BACKWARD, &sl, {d({4, 3})}, {x6});
  CHECK_INVALID("slice_backward", W("inputs[0] (dy): expected shape [4, 3]"), NNP_OP_SLICE_BACKWARD,
                &sl, {d({4, 2})}, {x6});
  sl.steps[0] = 0;
  CHECK_INVALID("slice", W("params->steps[0]: expected non-zero"), NNP_OP_SLICE, &sl, {x6},
                {d({4, 3})});
  sl.steps[0] = 1;
  sl.has_axes = 0;
  sl.n_axes = 3;
  CHECK_INVALID("slice", W("params->n_axes: expected in [0, rank = 2], got 3"), NNP_OP_SLICE, &sl,
                {x6}, {d({4, 3})});

  auto gp = params_of<nnp_gather_params>();
  gp.axis = 1;
  DLTensor *data = d({3, 5, 2}), *idx = d({4}, kI64);
  CHECK_VALID(NNP_OP_GATHER, &gp, {data, idx}, {d({3, 4, 2})});
  CHECK_VALID(NNP_OP_GATHER_BACKWARD, &gp, {d({3, 4, 2}), idx}, {d({3, 5, 2})});
  CHECK_INVALID("gather", W("inputs[1] (indices): expected dtype int64"), NNP_OP_GATHER, &gp,
                {data, d({4})}, {d({3, 4, 2})});
  CHECK_INVALID("gather", W("outputs[0] (y): expected shape [3, 4, 2]"), NNP_OP_GATHER, &gp,
                {data, idx}, {d({3, 5, 2})});
  CHECK_INVALID("gather", W("exceeds NNP_MAX_DIMS"), NNP_OP_GATHER, &gp,
                {data, d({1, 1, 1, 1, 1, 1, 1}, kI64)}, {d({3, 2})});
  CHECK_INVALID("gather_backward", W("inputs[0] (dy): expected shape [3, 4, 2]"),
                NNP_OP_GATHER_BACKWARD, &gp, {d({3, 4, 3}), idx}, {d({3, 5, 2})});
  CHECK_INVALID("gather", W("inputs[0] (data): expected rank >= 1"), NNP_OP_GATHER, &gp,
                {d({}), idx}, {d({4})});
}

TEST_CASE("validate: optimisers") {
  NNP_NEED_FIXTURE();
  descs d;
  auto sp = params_of<nnp_sgd_params>();
  sp.lr = 0.1;
  DLTensor *g = d({10}), *param = d({10});
  CHECK_VALID(NNP_OP_SGD_UPDATE, &sp, {g}, {param});
  sp.momentum = 0.9;
  CHECK_INVALID("sgd_update", W("outputs[1] (momentum_buffer) is NULL but required"),
                NNP_OP_SGD_UPDATE, &sp, {g}, {param});
  CHECK_VALID(NNP_OP_SGD_UPDATE, &sp, {g}, {param, d({10})});
  sp.nesterov = 1;
  sp.dampening = 0.1;
  CHECK_INVALID("sgd_update", W("nesterov", "dampening = 0"), NNP_OP_SGD_UPDATE, &sp, {g},
                {param, d({10})});
  sp.dampening = 0;
  CHECK_INVALID("sgd_update", W("inputs[0] (grad): expected shape [10]"), NNP_OP_SGD_UPDATE, &sp,
                {d({11})}, {param, d({10})});

  auto ap = params_of<nnp_adam_params>();
  ap.lr = 1e-3;
  ap.beta1 = 0.9;
  ap.beta2 = 0.999;
  ap.epsilon = 1e-8;
  ap.step = 1;
  CHECK_VALID(NNP_OP_ADAM_UPDATE, &ap, {g}, {param, d({10}), d({10})});
  auto bad = ap;
  bad.step = 0;
  CHECK_INVALID("adam_update", W("params->step: expected >= 1, got 0"), NNP_OP_ADAM_UPDATE, &bad,
                {g}, {param, d({10}), d({10})});
  bad = ap;
  bad.beta1 = 1.0;
  CHECK_INVALID("adam_update", W("params->beta1"), NNP_OP_ADAM_UPDATE, &bad, {g},
                {param, d({10}), d({10})});
  bad = ap;
  bad.reserved0 = 7;
  CHECK_INVALID("adam_update", W("params->reserved0"), NNP_OP_ADAM_UPDATE, &bad, {g},
                {param, d({10}), d({10})});
  CHECK_INVALID("adam_update", W("outputs[2] (v) is NULL but required"), NNP_OP_ADAM_UPDATE, &ap,
                {g}, {param, d({10}), nullptr});

  // ABI 1.4: step (float32 whatever the call's dtype) and lr (the call's dtype), one element
  // each, either one alone.
  CHECK_VALID(NNP_OP_ADAM_UPDATE, &ap, {g, d({}), d({1})}, {param, d({10}), d({10})});
  CHECK_VALID(NNP_OP_ADAM_UPDATE, &ap, {g, nullptr, d({})}, {param, d({10}), d({10})});
  CHECK_VALID(NNP_OP_ADAM_UPDATE, &ap, {g, d({1})}, {param, d({10}), d({10})});
  CHECK_VALID(NNP_OP_ADAM_UPDATE, &ap, {d({10}, kF64), d({1}), d({1}, kF64)},
              {d({10}, kF64), d({10}, kF64), d({10}, kF64)});
  CHECK_INVALID("adam_update", W("inputs[1] (step): expected dtype float32", "got float64"),
                NNP_OP_ADAM_UPDATE, &ap, {g, d({1}, kF64)}, {param, d({10}), d({10})});
  CHECK_INVALID("adam_update", W("inputs[1] (step): expected dtype float32", "got float64"),
                NNP_OP_ADAM_UPDATE, &ap, {d({10}, kF64), d({1}, kF64)},
                {d({10}, kF64), d({10}, kF64), d({10}, kF64)});
  CHECK_INVALID("adam_update", W("inputs[1] (step): expected 1 element", "got [2]"),
                NNP_OP_ADAM_UPDATE, &ap, {g, d({2})}, {param, d({10}), d({10})});
  CHECK_INVALID("adam_update", W("inputs[2] (lr): expected 1 element", "got [1, 1]"),
                NNP_OP_ADAM_UPDATE, &ap, {g, nullptr, d({1, 1})}, {param, d({10}), d({10})});
  CHECK_INVALID("adam_update", W("inputs[2] (lr): expected dtype float32", "got float64"),
                NNP_OP_ADAM_UPDATE, &ap, {g, d({1}), d({1}, kF64)}, {param, d({10}), d({10})});
}

TEST_CASE("validate: nnp_op_execute rejects without touching outputs") {
  NNP_NEED_FIXTURE();
  nnp_stream* s = nullptr;
  REQUIRE(nnp_stream_create(dev, &s) == NNP_STATUS_OK);
  descs d;
  std::vector<float> out(12, 7.0f);
  DLTensor* y = d({3, 4});
  y->data = out.data();
  auto fp = params_of<nnp_fill_params>();
  fp.value = 1.0;
  const DLTensor* outs[] = {y};
  // unknown kind
  CHECK(nnp_op_execute(s, 12345, &fp, 0, nullptr, 1, outs) == NNP_STATUS_UNSUPPORTED);
  CHECK(std::string(nnp_last_error_message()).find("12345") != std::string::npos);
  // NULL data with elements
  DLTensor* nodata = d({3, 4});
  const DLTensor* outs2[] = {nodata};
  CHECK(nnp_op_execute(s, NNP_OP_FILL, &fp, 0, nullptr, 1, outs2) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(std::string(nnp_last_error_message()) ==
        "fill: outputs[0] (y): data is NULL with 12 elements");
  // NULL data is fine for an empty tensor
  DLTensor* empty = d({0, 4});
  const DLTensor* outs3[] = {empty};
  CHECK(nnp_op_execute(s, NNP_OP_FILL, &fp, 0, nullptr, 1, outs3) == NNP_STATUS_OK);
  // data + byte_offset + extent wrapping the address space: refused before any access
  DLTensor* wild = d({3, 4});
  wild->data = out.data();
  wild->byte_offset = std::numeric_limits<uint64_t>::max() - 15;  // a multiple of 4
  const DLTensor* outs4[] = {wild};
  CHECK(nnp_op_execute(s, NNP_OP_FILL, &fp, 0, nullptr, 1, outs4) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(std::string(nnp_last_error_message()).find("wraps the address space") != std::string::npos);
  // invalid params: outputs untouched
  auto bad = fp;
  bad.struct_size = 0;
  CHECK(nnp_op_execute(s, NNP_OP_FILL, &bad, 0, nullptr, 1, outs) == NNP_STATUS_INVALID_ARGUMENT);
  for (float v : out) CHECK(v == 7.0f);
  // the valid call runs
  CHECK(nnp_op_execute(s, NNP_OP_FILL, &fp, 0, nullptr, 1, outs) == NNP_STATUS_OK);
  CHECK(nnp_stream_synchronize(s) == NNP_STATUS_OK);
  for (float v : out) CHECK(v == 1.0f);
  CHECK(nnp_op_execute(nullptr, NNP_OP_FILL, &fp, 0, nullptr, 1, outs) ==
        NNP_STATUS_INVALID_ARGUMENT);
  CHECK(nnp_stream_destroy(s) == NNP_STATUS_OK);
}

// Tensors without elements may have any other dimension up to INT64_MAX (the byte size is 0),
// so the output-size formulas of convolution and pooling and the extent sums of concat and split
// must not overflow: a size that fits is accepted, one that does not is refused by name.
TEST_CASE("validate: output sizes near INT64_MAX (tensors without elements)") {
  NNP_NEED_FIXTURE();
  descs d;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t k62 = int64_t{1} << 62;

  auto cv = params_of<nnp_conv2d_params>();
  cv.stride_h = cv.stride_w = cv.dilation_h = cv.dilation_w = cv.groups = 1;
  cv.pad_top = cv.pad_bottom = 1;
  // P = INT64_MAX + 2: refused, not wrapped
  CHECK_INVALID(
      "conv2d_forward", W("output size P does not fit in int64", "H = 9223372036854775807"),
      NNP_OP_CONV2D_FORWARD, &cv, {d({0, 1, kMax, 1}), d({1, 1, 1, 1})}, {d({0, 1, 1, 1})});
  auto cw = cv;
  cw.pad_top = cw.pad_bottom = 0;
  cw.pad_left = cw.pad_right = 1;
  CHECK_INVALID(
      "conv2d_backward_filter", W("output size Q does not fit in int64", "W = 9223372036854775807"),
      NNP_OP_CONV2D_BACKWARD_FILTER, &cw, {d({0, 1, 1, kMax}), d({0, 1, 1, 1})}, {d({1, 1, 1, 1})});
  // Q = (INT64_MAX + 2 - 1) / 2 + 1 = 2^62 + 1 fits: accepted
  cw.stride_w = 2;
  CHECK_VALID(NNP_OP_CONV2D_FORWARD, &cw, {d({0, 1, 1, kMax}), d({1, 1, 1, 1})},
              {d({0, 1, 1, k62 + 1})});
  // dilation_h * (R - 1) = 2^64 must not wrap to 0 (which made P = 5 here)
  auto dl = cv;
  dl.pad_top = dl.pad_bottom = 0;
  dl.dilation_h = 4;
  CHECK_INVALID("conv2d_forward", W("P >= 1"), NNP_OP_CONV2D_FORWARD, &dl,
                {d({1, 1, 5, 1}), d({0, 1, k62 + 1, 1})}, {d({1, 0, 5, 1})});

  auto pl = params_of<nnp_pool2d_params>();
  pl.mode = NNP_POOL_MAX;
  pl.window_h = 2;
  pl.window_w = 1;
  pl.stride_h = pl.stride_w = 1;
  pl.pad_top = pl.pad_bottom = 1;
  CHECK_INVALID("pool2d_forward", W("output size P does not fit in int64", "window_h = 2"),
                NNP_OP_POOL2D_FORWARD, &pl, {d({0, 1, kMax, 1})}, {d({0, 1, 1, 1})});
  // ceil mode, stride 3: (span + 2) / 3 must not overflow; P = ceil(INT64_MAX / 3) + 1, less
  // the last window, which would start in the bottom padding
  pl.stride_h = 3;
  pl.ceil_mode = 1;
  CHECK_VALID(NNP_OP_POOL2D_FORWARD, &pl, {d({0, 1, kMax, 1})}, {d({0, 1, kMax / 3 + 1, 1})});

  auto pn = params_of<nnp_pool_params>();
  pn.mode = NNP_POOL_AVERAGE;
  pn.kernel_shape[0] = 2;
  pn.pads[0] = pn.pads[1] = 1;
  CHECK_INVALID("pool_forward",
                W("output size O1 does not fit in int64", "D1 = 9223372036854775807"),
                NNP_OP_POOL_FORWARD, &pn, {d({0, 1, kMax})}, {d({0, 1, 1})});
  // SAME_UPPER, stride 2: ceil(D / 2) = 2^62 without overflowing D + stride - 1
  pn.pads[0] = pn.pads[1] = 0;
  pn.auto_pad = NNP_AUTO_PAD_SAME_UPPER;
  pn.strides[0] = 2;
  CHECK_VALID(NNP_OP_POOL_FORWARD, &pn, {d({0, 1, kMax})}, {d({0, 1, k62})});

  // N-D convolution, SAME: refused before the padding maths could overflow
  auto cn = params_of<nnp_conv_params>();
  cn.auto_pad = NNP_AUTO_PAD_SAME_LOWER;
  cn.strides[0] = 3;
  CHECK_INVALID("conv_forward", W("too large"), NNP_OP_CONV_FORWARD, &cn,
                {d({0, 1, kMax}), d({1, 1, 1})}, {d({0, 1, kMax / 3 + 1})});
  auto ct = params_of<nnp_conv_transpose_params>();
  ct.output_shape[0] = 1;
  CHECK_INVALID("conv_transpose_forward", W("too large"), NNP_OP_CONV_TRANSPOSE_FORWARD, &ct,
                {d({0, 0, 1}), d({0, 1, kMax})}, {d({0, 1, 1})});

  // concat and split: the extents along the axis add up without overflow
  auto cp = params_of<nnp_concat_params>();
  CHECK_INVALID("concat", W("overflows int64", "inputs[1] (xs[1])"), NNP_OP_CONCAT, &cp,
                {d({kMax, 0}), d({1, 0})}, {d({1, 0})});
  auto sp = params_of<nnp_split_params>();
  CHECK_INVALID("split", W("overflows int64"), NNP_OP_SPLIT, &sp, {d({kMax, 0})},
                {d({kMax, 0}), d({1, 0})});
  sp.num_outputs = 2;  // ceil(INT64_MAX / 2) = 2^62, then 2^62 - 1
  CHECK_VALID(NNP_OP_SPLIT, &sp, {d({kMax, 0})}, {d({k62, 0}), d({k62 - 1, 0})});

  // one huge dimension beside a 0 is fine; nonzero dimensions whose product overflows are not
  // (kernels multiply a tensor's dimensions to find outer and inner sizes)
  auto sc = params_of<nnp_scale_params>();
  CHECK_VALID(NNP_OP_SCALE, &sc, {d({0, kMax})}, {d({0, kMax})});
  CHECK_INVALID("scale", W("inputs[0] (x)", "overflows int64", "zeros aside"), NNP_OP_SCALE, &sc,
                {d({0, int64_t{1} << 40, int64_t{1} << 40})},
                {d({0, int64_t{1} << 40, int64_t{1} << 40})});

  // nnp_op_infer_shapes refuses the same sizes instead of recording a wrapped one
  nnp_shape shape{};
  const DLTensor* in[] = {d({0, 1, kMax, 1}), d({1, 1, 1, 1})};
  CHECK(nnp_op_infer_shapes(NNP_OP_CONV2D_FORWARD, &cv, 2, in, 1, &shape) ==
        NNP_STATUS_INVALID_ARGUMENT);
  CHECK(std::string(nnp_last_error_message()).find("output size P does not fit") !=
        std::string::npos);
}
