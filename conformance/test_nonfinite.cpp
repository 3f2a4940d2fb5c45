// test_nonfinite.cpp — ±inf and NaN in inputs and weights (docs/ops.md, "Non-finite values"):
// every op gives what IEEE arithmetic gives on its formula, with convolution padding as zeros
// that take part in the products (0 * inf = NaN, as PyTorch), and no algorithm (Winograd, FFT)
// whose results differ in class from the direct formula. The comparison's NaN and Inf rules
// (harness_compare.cpp: NaN exactly where the reference has NaN, Inf in the same place with the
// same sign) check each backend against the reference; known answers check the reference too.
#include <doctest/doctest.h>

#include "harness.hpp"

#include <cmath>
#include <limits>
#include <utility>

namespace {
using namespace conf;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Non-finite values planted in a tensor's data: (flat index, value) pairs; indices past the end
// wrap.
using plant_list = std::vector<std::pair<int64_t, double>>;
std::vector<double> planted(std::vector<double> d, const plant_list& plants) {
  for (const auto& [i, v] : plants)
    if (!d.empty()) d[static_cast<size_t>(i) % d.size()] = v;
  return d;
}

// Which operand gets which plants: a name for the report and the plants of inputs 0 and 1.
struct plant_variant {
  const char* name;
  plant_list in0, in1;
};
// +inf alone, -inf alone, NaN alone, and +inf beside -inf (NaN where both reach).
const std::vector<plant_variant>& variants() {
  static const std::vector<plant_variant> v{
      {"x+inf", {{5, kInf}}, {}}, {"x-inf", {{0, -kInf}}, {}},
      {"xnan", {{7, kNaN}}, {}},  {"x+-inf", {{3, kInf}, {4, -kInf}}, {}},
      {"w+inf", {}, {{0, kInf}}}, {"w-inf_centre", {}, {{4, -kInf}}},
      {"wnan", {}, {{2, kNaN}}},
  };
  return v;
}

nnp_conv2d_params conv_params(int32_t pad) {
  auto p = make_params<nnp_conv2d_params>();
  p.stride_h = p.stride_w = p.dilation_h = p.dilation_w = p.groups = 1;
  p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = pad;
  return p;
}

}  // namespace

// Convolution: a 3x3 filter with padding 1 over 16 channels (the cpu backend's Winograd
// shape), over 2 channels (the shallow kernel's forward: depth 18 <= 32), over 4 (im2col +
// SGEMM: depth 36) and depthwise over 4 (the cpu's depthwise kernels), every direction; an
// infinite weight tap that reads padding gives NaN at the border outputs, and an infinite dy at
// an output whose taps read padding gives NaN in those taps' dw.
TEST_CASE("non-finite: conv2d forward, backward data and backward filter") {
  struct named_shape {
    const char* name;
    int64_t n, c, h, w, k, groups;
  };
  for (const named_shape& s : {named_shape{"c16 k16 (winograd)", 1, 16, 6, 6, 16, 1},
                               named_shape{"c2 k3 (shallow)", 2, 2, 5, 4, 3, 1},
                               named_shape{"c4 k3 (im2col)", 2, 4, 5, 4, 3, 1},
                               named_shape{"c4 k4 g4 (depthwise)", 2, 4, 6, 9, 4, 4}})
    for (const plant_variant& v : variants()) {
      nnp_conv2d_params p = conv_params(1);
      p.groups = static_cast<int32_t>(s.groups);
      const std::vector<int64_t> x{s.n, s.c, s.h, s.w}, w{s.k, s.c / s.groups, 3, 3};
      const std::vector<int64_t> y{s.n, s.k, s.h, s.w};
      value_rng rng(std::string("nonfinite conv2d ") + s.name + " " + v.name);
      const auto xd = planted(rng.uniform_vec(numel(x)), v.in0);
      const auto wd = planted(rng.uniform_vec(numel(w)), v.in1);
      const auto dyd = planted(rng.uniform_vec(numel(y)), v.in0);
      const std::string text = std::string("nonfinite ") + s.name + " " + v.name;
      check_numerics("conv2d_forward", text,
                     make_spec(NNP_OP_CONV2D_FORWARD, p,
                               {tensor(x, xd), tensor(w, wd), tensor({s.k}, rng.uniform_vec(s.k))},
                               {tensor(y)}));
      // dy takes x's plants, w its own
      check_numerics(
          "conv2d_backward_data", text,
          make_spec(NNP_OP_CONV2D_BACKWARD_DATA, p, {tensor(y, dyd), tensor(w, wd)}, {tensor(x)}));
      // x and dy: the variant's plants go to x (in0), and its w plants to dy
      check_numerics(
          "conv2d_backward_filter", text,
          make_spec(NNP_OP_CONV2D_BACKWARD_FILTER, p,
                    {tensor(x, xd), tensor(y, planted(rng.uniform_vec(numel(y)), v.in1))},
                    {tensor(w)}));
    }
}

