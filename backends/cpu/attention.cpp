// Scaled dot-product attention on the CPU (NNP_OP_ATTENTION_FORWARD / _BACKWARD; formulas of
// nnp_attention_params in nnplug_ops.h).
//
// Speed: one TBB task per (batch, head) tile — per kv head in the backward, whose dK and dV sum
// over the query heads of a group — and within it single-threaded OpenBLAS SGEMMs straight on
// the strided rows of Q, K, V (both ONNX layouts are rows with a leading dimension, so nothing
// is copied or transposed): S = s Q K^T, then one pass per row for the mask, the causal bound
// and the softmax (one exp per score), then Y = P V. The backward recomputes P from the
// forward's log-sum-exp and does dP = dY V^T, dS = P (dP - delta), dQ = s dS K,
// dK += s dS^T Q, dV += P^T dY as four SGEMMs. The score tile (Tq x Tk floats) lives in the
// task's scratch buffer.
#include "cpu_backend.hpp"
#include "vmath.hpp"

#include <nnplug/kit/attention.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace nnp::cpu {
namespace {

using nnp::kit::attention_geometry;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct attention_args {
  attention_geometry g;
  const float *q, *k, *v, *mask;
  attention_args(const op_call& c)
      : g(c.params_as<nnp_attention_params>(), *c.in(0), *c.in(1), *c.in(2), c.in(3)),
        q(f32(c.in(0))),
        k(f32(c.in(1))),
        v(f32(c.in(2))),
        mask(f32(c.in(3))) {}

  // s = scale * Q_h K_kvh^T (+ mask, -inf past the causal bound): the tile of (b, h), Tq x Tk.
  void scores(int64_t b, int64_t h, float* s) const {
    const int64_t kvh = h / g.group();
    sgemm_rm(false, true, g.tq, g.tk, g.d, static_cast<float>(g.scale), q + g.q.offset(b, h, 0),
             g.q.row_stride, k + g.k.offset(b, kvh, 0), g.k.row_stride, 0.0f, s, g.tk);
    for (int64_t i = 0; i < g.tq; ++i) {
      float* si = s + i * g.tk;
      if (mask != nullptr) {
        const float* mi = mask + g.mask_offset(b, h, i, 0);
        const int64_t ms = g.mask_strides[3];
        for (int64_t j = 0; j < g.tk; ++j) si[j] += mi[j * ms];
      }
      for (int64_t j = g.visible(i); j < g.tk; ++j) si[j] = kNegInf;
    }
  }

  // Tiles per task: about 256k multiply-adds each, so small tiles share a task.
  int64_t grain() const {
    const int64_t work = std::max<int64_t>(1, g.tq * g.tk * (g.d + g.dv));
    return std::max<int64_t>(1, (int64_t{1} << 18) / work);
  }
};

// Softmax of one score row in place: e = exp(x - max) once per element, then e / sum(e);
// returns the row's log-sum-exp, max + log(sum). A row that is all -inf becomes 0 with
// lse = -inf.
float softmax_row(float* s, int64_t n) {
  float mx = kNegInf;
  for (int64_t j = 0; j < n; ++j) mx = std::max(mx, s[j]);
  if (mx == kNegInf) {
    std::fill(s, s + n, 0.0f);
    return kNegInf;
  }
  for (int64_t j = 0; j < n; ++j) s[j] = fast_exp(s[j] - mx);
  float sum = 0.0f;
  for (int64_t j = 0; j < n; ++j) sum += s[j];
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j < n; ++j) s[j] *= inv;
  return mx + std::log(sum);
}

}  // namespace

void attention_forward(const op_call& c) {
  const attention_args a(c);
  const attention_geometry& g = a.g;
  float* y = f32(c.out(0));
  float* lse = f32(c.out(1));
  parallel_for(g.batch * g.hq, a.grain(), [&](int64_t lo, int64_t hi) {
    float* s = scratch(kTaskSlot0, static_cast<size_t>(g.tq * g.tk));
    for (int64_t tile = lo; tile < hi; ++tile) {
      const int64_t b = tile / g.hq, h = tile % g.hq;
      a.scores(b, h, s);
      for (int64_t i = 0; i < g.tq; ++i) {
        const float l = softmax_row(s + i * g.tk, g.tk);
        if (lse != nullptr) lse[tile * g.tq + i] = l;
      }
      sgemm_rm(false, false, g.tq, g.dv, g.tk, 1.0f, s, g.tk, a.v + g.v.offset(b, h / g.group(), 0),
               g.v.row_stride, 0.0f, y + g.y.offset(b, h, 0), g.y.row_stride);
    }
  });
}

