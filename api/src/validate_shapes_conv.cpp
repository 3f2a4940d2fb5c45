// Shape rules of the convolution ops: NNP_OP_CONV2D_* (ABI 1.0, nnp_conv2d_params: NCHW / OIHW,
// a stride, dilation or groups of 0 means 1) and the N-D ones (NNP_OP_CONV_* with
// nnp_conv_params and NNP_OP_CONV_TRANSPOSE_* with nnp_conv_transpose_params, ONNX Conv /
// ConvTranspose): the params arrays (first k entries used, pads the first 2k, the rest 0),
// groups, the auto_pad / output_shape rules and the output sizes of nnplug_ops.h, with the
// padding and size maths of nnplug/geometry/ that the backends share. The contract of a shape
// rule: validate_call.hpp.
#include "internal.hpp"
#include "validate_call.hpp"

#include <nnplug/geometry/conv.hpp>

#include <cmath>
#include <string>

namespace nnp::host {

nnp_conv2d_params conv2d_with_defaults(const nnp_conv2d_params& p) {
  // Field by field, never the whole struct: a caller's struct may end at its ABI 1.0 size
  // (struct_size), before reserved0 (ABI 1.1), which stays 0 here.
  const auto one_if_zero = [](int32_t v) { return v == 0 ? 1 : v; };
  nnp_conv2d_params q{};
  q.struct_size = p.struct_size;
  q.stride_h = one_if_zero(p.stride_h);
  q.stride_w = one_if_zero(p.stride_w);
  q.pad_top = p.pad_top;
  q.pad_bottom = p.pad_bottom;
  q.pad_left = p.pad_left;
  q.pad_right = p.pad_right;
  q.dilation_h = one_if_zero(p.dilation_h);
  q.dilation_w = one_if_zero(p.dilation_w);
  q.groups = one_if_zero(p.groups);
  return q;
}

namespace {

// ---- conv2d ---------------------------------------------------------------------------------
struct conv_geometry {
  int64_t n, c, h, w, k, r, s, p, q;
};

// Checks x (NCHW) and w (OIHW) of a conv2d call and returns the geometry; P, Q >= 1. A stride,
// dilation or groups of 0 means 1 (nnplug_ops.h): the rule reads the params with those
// defaults, as the plugin will receive them (plugin_params, validate.cpp).
conv_geometry conv_check_xw(const call& c, const nnp_conv2d_params& params, const arg_name& xl,
                            const DLTensor* x, const arg_name& wl, const DLTensor* w) {
  const nnp_conv2d_params p = conv2d_with_defaults(params);
  c.expect_rank(xl, x, 4, "[N, C, H, W]");
  c.expect_rank(wl, w, 4, "[K, C/groups, R, S]");
  conv_geometry g{x->shape[0], x->shape[1], x->shape[2],
                  x->shape[3], w->shape[0], w->shape[2],
                  w->shape[3], 0,           0};
  if (g.c % p.groups != 0)
    c.fail(xl + ": expected C divisible by groups = " + std::to_string(p.groups) +
           ", got C = " + std::to_string(g.c));
  if (g.k % p.groups != 0)
    c.fail(wl + ": expected K divisible by groups = " + std::to_string(p.groups) +
           ", got K = " + std::to_string(g.k));
  if (w->shape[1] != g.c / p.groups)
    c.fail(wl + ": expected shape [K, C/groups=" + std::to_string(g.c / p.groups) +
           ", R, S] (C=" + std::to_string(g.c) + ", groups=" + std::to_string(p.groups) +
           "), got " + nnp::shape_string(*w));
  g.p = nnp::conv_out_dim(g.h, g.r, p.stride_h, p.pad_top, p.pad_bottom, p.dilation_h);
  g.q = nnp::conv_out_dim(g.w, g.s, p.stride_w, p.pad_left, p.pad_right, p.dilation_w);
  if (g.p == nnp::kSizeOverflow)
    size_overflow(c, "P",
                  {{"H", g.h},
                   {"R", g.r},
                   {"stride_h", p.stride_h},
                   {"pad_top", p.pad_top},
                   {"pad_bottom", p.pad_bottom},
                   {"dilation_h", p.dilation_h}});
  if (g.q == nnp::kSizeOverflow)
    size_overflow(c, "Q",
                  {{"W", g.w},
                   {"S", g.s},
                   {"stride_w", p.stride_w},
                   {"pad_left", p.pad_left},
                   {"pad_right", p.pad_right},
                   {"dilation_w", p.dilation_w}});
  if (g.p < 1 || g.q < 1)
    c.fail("output size P x Q = " + std::to_string(g.p) + " x " + std::to_string(g.q) +
           ": expected P >= 1 and Q >= 1 (H=" + std::to_string(g.h) + ", W=" + std::to_string(g.w) +
           ", R=" + std::to_string(g.r) + ", S=" + std::to_string(g.s) +
           " with the given stride, padding and dilation)");
  return g;
}

// ---- N-D convolution ------------------------------------------------------------------------

std::string ints_str(const int32_t* a, int n) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(a[i]);
  return s + "]";
}

// The number of spatial dimensions k = rank - 2 of an activation, which must be 1..3.
int spatial_dims(const call& c, const arg_name& label, const DLTensor* t) {
  if (t->ndim < 3 || t->ndim > 2 + kConvMaxSpatial)
    c.fail(label +
           ": expected rank 3, 4 or 5 [N, C, D1..Dk] (k = 1..3 spatial dimensions), got rank " +
           std::to_string(t->ndim) + " " + nnp::shape_string(*t));
  return t->ndim - 2;
}

// params-><field>: entries [0, used) >= lo, entries [used, NNP_MAX_DIMS) 0.
void check_array(const call& c, const char* field, const int32_t* a, int used, int k, int32_t lo) {
  for (int i = 0; i < used; ++i)
    if (a[i] < lo)
      c.fail(std::string("params->") + field + "[" + std::to_string(i) +
             "]: expected >= " + std::to_string(lo) + ", got " + std::to_string(a[i]));
  for (int i = used; i < NNP_MAX_DIMS; ++i)
    if (a[i] != 0)
      c.fail(std::string("params->") + field + "[" + std::to_string(i) + "]: expected 0 (x has " +
             std::to_string(k) + " spatial dimension" + (k == 1 ? "" : "s") + ": " + field +
             " uses its first " + std::to_string(used) + " entries), got " + std::to_string(a[i]));
}

// Every axis's sizes and attributes small enough that the output-size maths (here and in the
// backends, in int64) cannot overflow: stride*D + dilation*R + the pads and output_padding
// (int32 each) below 2^62. A zero-sized tensor may still have huge dimensions.
void check_magnitude(const call& c, const arg_name& wl, const DLTensor* x, const DLTensor* w, int k,
                     const int32_t* strides, const int32_t* dilations) {
  constexpr int64_t kLimit = int64_t{1} << 62;
  for (int i = 0; i < k; ++i) {
    const int64_t d = x->shape[2 + i], r = w->shape[2 + i];
    int64_t a = 0, b = 0;
    const bool overflow = __builtin_mul_overflow(d, conv_one_if_zero(strides[i]), &a) ||
                          __builtin_mul_overflow(r, conv_one_if_zero(dilations[i]), &b) ||
                          a >= kLimit || b >= kLimit || a + b >= kLimit;
    if (overflow)
      c.fail(wl + ": spatial dimension " + std::to_string(i) +
             " too large for the output-size arithmetic (D=" + std::to_string(d) +
             ", R=" + std::to_string(r) + ", stride " + std::to_string(strides[i]) + ", dilation " +
             std::to_string(dilations[i]) + ")");
  }
}

// Output size O_{i+1} or one of its pads does not fit int64 (the geometry's formulas report it;
// check_magnitude keeps the sizes it accepts well away from this).
[[noreturn]] void size_overflow(const call& c, int i, const conv_axis& a, int32_t pad_begin,
                                int32_t pad_end) {
  c.fail("output size O" + std::to_string(i + 1) +
         " does not fit in int64 (D=" + std::to_string(a.in) + ", R=" + std::to_string(a.kernel) +
         ", stride " + std::to_string(a.stride) + ", pads " + std::to_string(pad_begin) + "+" +
         std::to_string(pad_end) + ", dilation " + std::to_string(a.dilation) + ")");
}

// The attributes both structs share.
struct conv_attrs {
  int32_t group, auto_pad;
  const int32_t *kernel_shape, *strides, *pads, *dilations;
};
template <typename P>
conv_attrs attrs_of(const P& p) {
  return {p.group, p.auto_pad, p.kernel_shape, p.strides, p.pads, p.dilations};
}

// x and w of rank 2 + k, the params arrays for k spatial dimensions, kernel_shape against w.
// Returns k.
int check_attrs(const call& c, const conv_attrs& a, const arg_name& xl, const DLTensor* x,
                const arg_name& wl, const DLTensor* w, const char* w_layout) {
  const int k = spatial_dims(c, xl, x);
  c.expect_rank(wl, w, x->ndim, w_layout);
  check_array(c, "kernel_shape", a.kernel_shape, k, k, 0);
  check_array(c, "strides", a.strides, k, k, 0);
  check_array(c, "pads", a.pads, 2 * k, k, 0);
  check_array(c, "dilations", a.dilations, k, k, 0);
  check_magnitude(c, wl, x, w, k, a.strides, a.dilations);
  bool kernel_given = false, pads_given = false;
  for (int i = 0; i < k; ++i) kernel_given |= a.kernel_shape[i] != 0;
  for (int i = 0; i < 2 * k; ++i) pads_given |= a.pads[i] != 0;
  if (kernel_given)
    for (int i = 0; i < k; ++i)
      if (a.kernel_shape[i] != w->shape[2 + i])
        c.fail("params->kernel_shape: expected all 0 (taken from w) or w's spatial shape, got " +
               ints_str(a.kernel_shape, k) + " with " + wl.str() + " " + nnp::shape_string(*w));
  if (pads_given && a.auto_pad != NNP_AUTO_PAD_NOTSET)
    c.fail(std::string("params->pads: expected all 0 with auto_pad = ") +
           auto_pad_name(a.auto_pad) + " (ONNX: pads and auto_pad exclude each other), got " +
           ints_str(a.pads, 2 * k));
  return k;
}

// Output size O_i of resolved axis a (pads: the params' pads, k spatial axes): refused when it
// overflows or is < 1, the message naming the axis' sizes and `more` (the kind's own attribute).
int64_t checked_out(const call& c, int i, const conv_axis& a, const int32_t* pads, int k,
                    const std::string& more) {
  if (a.out == kSizeOverflow) size_overflow(c, i, a, pads[i], pads[k + i]);
  if (a.out < 1)
    c.fail("output size O" + std::to_string(i + 1) + " = " + std::to_string(a.out) +
           ": expected >= 1 (D=" + std::to_string(a.in) + ", R=" + std::to_string(a.kernel) +
           ", stride " + std::to_string(a.stride) + ", pads " + std::to_string(a.pad_begin) + "+" +
           std::to_string(a.pad_end) + ", dilation " + std::to_string(a.dilation) + more + ")");
  return a.out;
}

// Conv: checks x [N, C, D..] and w [K, C/group, R..] and returns y's shape [N, K, O..], O >= 1.
shape_t conv_output(const call& c, const nnp_conv_params& p, const arg_name& xl, const DLTensor* x,
                    const arg_name& wl, const DLTensor* w) {
  const int k = check_attrs(c, attrs_of(p), xl, x, wl, w, "[K, C/group, R1..Rk]");
  const int64_t g = conv_one_if_zero(p.group), C = x->shape[1], K = w->shape[0];
  if (C % g != 0)
    c.fail(xl + ": expected C divisible by group = " + std::to_string(g) +
           ", got C = " + std::to_string(C));
  if (K % g != 0)
    c.fail(wl + ": expected K divisible by group = " + std::to_string(g) +
           ", got K = " + std::to_string(K));
  if (w->shape[1] != C / g)
    c.fail(wl + ": expected shape [K, C/group=" + std::to_string(C / g) + ", R1..Rk] (C=" +
           std::to_string(C) + ", group=" + std::to_string(g) + "), got " + nnp::shape_string(*w));
  shape_t y{x->shape[0], K};
  for (int i = 0; i < k; ++i) {
    const conv_axis a = conv_resolve_axis(p, k, i, x->shape[2 + i], w->shape[2 + i]);
    y.push_back(
        checked_out(c, i, a, p.pads, k, std::string(", auto_pad ") + auto_pad_name(p.auto_pad)));
  }
  return y;
}

// ConvTranspose: checks x [N, C, D..] and w [C, K/group, R..] and returns y's shape
// [N, K, O..], O >= 1.
shape_t conv_transpose_output(const call& c, const nnp_conv_transpose_params& p, const arg_name& xl,
                              const DLTensor* x, const arg_name& wl, const DLTensor* w) {
  const int k = check_attrs(c, attrs_of(p), xl, x, wl, w, "[C, K/group, R1..Rk]");
  check_array(c, "output_padding", p.output_padding, k, k, 0);
  check_array(c, "output_shape", p.output_shape, k, k, 0);
  if (conv_transpose_has_output_shape(p, k)) {
    for (int i = 0; i < k; ++i)
      if (p.output_shape[i] < 1)
        c.fail("params->output_shape: expected all 0 (not given) or every entry >= 1, got " +
               ints_str(p.output_shape, k));
    for (int i = 0; i < 2 * k; ++i)
      if (p.pads[i] != 0)
        c.fail(
            "params->pads: expected all 0 with output_shape given (ONNX: output_shape sets "
            "the pads), got " +
            ints_str(p.pads, 2 * k));
  }
  const int64_t g = conv_one_if_zero(p.group), C = x->shape[1];
  if (C % g != 0)
    c.fail(xl + ": expected C divisible by group = " + std::to_string(g) +
           ", got C = " + std::to_string(C));
  if (w->shape[0] != C)
    c.fail(wl + ": expected shape [C=" + std::to_string(C) + ", K/group, R1..Rk], got " +
           nnp::shape_string(*w));
  for (int i = 0; i < k; ++i)
    if (x->shape[2 + i] < 1)
      c.fail(xl + ": expected every spatial dimension >= 1, got " + nnp::shape_string(*x));
  shape_t y{x->shape[0], w->shape[1] * g};
  for (int i = 0; i < k; ++i) {
    const conv_axis a = conv_transpose_resolve_axis(p, k, i, x->shape[2 + i], w->shape[2 + i]);
    y.push_back(
        checked_out(c, i, a, p.pads, k, ", output_padding " + std::to_string(p.output_padding[i])));
  }
  return y;
}

}  // namespace

