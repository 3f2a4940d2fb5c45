// The shape rules of N-D pooling (NNP_OP_POOL_FORWARD / NNP_OP_POOL_BACKWARD, nnp_pool_params):
// x's rank gives k, the per-dimension params arrays must use exactly their first k (pads 2k)
// entries, and every output size must be >= 1. The geometry itself (auto_pad, ceil_mode,
// dilations, global) is nnp::resolve_pool_nd, which the backends share.
#include "internal.hpp"
#include "validate_call.hpp"

#include <nnplug/kit/pool_nd.hpp>

#include <string>

namespace nnp::host {
namespace {

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

void shapes_pool_forward(call& c, const void* params) {
  const auto& p = *static_cast<const nnp_pool_params*>(params);
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
  const shape_t y = pool_nd_output(c, *static_cast<const nnp_pool_params*>(params));
  c.expect_shape(c.in_label(1), c.in(1), y, "([N, C, O1..Ok])");
  c.expect_shape(c.in_label(2), c.in(2), y, "([N, C, O1..Ok])");
  c.output_shape(0, shape_of(c.in(0)), "(x's shape)");
}

}  // namespace nnp::host
