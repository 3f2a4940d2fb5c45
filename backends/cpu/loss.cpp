// Losses on the CPU, float32: softmax cross-entropy over [N, C] logits
// (NNP_OP_SOFTMAX_CROSS_ENTROPY_*), and the ONNX losses of ABI 1.2, NNP_OP_NLL_LOSS_* (ONNX
// NegativeLogLikelihoodLoss) and NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_* (ONNX
// SoftmaxCrossEntropyLoss), with class weights, every reduction and ignore_index; the formulas
// are those of nnplug_ops.h (docs/ops.md).
//
// Softmax cross-entropy fuses log-softmax, the label pick and the per-row loss in one pass per
// row, rows in parallel; the reduction sums the rows' losses in double. For the ONNX losses,
// input / scores are viewed as [N, C, D] (D = d1*..*dk) and the targets as positions
// j = n*D + d. Positions are cut into fixed chunks of about 32k elements; chunks run as TBB
// tasks and each returns its partial sums (loss and weight) in double, which the caller adds in
// chunk order, so a result does not depend on the thread count. Within a chunk, a position
// range of one sample is a segment: for D = 1 a segment is one contiguous row of C classes
// (the class loops vectorise); for D > 1 the classes of the segment's positions are D apart
// and the loops run over the positions innermost (contiguous, vectorised), with per-position
// max / sum in task scratch. Log-softmax is (x - max) - log(sum exp(x - max)), in that order.
#include "cpu_backend.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>

namespace nnp::cpu {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

struct loss_view {
  int32_t reduction;  // an nnp_reduction value (0 already read as MEAN)
  bool has_ignore;
  int64_t ignore_index;
  int64_t N, C, D;
  const float* x;
  const int64_t* target;
  const float* weight;  // nullptr: every weight 1

  int64_t positions() const { return N * D; }
  // w_j of position j and its class (*cls = -1 when ignored or out of range). Ignored
  // positions weigh 0, out-of-range targets NaN; either way w_j is also their loss.
  float weight_of(int64_t j, int64_t* cls) const {
    const int64_t t = target[j];
    *cls = -1;
    if (has_ignore && t == ignore_index) return 0.0f;
    if (t < 0 || t >= C) return kNaN;
    *cls = t;
    return weight != nullptr ? weight[t] : 1.0f;
  }
};

template <typename P>
loss_view view_of(const op_call& c, size_t weight_index) {
  const P p = c.params_as<P>();
  const DLTensor* X = c.in(0);
  int64_t d = 1;
  for (int i = 2; i < X->ndim; ++i) d *= X->shape[i];
  return loss_view{p.reduction == 0 ? int32_t{NNP_REDUCTION_MEAN} : p.reduction,
                   p.has_ignore_index != 0,
                   p.ignore_index,
                   X->shape[0],
                   X->shape[1],
                   d,
                   f32(X),
                   data_ptr<int64_t>(*c.in(1)),
                   c.in(weight_index) != nullptr ? f32(c.in(weight_index)) : nullptr};
}

// Sum over positions of (loss, weight), in double.
struct sums {
  double loss = 0.0, weight = 0.0;
};

// Runs seg(n, d0, len, &partial) over every segment of every chunk, chunks in parallel, and
// returns the partial sums added in chunk order.
template <typename Seg>
sums for_each_segment(const loss_view& v, const Seg& seg) {
  const int64_t total = v.positions();
  if (total <= 0) return sums{};
  const int64_t size = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, v.C));
  const int64_t count = (total + size - 1) / size;
  // The partial sums live in call-level scratch (no allocation per call).
  static_assert(sizeof(sums) == 4 * sizeof(float), "sums is two doubles");
  sums* partial = reinterpret_cast<sums*>(scratch(kCallSlot0, static_cast<size_t>(4 * count)));
  for (int64_t k = 0; k < count; ++k) new (&partial[k]) sums{};
  parallel_for(count, 1, [&](int64_t kb, int64_t ke) {
    for (int64_t k = kb; k < ke; ++k) {
      const int64_t j1 = std::min(total, (k + 1) * size);
      for (int64_t j = k * size; j < j1;) {
        const int64_t n = j / v.D, d0 = j % v.D;
        const int64_t len = std::min(v.D - d0, j1 - j);
        seg(n, d0, len, &partial[k]);
        j += len;
      }
    }
  });
  sums s;
  for (int64_t k = 0; k < count; ++k) {
    s.loss += partial[k].loss;
    s.weight += partial[k].weight;
  }
  return s;
}

// sum_j w_j, the mean's divisor.
double weight_sum(const loss_view& v) {
  const auto add_weights = [&](int64_t n, int64_t d0, int64_t len, sums* s) {
    int64_t cls;
    for (int64_t dd = 0; dd < len; ++dd) s->weight += v.weight_of(n * v.D + d0 + dd, &cls);
  };
  return for_each_segment(v, add_weights).weight;
}