// N-D convolution (3-D, im2col / vol2col on the cpu backend) with an infinite weight tap over
// padding, and a transposed convolution.
TEST_CASE("non-finite: conv forward and conv_transpose forward") {
  for (const plant_variant& v : variants()) {
    auto p = make_params<nnp_conv_params>();
    for (int i = 0; i < 6; ++i) p.pads[i] = 1;
    const std::vector<int64_t> x{1, 2, 3, 4, 3}, w{3, 2, 3, 3, 3}, y{1, 3, 3, 4, 3};
    value_rng rng(std::string("nonfinite conv ") + v.name);
    check_numerics("conv_forward", std::string("nonfinite ") + v.name,
                   make_spec(NNP_OP_CONV_FORWARD, p,
                             {tensor(x, planted(rng.uniform_vec(numel(x)), v.in0)),
                              tensor(w, planted(rng.uniform_vec(numel(w)), v.in1))},
                             {tensor(y)}));
    auto t = make_params<nnp_conv_transpose_params>();
    t.pads[0] = t.pads[1] = 1;
    t.strides[0] = 2;
    const std::vector<int64_t> tx{2, 2, 4}, tw{2, 3, 3}, ty{2, 3, 7};
    check_numerics("conv_transpose_forward", std::string("nonfinite ") + v.name,
                   make_spec(NNP_OP_CONV_TRANSPOSE_FORWARD, t,
                             {tensor(tx, planted(rng.uniform_vec(numel(tx)), v.in0)),
                              tensor(tw, planted(rng.uniform_vec(numel(tw)), v.in1))},
                             {tensor(ty)}));
  }
}

TEST_CASE("non-finite: gemm and matmul") {
  for (const plant_variant& v : variants()) {
    value_rng rng(std::string("nonfinite gemm ") + v.name);
    auto p = make_params<nnp_gemm_params>();
    p.alpha = 1.5;
    p.beta = 0.5;
    const auto a = planted(rng.uniform_vec(4 * 9), v.in0);
    const auto b = planted(rng.uniform_vec(9 * 5), v.in1);
    const std::string text = std::string("nonfinite ") + v.name;
    check_numerics("gemm", text,
                   make_spec(NNP_OP_GEMM, p,
                             {tensor({4, 9}, a), tensor({9, 5}, b),
                              tensor({4, 5}, planted(rng.uniform_vec(20), {{11, kInf}}))},
                             {tensor({4, 5})}));
    p.trans_a = p.trans_b = 1;
    check_numerics(
        "gemm", text + " trans",
        make_spec(NNP_OP_GEMM, p, {tensor({9, 4}, a), tensor({5, 9}, b)}, {tensor({4, 5})}));
    check_numerics(
        "matmul", text,
        make_spec(NNP_OP_MATMUL, make_params<nnp_matmul_params>(),
                  {tensor({2, 4, 9}, planted(rng.uniform_vec(72), v.in0)), tensor({9, 5}, b)},
                  {tensor({2, 4, 5})}));
  }
}