// ============================================================================== conv2d ====
void shapes_conv2d_forward(call& c, const void* params) {
  const auto& p = params_of<nnp_conv2d_params>(params);
  const conv_geometry g = conv_check_xw(c, p, c.in_label(0), c.in(0), c.in_label(1), c.in(1));
  c.expect_shape(c.in_label(2), c.in(2), {g.k}, "([K])");
  c.output_shape(0, {g.n, g.k, g.p, g.q}, "([N, K, P, Q])");
}

void shapes_conv2d_backward_data(call& c, const void* params) {
  if (c.inferring()) c.not_inferable(0, "dx has x's shape, and several H give one P");
  const auto& p = params_of<nnp_conv2d_params>(params);
  // dx has x's shape: the geometry comes from dx and w.
  const conv_geometry g = conv_check_xw(c, p, c.out_label(0), c.out(0), c.in_label(1), c.in(1));
  c.expect_shape(c.in_label(0), c.in(0), {g.n, g.k, g.p, g.q}, "([N, K, P, Q])");
}

void shapes_conv2d_backward_filter(call& c, const void* params) {
  if (c.inferring()) c.not_inferable(0, "dw has w's shape, and several R give one P");
  const auto& p = params_of<nnp_conv2d_params>(params);
  const conv_geometry g = conv_check_xw(c, p, c.in_label(0), c.in(0), c.out_label(0), c.out(0));
  c.expect_shape(c.in_label(1), c.in(1), {g.n, g.k, g.p, g.q}, "([N, K, P, Q])");
}

