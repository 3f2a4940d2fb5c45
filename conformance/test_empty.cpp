// test_empty.cpp — tensors without elements that have one huge dimension beside the 0 (valid:
// their byte size is 0). Empty means no work: every device must return at once (a kernel that
// loops over the huge dimension never finishes, and CTest's timeout catches it) and give the
// documented results for outputs that have elements (sums 0, means and the statistics of
// normalisations NaN, docs/ops.md). Known answers on every device, the reference included.
#include <doctest/doctest.h>

#include "harness.hpp"

#include <limits>
#include <tuple>

namespace {
using namespace conf;

// kHuge alone beside a 0; kBig where other dimensions multiply it (a shape's leading dims must
// have a product that fits int64, zeros aside).
constexpr int64_t kHuge = int64_t{1} << 62;
constexpr int64_t kBig = int64_t{1} << 40;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Known answers in float32 (and float64 where a device has it: the reference then allocates in
// double, which is where a per-row buffer of the huge dimension would cost the most).
void check_empty(const std::string& op, const std::string& text, const call_spec& call,
                 const std::vector<std::vector<double>>& want) {
  std::string why;
  REQUIRE_MESSAGE(op_supported(reference_device(), call, dtype_id::f32, &why) == NNP_STATUS_OK,
                  op << " " << text << ": " << why);
  check_known_outputs(op + "_empty", text, call, want, {dtype_id::f64, dtype_id::f32},
                      [](dtype_id) { return 1e-12; });
}

}  // namespace

TEST_CASE("empty tensors: softmax with a huge dimension") {
  for (int32_t log : {0, 1})
    for (int32_t axis : {-1, 0}) {
      auto p = make_params<nnp_softmax_params>();
      p.axis = axis;
      p.log = log;
      const std::string text =
          "x[2^62, 0] axis" + std::to_string(axis) + " log" + std::to_string(log);
      check_empty("softmax_forward", text,
                  make_spec(NNP_OP_SOFTMAX_FORWARD, p, {tensor({kHuge, 0})}, {tensor({kHuge, 0})}),
                  {{}});
      check_empty("softmax_backward", text,
                  make_spec(NNP_OP_SOFTMAX_BACKWARD, p, {tensor({kHuge, 0}), tensor({kHuge, 0})},
                            {tensor({kHuge, 0})}),
                  {{}});
    }
}

TEST_CASE("empty tensors: layer norm with a huge dimension") {
  auto p = make_params<nnp_layer_norm_params>();
  p.epsilon = 1e-5;
  p.axis = -1;  // outer [2^62], nothing normalised: y empty, no statistics asked for
  check_empty(
      "layer_norm_forward", "x[2^62, 0] axis-1",
      make_spec(NNP_OP_LAYER_NORM_FORWARD, p, {tensor({kHuge, 0}), tensor({0}), tensor({0})},
                {tensor({kHuge, 0}), absent_tensor(), absent_tensor()}),
      {{}});
  p.axis = 0;
  check_empty("layer_norm_backward", "x[0, 3] axis0 (dscale = dbias = 0)",
              make_spec(NNP_OP_LAYER_NORM_BACKWARD, p,
                        {tensor({0, 3}), tensor({0, 3}), tensor({0, 3}), tensor({1, 1}, {0.0}),
                         tensor({1, 1}, {1.0})},
                        {tensor({0, 3}), tensor({0, 3}), tensor({0, 3})}),
              {{}, {}, {}});
  p.axis = 1;
  check_empty("layer_norm_backward", "x[0, 3] axis1",
              make_spec(NNP_OP_LAYER_NORM_BACKWARD, p,
                        {tensor({0, 3}), tensor({0, 3}), tensor({3}, {1, 1, 1}), tensor({0, 1}),
                         tensor({0, 1})},
                        {tensor({0, 3}), tensor({3}), tensor({3})}),
              {{}, {0, 0, 0}, {0, 0, 0}});
}

TEST_CASE("empty tensors: convolution bias gradients with a huge dimension") {
  // dy [2^40, 3, 0, 0]: db = 0 without visiting 2^40 empty images
  check_empty("conv2d_backward_bias", "dy[2^40, 3, 0, 0]",
              make_spec(NNP_OP_CONV2D_BACKWARD_BIAS, {tensor({kBig, 3, 0, 0})}, {tensor({3})}),
              {{0, 0, 0}});
  check_empty("conv_backward_bias", "dy[2^40, 3, 0]",
              make_spec(NNP_OP_CONV_BACKWARD_BIAS, {tensor({kBig, 3, 0})}, {tensor({3})}),
              {{0, 0, 0}});
  check_empty("conv_backward_bias", "dy[0, 3, 2^40]",
              make_spec(NNP_OP_CONV_BACKWARD_BIAS, {tensor({0, 3, kBig})}, {tensor({3})}),
              {{0, 0, 0}});
}

TEST_CASE("empty tensors: softmax cross-entropy over a huge class dimension") {
  // N = 0: mean is 0/0 = NaN, sum 0, none an empty loss; log_prob and dlogits are empty
  for (int64_t classes : {int64_t{1} << 31, kHuge}) {
    const std::string text = "logits[0, " + std::to_string(classes) + "]";
    for (int32_t red : {NNP_REDUCTION_MEAN, NNP_REDUCTION_SUM, NNP_REDUCTION_NONE}) {
      auto p = make_params<nnp_softmax_cross_entropy_params>();
      p.reduction = red;
      const bool none = red == NNP_REDUCTION_NONE;
      const std::vector<int64_t> loss_shape =
          none ? std::vector<int64_t>{0} : std::vector<int64_t>{};
      const std::vector<double> loss =
          none ? std::vector<double>{} : std::vector<double>{red == NNP_REDUCTION_SUM ? 0 : kNaN};
      const std::string t = text + " reduction" + std::to_string(red);
      check_empty("softmax_cross_entropy_forward", t,
                  make_spec(NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD, p,
                            {tensor({0, classes}), int_tensor(dtype_id::i64, {0})},
                            {tensor(loss_shape), tensor({0, classes})}),
                  {loss, {}});
      check_empty(
          "softmax_cross_entropy_backward", t,
          make_spec(NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD, p,
                    {tensor({0, classes}), int_tensor(dtype_id::i64, {0}),
                     tensor(loss_shape, none ? std::vector<double>{} : std::vector<double>{1})},
                    {tensor({0, classes})}),
          {{}});
      auto q = make_params<nnp_softmax_cross_entropy_loss_params>();
      q.reduction = red;
      check_empty("softmax_cross_entropy_loss_forward", t,
                  make_spec(NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_FORWARD, q,
                            {tensor({0, classes}), int_tensor(dtype_id::i64, {0})},
                            {tensor(loss_shape), tensor({0, classes})}),
                  {loss, {}});
    }
  }
}

TEST_CASE("empty tensors: batch norm backward and reductions over no elements") {
  // M = 0 (an empty batch): dscale = dbias = 0, sums over nothing
  auto p = make_params<nnp_batch_norm_params>();
  p.epsilon = 1e-5;
  p.momentum = 0.9;
  for (const std::vector<int64_t>& x :
       {std::vector<int64_t>{0, 2}, std::vector<int64_t>{0, 2, kBig, 1},
        std::vector<int64_t>{3, 2, kBig, 0}}) {
    check_empty("batch_norm_backward", "x" + shape_str(x),
                make_spec(NNP_OP_BATCH_NORM_BACKWARD, p,
                          {tensor(x), tensor(x), tensor({2}, {1, 1}), tensor({2}, {0, 0}),
                           tensor({2}, {1, 1})},
                          {tensor(x), tensor({2}), tensor({2})}),
                {{}, {0, 0}, {0, 0}});
  }
  // reductions of x [2^62, 0] over every axis: sum 0, mean NaN, max -inf
  const double inf = std::numeric_limits<double>::infinity();
  for (const auto& [op, want] : {std::pair<int32_t, double>{NNP_REDUCE_SUM, 0.0},
                                 std::pair<int32_t, double>{NNP_REDUCE_MEAN, kNaN},
                                 std::pair<int32_t, double>{NNP_REDUCE_MAX, -inf}}) {
    auto r = make_params<nnp_reduce_params>();
    r.op = op;
    r.keepdims = 1;
    check_empty("reduce", "x[2^62, 0] op" + std::to_string(op),
                make_spec(NNP_OP_REDUCE, r, {tensor({kHuge, 0})}, {tensor({1, 1})}), {{want}});
    r.n_axes = 1;  // along the huge axis only: y [1, 0] is empty
    check_empty("reduce", "x[2^62, 0] axes0 op" + std::to_string(op),
                make_spec(NNP_OP_REDUCE, r, {tensor({kHuge, 0})}, {tensor({1, 0})}), {{}});
  }
}

TEST_CASE("empty tensors: statistics over no elements are NaN") {
  // layer norm over |I| = 0 elements (one outer row): NaN mean and inv_std
  auto ln = make_params<nnp_layer_norm_params>();
  ln.epsilon = 1e-5;
  check_empty("layer_norm_forward", "x[2^62, 0] axis0",
              make_spec(NNP_OP_LAYER_NORM_FORWARD, ln,
                        {tensor({kHuge, 0}), tensor({kHuge, 0}), tensor({kHuge, 0})},
                        {tensor({kHuge, 0}), tensor({1, 1}), tensor({1, 1})}),
              {{}, {kNaN}, {kNaN}});
  ln.axis = 1;
  check_empty(
      "layer_norm_forward", "x[3, 0] axis1",
      make_spec(NNP_OP_LAYER_NORM_FORWARD, ln, {tensor({3, 0}), tensor({0}), absent_tensor()},
                {tensor({3, 0}), tensor({3, 1}), tensor({3, 1})}),
      {{}, {kNaN, kNaN, kNaN}, {kNaN, kNaN, kNaN}});
  // batch norm over M = 0 (an empty batch): NaN statistics and NaN running values
  auto p = make_params<nnp_batch_norm_params>();
  p.epsilon = 1e-5;
  p.momentum = 0.9;
  for (const std::vector<int64_t>& x :
       {std::vector<int64_t>{0, 2}, std::vector<int64_t>{0, 2, kBig, 1},
        std::vector<int64_t>{3, 2, kBig, 0}})
    check_empty("batch_norm_forward_training", "x" + shape_str(x),
                make_spec(NNP_OP_BATCH_NORM_FORWARD_TRAINING, p,
                          {tensor(x), tensor({2}, {1, 1}), tensor({2}, {0, 0})},
                          {tensor(x), tensor({2}, {0.5, 0.5}), tensor({2}, {2, 2}), tensor({2}),
                           tensor({2})}),
                {{}, {kNaN, kNaN}, {kNaN, kNaN}, {kNaN, kNaN}, {kNaN, kNaN}});
}

TEST_CASE("empty tensors: pooling windows without input elements") {
  // x [1, 1, 0, 0] with padding 1 on every side and a 2x2 window: one output whose window holds
  // padding only. Max gives -inf, average 0/0 = NaN, or 0/4 = 0 with count_include_pad.
  const double inf = std::numeric_limits<double>::infinity();
  for (const auto& [mode, include, want] :
       {std::tuple<int32_t, int32_t, double>{NNP_POOL_MAX, 0, -inf},
        std::tuple<int32_t, int32_t, double>{NNP_POOL_AVERAGE, 0, kNaN},
        std::tuple<int32_t, int32_t, double>{NNP_POOL_AVERAGE, 1, 0.0}}) {
    const std::string text =
        "mode" + std::to_string(mode) + " include_pad" + std::to_string(include);
    auto p = make_params<nnp_pool2d_params>();
    p.mode = mode;
    p.count_include_pad = include;
    p.window_h = p.window_w = 2;
    p.stride_h = p.stride_w = 1;
    p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
    check_empty("pool2d_forward", "x[1, 1, 0, 0] " + text,
                make_spec(NNP_OP_POOL2D_FORWARD, p, {tensor({1, 1, 0, 0})}, {tensor({1, 1, 1, 1})}),
                {{want}});
    auto q = make_params<nnp_pool_params>();
    q.mode = mode;
    q.count_include_pad = include;
    q.kernel_shape[0] = 2;
    q.pads[0] = q.pads[1] = 1;
    check_empty(
        "pool_forward", "x[1, 1, 0] " + text,
        make_spec(NNP_OP_POOL_FORWARD, q, {tensor({1, 1, 0})},
                  {tensor({1, 1, 1}),
                   mode == NNP_POOL_MAX ? int_tensor(dtype_id::i64, {1, 1, 1}) : absent_tensor()}),
        {{want}});
  }
}
