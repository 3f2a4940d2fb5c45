// loss.cpp — reference losses, forward and backward, in double:
// softmax cross-entropy over [N, C] logits with int64 class labels (NNP_OP_SOFTMAX_CROSS_ENTROPY_*,
// ONNX SoftmaxCrossEntropyLoss without weights), per sample:
//   log_prob_i = log_softmax(logits_i)
//   loss_i     = -log_prob_i[label_i]; 0 if label_i == ignore_index; NaN if label_i is outside
//                [0, C) and not ignored
//   mean = sum_i loss_i / count, count = number of non-ignored samples (0/0 = NaN, as ONNX);
//   sum  = sum_i loss_i;  none = loss_i per sample
//   backward: dlogits_i = (softmax(logits_i) - onehot(label_i)) * dloss_i (/ count for mean);
//   ignored rows are 0; a non-ignored out-of-range label gives a NaN row.
// The ONNX losses of ABI 1.2, NegativeLogLikelihoodLoss (opset 22, NNP_OP_NLL_LOSS_*) and
// SoftmaxCrossEntropyLoss (opset 13, NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_*), with per-class
// weights, every reduction and ignore_index. input / scores are viewed as [N, C, D]
// (D = d1*..*dk), targets as [N, D]; position j = n*D + d. Per position:
//   w_j = 0 if ignored, NaN if the target is outside [0, C) and not ignored, else weight[t]
//   (1 without weight);  lp = input (NLL) or x - max - log(sum exp(x - max)) over C (SCE)
//   loss_j = -lp[n, t, d] * w_j  (0 if ignored, NaN if out of range)
//   none: loss_j;  sum: sum_j loss_j;  mean: sum_j loss_j / sum_j w_j  (0/0 = NaN, as ONNX)
//   backward, g_j = dloss_j (none), dloss (sum) or dloss / sum_j w_j (mean):
//   NLL: dinput[n, c, d] = c == t ? -w_j * g_j : 0
//   SCE: dscores[n, c, d] = (exp(lp[n, c, d]) - (c == t)) * (w_j * g_j)
//   ignored positions are 0 over c, out-of-range ones NaN over c.
#include "reference.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace ref {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The log-softmax of the C classes of one position, x[c * stride], into out[c * stride]:
// x - max - log(sum_c exp(x_c - max)).
template <typename T>
void log_softmax(const T* x, int64_t C, int64_t stride, double* out) {
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < C; ++c) mx = std::max(mx, double(x[c * stride]));
  const double log_sum =
      log_sum_exp_shifted([x, stride](int64_t c) { return double(x[c * stride]); }, C, mx);
  for (int64_t c = 0; c < C; ++c) out[c * stride] = (double(x[c * stride]) - mx) - log_sum;
}

// ---- softmax cross-entropy ([N, C], no weights) -------------------------------------------------
bool is_ignored(const nnp_softmax_cross_entropy_params& p, int64_t label) {
  return p.has_ignore_index != 0 && label == p.ignore_index;
}

// Number of non-ignored samples (the mean's divisor).
int64_t count_samples(const nnp_softmax_cross_entropy_params& p, const int64_t* labels, int64_t N) {
  int64_t count = 0;
  for (int64_t i = 0; i < N; ++i) count += is_ignored(p, labels[i]) ? 0 : 1;
  return count;
}

// What forward and backward both read: the params, logits [N, C] (input 0), labels [N] (input 1).
template <typename T>
struct loss_inputs {
  nnp_softmax_cross_entropy_params p;
  int64_t N, C;
  const T* logits;
  const int64_t* labels;
};

template <typename T>
loss_inputs<T> loss_inputs_of(const op_args& a) {
  const DLTensor& L = *a.in(0);
  return loss_inputs<T>{read_params<nnp_softmax_cross_entropy_params>(a.params), L.shape[0],
                        L.shape[1], nnp::data_ptr<const T>(L),
                        nnp::data_ptr<const int64_t>(*a.in(1))};
}

template <typename T>
void ce_forward_t(const op_args& args) {
  const auto [p, N, C, logits, labels] = loss_inputs_of<T>(args);
  T* loss = nnp::data_ptr<T>(*args.out(0));
  T* log_prob = opt_out<T>(args, 1);

  // A row buffer only when there are rows: with N = 0, C may be huge (logits [0, 2^62]).
  std::vector<double> lp(static_cast<size_t>(N > 0 ? C : 0));
  double total = 0.0;
  for (int64_t i = 0; i < N; ++i) {
    log_softmax(logits + i * C, C, 1, lp.data());
    if (log_prob != nullptr)
      for (int64_t c = 0; c < C; ++c) log_prob[i * C + c] = static_cast<T>(lp[size_t(c)]);
    const int64_t label = labels[i];
    double li = 0.0;
    if (!is_ignored(p, label)) li = (label >= 0 && label < C) ? -lp[size_t(label)] : kNaN;
    if (p.reduction == NNP_REDUCTION_NONE) loss[i] = static_cast<T>(li);
    total += li;
  }
  if (p.reduction == NNP_REDUCTION_SUM) loss[0] = static_cast<T>(total);
  if (p.reduction == NNP_REDUCTION_MEAN)
    loss[0] = static_cast<T>(total / double(count_samples(p, labels, N)));
}