TEST_CASE("non-finite: pooling") {
  for (const plant_variant& v : variants()) {
    if (!v.in1.empty()) continue;  // no weights
    value_rng rng(std::string("nonfinite pool ") + v.name);
    // 6 x 6, and 4 x 40: rows of 20 outputs of 2 x 2 windows, which vectorised kernels take in
    // blocks of 8 and 4 (the cpu backend's AVX2 max pooling)
    for (const std::vector<int64_t>& x :
         {std::vector<int64_t>{1, 2, 6, 6}, std::vector<int64_t>{1, 2, 4, 40}}) {
      const auto xd = planted(rng.uniform_vec(numel(x)), v.in0);
      for (int32_t mode : {NNP_POOL_MAX, NNP_POOL_AVERAGE})
        for (int32_t pad : {0, 1}) {
          auto p = make_params<nnp_pool2d_params>();
          p.mode = mode;
          p.window_h = p.window_w = 2;
          p.stride_h = p.stride_w = 2;
          p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = pad;
          p.count_include_pad = mode == NNP_POOL_AVERAGE ? pad : 0;
          const int64_t oh = (x[2] + 2 * pad - 2) / 2 + 1, ow = (x[3] + 2 * pad - 2) / 2 + 1;
          const std::string text = std::string("nonfinite ") + v.name + " " + std::to_string(x[2]) +
                                   "x" + std::to_string(x[3]) + " mode" + std::to_string(mode) +
                                   " pad" + std::to_string(pad);
          check_numerics(
              "pool2d_forward", text,
              make_spec(NNP_OP_POOL2D_FORWARD, p, {tensor(x, xd)}, {tensor({1, 2, oh, ow})}));
          auto q = make_params<nnp_pool_params>();
          q.mode = mode;
          q.kernel_shape[0] = q.kernel_shape[1] = 3;
          q.strides[0] = q.strides[1] = 1;
          for (int i = 0; i < 4; ++i) q.pads[i] = pad;
          q.count_include_pad = mode == NNP_POOL_AVERAGE ? pad : 0;
          const int64_t qh = x[2] + 2 * pad - 2, qw = x[3] + 2 * pad - 2;
          check_numerics("pool_forward", text,
                         make_spec(NNP_OP_POOL_FORWARD, q, {tensor(x, xd)},
                                   {tensor({1, 2, qh, qw}),
                                    mode == NNP_POOL_MAX ? int_tensor(dtype_id::i64, {1, 2, qh, qw})
                                                         : absent_tensor()}));
        }
      // 3 x 3 max pooling at stride 2 without Indices (the cpu's 3x3 / stride-2 path: rows'
      // maxima, then 8 outputs of 3 columns at a time), padding 0 and 1
      for (int32_t pad : {0, 1}) {
        auto q = make_params<nnp_pool_params>();
        q.mode = NNP_POOL_MAX;
        q.kernel_shape[0] = q.kernel_shape[1] = 3;
        q.strides[0] = q.strides[1] = 2;
        for (int i = 0; i < 4; ++i) q.pads[i] = pad;
        const int64_t qh = (x[2] + 2 * pad - 3) / 2 + 1, qw = (x[3] + 2 * pad - 3) / 2 + 1;
        check_numerics("pool_forward",
                       std::string("nonfinite ") + v.name + " 3x3 stride 2 " +
                           std::to_string(x[2]) + "x" + std::to_string(x[3]) + " pad" +
                           std::to_string(pad),
                       make_spec(NNP_OP_POOL_FORWARD, q, {tensor(x, xd)},
                                 {tensor({1, 2, qh, qw}), absent_tensor()}));
      }
      // global pooling (one window per plane; the cpu's whole-plane path for both modes)
      for (int32_t mode : {NNP_POOL_MAX, NNP_POOL_AVERAGE}) {
        auto q = make_params<nnp_pool_params>();
        q.mode = mode;
        q.global = 1;
        check_numerics("pool_forward",
                       std::string("nonfinite ") + v.name + " global " + std::to_string(x[2]) +
                           "x" + std::to_string(x[3]) + " mode" + std::to_string(mode),
                       make_spec(NNP_OP_POOL_FORWARD, q, {tensor(x, xd)},
                                 {tensor({1, 2, 1, 1}), absent_tensor()}));
      }
    }
  }
}