// The upstream gradient of every position for reduction sum / mean (none reads dloss[j]), in
// double as the reference computes it: with a tiny total weight dloss / sum_w can exceed
// float's range while w_j * (dloss / sum_w) does not (or is 0 * that for a zero weight, 0
// rather than 0 * inf = NaN).
double shared_gradient(const loss_view& v, const float* dloss) {
  if (v.reduction == NNP_REDUCTION_NONE) return 0.0;
  if (v.reduction == NNP_REDUCTION_SUM) return dloss[0];
  return static_cast<double>(dloss[0]) / weight_sum(v);
}

// w_j times position j's upstream gradient (dloss[j] for reduction none, else g_all), in double.
float weighted_gradient(float w, const loss_view& v, const float* dloss, int64_t j, double g_all) {
  const double g = v.reduction == NNP_REDUCTION_NONE ? static_cast<double>(dloss[j]) : g_all;
  return static_cast<float>(static_cast<double>(w) * g);
}

// Per-position max and sum of exp(x - max) over the classes of a segment of len positions,
// into m[len] and s[len]; xn points at class 0 of its first position (class c is c*D further
// on, positions are contiguous). An all -inf position shifts by 0 (no inf - inf). With e, the
// exponentials go there too (e[c*D + i], the layout of xn).
void segment_stats(const float* xn, int64_t C, int64_t D, int64_t len, float* m, float* s,
                   float* e = nullptr) {
  std::fill(m, m + len, -kInf);
  std::fill(s, s + len, 0.0f);
  for (int64_t c = 0; c < C; ++c) {
    const float* xc = xn + c * D;
    for (int64_t i = 0; i < len; ++i) m[i] = std::max(m[i], xc[i]);
  }
  for (int64_t i = 0; i < len; ++i)
    if (m[i] == -kInf) m[i] = 0.0f;
  for (int64_t c = 0; c < C; ++c) {
    const float* xc = xn + c * D;
    if (e == nullptr) {
      for (int64_t i = 0; i < len; ++i) s[i] += std::exp(xc[i] - m[i]);
      continue;
    }
    float* ec = e + c * D;
    for (int64_t i = 0; i < len; ++i) {
      ec[i] = std::exp(xc[i] - m[i]);
      s[i] += ec[i];
    }
  }
}

// The losses of a segment's len positions (sample n, positions d0..): l_j = w_j when ignored
// (0) or out of range (NaN), else -lp(dd, class) * w_j with lp the log-probability of the
// position's class; added to part, and written to loss[j] for reduction none. The product is
// in double, as the sums: a subnormal weight times a float32 product would keep only a few bits
// of the loss, and the weighted mean divides them by the weights' sum.
template <typename LogProb>
void add_losses(const loss_view& v, int64_t n, int64_t d0, int64_t len, float* loss, sums* part,
                const LogProb& lp) {
  const bool none = v.reduction == NNP_REDUCTION_NONE;
  for (int64_t dd = 0; dd < len; ++dd) {
    const int64_t j = n * v.D + d0 + dd;
    int64_t cls;
    const float w = v.weight_of(j, &cls);
    const double l = cls < 0 ? double(w) : -(double(lp(dd, cls)) * double(w));
    if (none) loss[j] = static_cast<float>(l);
    part->loss += l;
    part->weight += w;
  }
}

// Writes the loss of reduction sum / mean to loss[0] (none wrote per position).
void reduce_loss(const loss_view& v, const sums& s, float* loss) {
  if (v.reduction == NNP_REDUCTION_SUM) loss[0] = static_cast<float>(s.loss);
  if (v.reduction == NNP_REDUCTION_MEAN) loss[0] = static_cast<float>(s.loss / s.weight);
}

}  // namespace

void nll_loss_forward(const op_call& c) {
  const loss_view v = view_of<nnp_nll_loss_params>(c, 2);
  float* loss = f32(c.out(0));
  const sums s = for_each_segment(v, [&](int64_t n, int64_t d0, int64_t len, sums* part) {
    const float* xn = v.x + n * v.C * v.D + d0;  // class 0 of the segment's first position
    add_losses(v, n, d0, len, loss, part,
               [&](int64_t dd, int64_t cls) { return xn[cls * v.D + dd]; });
  });
  reduce_loss(v, s, loss);
}