template <typename T>
void ce_backward_t(const op_args& args) {
  const auto [p, N, C, logits, labels] = loss_inputs_of<T>(args);
  const T* dloss = nnp::data_ptr<const T>(*args.in(2));
  T* dlogits = nnp::data_ptr<T>(*args.out(0));

  const double count = double(count_samples(p, labels, N));
  std::vector<double> lp(static_cast<size_t>(N > 0 ? C : 0));  // as in forward_t
  for (int64_t i = 0; i < N; ++i) {
    T* row = dlogits + i * C;
    const int64_t label = labels[i];
    if (is_ignored(p, label)) {
      for (int64_t c = 0; c < C; ++c) row[c] = T(0);
      continue;
    }
    // The upstream gradient of sample i: dloss[i] for none, the scalar otherwise (/ count for
    // mean; count >= 1 here because sample i is not ignored).
    double d = p.reduction == NNP_REDUCTION_NONE ? double(dloss[i]) : double(dloss[0]);
    if (p.reduction == NNP_REDUCTION_MEAN) d /= count;
    const bool in_range = label >= 0 && label < C;
    log_softmax(logits + i * C, C, 1, lp.data());
    // softmax - onehot: exp(lp) - 1 for the label is expm1(lp), exact where p is near 1.
    for (int64_t c = 0; c < C; ++c) {
      const double lpc = lp[size_t(c)];
      const double g = c == label ? std::expm1(lpc) : std::exp(lpc);
      row[c] = static_cast<T>(in_range ? g * d : kNaN);
    }
  }
}

// ---- ONNX NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss ([N, C, D], weights) ---------
// What forward and backward read: the (shared-layout) params, the [N, C, D] view, the int64
// targets and the optional weight.
template <typename T>
struct loss_view {
  int32_t reduction;  // 0 read as MEAN
  bool has_ignore;
  int64_t ignore_index;
  int64_t N, C, D;
  const T* x;
  const int64_t* target;
  const T* weight;  // nullptr: every weight 1

  // w_j and the class of position j (-1 when ignored or out of range).
  double weight_of(int64_t j, int64_t* cls) const {
    const int64_t t = target[j];
    *cls = -1;
    if (has_ignore && t == ignore_index) return 0.0;
    if (t < 0 || t >= C) return kNaN;
    *cls = t;
    return weight != nullptr ? double(weight[t]) : 1.0;
  }
  bool ignored(int64_t j) const { return has_ignore && target[j] == ignore_index; }
  int64_t at(int64_t n, int64_t c, int64_t d) const { return (n * C + c) * D + d; }
};

template <typename T, typename P>
loss_view<T> view_of(const op_args& a, size_t weight_index) {
  const auto p = read_params<P>(a.params);
  const DLTensor& X = *a.in(0);
  return loss_view<T>{p.reduction == 0 ? int32_t{NNP_REDUCTION_MEAN} : p.reduction,
                      p.has_ignore_index != 0,
                      p.ignore_index,
                      X.shape[0],
                      X.shape[1],
                      dims_product(X, 2, X.ndim),
                      nnp::data_ptr<const T>(X),
                      nnp::data_ptr<const int64_t>(*a.in(1)),
                      opt_in<T>(a, weight_index)};
}

// Log-probabilities of every element: the input itself (NLL) or the log-softmax over C (SCE).
template <typename T>
std::vector<double> log_probs(const loss_view<T>& v, bool softmax) {
  std::vector<double> lp(static_cast<size_t>(v.N * v.C * v.D));
  for (int64_t n = 0; n < v.N; ++n)
    for (int64_t d = 0; d < v.D; ++d) {
      if (!softmax) {
        for (int64_t c = 0; c < v.C; ++c) lp[size_t(v.at(n, c, d))] = double(v.x[v.at(n, c, d)]);
        continue;
      }
      log_softmax(v.x + v.at(n, 0, d), v.C, v.D, lp.data() + v.at(n, 0, d));
    }
  return lp;
}

// sum_j w_j (the mean's divisor).
template <typename T>
double weight_sum(const loss_view<T>& v) {
  double s = 0.0;
  int64_t cls;
  for (int64_t j = 0; j < v.N * v.D; ++j) s += v.weight_of(j, &cls);
  return s;
}