TEST_CASE("non-finite: softmax, layer norm and batch norm") {
  for (const plant_variant& v : variants()) {
    value_rng rng(std::string("nonfinite norm ") + v.name);
    const std::string text = std::string("nonfinite ") + v.name;
    const std::vector<int64_t> x{4, 6};
    const auto xd = planted(rng.uniform_vec(numel(x), -2, 2), v.in0);
    for (int32_t log : {0, 1}) {
      auto p = make_params<nnp_softmax_params>();
      p.axis = -1;
      p.log = log;
      check_numerics("softmax_forward", text + " log" + std::to_string(log),
                     make_spec(NNP_OP_SOFTMAX_FORWARD, p, {tensor(x, xd)}, {tensor(x)}));
    }
    auto ln = make_params<nnp_layer_norm_params>();
    ln.axis = -1;
    ln.epsilon = 1e-5;
    const auto scale = planted(rng.uniform_vec(6, 0.5, 1.5), v.in1);
    check_numerics(
        "layer_norm_forward", text,
        make_spec(NNP_OP_LAYER_NORM_FORWARD, ln,
                  {tensor(x, xd), tensor({6}, scale), tensor({6}, rng.uniform_vec(6))},
                  {tensor(x), accumulation_tensor({4, 1}), accumulation_tensor({4, 1})}));
    auto bn = make_params<nnp_batch_norm_params>();
    bn.epsilon = 1e-5;
    bn.momentum = 0.9;
    const std::vector<int64_t> bx{4, 6, 2, 2};
    const auto bxd = planted(rng.uniform_vec(numel(bx), -2, 2), v.in0);
    check_numerics("batch_norm_forward_training", text,
                   make_spec(NNP_OP_BATCH_NORM_FORWARD_TRAINING, bn,
                             {tensor(bx, bxd), accumulation_tensor({6}, scale),
                              accumulation_tensor({6}, rng.uniform_vec(6))},
                             {tensor(bx), accumulation_tensor({6}, rng.uniform_vec(6)),
                              accumulation_tensor({6}, rng.uniform_vec(6, 0.5, 2)),
                              accumulation_tensor({6}), accumulation_tensor({6})}));
    check_numerics("batch_norm_forward_inference", text,
                   make_spec(NNP_OP_BATCH_NORM_FORWARD_INFERENCE, bn,
                             {tensor(bx, bxd), accumulation_tensor({6}, scale),
                              accumulation_tensor({6}, rng.uniform_vec(6)),
                              accumulation_tensor({6}, rng.uniform_vec(6)),
                              accumulation_tensor({6}, rng.uniform_vec(6, 0.5, 2))},
                             {tensor(bx)}));
  }
}

// Activations, forward and backward (dy finite), over [4, 33]: 16 full 8-lane vectors and a
// tail of 4, with +inf, -inf and NaN planted in the body and in the tail (the cpu's GELU runs
// 8 lanes at a time and its tail through a padded copy).
TEST_CASE("non-finite: activations") {
  const std::vector<int64_t> x{4, 33};
  const std::vector<std::pair<const char*, plant_list>> plants{
      {"body", {{5, kInf}, {9, -kInf}, {18, kNaN}}},
      {"tail", {{129, kInf}, {130, kNaN}, {131, -kInf}}}};
  for (const auto& [where, plant] : plants)
    for (const auto& [name, fn] : activation_functions()) {
      value_rng rng(std::string("nonfinite activation ") + name + " " + where);
      const std::string text = std::string("nonfinite ") + name + " " + where;
      auto p = make_params<nnp_activation_params>();
      p.function = fn;
      p.alpha = fn == NNP_ACTIVATION_ELU ? 1.0 : 0.01;
      const auto xd = planted(rng.uniform_vec(numel(x), -4, 4), plant);
      check_numerics("activation_forward", text,
                     make_spec(NNP_OP_ACTIVATION_FORWARD, p, {tensor(x, xd)}, {tensor(x)}));
      check_numerics("activation_backward", text,
                     make_spec(NNP_OP_ACTIVATION_BACKWARD, p,
                               {tensor(x, xd), tensor(x, rng.uniform_vec(numel(x)))}, {tensor(x)}));
    }
}