void shapes_conv2d_backward_bias(call& c, const void*) {
  c.expect_rank(c.in_label(0), c.in(0), 4, "[N, K, P, Q]");
  c.output_shape(0, {c.in(0)->shape[1]}, "([K])");
}

// ============================================== N-D convolution and transposed convolution ====
// The forward, backward-data and backward-filter rules of both kinds: output(c, p, x, w) gives
// y's shape [N, K, O1..Ok] from the tensor holding x's shape and the one holding w's.
namespace {

template <typename P, typename Output>
void nd_forward(call& c, const void* params, Output output) {
  const shape_t y = output(c, params_of<P>(params), c.in_label(0), c.in(0), c.in_label(1), c.in(1));
  c.expect_shape(c.in_label(2), c.in(2), {y[1]}, "([K])");
  c.output_shape(0, y, "([N, K, O1..Ok])");
}

// dx has x's shape: the geometry comes from dx and w; `why` says why it is not inferable.
template <typename P, typename Output>
void nd_backward_data(call& c, const void* params, Output output, const char* why) {
  if (c.inferring()) c.not_inferable(0, why);
  const shape_t y =
      output(c, params_of<P>(params), c.out_label(0), c.out(0), c.in_label(1), c.in(1));
  c.expect_shape(c.in_label(0), c.in(0), y, "([N, K, O1..Ok])");
}

template <typename P, typename Output>
void nd_backward_filter(call& c, const void* params, Output output) {
  if (c.inferring()) c.not_inferable(0, "dw has w's shape, and several R give one O");
  const shape_t y =
      output(c, params_of<P>(params), c.in_label(0), c.in(0), c.out_label(0), c.out(0));
  c.expect_shape(c.in_label(1), c.in(1), y, "([N, K, O1..Ok])");
}

// The fused clamp (ABI 1.7): bounds that are numbers on the forward; no flag on the backward
// kinds, whose gradient does not include it.
void check_clamp(const call& c, const void* params, bool forward) {
  const auto& p = params_of<nnp_conv_params>(params);
  if (forward) {
    if (p.has_clip_min && std::isnan(p.clip_min))
      c.fail("params->clip_min: expected a number, got NaN");
    if (p.has_clip_max && std::isnan(p.clip_max))
      c.fail("params->clip_max: expected a number, got NaN");
  } else if (p.has_clip_min || p.has_clip_max) {
    c.fail(std::string("params->") + (p.has_clip_min ? "has_clip_min" : "has_clip_max") +
           ": the fused clamp is conv_forward's (expected 0 here: the clamp's gradient is the "
           "caller's, e.g. activation_backward(RELU) with the clamped y)");
  }
}

// The fused max pooling (ABI 1.8): the forward's only; the backward kinds refuse it (max
// pooling's gradient needs the unpooled output).
void check_pool(const call& c, const void* params, bool forward) {
  const auto& p = params_of<nnp_conv_params>(params);
  if (!forward && p.max_pool > 1)
    c.fail("params->max_pool = " + std::to_string(p.max_pool) +
           ": the fused max pooling is conv_forward's (expected 0 or 1 here: max pooling's "
           "gradient needs the unpooled output)");
}

}  // namespace

