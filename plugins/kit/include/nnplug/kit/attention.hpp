// The geometry of one NNP_OP_ATTENTION_* call (nnp_attention_params, nnplug_ops.h), shared by
// backends: head counts, lengths, and the element strides that address row i of head h of
// batch b in Q, K, V, Y (and their gradients) in both ONNX layouts:
//   rank 4 [B, H, T, D]:   offset = b*H*T*D + h*T*D + i*D + d
//   rank 3 [B, T, H*D]:    offset = b*T*H*D + i*H*D + h*D + d
// and in the mask, broadcast to [B, Hq, Tq, Tk]. The call must have passed libnnplug's shape
// rule (validate_shapes_attention.cpp).
#pragma once

#include <nnplug/nnplug_ops.h>
#include <nnplug/nnplug_types.h>

#include <nnplug/kit/broadcast.hpp>

#include <cmath>
#include <cstdint>

namespace nnp::kit {

// Where the rows of one [B, H, T, width] operand are.
struct attention_operand {
  int64_t batch_stride, head_stride, row_stride;
  int64_t offset(int64_t b, int64_t h, int64_t i) const {
    return b * batch_stride + h * head_stride + i * row_stride;
  }
};

struct attention_geometry {
  int64_t batch, hq, hkv, tq, tk, d, dv;
  double scale;  // s of the formula (params->scale, or 1/sqrt(D) when 0)
  bool causal;
  attention_operand q, k, v, y;  // y also addresses dY, dQ's rows use q, dK's k, dV's v
  int64_t mask_strides[4];       // element strides of the mask over [B, Hq, Tq, Tk]; 0 = broadcast
  int64_t group() const { return hq / hkv; }  // query heads per kv head

  attention_geometry(const nnp_attention_params& p, const DLTensor& Q, const DLTensor& K,
                     const DLTensor& V, const DLTensor* mask) {
    const bool packed = Q.ndim == 3;
    batch = Q.shape[0];
    if (packed) {
      hq = p.q_num_heads;
      hkv = p.kv_num_heads;
      tq = Q.shape[1];
      tk = K.shape[1];
      d = Q.shape[2] / hq;
      dv = V.shape[2] / hkv;
    } else {
      hq = Q.shape[1];
      hkv = K.shape[1];
      tq = Q.shape[2];
      tk = K.shape[2];
      d = Q.shape[3];
      dv = V.shape[3];
    }
    scale = p.scale != 0.0 ? p.scale : 1.0 / std::sqrt(static_cast<double>(d));
    causal = p.is_causal != 0;
    q = layout(packed, hq, tq, d);
    k = layout(packed, hkv, tk, d);
    v = layout(packed, hkv, tk, dv);
    y = layout(packed, hq, tq, dv);
    for (int64_t& s : mask_strides) s = 0;
    if (mask != nullptr) broadcast_strides(*mask, 4, mask_strides);
  }

  // Element offset in the mask of score (b, h, i, j).
  int64_t mask_offset(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return b * mask_strides[0] + h * mask_strides[1] + i * mask_strides[2] + j * mask_strides[3];
  }
  // Keys a causal query row i may see: [0, visible(i)).
  int64_t visible(int64_t i) const { return causal ? (i + 1 < tk ? i + 1 : tk) : tk; }

 private:
  static attention_operand layout(bool packed, int64_t heads, int64_t t, int64_t width) {
    if (packed) return {t * heads * width, width, heads * width};
    return {heads * t * width, t * width, width};
  }
};

}  // namespace nnp::kit