void nll_loss_backward(const op_call& c) {
  const loss_view v = view_of<nnp_nll_loss_params>(c, 3);
  const float* dloss = f32(c.in(2));
  float* dx = f32(c.out(0));
  const double g_all = shared_gradient(v, dloss);
  for_each_segment(v, [&](int64_t n, int64_t d0, int64_t len, sums*) {
    for (int64_t cc = 0; cc < v.C; ++cc) std::fill_n(dx + (n * v.C + cc) * v.D + d0, len, 0.0f);
    for (int64_t dd = 0; dd < len; ++dd) {
      const int64_t j = n * v.D + d0 + dd;
      int64_t cls;
      const float w = v.weight_of(j, &cls);
      if (cls >= 0) {
        dx[(n * v.C + cls) * v.D + d0 + dd] = -weighted_gradient(w, v, dloss, j, g_all);
      } else if (std::isnan(w)) {  // out of range, not ignored
        for (int64_t cc = 0; cc < v.C; ++cc) dx[(n * v.C + cc) * v.D + d0 + dd] = kNaN;
      }
    }
  });
}

void softmax_cross_entropy_loss_forward(const op_call& c) {
  const loss_view v = view_of<nnp_softmax_cross_entropy_loss_params>(c, 2);
  float* loss = f32(c.out(0));
  float* log_prob = f32(c.out(1));
  const sums s = for_each_segment(v, [&](int64_t n, int64_t d0, int64_t len, sums* part) {
    const int64_t base = n * v.C * v.D + d0;  // class 0 of the segment's first position
    const float* xn = v.x + base;
    float m1, s1;
    float *m = &m1, *ls = &s1;
    if (v.D == 1) {
      row_stats(xn, v.C, m, ls);
      *ls = std::log(*ls);
      if (log_prob != nullptr)
        for (int64_t cc = 0; cc < v.C; ++cc) log_prob[base + cc] = (xn[cc] - m1) - s1;
    } else {
      m = scratch(kTaskSlot0, static_cast<size_t>(2 * len));
      ls = m + len;
      segment_stats(xn, v.C, v.D, len, m, ls);
      for (int64_t i = 0; i < len; ++i) ls[i] = std::log(ls[i]);
      if (log_prob != nullptr)
        for (int64_t cc = 0; cc < v.C; ++cc) {
          const float* xc = xn + cc * v.D;
          float* lc = log_prob + base + cc * v.D;
          for (int64_t i = 0; i < len; ++i) lc[i] = (xc[i] - m[i]) - ls[i];
        }
    }
    add_losses(v, n, d0, len, loss, part,
               [&](int64_t dd, int64_t cls) { return (xn[cls * v.D + dd] - m[dd]) - ls[dd]; });
  });
  reduce_loss(v, s, loss);
}

void softmax_cross_entropy_loss_backward(const op_call& c) {
  const loss_view v = view_of<nnp_softmax_cross_entropy_loss_params>(c, 3);
  const float* dloss = f32(c.in(2));
  float* dx = f32(c.out(0));
  const double g_all = shared_gradient(v, dloss);
  for_each_segment(v, [&](int64_t n, int64_t d0, int64_t len, sums*) {
    const int64_t base = n * v.C * v.D + d0;
    const float* xn = v.x + base;
    float* dn = dx + base;
    // Per-position max, sum and k = w_j * g_j: task scratch for D > 1, a local for a row.
    float k1 = 0.0f;
    float* m = v.D == 1 ? nullptr : scratch(kTaskSlot0, static_cast<size_t>(3 * len));
    float* s = v.D == 1 ? nullptr : m + len;
    float* k = v.D == 1 ? &k1 : s + len;
    for (int64_t dd = 0; dd < len; ++dd) {
      const int64_t j = n * v.D + d0 + dd;
      int64_t cls;
      k[dd] = weighted_gradient(v.weight_of(j, &cls), v, dloss, j, g_all);
    }
    // dx = exp(x - m) * (k / sum), exp stored on the way to the sum.
    if (v.D == 1) {
      float mx, sum;
      row_stats(xn, v.C, &mx, &sum, dn);
      const float q = k[0] / sum;
      for (int64_t cc = 0; cc < v.C; ++cc) dn[cc] *= q;
    } else {
      segment_stats(xn, v.C, v.D, len, m, s, dn);
      for (int64_t i = 0; i < len; ++i) s[i] = k[i] / s[i];
      for (int64_t cc = 0; cc < v.C; ++cc) {
        float* dc = dn + cc * v.D;
        for (int64_t i = 0; i < len; ++i) dc[i] *= s[i];
      }
    }
    // The one-hot term; ignored positions are 0 and out-of-range ones NaN over the classes.
    for (int64_t dd = 0; dd < len; ++dd) {
      int64_t cls;
      const float w = v.weight_of(n * v.D + d0 + dd, &cls);
      if (cls >= 0) {
        // dx_label = k (p_label - 1), which cancels in float32 when p_label is near 1: it is
        // minus the sum of the other classes' dx (a row of softmax - onehot sums to 0).
        float others = 0.0f;
        for (int64_t cc = 0; cc < v.C; ++cc)
          if (cc != cls) others += dn[cc * v.D + dd];
        dn[cls * v.D + dd] = -others;
      } else {
        const float fillv = std::isnan(w) ? kNaN : 0.0f;
        for (int64_t cc = 0; cc < v.C; ++cc) dn[cc * v.D + dd] = fillv;
      }
    }
  });
}