void shapes_conv_forward(call& c, const void* params) {
  check_clamp(c, params, true);
  const auto& p = params_of<nnp_conv_params>(params);
  shape_t y = conv_output(c, p, c.in_label(0), c.in(0), c.in_label(1), c.in(1));
  c.expect_shape(c.in_label(2), c.in(2), {y[1]}, "([K])");
  if (p.max_pool <= 1) {
    c.output_shape(0, y, "([N, K, O1..Ok])");
    return;
  }
  for (size_t i = 2; i < y.size(); ++i) {
    if (y[i] < p.max_pool)
      c.fail("params->max_pool = " + std::to_string(p.max_pool) +
             ": expected every convolution output size O_i >= max_pool, got O" +
             std::to_string(i - 1) + " = " + std::to_string(y[i]));
    y[i] /= p.max_pool;
  }
  c.output_shape(0, y, "([N, K, floor(O1/max_pool)..floor(Ok/max_pool)])");
}
void shapes_conv_backward_data(call& c, const void* params) {
  check_clamp(c, params, false);
  check_pool(c, params, false);
  nd_backward_data<nnp_conv_params>(c, params, conv_output,
                                    "dx has x's shape, and several D give one O");
}
void shapes_conv_backward_filter(call& c, const void* params) {
  check_clamp(c, params, false);
  check_pool(c, params, false);
  nd_backward_filter<nnp_conv_params>(c, params, conv_output);
}
void shapes_conv_backward_bias(call& c, const void* params) {
  if (params != nullptr) {
    check_clamp(c, params, false);
    check_pool(c, params, false);
  }
  spatial_dims(c, c.in_label(0), c.in(0));
  c.output_shape(0, {c.in(0)->shape[1]}, "([K])");
}

void shapes_conv_transpose_forward(call& c, const void* params) {
  nd_forward<nnp_conv_transpose_params>(c, params, conv_transpose_output);
}
void shapes_conv_transpose_backward_data(call& c, const void* params) {
  nd_backward_data<nnp_conv_transpose_params>(c, params, conv_transpose_output,
                                              "dx has x's shape, and the pads may depend on it");
}
void shapes_conv_transpose_backward_filter(call& c, const void* params) {
  nd_backward_filter<nnp_conv_transpose_params>(c, params, conv_transpose_output);
}

}  // namespace nnp::host