// Known answers the reference must give too.
TEST_CASE("non-finite: known answers") {
  // An infinite weight tap over padding: 0 * inf = NaN (PyTorch gives NaN too). x [1,1,1,1] = 1,
  // w 3x3 with +inf in the top-left corner and 1 in the centre, padding 1: y = NaN.
  check_known_answer(
      "nonfinite_conv2d", "w+inf over padding",
      make_spec(NNP_OP_CONV2D_FORWARD, conv_params(1),
                {tensor({1, 1, 1, 1}, {1}), tensor({1, 1, 3, 3}, {kInf, 0, 0, 0, 1, 0, 0, 0, 0})},
                {tensor({1, 1, 1, 1})}),
      {kNaN});
  // +inf in x read by every window of a 3x3 all-ones filter: every output is +inf (a Winograd
  // transform would give inf - inf = NaN in most of them).
  std::vector<double> x(16 * 4 * 4, 0.5);
  x[5 * 4 * 4 + 1 * 4 + 1] = kInf;  // channel 5, row 1, column 1
  std::vector<double> y(16 * 2 * 2, kInf);
  check_known_outputs("nonfinite_conv2d", "x+inf read by every window (16 channels)",
                      make_spec(NNP_OP_CONV2D_FORWARD, conv_params(0),
                                {tensor({1, 16, 4, 4}, x),
                                 tensor({16, 16, 3, 3}, std::vector<double>(16 * 16 * 9, 1.0))},
                                {tensor({1, 16, 2, 2})}),
                      {y}, {dtype_id::f32}, [](dtype_id) { return 1e-12; });
  // GEMM: alpha multiplies the product as IEEE arithmetic does (alpha = 0 times an infinite or
  // NaN product is NaN); beta = 0 does not read C (BLAS convention).
  auto p = make_params<nnp_gemm_params>();
  p.alpha = 0;
  p.beta = 2;
  check_known_answer(
      "nonfinite_gemm", "alpha=0 with inf in A",
      make_spec(NNP_OP_GEMM, p,
                {tensor({1, 2}, {kInf, 1}), tensor({2, 2}, {1, 0, 1, 1}), tensor({1, 2}, {1, 3})},
                {tensor({1, 2})}),
      {kNaN, kNaN});
  p.alpha = 1;
  p.beta = 0;
  check_known_answer(
      "nonfinite_gemm", "beta=0 with NaN in C",
      make_spec(NNP_OP_GEMM, p,
                {tensor({1, 2}, {1, 2}), tensor({2, 1}, {3, kInf}), tensor({1, 1}, {kNaN})},
                {tensor({1, 1})}),
      {kInf});
  // softmax: +inf in a slice gives NaN in the whole slice (inf - max = NaN), as PyTorch
  auto sp = make_params<nnp_softmax_params>();
  sp.axis = -1;
  check_known_answer(
      "nonfinite_softmax", "+inf in a slice",
      make_spec(NNP_OP_SOFTMAX_FORWARD, sp, {tensor({2, 2}, {kInf, 1, 0, 0})}, {tensor({2, 2})}),
      {kNaN, kNaN, 0.5, 0.5});
  // average pooling: inf + -inf in a window = NaN; max pooling: the first NaN wins
  auto pp = make_params<nnp_pool2d_params>();
  pp.mode = NNP_POOL_AVERAGE;
  pp.window_h = pp.window_w = 2;
  pp.stride_h = pp.stride_w = 2;
  check_known_answer(
      "nonfinite_pool2d", "average of +inf and -inf",
      make_spec(NNP_OP_POOL2D_FORWARD, pp,
                {tensor({1, 1, 2, 4}, {kInf, 1, 1, 1, -kInf, 1, kInf, 1})}, {tensor({1, 1, 1, 2})}),
      {kNaN, kInf});
}
