// loss.cpp — reference softmax cross-entropy over [N, C] logits with int64 class labels
// (ONNX SoftmaxCrossEntropyLoss without weights), forward and backward. Per sample, in double:
//   log_prob_i = log_softmax(logits_i)
//   loss_i     = -log_prob_i[label_i]; 0 if label_i == ignore_index; NaN if label_i is outside
//                [0, C) and not ignored
//   mean = sum_i loss_i / count, count = number of non-ignored samples (0/0 = NaN, as ONNX);
//   sum  = sum_i loss_i;  none = loss_i per sample
// Backward: dlogits_i = (softmax(logits_i) - onehot(label_i)) * dloss_i (/ count for mean);
// ignored rows are 0; a non-ignored out-of-range label gives a NaN row.
#include "reference.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace ref {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool is_ignored(const nnp_softmax_cross_entropy_params& p, int64_t label) {
  return p.has_ignore_index != 0 && label == p.ignore_index;
}

// Row i's log-softmax into out[0..C): x - max - log(sum_c exp(x_c - max)).
template <typename T>
void log_softmax_row(const T* row, int64_t C, double* out) {
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < C; ++c) mx = std::max(mx, double(row[c]));
  const double log_sum = log_sum_exp_shifted([row](int64_t c) { return double(row[c]); }, C, mx);
  for (int64_t c = 0; c < C; ++c) out[c] = double(row[c]) - mx - log_sum;
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
void forward_t(const op_args& args) {
  const auto [p, N, C, logits, labels] = loss_inputs_of<T>(args);
  T* loss = nnp::data_ptr<T>(*args.out(0));
  T* log_prob = opt_out<T>(args, 1);

  // A row buffer only when there are rows: with N = 0, C may be huge (logits [0, 2^62]).
  std::vector<double> lp(static_cast<size_t>(N > 0 ? C : 0));
  double total = 0.0;
  for (int64_t i = 0; i < N; ++i) {
    log_softmax_row(logits + i * C, C, lp.data());
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
void backward_t(const op_args& args) {
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
    log_softmax_row(logits + i * C, C, lp.data());
    // softmax - onehot: exp(lp) - 1 for the label is expm1(lp), exact where p is near 1.
    for (int64_t c = 0; c < C; ++c) {
      const double lpc = lp[size_t(c)];
      const double g = c == label ? std::expm1(lpc) : std::exp(lpc);
      row[c] = static_cast<T>(in_range ? g * d : kNaN);
    }
  }
}

}  // namespace

REF_FLOAT_OP(softmax_cross_entropy_forward, forward_t, in(0))
REF_FLOAT_OP(softmax_cross_entropy_backward, backward_t, in(0))

}  // namespace ref
