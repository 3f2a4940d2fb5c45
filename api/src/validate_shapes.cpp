// The shape rules of every op kind, one function per kind (shapes_<name>, declared by the
// generated op table). They run after the table-driven checks of validate.cpp (tensor counts,
// params fields, tensors, dtypes), so they may assume: required tensors are present, ranks are
// in [0, NNP_MAX_DIMS], the params struct is there with its 1.0 fields and its checked fields
// in range. They check what the table cannot say: shapes (nnplug_ops.h's formulas), and the
// params fields marked `check = "shape"` (conditional or shape-dependent ranges). Output shapes
// go through c.output_shape(), which checks them or, for nnp_op_infer_shapes, records them.
#include "internal.hpp"
#include "validate_call.hpp"

#include <cmath>
#include <initializer_list>
#include <string>
#include <utility>

namespace nnp::host {
namespace {

template <typename P>
const P& params_of(const void* params) {
  return *static_cast<const P*>(params);
}

void expect_finite(const call& c, const char* field, double v) {
  if (!std::isfinite(v))
    c.fail(std::string("params->") + field + ": expected a finite value, got " +
           nnp::format("%g", v));
}
void expect_at_least(const call& c, const char* field, int64_t v, int64_t lo) {
  if (v < lo)
    c.fail(std::string("params->") + field + ": expected >= " + std::to_string(lo) + ", got " +
           std::to_string(v));
}
int expect_axis(const call& c, const char* field, int32_t axis, int rank) {
  const int a = nnp::normalize_axis(axis, rank);
  if (a < 0)
    c.fail(std::string("params->") + field + ": expected in [-rank, rank) = [" +
           std::to_string(-rank) + ", " + std::to_string(rank) + "), got " + std::to_string(axis));
  return a;
}

// An output size of the convolution or pooling formulas that does not fit int64 (possible only
// with dimensions near INT64_MAX, which a tensor without elements may have): refused, naming the
// output dimension and the operands of its formula.
[[noreturn]] void size_overflow(const call& c, const char* out,
                                std::initializer_list<std::pair<const char*, int64_t>> operands) {
  std::string what;
  for (const auto& [name, v] : operands)
    what += (what.empty() ? "" : ", ") + std::string(name) + " = " + std::to_string(v);
  c.fail(std::string("output size ") + out + " does not fit in int64 (" + what + ")");
}

// ---- convolution --------------------------------------------------------------------------
struct conv_geometry {
  int64_t n, c, h, w, k, r, s, p, q;
};

// Checks x (NCHW) and w (OIHW) of a convolution and returns the geometry; P, Q >= 1.
conv_geometry conv_check_xw(const call& c, const nnp_conv2d_params& p, const arg_name& xl,
                            const DLTensor* x, const arg_name& wl, const DLTensor* w) {
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

// ---- pooling --------------------------------------------------------------------------------
shape_t pool_output(const call& c, const nnp_pool2d_params& p, const DLTensor* x) {
  if (!p.global) {
    expect_at_least(c, "window_h", p.window_h, 1);
    expect_at_least(c, "window_w", p.window_w, 1);
    expect_at_least(c, "stride_h", p.stride_h, 1);
    expect_at_least(c, "stride_w", p.stride_w, 1);
    const struct {
      const char* name;
      int32_t pad, window;
      const char* wname;
    } pads[] = {{"pad_top", p.pad_top, p.window_h, "window_h"},
                {"pad_bottom", p.pad_bottom, p.window_h, "window_h"},
                {"pad_left", p.pad_left, p.window_w, "window_w"},
                {"pad_right", p.pad_right, p.window_w, "window_w"}};
    for (const auto& pd : pads)
      if (pd.pad < 0 || pd.pad >= pd.window)
        c.fail(std::string("params->") + pd.name + ": expected 0 <= pad < " + pd.wname + " = " +
               std::to_string(pd.window) + ", got " + std::to_string(pd.pad));
  }
  c.expect_rank(c.in_label(0), x, 4, "[N, C, H, W]");
  const nnp::pool_window pw = nnp::resolve_pool_window(p, x->shape[2], x->shape[3]);
  const int64_t ph = nnp::pool_out_dim(x->shape[2], pw.window_h, pw.stride_h, pw.pad_top,
                                       pw.pad_bottom, pw.ceil_mode);
  const int64_t qw = nnp::pool_out_dim(x->shape[3], pw.window_w, pw.stride_w, pw.pad_left,
                                       pw.pad_right, pw.ceil_mode);
  if (ph == nnp::kSizeOverflow)
    size_overflow(c, "P",
                  {{"H", x->shape[2]},
                   {"window_h", pw.window_h},
                   {"stride_h", pw.stride_h},
                   {"pad_top", pw.pad_top},
                   {"pad_bottom", pw.pad_bottom}});
  if (qw == nnp::kSizeOverflow)
    size_overflow(c, "Q",
                  {{"W", x->shape[3]},
                   {"window_w", pw.window_w},
                   {"stride_w", pw.stride_w},
                   {"pad_left", pw.pad_left},
                   {"pad_right", pw.pad_right}});
  if (ph < 1 || qw < 1)
    c.fail("output size P x Q = " + std::to_string(ph) + " x " + std::to_string(qw) +
           ": expected P >= 1 and Q >= 1 (the window does not fit in x " + nnp::shape_string(*x) +
           ")");
  return shape_t{x->shape[0], x->shape[1], ph, qw};
}

// ---- normalisation ----------------------------------------------------------------------------
// x is [N, C] or [N, C, H, W]; returns C.
int64_t bn_channels(const call& c, const DLTensor* x) {
  if (x->ndim != 2 && x->ndim != 4)
    c.fail(c.in_label(0) + ": expected rank 2 [N, C] or rank 4 [N, C, H, W], got rank " +
           std::to_string(x->ndim) + " " + nnp::shape_string(*x));
  return x->shape[1];
}

struct ln_shapes {
  shape_t inner, stats;
};
ln_shapes layer_norm_shapes(const call& c, const nnp_layer_norm_params& p, const DLTensor* x) {
  const int axis = expect_axis(c, "axis", p.axis, x->ndim);
  ln_shapes s;
  for (int d = 0; d < x->ndim; ++d) {
    if (d >= axis) s.inner.push_back(x->shape[d]);
    s.stats.push_back(d >= axis ? 1 : x->shape[d]);
  }
  return s;
}

// Ops whose every tensor has x's shape (x = input 0): checks the other inputs, sets outputs.
void elementwise_shapes(call& c, std::initializer_list<size_t> other_inputs) {
  c.same_shape_inputs(c.in(0), c.in_label(0), other_inputs);
  for (size_t o = 0; o < c.op().n_outputs; ++o) c.output_shape(o, shape_of(c.in(0)), "(x's shape)");
}

// An optional input holding one value read on the device when the op runs (a step counter or
// learning rate, ABI 1.4): shape [] or [1].
void expect_one_element(const call& c, size_t i) {
  const DLTensor* t = c.in(i);
  if (t != nullptr && !(t->ndim == 0 || (t->ndim == 1 && t->shape[0] == 1)))
    c.fail(c.in_label(i) + ": expected 1 element (shape [] or [1]), got " + nnp::shape_string(*t));
}

// Optimisers: every tensor has param's shape (output 0, read and written); messages name param
// as the reference shape, as a user thinks of it.
void optimiser_shapes(call& c) {
  if (!c.inferring()) c.expect_shape(c.in_label(0), c.in(0), shape_of(c.out(0)), "(param's shape)");
  elementwise_shapes(c, {});
}

}  // namespace

// ================================================================================ GEMM ====
void shapes_gemm(call& c, const void* params) {
  const auto& p = params_of<nnp_gemm_params>(params);
  const DLTensor *a = c.in(0), *b = c.in(1), *cc = c.in(2);
  for (size_t i = 0; i < 2; ++i)
    if (c.in(i)->ndim != 2 && c.in(i)->ndim != 3)
      c.fail(c.in_label(i) + ": expected rank 2 or 3 (batched), got rank " +
             std::to_string(c.in(i)->ndim) + " " + nnp::shape_string(*c.in(i)));
  const int ao = a->ndim - 2, bo = b->ndim - 2;
  const int64_t m = p.trans_a ? a->shape[ao + 1] : a->shape[ao];
  const int64_t ka = p.trans_a ? a->shape[ao] : a->shape[ao + 1];
  const int64_t kb = p.trans_b ? b->shape[bo + 1] : b->shape[bo];
  const int64_t n = p.trans_b ? b->shape[bo] : b->shape[bo + 1];
  if (ka != kb)
    c.fail(c.in_label(1) + ": expected K = " + std::to_string(ka) + " (from A " +
           nnp::shape_string(*a) + ", trans_a=" + std::to_string(p.trans_a) +
           "), got K = " + std::to_string(kb) + " (B " + nnp::shape_string(*b) +
           ", trans_b=" + std::to_string(p.trans_b) + ")");
  int64_t batch = -1;
  if (a->ndim == 3) batch = a->shape[0];
  if (b->ndim == 3) {
    if (batch >= 0 && b->shape[0] != batch)
      c.fail(c.in_label(1) + ": expected batch " + std::to_string(batch) + " (A's), got " +
             std::to_string(b->shape[0]));
    batch = b->shape[0];
  }
  const shape_t y_shape = batch >= 0 ? shape_t{batch, m, n} : shape_t{m, n};
  c.output_shape(0, y_shape, batch >= 0 ? "([batch, M, N])" : "([M, N])");
  if (cc != nullptr) {
    expect_finite(c, "beta", p.beta);
    // Unidirectional broadcast to Y (ONNX Gemm): aligned right, each dimension Y's or 1.
    bool ok = cc->ndim <= static_cast<int>(y_shape.size());
    for (int i = 0; ok && i < cc->ndim; ++i) {
      const int64_t d = cc->shape[cc->ndim - 1 - i];
      ok = d == 1 || d == y_shape[y_shape.size() - 1 - static_cast<size_t>(i)];
    }
    if (!ok)
      c.fail(c.in_label(2) + ": expected a shape that broadcasts unidirectionally to Y " +
             shape_str(y_shape) + " (rank <= " + std::to_string(y_shape.size()) +
             ", each dimension aligned right equal to Y's or 1: e.g. [], [1], [N], [1, N], [M, 1], "
             "[M, N]), got " +
             nnp::shape_string(*cc));
  }
}

// ========================================================================= convolution ====
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

// ============================================================================= pooling ====
void shapes_pool2d_forward(call& c, const void* params) {
  c.output_shape(0, pool_output(c, params_of<nnp_pool2d_params>(params), c.in(0)),
                 "([N, C, P, Q])");
}

void shapes_pool2d_backward(call& c, const void* params) {
  const shape_t y = pool_output(c, params_of<nnp_pool2d_params>(params), c.in(0));
  c.expect_shape(c.in_label(1), c.in(1), y, "([N, C, P, Q])");
  c.expect_shape(c.in_label(2), c.in(2), y, "([N, C, P, Q])");
  c.output_shape(0, shape_of(c.in(0)), "(x's shape)");
}

// ========================================================================== activation ====
void activation_alpha(const call& c, const void* params) {
  const auto& p = params_of<nnp_activation_params>(params);
  if (p.function == NNP_ACTIVATION_LEAKY_RELU || p.function == NNP_ACTIVATION_ELU)
    expect_finite(c, "alpha", p.alpha);
}
void shapes_activation_forward(call& c, const void* params) {
  activation_alpha(c, params);
  elementwise_shapes(c, {});
}
void shapes_activation_backward(call& c, const void* params) {
  activation_alpha(c, params);
  elementwise_shapes(c, {1});
}

// ============================================================================= softmax ====
void shapes_softmax_forward(call& c, const void* params) {
  expect_axis(c, "axis", params_of<nnp_softmax_params>(params).axis, c.in(0)->ndim);
  elementwise_shapes(c, {});
}
void shapes_softmax_backward(call& c, const void* params) {
  expect_axis(c, "axis", params_of<nnp_softmax_params>(params).axis, c.in(0)->ndim);
  elementwise_shapes(c, {1});
}

// ================================================================================ loss ====
shape_t sce_loss_shape(const call& c, const nnp_softmax_cross_entropy_params& p, const char** why) {
  const DLTensor* logits = c.in(0);
  c.expect_rank(c.in_label(0), logits, 2, "[N, C]");
  const int64_t n = logits->shape[0];
  c.expect_shape(c.in_label(1), c.in(1), {n}, "([N])");
  *why = p.reduction == NNP_REDUCTION_NONE ? "([N] for reduction none)"
                                           : "([] for reduction mean/sum)";
  return p.reduction == NNP_REDUCTION_NONE ? shape_t{n} : shape_t{};
}
void shapes_softmax_cross_entropy_forward(call& c, const void* params) {
  const char* why;
  const shape_t loss = sce_loss_shape(c, params_of<nnp_softmax_cross_entropy_params>(params), &why);
  c.output_shape(0, loss, why);
  c.output_shape(1, shape_of(c.in(0)), "([N, C])");
}
void shapes_softmax_cross_entropy_backward(call& c, const void* params) {
  const char* why;
  const shape_t loss = sce_loss_shape(c, params_of<nnp_softmax_cross_entropy_params>(params), &why);
  c.expect_shape(c.in_label(2), c.in(2), loss, why);
  c.output_shape(0, shape_of(c.in(0)), "([N, C])");
}

// ======================================================================= normalisation ====
void shapes_batch_norm_forward_training(call& c, const void*) {
  const int64_t ch = bn_channels(c, c.in(0));
  for (size_t i = 1; i < 3; ++i) c.expect_shape(c.in_label(i), c.in(i), {ch}, "([C])");
  c.output_shape(0, shape_of(c.in(0)), "(x's shape)");
  for (size_t i = 1; i < 5; ++i) c.output_shape(i, {ch}, "([C])");
}

void shapes_batch_norm_forward_inference(call& c, const void*) {
  const int64_t ch = bn_channels(c, c.in(0));
  for (size_t i = 1; i < 5; ++i) c.expect_shape(c.in_label(i), c.in(i), {ch}, "([C])");
  c.output_shape(0, shape_of(c.in(0)), "(x's shape)");
}

void shapes_batch_norm_backward(call& c, const void*) {
  const int64_t ch = bn_channels(c, c.in(0));
  c.expect_shape(c.in_label(1), c.in(1), shape_of(c.in(0)), "(x's shape)");
  for (size_t i = 2; i < 5; ++i) c.expect_shape(c.in_label(i), c.in(i), {ch}, "([C])");
  c.output_shape(0, shape_of(c.in(0)), "(x's shape)");
  for (size_t i = 1; i < 3; ++i) c.output_shape(i, {ch}, "([C])");
}

void shapes_layer_norm_forward(call& c, const void* params) {
  const DLTensor* x = c.in(0);
  const ln_shapes s = layer_norm_shapes(c, params_of<nnp_layer_norm_params>(params), x);
  c.expect_shape(c.in_label(1), c.in(1), s.inner, "(x.shape[axis:])");
  c.expect_shape(c.in_label(2), c.in(2), s.inner, "(x.shape[axis:])");
  c.output_shape(0, shape_of(x), "(x's shape)");
  c.output_shape(1, s.stats, "(x's shape with 1 from axis on)");
  c.output_shape(2, s.stats, "(x's shape with 1 from axis on)");
}

void shapes_layer_norm_backward(call& c, const void* params) {
  const DLTensor* x = c.in(0);
  const ln_shapes s = layer_norm_shapes(c, params_of<nnp_layer_norm_params>(params), x);
  c.expect_shape(c.in_label(1), c.in(1), shape_of(x), "(x's shape)");
  c.expect_shape(c.in_label(2), c.in(2), s.inner, "(x.shape[axis:])");
  c.expect_shape(c.in_label(3), c.in(3), s.stats, "(x's shape with 1 from axis on)");
  c.expect_shape(c.in_label(4), c.in(4), s.stats, "(x's shape with 1 from axis on)");
  c.output_shape(0, shape_of(x), "(x's shape)");
  c.output_shape(1, s.inner, "(x.shape[axis:])");
  c.output_shape(2, s.inner, "(x.shape[axis:])");
}

// ============================================================================= dropout ====
// Input 1, the optional step counter (ABI 1.4), holds one value.
void shapes_dropout_forward(call& c, const void*) {
  expect_one_element(c, 1);
  elementwise_shapes(c, {});
}
void shapes_dropout_backward(call& c, const void*) {
  expect_one_element(c, 1);
  elementwise_shapes(c, {});
}

// ========================================================================= elementwise ====
void shapes_binary(call& c, const void*) {
  const DLTensor *a = c.in(0), *b = c.in(1);
  const int rank = std::max(a->ndim, b->ndim);
  shape_t y(static_cast<size_t>(rank));
  for (int i = 0; i < rank; ++i) {
    const int ia = i - (rank - a->ndim), ib = i - (rank - b->ndim);
    const int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    if (da != db && da != 1 && db != 1)
      c.fail("inputs a " + nnp::shape_string(*a) + " and b " + nnp::shape_string(*b) +
             " do not broadcast (numpy rules): dimension " + std::to_string(i) + " is " +
             std::to_string(da) + " vs " + std::to_string(db));
    y[static_cast<size_t>(i)] = da == 1 ? db : da;
  }
  c.output_shape(0, y, "(the broadcast shape of a and b)");
}

void shapes_scale(call& c, const void*) { elementwise_shapes(c, {}); }
void shapes_fill(call&, const void*) {}  // any output shape; not inferable
void shapes_copy(call& c, const void*) { elementwise_shapes(c, {}); }
void shapes_cast(call& c, const void*) { elementwise_shapes(c, {}); }

void shapes_transpose(call& c, const void* params) {
  const auto& p = params_of<nnp_transpose_params>(params);
  const DLTensor* x = c.in(0);
  bool seen[NNP_MAX_DIMS] = {};
  shape_t y;
  for (int i = 0; i < NNP_MAX_DIMS; ++i) {
    const int32_t v = p.perm[i];
    if (i >= x->ndim) {
      if (v != 0)
        c.fail("params->perm[" + std::to_string(i) + "]: expected 0 beyond rank " +
               std::to_string(x->ndim) + ", got " + std::to_string(v));
      continue;
    }
    if (v < 0 || v >= x->ndim || seen[v])
      c.fail("params->perm: expected a permutation of 0.." + std::to_string(x->ndim - 1) +
             ", got perm[" + std::to_string(i) + "] = " + std::to_string(v) +
             (v >= 0 && v < x->ndim ? " (repeated)" : " (out of range)"));
    seen[v] = true;
    y.push_back(x->shape[v]);
  }
  c.output_shape(0, y, "(x.shape permuted by perm)");
}

void shapes_clip(call& c, const void* params) {
  const auto& p = params_of<nnp_clip_params>(params);
  if (p.has_min && std::isnan(p.min)) c.fail("params->min: expected a number, got NaN");
  if (p.has_max && std::isnan(p.max)) c.fail("params->max: expected a number, got NaN");
  elementwise_shapes(c, {});
}

// =========================================================================== reduction ====
void shapes_reduce(call& c, const void* params) {
  const auto& p = params_of<nnp_reduce_params>(params);
  // noop_with_empty_axes is an ABI 1.1 field: read it only when the caller's struct has it.
  const bool noop = p.struct_size >= NNP_REDUCE_PARAMS_STRUCT_SIZE_1_1 && p.noop_with_empty_axes;
  const DLTensor* x = c.in(0);
  if (p.n_axes < 0 || p.n_axes > x->ndim)
    c.fail("params->n_axes: expected in [0, rank = " + std::to_string(x->ndim) + "], got " +
           std::to_string(p.n_axes));
  bool reduced[NNP_MAX_DIMS] = {};
  for (int i = 0; i < p.n_axes; ++i) {
    const int a = nnp::normalize_axis(p.axes[i], x->ndim);
    if (a < 0)
      c.fail("params->axes[" + std::to_string(i) + "]: expected in [-rank, rank) = [" +
             std::to_string(-x->ndim) + ", " + std::to_string(x->ndim) + "), got " +
             std::to_string(p.axes[i]));
    if (reduced[a])
      c.fail("params->axes[" + std::to_string(i) + "]: axis " + std::to_string(p.axes[i]) +
             " is repeated");
    reduced[a] = true;
  }
  shape_t y;
  for (int d = 0; d < x->ndim; ++d) {
    const bool r = p.n_axes == 0 ? !noop : reduced[d];
    if (!r)
      y.push_back(x->shape[d]);
    else if (p.keepdims)
      y.push_back(1);
  }
  c.output_shape(
      0, y,
      p.keepdims ? "(x's shape with reduced axes as 1)" : "(x's shape without the reduced axes)");
}

// ========================================================================== optimisers ====
void shapes_sgd_update(call& c, const void* params) {
  const auto& p = params_of<nnp_sgd_params>(params);
  if (p.nesterov && !(p.momentum > 0 && p.dampening == 0))
    c.fail("params->nesterov = 1 requires momentum > 0 and dampening = 0, got momentum " +
           nnp::format("%g", p.momentum) + ", dampening " + nnp::format("%g", p.dampening));
  if (p.momentum != 0 && !c.inferring() && c.out(1) == nullptr)
    c.fail(c.out_label(1) + " is NULL but required (momentum != 0)");
  optimiser_shapes(c);
}

// grad, param, m and v share param's shape; the optional step and lr (ABI 1.4) hold one value.
void shapes_adam_update(call& c, const void*) {
  expect_one_element(c, 1);
  expect_one_element(c, 2);
  optimiser_shapes(c);
}

}  // namespace nnp::host
