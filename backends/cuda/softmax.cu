// softmax.cu — own kernels for softmax / log-softmax over any axis (forward, backward) and the
// fused softmax cross-entropy loss (ONNX SoftmaxCrossEntropyLoss: mean/sum/none, ignore_index).
// One warp per row (outer x inner position), three passes (max, sum of exp, write) with shuffle
// reductions, float32 accumulation; the loss never materialises the softmax unless asked to.
#include "common.cuh"

#include <cmath>

namespace nnp::cuda {
namespace {

constexpr int kWarpsPerBlock = kThreads / 32;

// Rows are (o, i) pairs; element c of a row is at o*C*I + c*I + i.
struct rows {
  int64_t count, C, I;
  __device__ __forceinline__ int64_t base(int64_t row) const { return (row / I) * C * I + row % I; }
};

unsigned grid_for_rows(int64_t n) {
  int64_t b = (n + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (b < 1) b = 1;
  if (b > (int64_t{1} << 20)) b = int64_t{1} << 20;
  return static_cast<unsigned>(b);
}

__device__ __forceinline__ int64_t warp_id() {
  return (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) >> 5;
}
__device__ __forceinline__ int64_t warp_count() { return (int64_t{gridDim.x} * blockDim.x) >> 5; }

// The max m of a row (elements x[c * stride], c in [0, C)) and the sum of exp(x - m) over it,
// each reduced across the warp whose lane strides the row by 32; every lane gets both.
struct row_stats {
  float max, sum_exp;
};
template <typename T>
__device__ __forceinline__ row_stats warp_row_stats(const T* x, int64_t C, int64_t stride,
                                                    int lane) {
  float m = -INFINITY;
  for (int64_t c = lane; c < C; c += 32) m = max_op()(m, to_f(x[c * stride]));
  m = warp_reduce(m, max_op());
  float sum = 0.0f;
  for (int64_t c = lane; c < C; c += 32) sum += expf(to_f(x[c * stride]) - m);
  sum = warp_reduce(sum, sum_op());
  return row_stats{m, sum};
}

template <typename T>
__global__ void softmax_forward_kernel(const T* x, T* y, rows r, int log) {
  const int lane = threadIdx.x & 31;
  for (int64_t row = warp_id(); row < r.count; row += warp_count()) {
    const int64_t b = r.base(row);
    const row_stats st = warp_row_stats(x + b, r.C, r.I, lane);
    const float m = st.max, sum = st.sum_exp;
    const float log_sum = logf(sum);
    const float inv_sum = 1.0f / sum;
    for (int64_t c = lane; c < r.C; c += 32) {
      const float v = to_f(x[b + c * r.I]) - m;
      y[b + c * r.I] = from_f<T>(log ? v - log_sum : expf(v) * inv_sum);
    }
  }
}

template <typename T>
__global__ void softmax_backward_kernel(const T* y, const T* dy, T* dx, rows r, int log) {
  const int lane = threadIdx.x & 31;
  for (int64_t row = warp_id(); row < r.count; row += warp_count()) {
    const int64_t b = r.base(row);
    float dot = 0.0f;
    for (int64_t c = lane; c < r.C; c += 32) {
      const int64_t k = b + c * r.I;
      dot += log ? to_f(dy[k]) : to_f(dy[k]) * to_f(y[k]);
    }
    dot = warp_reduce(dot, sum_op());
    for (int64_t c = lane; c < r.C; c += 32) {
      const int64_t k = b + c * r.I;
      const float yv = to_f(y[k]), g = to_f(dy[k]);
      dx[k] = from_f<T>(log ? g - expf(yv) * dot : yv * (g - dot));
    }
  }
}

// ---- cross-entropy ------------------------------------------------------------------------------
struct ce_args {
  int64_t N, C;
  int has_ignore;
  int64_t ignore_index;
};

__device__ __forceinline__ bool ignored(const ce_args& a, int64_t label) {
  return a.has_ignore && label == a.ignore_index;
}

// Per row: loss_i (to row_loss, float) and, if wanted, log_prob. valid[i] = 1 unless ignored.
__global__ void ce_forward_rows_kernel(const float* logits, const int64_t* labels, float* row_loss,
                                       float* row_valid, float* log_prob, ce_args a) {
  const int lane = threadIdx.x & 31;
  for (int64_t n = warp_id(); n < a.N; n += warp_count()) {
    const float* x = logits + n * a.C;
    const row_stats st = warp_row_stats(x, a.C, 1, lane);
    // (x - max) - log(sum), in that order: max + log(sum) rounded first loses the low bits
    // of a large max.
    const float log_sum = logf(st.sum_exp);
    if (log_prob != nullptr)
      for (int64_t c = lane; c < a.C; c += 32) log_prob[n * a.C + c] = (x[c] - st.max) - log_sum;
    if (lane == 0) {
      const int64_t label = labels[n];
      float loss, valid;
      if (ignored(a, label)) {
        loss = 0.0f;
        valid = 0.0f;
      } else if (label < 0 || label >= a.C) {
        loss = NAN;
        valid = 1.0f;
      } else {
        loss = log_sum - (x[label] - st.max);
        valid = 1.0f;
      }
      row_loss[n] = loss;
      if (row_valid != nullptr) row_valid[n] = valid;
    }
  }
}

// One block: out[0] = sum(v) (/ sum(w) if w != NULL).
__global__ void sum_ratio_kernel(const float* v, const float* w, int64_t n, float* out) {
  float sv = 0.0f, sw = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    sv += v[i];
    if (w != nullptr) sw += w[i];
  }
  sv = block_reduce(sv, sum_op(), 0.0f);
  if (w != nullptr) sw = block_reduce(sw, sum_op(), 0.0f);
  if (threadIdx.x == 0) out[0] = w != nullptr ? sv / sw : sv;
}

// One block: *count = number of non-ignored labels.
__global__ void ce_count_kernel(const int64_t* labels, ce_args a, float* count) {
  float k = 0.0f;
  for (int64_t i = threadIdx.x; i < a.N; i += blockDim.x) k += ignored(a, labels[i]) ? 0.0f : 1.0f;
  k = block_reduce(k, sum_op(), 0.0f);
  if (threadIdx.x == 0) count[0] = k;
}

// dlogits_i = (softmax(logits_i) - onehot(label_i)) * g_i; g_i = dloss_i (none) or dloss (sum),
// dloss / count (mean); ignored rows are 0.
__global__ void ce_backward_kernel(const float* logits, const int64_t* labels, const float* dloss,
                                   const float* count, float* dlogits, ce_args a, int reduction) {
  const int lane = threadIdx.x & 31;
  for (int64_t n = warp_id(); n < a.N; n += warp_count()) {
    const float* x = logits + n * a.C;
    float* dx = dlogits + n * a.C;
    const int64_t label = labels[n];
    if (ignored(a, label)) {
      for (int64_t c = lane; c < a.C; c += 32) dx[c] = 0.0f;
      continue;
    }
    float g = reduction == NNP_REDUCTION_NONE ? dloss[n] : dloss[0];
    if (reduction == NNP_REDUCTION_MEAN) g /= count[0];
    const row_stats st = warp_row_stats(x, a.C, 1, lane);
    const float m = st.max, inv_sum = 1.0f / st.sum_exp;
    const bool label_ok = label >= 0 && label < a.C;
    // dx_label = g * (p_label - 1) = -g * (the other classes' p): p_label - 1 in float32
    // cancels to a multiple of 2^-24 when p_label is near 1.
    float others = 0.0f;
    for (int64_t c = lane; c < a.C; c += 32) {
      const float p = expf(x[c] - m) * inv_sum;
      if (label_ok && c == label) continue;
      dx[c] = (label_ok ? p : NAN) * g;
      others += p;
    }
    others = warp_reduce(others, sum_op());
    if (label_ok && lane == label % 32) dx[label] = -others * g;
  }
}

// The rows of a softmax over p.axis of x (input 0; the same for forward and backward).
rows softmax_rows(const DLTensor& x, const nnp_softmax_params& p) {
  const int axis = normalize_axis(p.axis, x.ndim);
  if (axis < 0) fail(NNP_STATUS_INVALID_ARGUMENT, format("softmax axis %d out of range", p.axis));
  rows r{1, x.shape[axis], 1};
  for (int d = 0; d < axis; ++d) r.count *= x.shape[d];
  for (int d = axis + 1; d < x.ndim; ++d) r.I *= x.shape[d];
  r.count *= r.I;
  return r;
}

// What forward and backward of the softmax cross-entropy share: the params, the geometry, the
// logits (input 0), the labels (input 1) and the grid over the rows.
struct cross_entropy_call {
  nnp_softmax_cross_entropy_params p;
  ce_args a;
  const float* x;
  const int64_t* lab;
  unsigned grid;
};

cross_entropy_call cross_entropy_call_of(const op_call& c) {
  const auto p = read_params<nnp_softmax_cross_entropy_params>(c.params);
  const DLTensor& logits = *c.in(0);
  const DLTensor& labels = *c.in(1);
  const ce_args a{logits.shape[0], logits.shape[1], p.has_ignore_index, p.ignore_index};
  return {p, a, data_ptr<const float>(logits), data_ptr<const int64_t>(labels), grid_for_rows(a.N)};
}

// A softmax call's rows over input 0, and launch(type tag, rows, log, grid) in its dtype unless
// there is nothing to do.
template <typename Launch>
void launch_rows(const op_call& c, Launch launch) {
  const auto p = read_params<nnp_softmax_params>(c.params);
  const rows r = softmax_rows(*c.in(0), p);
  if (r.count == 0 || r.C == 0) return;
  dispatch_float(elem_of(c.in(0)->dtype),
                 [&](auto tg) { launch(tg, r, p.log, grid_for_rows(r.count)); });
  NNP_CUDA_CHECK_LAUNCH();
}

}  // namespace

void op_softmax_forward(stream& s, const op_call& c) {
  launch_rows(c, [&](auto tg, const rows& r, int32_t log, unsigned grid) {
    using T = typename decltype(tg)::type;
    softmax_forward_kernel<<<grid, kThreads, 0, s.handle>>>(data_ptr<const T>(*c.in(0)),
                                                            data_ptr<T>(*c.out(0)), r, log);
  });
}

void op_softmax_backward(stream& s, const op_call& c) {
  launch_rows(c, [&](auto tg, const rows& r, int32_t log, unsigned grid) {
    using T = typename decltype(tg)::type;
    softmax_backward_kernel<<<grid, kThreads, 0, s.handle>>>(
        data_ptr<const T>(*c.in(0)), data_ptr<const T>(*c.in(1)), data_ptr<T>(*c.out(0)), r, log);
  });
}

void op_softmax_cross_entropy_forward(stream& s, const op_call& c) {
  const cross_entropy_call ce = cross_entropy_call_of(c);
  const ce_args& a = ce.a;
  const DLTensor& loss = *c.out(0);
  const DLTensor* log_prob = c.out(1);
  float* lp = (log_prob != nullptr && a.C > 0) ? data_ptr<float>(*log_prob) : nullptr;
  if (ce.p.reduction == NNP_REDUCTION_NONE) {
    if (a.N == 0) return;
    ce_forward_rows_kernel<<<ce.grid, kThreads, 0, s.handle>>>(ce.x, ce.lab, data_ptr<float>(loss),
                                                               nullptr, lp, a);
    NNP_CUDA_CHECK_LAUNCH();
    return;
  }
  float* tmp = static_cast<float*>(s.scratch(kScratchTemp0, 2 * sizeof(float) * (a.N + 1)));
  float* row_loss = tmp;
  float* row_valid = tmp + a.N;
  if (a.N > 0) {
    ce_forward_rows_kernel<<<ce.grid, kThreads, 0, s.handle>>>(ce.x, ce.lab, row_loss, row_valid,
                                                               lp, a);
    NNP_CUDA_CHECK_LAUNCH();
  }
  sum_ratio_kernel<<<1, kThreads, 0, s.handle>>>(
      row_loss, ce.p.reduction == NNP_REDUCTION_MEAN ? row_valid : nullptr, a.N,
      data_ptr<float>(loss));
  NNP_CUDA_CHECK_LAUNCH();
}

void op_softmax_cross_entropy_backward(stream& s, const op_call& c) {
  const cross_entropy_call ce = cross_entropy_call_of(c);
  const ce_args& a = ce.a;
  const DLTensor& dloss = *c.in(2);
  const DLTensor& dlogits = *c.out(0);
  if (a.N == 0 || a.C == 0) return;
  float* count = nullptr;
  if (ce.p.reduction == NNP_REDUCTION_MEAN) {
    count = static_cast<float*>(s.scratch(kScratchTemp0, sizeof(float)));
    ce_count_kernel<<<1, kThreads, 0, s.handle>>>(ce.lab, a, count);
    NNP_CUDA_CHECK_LAUNCH();
  }
  ce_backward_kernel<<<ce.grid, kThreads, 0, s.handle>>>(ce.x, ce.lab, data_ptr<const float>(dloss),
                                                         count, data_ptr<float>(dlogits), a,
                                                         ce.p.reduction);
  NNP_CUDA_CHECK_LAUNCH();
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kSoftmaxOps[] = {
    {NNP_OP_SOFTMAX_FORWARD,                kHalfFloats, on_stream<op_softmax_forward>},
    {NNP_OP_SOFTMAX_BACKWARD,               kHalfFloats, on_stream<op_softmax_backward>},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD,  kit::f32,         on_stream<op_softmax_cross_entropy_forward>},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD, kit::f32,         on_stream<op_softmax_cross_entropy_backward>},
};
// clang-format on
extern const kit::op_row_list kSoftmaxRows = kit::row_list(kSoftmaxOps);

}  // namespace nnp::cuda
