// Shape rules of NNP_OP_ATTENTION_FORWARD / _BACKWARD (nnp_attention_params in nnplug_ops.h):
// the rank-3 and rank-4 layouts of ONNX Attention, grouped-query heads, a mask broadcastable
// to [B, Hq, Tq, Tk]. The contract of a shape rule: validate_call.hpp.
#include "internal.hpp"
#include "validate_call.hpp"

#include <string>

namespace nnp::host {
namespace {

// The attention geometry of one call, from Q, K, V and the params.
struct attention_dims {
  int64_t batch, hq, hkv, tq, tk, d, dv;
  bool packed;  // rank 3: heads side by side in the last dimension
};

int64_t heads_from(const call& c, const char* field, int32_t value, const arg_name& label,
                   int64_t width) {
  if (value < 1)
    c.fail(std::string("params->") + field + ": rank-3 tensors need the head count (>= 1), got " +
           std::to_string(value));
  if (width % value != 0)
    c.fail(label.str() + ": last dimension " + std::to_string(width) +
           " is not a multiple of params->" + field + " = " + std::to_string(value));
  return value;
}

attention_dims attention_shapes(const call& c, const nnp_attention_params& p) {
  const DLTensor *q = c.in(0), *k = c.in(1), *v = c.in(2);
  const int rank = q->ndim;
  if (rank != 3 && rank != 4)
    c.fail(c.in_label(0).str() + ": expected rank 3 [B, Tq, Hq*D] or 4 [B, Hq, Tq, D], got " +
           shape_str(shape_of(q)));
  c.expect_rank(c.in_label(1), k, rank, "(Q's rank)");
  c.expect_rank(c.in_label(2), v, rank, "(Q's rank)");
  attention_dims d{};
  d.packed = rank == 3;
  d.batch = q->shape[0];
  if (d.packed) {
    d.tq = q->shape[1];
    d.tk = k->shape[1];
    d.hq = heads_from(c, "q_num_heads", p.q_num_heads, c.in_label(0), q->shape[2]);
    d.hkv = heads_from(c, "kv_num_heads", p.kv_num_heads, c.in_label(1), k->shape[2]);
    d.d = q->shape[2] / d.hq;
    if (v->shape[2] % d.hkv != 0)
      c.fail(c.in_label(2).str() + ": last dimension " + std::to_string(v->shape[2]) +
             " is not a multiple of params->kv_num_heads = " + std::to_string(d.hkv));
    d.dv = v->shape[2] / d.hkv;
    c.expect_shape(c.in_label(1), k, {d.batch, d.tk, d.hkv * d.d}, "[B, Tk, Hkv*D]");
    c.expect_shape(c.in_label(2), v, {d.batch, d.tk, v->shape[2]}, "[B, Tk, Hkv*Dv]");
  } else {
    d.hq = q->shape[1];
    d.tq = q->shape[2];
    d.d = q->shape[3];
    d.hkv = k->shape[1];
    d.tk = k->shape[2];
    d.dv = v->shape[3];
    if (p.q_num_heads != 0 && p.q_num_heads != d.hq)
      c.fail("params->q_num_heads: expected 0 or Q.shape[1] = " + std::to_string(d.hq) + ", got " +
             std::to_string(p.q_num_heads));
    if (p.kv_num_heads != 0 && p.kv_num_heads != d.hkv)
      c.fail("params->kv_num_heads: expected 0 or K.shape[1] = " + std::to_string(d.hkv) +
             ", got " + std::to_string(p.kv_num_heads));
    c.expect_shape(c.in_label(1), k, {d.batch, d.hkv, d.tk, d.d}, "[B, Hkv, Tk, D]");
    c.expect_shape(c.in_label(2), v, {d.batch, d.hkv, d.tk, d.dv}, "[B, Hkv, Tk, Dv]");
  }
  if (d.hkv == 0 || d.hq % d.hkv != 0)
    c.fail("the query head count Hq = " + std::to_string(d.hq) +
           " must be a multiple of the key/value head count Hkv = " + std::to_string(d.hkv));
  if (const DLTensor* mask = c.in(3)) {
    const int64_t full[4] = {d.batch, d.hq, d.tq, d.tk};
    if (mask->ndim > 4)
      c.fail(c.in_label(3).str() + ": expected rank <= 4 (broadcast to [B, Hq, Tq, Tk]), got " +
             shape_str(shape_of(mask)));
    for (int i = 0; i < mask->ndim; ++i) {
      const int64_t m = mask->shape[i], want = full[4 - mask->ndim + i];
      if (m != 1 && m != want)
        c.fail(c.in_label(3).str() + ": shape " + shape_str(shape_of(mask)) +
               " does not broadcast to [B, Hq, Tq, Tk] = " +
               shape_str(shape_t{d.batch, d.hq, d.tq, d.tk}));
    }
  }
  return d;
}

shape_t y_shape(const attention_dims& d) {
  return d.packed ? shape_t{d.batch, d.tq, d.hq * d.dv} : shape_t{d.batch, d.hq, d.tq, d.dv};
}

}  // namespace

void shapes_attention_forward(call& c, const void* params) {
  const attention_dims d = attention_shapes(c, params_of<nnp_attention_params>(params));
  c.output_shape(0, y_shape(d), d.packed ? "[B, Tq, Hq*Dv]" : "[B, Hq, Tq, Dv]");
  c.output_shape(1, {d.batch, d.hq, d.tq}, "[B, Hq, Tq]");
}

void shapes_attention_backward(call& c, const void* params) {
  const attention_dims d = attention_shapes(c, params_of<nnp_attention_params>(params));
  const shape_t y = y_shape(d);
  c.expect_shape(c.in_label(4), c.in(4), y, "(the forward's Y)");
  c.expect_shape(c.in_label(5), c.in(5), y, "(Y's shape)");
  c.expect_shape(c.in_label(6), c.in(6), {d.batch, d.hq, d.tq}, "[B, Hq, Tq]");
  c.output_shape(0, shape_of(c.in(0)), "(Q's shape)");
  c.output_shape(1, shape_of(c.in(1)), "(K's shape)");
  c.output_shape(2, shape_of(c.in(2)), "(V's shape)");
}

}  // namespace nnp::host
