// loss.cu — the ONNX losses of ABI 1.2: NNP_OP_NLL_LOSS_* (NegativeLogLikelihoodLoss) and
// NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_* (SoftmaxCrossEntropyLoss), forward and backward, with class
// weights, every reduction and ignore_index; arithmetic in float32, products with the weight and
// every sum in float64. The rows list float32 only: the kernels are templated over the 16-bit
// types too, but a mean over many positions puts float16 gradients among the subnormals (about
// 1e-6 for [16, 21, 32, 32]), too coarse for the conformance suite's float16 tolerance.
//
// The rules are the reference's (backends/reference/loss.cpp). The input is viewed as
// [N, C, D] (D = d1*..*dk) and the targets as positions j = n*D + d; w_j is 0 for an ignored
// target, NaN for one outside [0, C) that is not ignored, else weight[t] (1 without weights);
// loss_j = -lp[n, t, d] * w_j (0 when ignored, NaN when out of range); mean = sum_j loss_j /
// sum_j w_j (0/0 = NaN: every target ignored, or no position). Log-softmax is
// (x - max) - log1p(rest), rest = the sum of exp(x - max) over every class but one maximum, so a
// class holding nearly all the mass keeps its tiny loss (as the reference); a slice whose max is
// not finite (+inf, NaN, or every class -inf) is NaN throughout (the reference's inf - inf).
// Backward: g_j = dloss_j (none), dloss (sum) or dloss / sum_j w_j (mean), k = w_j * g_j;
// NLL: dx = -k at the target's class, else 0; SCE: dx = softmax * k, and the target's class
// gets minus the sum of the other classes' (p - 1 cancels in float32; the cpu backend's rule).
// Ignored positions are 0 over the classes, out-of-range ones NaN.
//
// Speed: memory-bound passes with coalesced loads (a position's later sweeps over its classes
// hit the cache). With D = 1 a warp takes a position, its
// lanes striding the C contiguous classes (shuffle reductions); with D > 1 a thread takes a
// position and loops over its classes, D apart, so a warp's loads are contiguous. Reductions to
// a scalar are deterministic, without atomics: each block of a fixed grid writes its float64
// partial sums to scratch, and one block adds them in a fixed order.
#include "common.cuh"

#include <cmath>

