// attention.cpp — reference scaled dot-product attention, forward and backward (ONNX
// Attention, opset 23; the formulas of nnp_attention_params in nnplug_ops.h), in double for
// every (batch, query head, query row): scores, softmax as x - max - log(sum exp), P V; the
// backward recomputes P from the forward's log-sum-exp (FlashAttention-2's formulation).
#include "reference.hpp"

#include <nnplug/kit/attention.hpp>

#include <cmath>
#include <limits>
#include <vector>

namespace ref {
namespace {

using nnp::kit::attention_geometry;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

template <typename T>
struct attention_call {
  const nnp_attention_params p;
  const attention_geometry g;
  const T *q, *k, *v, *mask;

  attention_call(const op_args& a)
      : p(read_params<nnp_attention_params>(a.params)),
        g(p, *a.in(0), *a.in(1), *a.in(2), a.in(3)),
        q(nnp::data_ptr<const T>(*a.in(0))),
        k(nnp::data_ptr<const T>(*a.in(1))),
        v(nnp::data_ptr<const T>(*a.in(2))),
        mask(opt_in<T>(a, 3)) {}

  // s[j] = scale * q_i . k_j + mask (kNegInf for keys the causal mask hides).
  void scores(int64_t b, int64_t h, int64_t i, std::vector<double>& s) const {
    const int64_t kvh = h / g.group();
    const T* qi = q + g.q.offset(b, h, i);
    const int64_t visible = g.visible(i);
    for (int64_t j = 0; j < g.tk; ++j) {
      if (j >= visible) {
        s[j] = kNegInf;
        continue;
      }
      const T* kj = k + g.k.offset(b, kvh, j);
      double dot = 0.0;
      for (int64_t e = 0; e < g.d; ++e) dot += double(qi[e]) * double(kj[e]);
      s[j] = g.scale * dot + (mask != nullptr ? double(mask[g.mask_offset(b, h, i, j)]) : 0.0);
    }
  }
};

template <typename T>
void forward_t(const op_args& a) {
  const attention_call<T> c(a);
  const attention_geometry& g = c.g;
  T* y = nnp::data_ptr<T>(*a.out(0));
  T* lse = opt_out<T>(a, 1);
  std::vector<double> s(static_cast<size_t>(g.tk)), acc(static_cast<size_t>(g.dv));
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t h = 0; h < g.hq; ++h)
      for (int64_t i = 0; i < g.tq; ++i) {
        c.scores(b, h, i, s);
        double mx = kNegInf;
        for (double x : s) mx = std::max(mx, x);
        std::fill(acc.begin(), acc.end(), 0.0);
        double row_lse = kNegInf;
        if (mx != kNegInf) {  // a fully masked row keeps Y = 0, lse = -inf
          double sum = 0.0;
          for (double x : s) sum += std::exp(x - mx);
          const double log_sum = std::log(sum);
          row_lse = mx + log_sum;
          const int64_t kvh = h / g.group();
          for (int64_t j = 0; j < g.tk; ++j) {
            const double pj = std::exp(s[j] - mx - log_sum);
            const T* vj = c.v + g.v.offset(b, kvh, j);
            for (int64_t e = 0; e < g.dv; ++e) acc[e] += pj * double(vj[e]);
          }
        }
        T* yi = y + g.y.offset(b, h, i);
        for (int64_t e = 0; e < g.dv; ++e) yi[e] = static_cast<T>(acc[e]);
        if (lse != nullptr) lse[(b * g.hq + h) * g.tq + i] = static_cast<T>(row_lse);
      }
}

template <typename T>
void backward_t(const op_args& a) {
  const attention_call<T> c(a);
  const attention_geometry& g = c.g;
  const T* y = nnp::data_ptr<const T>(*a.in(4));
  const T* dy = nnp::data_ptr<const T>(*a.in(5));
  const T* lse = nnp::data_ptr<const T>(*a.in(6));
  T* dq = nnp::data_ptr<T>(*a.out(0));
  T* dk = nnp::data_ptr<T>(*a.out(1));
  T* dv = nnp::data_ptr<T>(*a.out(2));
  // dK and dV gather from every query row and every head of a group: accumulate in double.
  std::vector<double> dk_acc(static_cast<size_t>(nnp::numel(*a.out(1))), 0.0);
  std::vector<double> dv_acc(static_cast<size_t>(nnp::numel(*a.out(2))), 0.0);
  std::vector<double> s(static_cast<size_t>(g.tk)), dq_acc(static_cast<size_t>(g.d));
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t h = 0; h < g.hq; ++h)
      for (int64_t i = 0; i < g.tq; ++i) {
        const int64_t kvh = h / g.group();
        const double row_lse = double(lse[(b * g.hq + h) * g.tq + i]);
        const T* yi = y + g.y.offset(b, h, i);
        const T* dyi = dy + g.y.offset(b, h, i);
        const T* qi = c.q + g.q.offset(b, h, i);
        std::fill(dq_acc.begin(), dq_acc.end(), 0.0);
        if (row_lse != kNegInf) {
          c.scores(b, h, i, s);
          double delta = 0.0;
          for (int64_t e = 0; e < g.dv; ++e) delta += double(dyi[e]) * double(yi[e]);
          for (int64_t j = 0; j < g.tk; ++j) {
            const double pj = std::exp(s[j] - row_lse);
            const int64_t ko = g.k.offset(b, kvh, j), vo = g.v.offset(b, kvh, j);
            double dp = 0.0;
            for (int64_t e = 0; e < g.dv; ++e) {
              dp += double(dyi[e]) * double(c.v[vo + e]);
              dv_acc[vo + e] += pj * double(dyi[e]);
            }
            const double ds = pj * (dp - delta) * g.scale;
            for (int64_t e = 0; e < g.d; ++e) {
              dq_acc[e] += ds * double(c.k[ko + e]);
              dk_acc[ko + e] += ds * double(qi[e]);
            }
          }
        }
        T* dqi = dq + g.q.offset(b, h, i);
        for (int64_t e = 0; e < g.d; ++e) dqi[e] = static_cast<T>(dq_acc[e]);
      }
  for (size_t e = 0; e < dk_acc.size(); ++e) dk[e] = static_cast<T>(dk_acc[e]);
  for (size_t e = 0; e < dv_acc.size(); ++e) dv[e] = static_cast<T>(dv_acc[e]);
}

}  // namespace

REF_FLOAT_OP(attention_forward, forward_t, in(0))
REF_FLOAT_OP(attention_backward, backward_t, in(0))

// The rows of this file's kernels (rows.hpp lists the files).
// clang-format off
const nnp::kit::op_row kAttentionOps[] = {
    {NNP_OP_ATTENTION_FORWARD,  kFloats,        attention_forward},
    {NNP_OP_ATTENTION_BACKWARD, kFloats,        attention_backward},
};
// clang-format on
extern const nnp::kit::op_row_list kAttentionRows = nnp::kit::row_list(kAttentionOps);

}  // namespace ref
