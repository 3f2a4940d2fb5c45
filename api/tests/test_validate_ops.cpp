// test_validate_ops.cpp — libnnplug's op validation (api/src/validate.cpp), op by op: the
// shapes, dtypes and params each op accepts and refuses. The checks every op shares:
// test_validate.cpp.
//
// Runs on the fixture device fx_ok:0 (validate_support.hpp): a description that passes validation
// comes back UNSUPPORTED from the plugin, an invalid one INVALID_ARGUMENT from libnnplug.
#include <doctest/doctest.h>

#include <nnplug/nnplug.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "validate_support.hpp"

namespace nnp_test {

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

// conv_forward's fused max pooling (ABI 1.8): y [N, K, floor(O/p)..] (what nnp_op_infer_shapes
// gives, and nothing else accepted), every O >= p; the backward kinds refuse it; a 1.7-sized
// struct (no max_pool field) stays valid.
TEST_CASE("validate: conv_forward's fused max pooling") {
  NNP_NEED_FIXTURE();
  descs d;
  auto p = params_of<nnp_conv_params>();
  const auto x = [&] { return d({2, 3, 12, 13}); };  // O = 10 x 11 with a 3 x 3 filter
  const auto w = [&] { return d({4, 3, 3, 3}); };
  p.max_pool = 2;
  const DLTensor* in[] = {x(), w()};
  nnp_shape shape{};
  REQUIRE_MESSAGE(nnp_op_infer_shapes(NNP_OP_CONV_FORWARD, &p, 2, in, 1, &shape) == NNP_STATUS_OK,
                  nnp_last_error_message());
  CHECK(shape.ndim == 4);
  CHECK(shape.dims[1] == 4);
  CHECK(shape.dims[2] == 5);  // floor(10 / 2)
  CHECK(shape.dims[3] == 5);  // floor(11 / 2)
  CHECK_VALID(NNP_OP_CONV_FORWARD, &p, {x(), w()}, {d({2, 4, 5, 5})});
  CHECK_INVALID("conv_forward", W("y", "[2, 4, 5, 5]"), NNP_OP_CONV_FORWARD, &p, {x(), w()},
                {d({2, 4, 10, 11})});  // the unpooled shape
  p.max_pool = 11;                     // O1 = 10 < 11
  CHECK_INVALID("conv_forward", W("params->max_pool = 11", "O1 = 10"), NNP_OP_CONV_FORWARD, &p,
                {x(), w()}, {d({2, 4, 0, 1})});
  p.max_pool = -1;
  CHECK_INVALID("conv_forward", W("params->max_pool"), NNP_OP_CONV_FORWARD, &p, {x(), w()},
                {d({2, 4, 10, 11})});
  p.max_pool = 1;  // no pooling
  CHECK_VALID(NNP_OP_CONV_FORWARD, &p, {x(), w()}, {d({2, 4, 10, 11})});
  p.max_pool = 0;
  p.reserved1 = 1;
  CHECK_INVALID("conv_forward", W("params->reserved1"), NNP_OP_CONV_FORWARD, &p, {x(), w()},
                {d({2, 4, 10, 11})});
  p.reserved1 = 0;
  p.max_pool = 2;
  const auto y = [&] { return d({2, 4, 10, 11}); };
  CHECK_INVALID("conv_backward_data", W("params->max_pool = 2", "conv_forward's"),
                NNP_OP_CONV_BACKWARD_DATA, &p, {y(), w()}, {x()});
  CHECK_INVALID("conv_backward_filter", W("params->max_pool = 2"), NNP_OP_CONV_BACKWARD_FILTER, &p,
                {x(), y()}, {w()});
  CHECK_INVALID("conv_backward_bias", W("params->max_pool = 2"), NNP_OP_CONV_BACKWARD_BIAS, &p,
                {y()}, {d({4})});
  // a caller built for ABI 1.7: its struct ends before max_pool, whatever follows in memory
  p.struct_size = NNP_CONV_PARAMS_STRUCT_SIZE_1_7;
  CHECK_VALID(NNP_OP_CONV_FORWARD, &p, {x(), w()}, {y()});
  CHECK_VALID(NNP_OP_CONV_BACKWARD_DATA, &p, {y(), w()}, {x()});
}

// conv_forward's fused clamp (ABI 1.7): bounds that are numbers, and no clamp flag on the
// backward kinds; a 1.2-sized struct (no clamp fields) stays valid.
TEST_CASE("validate: conv_forward's fused clamp") {
  NNP_NEED_FIXTURE();
  descs d;
  auto p = params_of<nnp_conv_params>();
  const auto x = [&] { return d({1, 2, 5}); };
  const auto w = [&] { return d({3, 2, 3}); };
  const auto y = [&] { return d({1, 3, 3}); };
  p.has_clip_min = 1;
  p.clip_min = 0.0;
  CHECK_VALID(NNP_OP_CONV_FORWARD, &p, {x(), w()}, {y()});
  p.has_clip_max = 1;
  p.clip_max = std::numeric_limits<double>::quiet_NaN();
  CHECK_INVALID("conv_forward", W("params->clip_max", "NaN"), NNP_OP_CONV_FORWARD, &p, {x(), w()},
                {y()});
  p.clip_max = 1e300;  // past float32: refused like every double field
  CHECK_INVALID("conv_forward", W("params->clip_max", "does not fit"), NNP_OP_CONV_FORWARD, &p,
                {x(), w()}, {y()});
  p.has_clip_max = 0;  // an unused bound that is a number is not checked further
  p.clip_max = std::numeric_limits<double>::quiet_NaN();
  CHECK_VALID(NNP_OP_CONV_FORWARD, &p, {x(), w()}, {y()});
  CHECK_INVALID("conv_backward_data", W("params->has_clip_min", "conv_forward's"),
                NNP_OP_CONV_BACKWARD_DATA, &p, {y(), w()}, {x()});
  CHECK_INVALID("conv_backward_filter", W("params->has_clip_min"), NNP_OP_CONV_BACKWARD_FILTER, &p,
                {x(), y()}, {w()});
  CHECK_INVALID("conv_backward_bias", W("params->has_clip_min"), NNP_OP_CONV_BACKWARD_BIAS, &p,
                {y()}, {d({3})});
  // a caller built for ABI 1.2: its struct ends before the clamp, whatever follows in memory
  p.struct_size = NNP_CONV_PARAMS_STRUCT_SIZE_1_2;
  CHECK_VALID(NNP_OP_CONV_BACKWARD_DATA, &p, {y(), w()}, {x()});
}

TEST_CASE("validate: attention's softmax_lse follows the accumulation rule") {
  NNP_NEED_FIXTURE();
  descs d;
  const auto p = params_of<nnp_attention_params>();
  const DLDataType f16{kDLFloat, 16, 1}, bf16{kDLBfloat, 16, 1};
  // Q [2, 2, 3, 4], K and V [2, 2, 5, 4]: lse [2, 2, 3].
  for (const DLDataType t : {f16, bf16}) {
    CAPTURE(int(t.code));
    const auto qkv = [&] {
      return std::vector<const DLTensor*>{d({2, 2, 3, 4}, t), d({2, 2, 5, 4}, t),
                                          d({2, 2, 5, 4}, t)};
    };
    CHECK_VALID(NNP_OP_ATTENTION_FORWARD, &p, qkv(), {d({2, 2, 3, 4}, t), d({2, 2, 3}, kF32)});
    CHECK_INVALID("attention_forward", W("softmax_lse", "expected dtype float32", "ABI 1.9"),
                  NNP_OP_ATTENTION_FORWARD, &p, qkv(), {d({2, 2, 3, 4}, t), d({2, 2, 3}, t)});
    // nnp_op_infer_shapes says float32 for it, Q's dtype for Y.
    const std::vector<const DLTensor*> in = qkv();
    nnp_shape shapes[2]{};
    REQUIRE_MESSAGE(
        nnp_op_infer_shapes(NNP_OP_ATTENTION_FORWARD, &p, 3, in.data(), 2, shapes) == NNP_STATUS_OK,
        nnp_last_error_message());
    CHECK((shapes[0].dtype.code == t.code && shapes[0].dtype.bits == 16));
    CHECK((shapes[1].dtype.code == kDLFloat && shapes[1].dtype.bits == 32));
    // The backward reads it as float32 too.
    const auto bwd_in = [&](DLDataType lse) {
      std::vector<const DLTensor*> v = qkv();
      v.insert(v.end(), {nullptr, d({2, 2, 3, 4}, t), d({2, 2, 3, 4}, t), d({2, 2, 3}, lse)});
      return v;
    };
    const auto grads = [&] {
      return std::vector<const DLTensor*>{d({2, 2, 3, 4}, t), d({2, 2, 5, 4}, t),
                                          d({2, 2, 5, 4}, t)};
    };
    CHECK_VALID(NNP_OP_ATTENTION_BACKWARD, &p, bwd_in(kF32), grads());
    CHECK_INVALID("attention_backward", W("softmax_lse", "expected dtype float32"),
                  NNP_OP_ATTENTION_BACKWARD, &p, bwd_in(t), grads());
  }
  // float32 and float64 calls: softmax_lse has the call's dtype, as before.
  for (const DLDataType t : {kF32, kF64}) {
    const char* name = t.bits == 32 ? "float32" : "float64";
    CAPTURE(name);
    const DLDataType other = t.bits == 32 ? kF64 : kF32;
    CHECK_VALID(NNP_OP_ATTENTION_FORWARD, &p,
                {d({2, 2, 3, 4}, t), d({2, 2, 5, 4}, t), d({2, 2, 5, 4}, t)},
                {d({2, 2, 3, 4}, t), d({2, 2, 3}, t)});
    CHECK_INVALID("attention_forward", W("softmax_lse", name, "the dtype of"),
                  NNP_OP_ATTENTION_FORWARD, &p,
                  {d({2, 2, 3, 4}, t), d({2, 2, 5, 4}, t), d({2, 2, 5, 4}, t)},
                  {d({2, 2, 3, 4}, t), d({2, 2, 3}, other)});
  }
}

TEST_CASE("validate: layer norm's mean and inv_std follow the accumulation rule (ABI 1.10)") {
  NNP_NEED_FIXTURE();
  descs d;
  auto p = params_of<nnp_layer_norm_params>();
  p.axis = -1;
  p.epsilon = 1e-5;
  const DLDataType f16{kDLFloat, 16, 1}, bf16{kDLBfloat, 16, 1};
  // x [2, 3, 4] over the last axis: scale and bias [4], mean and inv_std [2, 3, 1].
  for (const DLDataType t : {f16, bf16}) {
    CAPTURE(int(t.code));
    const auto fwd_in = [&] {
      return std::vector<const DLTensor*>{d({2, 3, 4}, t), d({4}, t), d({4}, t)};
    };
    CHECK_VALID(NNP_OP_LAYER_NORM_FORWARD, &p, fwd_in(),
                {d({2, 3, 4}, t), d({2, 3, 1}, kF32), d({2, 3, 1}, kF32)});
    CHECK_INVALID("layer_norm_forward", W("mean", "expected dtype float32", "ABI 1.10"),
                  NNP_OP_LAYER_NORM_FORWARD, &p, fwd_in(),
                  {d({2, 3, 4}, t), d({2, 3, 1}, t), d({2, 3, 1}, kF32)});
    CHECK_INVALID("layer_norm_forward", W("inv_std", "expected dtype float32", "ABI 1.10"),
                  NNP_OP_LAYER_NORM_FORWARD, &p, fwd_in(),
                  {d({2, 3, 4}, t), d({2, 3, 1}, kF32), d({2, 3, 1}, t)});
    // The parameters keep the call's dtype (ONNX's Scale and B are T).
    CHECK_INVALID("layer_norm_forward", W("scale"), NNP_OP_LAYER_NORM_FORWARD, &p,
                  {d({2, 3, 4}, t), d({4}, kF32), d({4}, t)},
                  {d({2, 3, 4}, t), d({2, 3, 1}, kF32), d({2, 3, 1}, kF32)});
    const std::vector<const DLTensor*> in = fwd_in();
    nnp_shape shapes[3]{};
    REQUIRE_MESSAGE(nnp_op_infer_shapes(NNP_OP_LAYER_NORM_FORWARD, &p, 3, in.data(), 3, shapes) ==
                        NNP_STATUS_OK,
                    nnp_last_error_message());
    CHECK((shapes[0].dtype.code == t.code && shapes[0].dtype.bits == 16));
    for (int k : {1, 2}) CHECK((shapes[k].dtype.code == kDLFloat && shapes[k].dtype.bits == 32));
    const auto bwd_in = [&](DLDataType stats) {
      return std::vector<const DLTensor*>{d({2, 3, 4}, t), d({2, 3, 4}, t), d({4}, t),
                                          d({2, 3, 1}, stats), d({2, 3, 1}, stats)};
    };
    const auto grads = [&] {
      return std::vector<const DLTensor*>{d({2, 3, 4}, t), d({4}, t), d({4}, t)};
    };
    CHECK_VALID(NNP_OP_LAYER_NORM_BACKWARD, &p, bwd_in(kF32), grads());
    CHECK_INVALID("layer_norm_backward", W("mean", "expected dtype float32"),
                  NNP_OP_LAYER_NORM_BACKWARD, &p, bwd_in(t), grads());
  }
  // float32 and float64 calls: the statistics have the call's dtype, as before.
  for (const DLDataType t : {kF32, kF64}) {
    const char* name = t.bits == 32 ? "float32" : "float64";
    CAPTURE(name);
    const DLDataType other = t.bits == 32 ? kF64 : kF32;
    CHECK_VALID(NNP_OP_LAYER_NORM_FORWARD, &p, {d({2, 3, 4}, t), d({4}, t)},
                {d({2, 3, 4}, t), d({2, 3, 1}, t), d({2, 3, 1}, t)});
    CHECK_INVALID("layer_norm_forward", W("inv_std", name, "the dtype of"),
                  NNP_OP_LAYER_NORM_FORWARD, &p, {d({2, 3, 4}, t), d({4}, t)},
                  {d({2, 3, 4}, t), d({2, 3, 1}, t), d({2, 3, 1}, other)});
  }
}

TEST_CASE("validate: batch norm's per-channel tensors follow the accumulation rule (ABI 1.10)") {
  NNP_NEED_FIXTURE();
  descs d;
  auto p = params_of<nnp_batch_norm_params>();
  p.epsilon = 1e-5;
  p.momentum = 0.9;
  const DLDataType f16{kDLFloat, 16, 1}, bf16{kDLBfloat, 16, 1};
  // x [4, 3, 2, 2]: every per-channel tensor [3].
  for (const DLDataType t : {f16, bf16}) {
    CAPTURE(int(t.code));
    const auto ch = [&](DLDataType dt) { return d({3}, dt); };
    CHECK_VALID(NNP_OP_BATCH_NORM_FORWARD_TRAINING, &p, {d({4, 3, 2, 2}, t), ch(kF32), ch(kF32)},
                {d({4, 3, 2, 2}, t), ch(kF32), ch(kF32), ch(kF32), ch(kF32)});
    CHECK_INVALID("batch_norm_forward_training", W("scale", "expected dtype float32", "ABI 1.10"),
                  NNP_OP_BATCH_NORM_FORWARD_TRAINING, &p, {d({4, 3, 2, 2}, t), ch(t), ch(kF32)},
                  {d({4, 3, 2, 2}, t), ch(kF32), ch(kF32), ch(kF32), ch(kF32)});
    CHECK_INVALID("batch_norm_forward_training", W("running_var", "expected dtype float32"),
                  NNP_OP_BATCH_NORM_FORWARD_TRAINING, &p, {d({4, 3, 2, 2}, t), ch(kF32), ch(kF32)},
                  {d({4, 3, 2, 2}, t), ch(kF32), ch(t), ch(kF32), ch(kF32)});
    CHECK_VALID(NNP_OP_BATCH_NORM_FORWARD_INFERENCE, &p,
                {d({4, 3, 2, 2}, t), ch(kF32), ch(kF32), ch(kF32), ch(kF32)}, {d({4, 3, 2, 2}, t)});
    CHECK_VALID(NNP_OP_BATCH_NORM_BACKWARD, &p,
                {d({4, 3, 2, 2}, t), d({4, 3, 2, 2}, t), ch(kF32), ch(kF32), ch(kF32)},
                {d({4, 3, 2, 2}, t), ch(kF32), ch(kF32)});
    CHECK_INVALID("batch_norm_backward", W("dbias", "expected dtype float32"),
                  NNP_OP_BATCH_NORM_BACKWARD, &p,
                  {d({4, 3, 2, 2}, t), d({4, 3, 2, 2}, t), ch(kF32), ch(kF32), ch(kF32)},
                  {d({4, 3, 2, 2}, t), ch(kF32), ch(t)});
  }
  // float32 and float64 calls: every tensor has the call's dtype, as before.
  for (const DLDataType t : {kF32, kF64}) {
    const char* name = t.bits == 32 ? "float32" : "float64";
    CAPTURE(name);
    CHECK_VALID(NNP_OP_BATCH_NORM_FORWARD_INFERENCE, &p,
                {d({4, 3}, t), d({3}, t), d({3}, t), d({3}, t), d({3}, t)}, {d({4, 3}, t)});
    CHECK_INVALID(
        "batch_norm_forward_inference", W("var", name, "the dtype of"),
        NNP_OP_BATCH_NORM_FORWARD_INFERENCE, &p,
        {d({4, 3}, t), d({3}, t), d({3}, t), d({3}, t), d({3}, t.bits == 32 ? kF64 : kF32)},
        {d({4, 3}, t)});
  }
}

}  // namespace nnp_test