namespace nnp::cuda {
namespace {

// Grid of the position kernels, and so the most partial sums a reduction adds.
constexpr int64_t kMaxBlocks = 2048;

// What every kernel reads besides its tensors.
struct loss_args {
  int64_t C, D, P;    // classes, positions per sample (d1*..*dk), positions N*D
  int32_t reduction;  // NNP_REDUCTION_MEAN (0 already read as MEAN), _SUM or _NONE
  int32_t has_ignore;
  int64_t ignore_index;
  const int64_t* target;  // [P]
};

// w_j of position j and its class (*cls = -1 when ignored or out of range): 0 when ignored,
// NaN when the target is outside [0, C) and not ignored, else weight[t] (1 without weights).
template <typename T>
__device__ __forceinline__ float weight_of(const loss_args& a, const T* weight, int64_t j,
                                           int64_t* cls) {
  const int64_t t = a.target[j];
  *cls = -1;
  if (a.has_ignore && t == a.ignore_index) return 0.0f;
  if (t < 0 || t >= a.C) return NAN;
  *cls = t;
  return weight != nullptr ? to_f(weight[t]) : 1.0f;
}

// g_j: dloss[j] (none), dloss[0] (sum) or dloss[0] / the weight sum (mean).
template <typename T>
__device__ __forceinline__ double upstream(const loss_args& a, const T* dloss,
                                           const double* weight_sum, int64_t j) {
  if (a.reduction == NNP_REDUCTION_NONE) return static_cast<double>(to_f(dloss[j]));
  const double g = static_cast<double>(to_f(dloss[0]));
  return a.reduction == NNP_REDUCTION_MEAN ? g / *weight_sum : g;
}

// ---- groups of G lanes (G = 1: a thread, G = 32: a warp) that take one position each ---------
template <int G>
struct group_iter {
  int64_t first, step;  // the group's first position and the stride to its next one
  int lane;             // lane in the group
};
// blockDim.x is a multiple of 32, so a group of 32 is a whole warp and the lanes of a group see
// the same positions (the shuffles below run with every lane of the warp).
template <int G>
__device__ __forceinline__ group_iter<G> groups() {
  static_assert(G == 1 || G == 32, "a group is a thread or a warp");
  const int64_t tid = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  return group_iter<G>{tid / G, int64_t{gridDim.x} * blockDim.x / G,
                       static_cast<int>(threadIdx.x % G)};
}
template <int G>
__device__ __forceinline__ float group_sum(float v) {
  for (int o = G / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <int G>
__device__ __forceinline__ float group_max(float v) {
  for (int o = G / 2; o > 0; o >>= 1) v = max_op()(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sums (l, w) over the block in a fixed order; the result is valid in thread 0. Every thread
// of the block calls it, once per kernel.
__device__ double2 block_sum2(double l, double w) {
  __shared__ double sl[32], sw[32];
  for (int o = 16; o > 0; o >>= 1) {
    l += __shfl_xor_sync(0xffffffffu, l, o);
    w += __shfl_xor_sync(0xffffffffu, w, o);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    sl[warp] = l;
    sw[warp] = w;
  }
  __syncthreads();
  if (warp == 0) {
    const int warps = static_cast<int>(blockDim.x >> 5);
    l = lane < warps ? sl[lane] : 0.0;
    w = lane < warps ? sw[lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1) {
      l += __shfl_xor_sync(0xffffffffu, l, o);
      w += __shfl_xor_sync(0xffffffffu, w, o);
    }
  }
  return make_double2(l, w);
}

// One block: adds the `count` partial sums (loss, weight) in order; loss[0] (when not null) =
// the loss sum (SUM) or its ratio to the weight sum (MEAN, 0/0 = NaN); *weight_sum (when not
// null) = the weight sum.
template <typename T>
__global__ void finish_kernel(const double2* partial, int64_t count, int32_t reduction, T* loss,
                              double* weight_sum) {
  double l = 0.0, w = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    l += partial[i].x;
    w += partial[i].y;
  }
  const double2 s = block_sum2(l, w);
  if (threadIdx.x == 0) {
    if (loss != nullptr)
      loss[0] = from_f<T>(static_cast<float>(reduction == NNP_REDUCTION_MEAN ? s.x / s.y : s.x));
    if (weight_sum != nullptr) *weight_sum = s.y;
  }
}

// ---- nll_loss ---------------------------------------------------------------------------------
// Position j's loss_j = -lp * w_j (w_j itself when cls < 0: 0 ignored, NaN out of range), lp()
// giving the target class's log-probability: the product in double, as the sums (a subnormal
// weight would keep few bits in float32). Stored to loss[j] (loss NULL: not) and added to the
// thread's sums *sl (of loss_j) and *sw (of w_j).
template <typename T, typename LogProb>
__device__ __forceinline__ void add_position(int64_t j, int64_t cls, float w, LogProb lp, T* loss,
                                             double* sl, double* sw) {
  const double l =
      cls < 0 ? static_cast<double>(w) : -(static_cast<double>(lp()) * static_cast<double>(w));
  if (loss != nullptr) loss[j] = from_f<T>(static_cast<float>(l));
  *sl += l;
  *sw += w;
}

// The block's sums (sl, sw) to partial[blockIdx.x] (partial NULL: none). Every thread of the
// block calls it.
__device__ __forceinline__ void store_block_sums(double2* partial, double sl, double sw) {
  if (partial == nullptr) return;
  const double2 s = block_sum2(sl, sw);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// loss_j to loss (reduction none, else NULL) and the block's sums of loss_j and w_j to
// partial[blockIdx.x] (NULL: none). A thread per position.
template <typename T>
__global__ void nll_forward_kernel(loss_args a, const T* x, const T* weight, T* loss,
                                   double2* partial) {
  const group_iter<1> it = groups<1>();
  double sl = 0.0, sw = 0.0;
  for (int64_t j = it.first; j < a.P; j += it.step) {
    int64_t cls;
    const float w = weight_of(a, weight, j, &cls);
    add_position(
        j, cls, w, [&] { return to_f(x[(j / a.D * a.C + cls) * a.D + j % a.D]); }, loss, &sl, &sw);
  }
  store_block_sums(partial, sl, sw);
}

// The block's sum of w_j (the mean's divisor) to partial[blockIdx.x].y.
template <typename T>
__global__ void weight_sum_kernel(loss_args a, const T* weight, double2* partial) {
  const group_iter<1> it = groups<1>();
  double sw = 0.0;
  for (int64_t j = it.first; j < a.P; j += it.step) {
    int64_t cls;
    sw += weight_of(a, weight, j, &cls);
  }
  store_block_sums(partial, 0.0, sw);
}

// dx over its n = N*C*D elements: -k at the target's class, 0 elsewhere; ignored positions 0,
// out-of-range ones NaN.
template <typename T>
__global__ void nll_backward_kernel(loss_args a, const T* weight, const T* dloss,
                                    const double* weight_sum, T* dx, int64_t n) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < n;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t nc = e / a.D;
    const int64_t c = nc % a.C, j = nc / a.C * a.D + e % a.D;
    int64_t cls;
    const float w = weight_of(a, weight, j, &cls);
    float out = 0.0f;
    if (cls < 0)
      out = isnan(w) ? NAN : 0.0f;  // w is NaN exactly for an out-of-range target
    else if (c == cls)
      out = static_cast<float>(-(static_cast<double>(w) * upstream(a, dloss, weight_sum, j)));
    dx[e] = from_f<T>(out);
  }
}

// ---- softmax_cross_entropy_loss ---------------------------------------------------------------
// The log-sum-exp of one position's classes xs[c * D] (c < C) over a group (every lane gets
// it): m = the max (NaN-propagating), sum = sum exp(x - m) and log_sum = log1p(rest), rest =
// the terms of every class but one maximum (each other class equal to m adds exactly 1). When
// m is not finite (+inf, NaN, or every class -inf) sum and log_sum are NaN, as the reference's
// inf - inf: the whole slice is NaN.
struct slice_lse {
  float m, sum, log_sum;
};
template <int G, typename T>
__device__ __forceinline__ slice_lse position_lse(const T* xs, int64_t C, int64_t D, int lane) {
  float m = -INFINITY;
  for (int64_t c = lane; c < C; c += G) m = max_op()(m, to_f(xs[c * D]));
  m = group_max<G>(m);
  const bool finite = isfinite(m);  // the same in every lane of the group
  float ties = 0.0f, rest = 0.0f;   // classes equal to m; sum of exp(x - m) over the others
  if (finite)
    for (int64_t c = lane; c < C; c += G) {
      const float v = to_f(xs[c * D]);
      if (v == m)
        ties += 1.0f;
      else
        rest += expf(v - m);
    }
  ties = group_sum<G>(ties);
  rest = group_sum<G>(rest);
  if (!finite) return slice_lse{m, NAN, NAN};
  return slice_lse{m, ties + rest, log1pf((ties - 1.0f) + rest)};
}

// Per position: log_prob (when not NULL) over the classes, loss_j to loss (reduction none, else
// NULL) and the block's sums of loss_j and w_j to partial[blockIdx.x] (NULL: none).
template <int G, typename T>
__global__ void sce_forward_kernel(loss_args a, const T* x, const T* weight, T* loss, T* log_prob,
                                   double2* partial) {
  const group_iter<G> it = groups<G>();
  double sl = 0.0, sw = 0.0;
  for (int64_t j = it.first; j < a.P; j += it.step) {
    const int64_t base = j / a.D * a.C * a.D + j % a.D;  // class 0 of position j
    const slice_lse st = position_lse<G>(x + base, a.C, a.D, it.lane);
    // (x - max) - log_sum, in that order: max + log_sum rounded first would lose the low bits
    // of a large max.
    if (log_prob != nullptr)
      for (int64_t c = it.lane; c < a.C; c += G)
        log_prob[base + c * a.D] = from_f<T>((to_f(x[base + c * a.D]) - st.m) - st.log_sum);
    if (it.lane == 0) {
      int64_t cls;
      const float w = weight_of(a, weight, j, &cls);
      add_position(
          j, cls, w, [&] { return (to_f(x[base + cls * a.D]) - st.m) - st.log_sum; }, loss, &sl,
          &sw);
    }
  }
  store_block_sums(partial, sl, sw);
}

// Per position: dx_c = p_c * k for the other classes, minus their sum for the target's class;
// ignored positions 0, out-of-range ones NaN.
template <int G, typename T>
__global__ void sce_backward_kernel(loss_args a, const T* x, const T* weight, const T* dloss,
                                    const double* weight_sum, T* dx) {
  const group_iter<G> it = groups<G>();
  for (int64_t j = it.first; j < a.P; j += it.step) {
    const int64_t base = j / a.D * a.C * a.D + j % a.D;
    int64_t cls;
    const float w = weight_of(a, weight, j, &cls);  // the same in every lane of the group
    if (cls < 0) {
      const T fill = from_f<T>(isnan(w) ? NAN : 0.0f);
      for (int64_t c = it.lane; c < a.C; c += G) dx[base + c * a.D] = fill;
      continue;
    }
    const double k = static_cast<double>(w) * upstream(a, dloss, weight_sum, j);
    const slice_lse st = position_lse<G>(x + base, a.C, a.D, it.lane);
    const double q = k / static_cast<double>(st.sum);  // NaN for a slice without a finite max
    float others = 0.0f;
    for (int64_t c = it.lane; c < a.C; c += G) {
      if (c == cls) continue;
      const float e = expf(to_f(x[base + c * a.D]) - st.m);
      others += e;
      dx[base + c * a.D] = from_f<T>(static_cast<float>(static_cast<double>(e) * q));
    }
    // dx_t = k (p_t - 1) = -k * (the other classes' p): p_t - 1 cancels in float32 near p_t = 1.
    others = group_sum<G>(others);
    if (it.lane == cls % G)
      dx[base + cls * a.D] = from_f<T>(static_cast<float>(-static_cast<double>(others) * q));
  }
}

// ---- host side --------------------------------------------------------------------------------
template <typename P>
loss_args args_of(const op_call& c) {
  const P p = c.params_as<P>();
  const DLTensor& X = *c.in(0);
  loss_args a{};
  a.C = X.shape[1];
  a.D = 1;
  for (int i = 2; i < X.ndim; ++i) a.D *= X.shape[i];
  a.P = X.shape[0] * a.D;
  a.reduction = p.reduction == 0 ? int32_t{NNP_REDUCTION_MEAN} : p.reduction;
  a.has_ignore = p.has_ignore_index != 0 ? 1 : 0;
  a.ignore_index = p.ignore_index;
  a.target = data_ptr<const int64_t>(*c.in(1));
  return a;
}

// Blocks of kThreads for `positions` positions taken by groups of G lanes (1 .. kMaxBlocks).
unsigned position_blocks(int64_t positions, int G) {
  const int64_t per_block = kThreads / G;
  int64_t b = (positions + per_block - 1) / per_block;
  if (b < 1) b = 1;
  if (b > kMaxBlocks) b = kMaxBlocks;
  return static_cast<unsigned>(b);
}

template <typename T>
const T* optional_in(const op_call& c, size_t i) {
  return c.in(i) != nullptr ? data_ptr<const T>(*c.in(i)) : nullptr;
}

// Forward of either loss: inputs {x, target, weight?}, outputs {loss, log_prob? (SCE)}.
template <typename P, bool Softmax>
void loss_forward(stream& s, const op_call& c) {
  const loss_args a = args_of<P>(c);
  const DLTensor& X = *c.in(0);
  const bool none = a.reduction == NNP_REDUCTION_NONE;
  if (none && a.P == 0) return;  // no loss element to write
  dispatch_float(elem_of(X.dtype), [&](auto tg) {
    using T = typename decltype(tg)::type;
    const T* x = data_ptr<const T>(X);
    const T* weight = optional_in<T>(c, 2);
    T* loss = data_ptr<T>(*c.out(0));
    T* loss_none = none ? loss : nullptr;
    [[maybe_unused]] T* log_prob = nullptr;  // SCE's optional output
    if (Softmax && c.out(1) != nullptr && numel(*c.out(1)) > 0) log_prob = data_ptr<T>(*c.out(1));
    const int G = Softmax && a.D == 1 ? 32 : 1;
    // No position (N = 0 or a zero extra dim): no partial sums; sum is 0, mean 0/0 = NaN.
    const unsigned blocks = a.P > 0 ? position_blocks(a.P, G) : 0;
    double2* partial = nullptr;
    if (!none)
      partial = static_cast<double2*>(s.scratch(kScratchTemp0, sizeof(double2) * (blocks + 1)));
    if (blocks > 0) {
      if constexpr (!Softmax)
        nll_forward_kernel<T><<<blocks, kThreads, 0, s.handle>>>(a, x, weight, loss_none, partial);
      else if (G == 32)
        sce_forward_kernel<32, T>
            <<<blocks, kThreads, 0, s.handle>>>(a, x, weight, loss_none, log_prob, partial);
      else
        sce_forward_kernel<1, T>
            <<<blocks, kThreads, 0, s.handle>>>(a, x, weight, loss_none, log_prob, partial);
      NNP_CUDA_CHECK_LAUNCH();
    }
    if (!none) {
      finish_kernel<T><<<1, kThreads, 0, s.handle>>>(partial, blocks, a.reduction, loss, nullptr);
      NNP_CUDA_CHECK_LAUNCH();
    }
  });
}

// Backward of either loss: inputs {x, target, dloss, weight?}, output dx.
template <typename P, bool Softmax>
void loss_backward(stream& s, const op_call& c) {
  const loss_args a = args_of<P>(c);
  const DLTensor& X = *c.in(0);
  const int64_t n = numel(X);
  if (n == 0) return;  // no element of dx (N, C or an extra dim is 0)
  dispatch_float(elem_of(X.dtype), [&](auto tg) {
    using T = typename decltype(tg)::type;
    [[maybe_unused]] const T* x = data_ptr<const T>(X);  // read by SCE's backward only
    const T* dloss = data_ptr<const T>(*c.in(2));
    const T* weight = optional_in<T>(c, 3);
    T* dx = data_ptr<T>(*c.out(0));
    double* weight_sum = nullptr;
    if (a.reduction == NNP_REDUCTION_MEAN) {
      // sum_j w_j first (two passes, deterministic), read by every position's g_j.
      const unsigned blocks = position_blocks(a.P, 1);
      double2* partial =
          static_cast<double2*>(s.scratch(kScratchTemp0, sizeof(double2) * (blocks + 1)));
      weight_sum = reinterpret_cast<double*>(partial + blocks);
      weight_sum_kernel<T><<<blocks, kThreads, 0, s.handle>>>(a, weight, partial);
      NNP_CUDA_CHECK_LAUNCH();
      finish_kernel<T><<<1, kThreads, 0, s.handle>>>(partial, blocks, a.reduction,
                                                     static_cast<T*>(nullptr), weight_sum);
      NNP_CUDA_CHECK_LAUNCH();
    }
    if constexpr (!Softmax) {
      nll_backward_kernel<T>
          <<<grid_for(n), kThreads, 0, s.handle>>>(a, weight, dloss, weight_sum, dx, n);
    } else {
      const int G = a.D == 1 ? 32 : 1;
      const unsigned blocks = position_blocks(a.P, G);
      if (G == 32)
        sce_backward_kernel<32, T>
            <<<blocks, kThreads, 0, s.handle>>>(a, x, weight, dloss, weight_sum, dx);
      else
        sce_backward_kernel<1, T>
            <<<blocks, kThreads, 0, s.handle>>>(a, x, weight, dloss, weight_sum, dx);
    }
    NNP_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace

void op_nll_loss_forward(stream& s, const op_call& c) {
  loss_forward<nnp_nll_loss_params, false>(s, c);
}
void op_nll_loss_backward(stream& s, const op_call& c) {
  loss_backward<nnp_nll_loss_params, false>(s, c);
}
void op_sce_loss_forward(stream& s, const op_call& c) {
  loss_forward<nnp_softmax_cross_entropy_loss_params, true>(s, c);
}
void op_sce_loss_backward(stream& s, const op_call& c) {
  loss_backward<nnp_softmax_cross_entropy_loss_params, true>(s, c);
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kLossOps[] = {
    {NNP_OP_NLL_LOSS_FORWARD,                    kit::f32,         on_stream<op_nll_loss_forward>},
    {NNP_OP_NLL_LOSS_BACKWARD,                   kit::f32,         on_stream<op_nll_loss_backward>},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_FORWARD,  kit::f32,         on_stream<op_sce_loss_forward>},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_BACKWARD, kit::f32,         on_stream<op_sce_loss_backward>},
};
// clang-format on
extern const kit::op_row_list kLossRows = kit::row_list(kLossOps);

}  // namespace nnp::cuda