template <typename T, typename P, bool Softmax>
void forward_t(const op_args& args) {
  const loss_view<T> v = view_of<T, P>(args, 2);
  T* loss = nnp::data_ptr<T>(*args.out(0));
  T* log_prob = Softmax ? opt_out<T>(args, 1) : nullptr;
  const std::vector<double> lp = log_probs(v, Softmax);
  if (log_prob != nullptr)
    for (size_t i = 0; i < lp.size(); ++i) log_prob[i] = static_cast<T>(lp[i]);
  double total = 0.0;
  for (int64_t n = 0; n < v.N; ++n)
    for (int64_t d = 0; d < v.D; ++d) {
      const int64_t j = n * v.D + d;
      int64_t cls;
      const double w = v.weight_of(j, &cls);
      double l = 0.0;
      if (!v.ignored(j)) l = cls >= 0 ? -lp[size_t(v.at(n, cls, d))] * w : kNaN;
      if (v.reduction == NNP_REDUCTION_NONE) loss[j] = static_cast<T>(l);
      total += l;
    }
  if (v.reduction == NNP_REDUCTION_SUM) loss[0] = static_cast<T>(total);
  if (v.reduction == NNP_REDUCTION_MEAN) loss[0] = static_cast<T>(total / weight_sum(v));
}

template <typename T, typename P, bool Softmax>
void backward_t(const op_args& args) {
  const loss_view<T> v = view_of<T, P>(args, 3);
  const T* dloss = nnp::data_ptr<const T>(*args.in(2));
  T* dx = nnp::data_ptr<T>(*args.out(0));
  const std::vector<double> lp = log_probs(v, Softmax);
  const double divisor = v.reduction == NNP_REDUCTION_MEAN ? weight_sum(v) : 1.0;
  for (int64_t n = 0; n < v.N; ++n)
    for (int64_t d = 0; d < v.D; ++d) {
      const int64_t j = n * v.D + d;
      int64_t cls;
      const double w = v.weight_of(j, &cls);
      const double g =
          v.reduction == NNP_REDUCTION_NONE ? double(dloss[j]) : double(dloss[0]) / divisor;
      const double k = w * g;
      for (int64_t c = 0; c < v.C; ++c) {
        const int64_t e = v.at(n, c, d);
        double out;
        if (v.ignored(j))
          out = 0.0;
        else if (cls < 0)
          out = kNaN;
        else if (Softmax)
          // softmax - onehot: exp(lp) - 1 for the label is expm1(lp), exact where p is near 1.
          out = (c == cls ? std::expm1(lp[size_t(e)]) : std::exp(lp[size_t(e)])) * k;
        else
          out = c == cls ? -k : 0.0;
        dx[e] = static_cast<T>(out);
      }
    }
}

template <typename T>
void nll_forward_t(const op_args& a) {
  forward_t<T, nnp_nll_loss_params, false>(a);
}
template <typename T>
void nll_backward_t(const op_args& a) {
  backward_t<T, nnp_nll_loss_params, false>(a);
}
template <typename T>
void sce_forward_t(const op_args& a) {
  forward_t<T, nnp_softmax_cross_entropy_loss_params, true>(a);
}
template <typename T>
void sce_backward_t(const op_args& a) {
  backward_t<T, nnp_softmax_cross_entropy_loss_params, true>(a);
}

}  // namespace

REF_FLOAT_OP(softmax_cross_entropy_forward, ce_forward_t, in(0))
REF_FLOAT_OP(softmax_cross_entropy_backward, ce_backward_t, in(0))
REF_FLOAT_OP(nll_loss_forward, nll_forward_t, in(0))
REF_FLOAT_OP(nll_loss_backward, nll_backward_t, in(0))
REF_FLOAT_OP(sce_loss_forward, sce_forward_t, in(0))
REF_FLOAT_OP(sce_loss_backward, sce_backward_t, in(0))

// The rows of this file's kernels (rows.hpp lists the files).
// clang-format off
const nnp::kit::op_row kLossOps[] = {
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD,       kFloats,        softmax_cross_entropy_forward},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD,      kFloats,        softmax_cross_entropy_backward},
    {NNP_OP_NLL_LOSS_FORWARD,                    kFloats,        nll_loss_forward},
    {NNP_OP_NLL_LOSS_BACKWARD,                   kFloats,        nll_loss_backward},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_FORWARD,  kFloats,        sce_loss_forward},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_BACKWARD, kFloats,        sce_loss_backward},
};
// clang-format on
extern const nnp::kit::op_row_list kLossRows = nnp::kit::row_list(kLossOps);

}  // namespace ref
