// test_validate.cpp — libnnplug's op validation (api/src/validate.cpp): the checks every op
// shares (counts, NULLs, params' struct_size, dtypes, ranks, strides, devices), aliasing,
// nnp_op_execute's refusals and output sizes near INT64_MAX. The rules of each op:
// test_validate_ops.cpp.
//
// Runs on the fixture device fx_ok:0 (validate_support.hpp): a description that passes validation
// comes back UNSUPPORTED from the plugin, an invalid one INVALID_ARGUMENT from libnnplug.
#include <doctest/doctest.h>

#include <nnplug/nnplug.h>

#include <limits>
#include <string>
#include <vector>

#include "validate_support.hpp"

namespace nnp_test {

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

}  // namespace nnp_test
