// The shape rules of pooling. NNP_OP_POOL2D_* (ABI 1.0, nnp_pool2d_params): x [N, C, H, W], the
// window, stride and padding fields, PyTorch's ceil_mode rule. N-D pooling (NNP_OP_POOL_FORWARD
// / NNP_OP_POOL_BACKWARD, nnp_pool_params): x's rank gives k, the per-dimension params arrays
// must use exactly their first k (pads 2k) entries, and every output size must be >= 1. The
// geometry itself (auto_pad, ceil_mode, dilations, global) is nnp::resolve_pool_nd of
// nnplug/geometry/pool.hpp, which the backends share. The contract of a shape rule:
// validate_call.hpp.
#include "internal.hpp"
#include "validate_call.hpp"

#include <nnplug/geometry/pool.hpp>

#include <string>

namespace nnp::host {
namespace {

// ---- pool2d ---------------------------------------------------------------------------------
// The output size along one axis (nnp::pool_out_dim) from the input extent `in` and that axis's
// window, stride and pads. A size that does not fit int64 is refused, naming the output
// (names[0]: P or Q) and the operands (names[1..5]: the extent, window, stride, pad_begin and
// pad_end fields of the axis).
int64_t pool2d_out_dim(const call& c, const char* const (&names)[6], int64_t in, int64_t window,
                       int64_t stride, int64_t pad_begin, int64_t pad_end, bool ceil_mode) {
  const int64_t out = nnp::pool_out_dim(in, window, stride, pad_begin, pad_end, ceil_mode);
  if (out == nnp::kSizeOverflow)
    size_overflow(c, names[0],
                  {{names[1], in},
                   {names[2], window},
                   {names[3], stride},
                   {names[4], pad_begin},
                   {names[5], pad_end}});
  return out;
}

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
  const int64_t ph =
      pool2d_out_dim(c, {"P", "H", "window_h", "stride_h", "pad_top", "pad_bottom"}, x->shape[2],
                     pw.window_h, pw.stride_h, pw.pad_top, pw.pad_bottom, pw.ceil_mode);
  const int64_t qw =
      pool2d_out_dim(c, {"Q", "W", "window_w", "stride_w", "pad_left", "pad_right"}, x->shape[3],
                     pw.window_w, pw.stride_w, pw.pad_left, pw.pad_right, pw.ceil_mode);
  if (ph < 1 || qw < 1)
    c.fail("output size P x Q = " + std::to_string(ph) + " x " + std::to_string(qw) +
           ": expected P >= 1 and Q >= 1 (the window does not fit in x " + nnp::shape_string(*x) +
           ")");
  return shape_t{x->shape[0], x->shape[1], ph, qw};
}

// ---- N-D pooling ----------------------------------------------------------------------------

std::string field(const char* name, int i) {
  return std::string("params->") + name + "[" + std::to_string(i) + "]";
}

// Checks x's rank and the window fields; returns the output shape [N, C, O1..Ok].
shape_t pool_nd_output(const call& c, const nnp_pool_params& p) {
  const DLTensor* x = c.in(0);
  if (x->ndim < 3 || x->ndim > 2 + nnp::kPoolMaxSpatial)
    c.fail(c.in_label(0) +
           ": expected rank 3, 4 or 5 [N, C, D1..Dk] (k = 1, 2 or 3 spatial dimensions), got "
           "rank " +
           std::to_string(x->ndim) + " " + nnp::shape_string(*x));
  const int k = x->ndim - 2;
  const std::string kdims =
      " (x " + nnp::shape_string(*x) + " has k = " + std::to_string(k) + " spatial dimensions)";
  if (!p.global) {
    for (int i = 0; i < NNP_MAX_DIMS; ++i) {
      const bool used = i < k;
      const struct {
        const char* name;
        int32_t v, lo;
      } arrays[] = {{"kernel_shape", p.kernel_shape[i], 1},
                    {"strides", p.strides[i], 0},
                    {"dilations", p.dilations[i], 0}};
      for (const auto& a : arrays) {
        if (used && a.v < a.lo)
          c.fail(field(a.name, i) + ": expected >= " + std::to_string(a.lo) +
                 (a.lo == 0 ? " (0 means 1)" : "") + ", got " + std::to_string(a.v));
        if (!used && a.v != 0)
          c.fail(field(a.name, i) + ": expected 0 (only the first k entries are used)" + kdims +
                 ", got " + std::to_string(a.v));
      }
    }
    for (int i = 0; i < NNP_MAX_DIMS; ++i) {
      const int32_t v = p.pads[i];
      if (p.auto_pad != NNP_AUTO_PAD_NOTSET) {
        if (v != 0)
          c.fail(field("pads", i) + ": expected 0 with auto_pad = " + auto_pad_name(p.auto_pad) +
                 " (the padding is computed), got " + std::to_string(v));
        continue;
      }
      if (i >= 2 * k) {
        if (v != 0)
          c.fail(field("pads", i) + ": expected 0 (only the first 2k entries are used)" + kdims +
                 ", got " + std::to_string(v));
        continue;
      }
      const int dim = i % k;
      const int64_t dil = p.dilations[dim] > 0 ? p.dilations[dim] : 1;
      const int64_t ek = dil * (p.kernel_shape[dim] - 1) + 1;
      if (v < 0 || v >= ek)
        c.fail(field("pads", i) + ": expected 0 <= pad < the effective kernel " +
               "dilations*(kernel_shape-1)+1 = " + std::to_string(ek) + " of dimension " +
               std::to_string(dim) + (i < k ? " (begin)" : " (end)") + ", got " +
               std::to_string(v));
    }
  }
  shape_t y{x->shape[0], x->shape[1]};
  for (int i = 0; i < k; ++i) {
    const int64_t in = x->shape[2 + i];
    if (p.global && in < 1)
      c.fail(c.in_label(0) + ": global pooling needs every spatial dimension >= 1, got " +
             nnp::shape_string(*x));
    const nnp::pool_dim d = nnp::resolve_pool_dim(p, k, i, in);
    if (d.out == nnp::kSizeOverflow)
      c.fail("output size O" + std::to_string(i + 1) + " does not fit in int64 (D" +
             std::to_string(i + 1) + " = " + std::to_string(in) + ", effective kernel " +
             std::to_string(d.extent()) + ", stride " + std::to_string(d.stride) + ", pads " +
             std::to_string(p.pads[i]) + " + " + std::to_string(p.pads[k + i]) + ", auto_pad " +
             auto_pad_name(p.auto_pad) + ")");
    if (d.out < 1)
      c.fail("output size O" + std::to_string(i + 1) + " = " + std::to_string(d.out) +
             ": expected >= 1 (D" + std::to_string(i + 1) + " = " + std::to_string(in) +
             ", effective kernel " + std::to_string(d.extent()) + ", stride " +
             std::to_string(d.stride) + ", pads " + std::to_string(d.pad_begin) + " + " +
             std::to_string(d.pad_end) + ", auto_pad " + auto_pad_name(p.auto_pad) +
             "): the window does not fit in x " + nnp::shape_string(*x));
    y.push_back(d.out);
  }
  return y;
}

}  // namespace

// ============================================================================== pool2d ====
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

// ========================================================================= N-D pooling ====
void shapes_pool_forward(call& c, const void* params) {
  const auto& p = params_of<nnp_pool_params>(params);
  const shape_t y = pool_nd_output(c, p);
  c.output_shape(0, y, "([N, C, O1..Ok])");
  if (p.mode == NNP_POOL_MAX) {
    c.output_shape(1, y, "([N, C, O1..Ok], y's shape)");
  } else if (c.out(1) != nullptr) {
    c.fail(c.out_label(1) +
           ": expected NULL for average pooling (only max pooling has indices), got a tensor");
  }
}

void shapes_pool_backward(call& c, const void* params) {
  const shape_t y = pool_nd_output(c, params_of<nnp_pool_params>(params));
  c.expect_shape(c.in_label(1), c.in(1), y, "([N, C, O1..Ok])");
  c.expect_shape(c.in_label(2), c.in(2), y, "([N, C, O1..Ok])");
  c.output_shape(0, shape_of(c.in(0)), "(x's shape)");
}

}  // namespace nnp::host