void attention_backward(const op_call& c) {
  const attention_args a(c);
  const attention_geometry& g = a.g;
  const float* y = f32(c.in(4));
  const float* dy = f32(c.in(5));
  const float* lse = f32(c.in(6));
  float *dq = f32(c.out(0)), *dk = f32(c.out(1)), *dv = f32(c.out(2));
  const float scale = static_cast<float>(g.scale);
  parallel_for(
      g.batch * g.hkv, std::max<int64_t>(1, a.grain() / g.group()), [&](int64_t lo, int64_t hi) {
        const size_t tile_size = static_cast<size_t>(g.tq * g.tk);
        float* p = scratch(kTaskSlot0, tile_size);
        float* ds = scratch(kTaskSlot1, tile_size);
        for (int64_t kv_tile = lo; kv_tile < hi; ++kv_tile) {
          const int64_t b = kv_tile / g.hkv, kvh = kv_tile % g.hkv;
          float* dk_tile = dk + g.k.offset(b, kvh, 0);
          float* dv_tile = dv + g.v.offset(b, kvh, 0);
          const float* k_tile = a.k + g.k.offset(b, kvh, 0);
          const float* v_tile = a.v + g.v.offset(b, kvh, 0);
          for (int64_t h = kvh * g.group(); h < (kvh + 1) * g.group(); ++h) {
            const float* dy_tile = dy + g.y.offset(b, h, 0);
            const float* y_tile = y + g.y.offset(b, h, 0);
            const float* q_tile = a.q + g.q.offset(b, h, 0);
            // P = exp(S - lse), rows of a fully masked query (lse = -inf) are 0.
            a.scores(b, h, p);
            const float* lse_row = lse + (b * g.hq + h) * g.tq;
            for (int64_t i = 0; i < g.tq; ++i) {
              float* pi = p + i * g.tk;
              const float l = lse_row[i];
              if (l == kNegInf) {
                std::fill(pi, pi + g.tk, 0.0f);
                continue;
              }
              for (int64_t j = 0; j < g.tk; ++j) pi[j] = fast_exp(pi[j] - l);
            }
            // dP = dY V^T, then dS = s * P * (dP - delta) in place.
            sgemm_rm(false, true, g.tq, g.tk, g.dv, 1.0f, dy_tile, g.y.row_stride, v_tile,
                     g.v.row_stride, 0.0f, ds, g.tk);
            for (int64_t i = 0; i < g.tq; ++i) {
              const float* dyi = dy_tile + i * g.y.row_stride;
              const float* yi = y_tile + i * g.y.row_stride;
              double delta = 0.0;
              for (int64_t e = 0; e < g.dv; ++e) delta += double(dyi[e]) * double(yi[e]);
              const float dl = static_cast<float>(delta);
              float* dsi = ds + i * g.tk;
              const float* pi = p + i * g.tk;
              for (int64_t j = 0; j < g.tk; ++j) dsi[j] = scale * pi[j] * (dsi[j] - dl);
            }
            const float beta = h == kvh * g.group() ? 0.0f : 1.0f;  // sum over the group's heads
            sgemm_rm(false, false, g.tq, g.d, g.tk, 1.0f, ds, g.tk, k_tile, g.k.row_stride, 0.0f,
                     dq + g.q.offset(b, h, 0), g.q.row_stride);
            sgemm_rm(true, false, g.tk, g.d, g.tq, 1.0f, ds, g.tk, q_tile, g.q.row_stride, beta,
                     dk_tile, g.k.row_stride);
            sgemm_rm(true, false, g.tk, g.dv, g.tq, 1.0f, p, g.tk, dy_tile, g.y.row_stride, beta,
                     dv_tile, g.v.row_stride);
          }
        }
      });
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kAttentionOps[] = {
    {NNP_OP_ATTENTION_FORWARD,  kit::f32,            attention_forward},
    {NNP_OP_ATTENTION_BACKWARD, kit::f32,            attention_backward},
};
// clang-format on
extern const kit::op_row_list kAttentionRows = kit::row_list(kAttentionOps);

}  // namespace nnp::cpu