// ---- softmax cross-entropy ([N, C], no weights) ----------------------------------------------
namespace {

bool ignored(const nnp_softmax_cross_entropy_params& p, int64_t label) {
  return p.has_ignore_index != 0 && label == p.ignore_index;
}

}  // namespace

void softmax_cross_entropy_forward(const op_call& c) {
  const auto& p = c.params_as<nnp_softmax_cross_entropy_params>();
  const DLTensor* L = c.in(0);
  const int64_t n = L->shape[0], classes = L->shape[1];
  const float* logits = f32(L);
  const int64_t* labels = data_ptr<int64_t>(*c.in(1));
  float* loss = f32(c.out(0));
  float* log_prob = f32(c.out(1));
  const bool none = p.reduction == NNP_REDUCTION_NONE;
  // Per-row losses go to `loss` directly for reduction none, else to call-level scratch.
  float* rows = none ? loss : scratch(kCallSlot0, static_cast<size_t>(std::max<int64_t>(n, 1)));
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, classes));
  parallel_for(n, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const float* x = logits + i * classes;
      float m, ls;
      row_stats(x, classes, &m, &ls);
      ls = std::log(ls);
      if (log_prob != nullptr) {
        float* lp = log_prob + i * classes;
        for (int64_t j = 0; j < classes; ++j) lp[j] = (x[j] - m) - ls;
      }
      const int64_t label = labels[i];
      if (ignored(p, label))
        rows[i] = 0.0f;
      else if (label < 0 || label >= classes)
        rows[i] = std::numeric_limits<float>::quiet_NaN();
      else
        rows[i] = ls - (x[label] - m);
    }
  });
  if (none) return;
  double total = 0.0;
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    total += rows[i];
    if (!ignored(p, labels[i])) ++count;
  }
  if (p.reduction == NNP_REDUCTION_MEAN) total /= static_cast<double>(count);  // 0/0 -> NaN
  loss[0] = static_cast<float>(total);
}

void softmax_cross_entropy_backward(const op_call& c) {
  const auto& p = c.params_as<nnp_softmax_cross_entropy_params>();
  const DLTensor* L = c.in(0);
  const int64_t n = L->shape[0], classes = L->shape[1];
  const float* logits = f32(L);
  const int64_t* labels = data_ptr<int64_t>(*c.in(1));
  const float* dloss = f32(c.in(2));
  float* dlogits = f32(c.out(0));
  const bool none = p.reduction == NNP_REDUCTION_NONE;
  float scale_all = none ? 1.0f : dloss[0];
  if (p.reduction == NNP_REDUCTION_MEAN) {
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i) count += ignored(p, labels[i]) ? 0 : 1;
    scale_all = count > 0 ? static_cast<float>(static_cast<double>(dloss[0]) / count) : 0.0f;
  }
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, classes));
  parallel_for(n, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const float* x = logits + i * classes;
      float* dx = dlogits + i * classes;
      const int64_t label = labels[i];
      if (ignored(p, label)) {
        std::fill(dx, dx + classes, 0.0f);
        continue;
      }
      const float g = none ? dloss[i] : scale_all;
      if (label < 0 || label >= classes) {
        std::fill(dx, dx + classes, std::numeric_limits<float>::quiet_NaN());
        continue;
      }
      // dx_j = g * p_j; dx_label = g * (p_label - 1) = -g * (sum of the other e_j) / sum:
      // p_label - 1 in float32 cancels to a multiple of 2^-24 when p_label is near 1.
      float m, sum, others = 0.0f;
      row_stats(x, classes, &m, &sum, dx);
      for (int64_t j = 0; j < classes; ++j)
        if (j != label) others += dx[j];
      const float k = g / sum;
      for (int64_t j = 0; j < classes; ++j) dx[j] *= k;
      dx[label] = -(others * k);
    }
  });
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kLossOps[] = {
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD,       kit::f32,            softmax_cross_entropy_forward},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD,      kit::f32,            softmax_cross_entropy_backward},
    {NNP_OP_NLL_LOSS_FORWARD,                    kit::f32,            nll_loss_forward},
    {NNP_OP_NLL_LOSS_BACKWARD,                   kit::f32,            nll_loss_backward},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_FORWARD,  kit::f32,            softmax_cross_entropy_loss_forward},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_BACKWARD, kit::f32,            softmax_cross_entropy_loss_backward},
};
// clang-format on
extern const kit::op_row_list kLossRows = kit::row_list(kLossOps);

}  // namespace nnp::cpu
