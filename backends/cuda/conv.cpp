// conv.cpp — 2-D convolution forward, backward-data and backward-filter through cuDNN's
// convolution API (cross-correlation, dilation, groups), float32/float16/bfloat16 with float32
// accumulation; backward-bias is our channel reduction (reduce.cu). Speed comes from cuDNN's
// algorithm choice: heuristics (cudnnGet*Algorithm_v7) once per shape, cached in a map keyed by
// shape, params, dtype and math mode; the workspace is the stream's grow-only scratch.
// cuDNN has only symmetric padding: an asymmetric call zero-pads x explicitly into scratch
// (forward, backward-filter) or computes the padded dx in scratch and crops it (backward-data).
// TF32: float32 uses CUDNN_FMA_MATH unless the stream allows TF32.
#include "ops.hpp"

#include <array>
#include <climits>
#include <map>
#include <mutex>

namespace nnp::cuda {
namespace {

// ---- RAII descriptors ---------------------------------------------------------------------------
struct tensor_desc {
  cudnnTensorDescriptor_t d = nullptr;
  tensor_desc(cudnnDataType_t dt, int64_t n, int64_t c, int64_t h, int64_t w) {
    NNP_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d));
    NNP_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, dt, static_cast<int>(n),
                                               static_cast<int>(c), static_cast<int>(h),
                                               static_cast<int>(w)));
  }
  ~tensor_desc() { cudnnDestroyTensorDescriptor(d); }
  tensor_desc(const tensor_desc&) = delete;
  tensor_desc& operator=(const tensor_desc&) = delete;
};

struct filter_desc {
  cudnnFilterDescriptor_t d = nullptr;
  filter_desc(cudnnDataType_t dt, int64_t k, int64_t c, int64_t r, int64_t s) {
    NNP_CUDNN_CHECK(cudnnCreateFilterDescriptor(&d));
    NNP_CUDNN_CHECK(cudnnSetFilter4dDescriptor(d, dt, CUDNN_TENSOR_NCHW, static_cast<int>(k),
                                               static_cast<int>(c), static_cast<int>(r),
                                               static_cast<int>(s)));
  }
  ~filter_desc() { cudnnDestroyFilterDescriptor(d); }
  filter_desc(const filter_desc&) = delete;
  filter_desc& operator=(const filter_desc&) = delete;
};

struct conv_desc {
  cudnnConvolutionDescriptor_t d = nullptr;
  conv_desc(int pad_h, int pad_w, const nnp_conv2d_params& p) {
    NNP_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d));
    NNP_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(d, pad_h, pad_w, p.stride_h, p.stride_w,
                                                    p.dilation_h, p.dilation_w,
                                                    CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    if (p.groups > 1) NNP_CUDNN_CHECK(cudnnSetConvolutionGroupCount(d, p.groups));
  }
  ~conv_desc() { cudnnDestroyConvolutionDescriptor(d); }
  conv_desc(const conv_desc&) = delete;
  conv_desc& operator=(const conv_desc&) = delete;
};

// ---- algorithm cache ----------------------------------------------------------------------------
using algo_key = std::array<int64_t, 20>;
struct algo_choice {
  int algo;
  cudnnMathType_t math;
  size_t workspace;
};
std::mutex g_cache_mutex;
std::map<algo_key, algo_choice> g_cache;

constexpr size_t kMaxWorkspace = size_t{1} << 30;  // skip algorithms that want more than 1 GiB

bool find_cached(const algo_key& k, algo_choice* out) {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  auto it = g_cache.find(k);
  if (it == g_cache.end()) return false;
  *out = it->second;
  return true;
}
void store_cached(const algo_key& k, const algo_choice& c) {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  g_cache[k] = c;
}

// Picks the first heuristic result that succeeded, fits the workspace limit and (for strict
// float32) does not use tensor-op math. perf is an array of cuDNN *AlgoPerf_t.
template <typename Perf>
bool pick(const Perf* perf, int n, bool strict_fp32, algo_choice* out) {
  for (int i = 0; i < n; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > kMaxWorkspace) continue;
    if (strict_fp32 && (perf[i].mathType == CUDNN_TENSOR_OP_MATH ||
                        perf[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
      continue;
    out->algo = static_cast<int>(perf[i].algo);
    out->math = strict_fp32 ? CUDNN_FMA_MATH : perf[i].mathType;
    return true;
  }
  return false;
}

cudnnDataType_t cudnn_type(elem t) {
  switch (t) {
    case elem::f32:
      return CUDNN_DATA_FLOAT;
    case elem::f16:
      return CUDNN_DATA_HALF;
    case elem::bf16:
      return CUDNN_DATA_BFLOAT16;
    default:
      unsupported("conv2d: dtype not implemented by the cuda backend");
  }
}

void check_int(const DLTensor& t, const char* what) {
  if (numel(t) > INT_MAX)
    unsupported(format("conv2d: %s has %lld elements, more than cuDNN's 32-bit limit", what,
                       static_cast<long long>(numel(t))));
}

}  // namespace

void op_conv2d(stream& s, const op_call& c) {
  if (c.kind == NNP_OP_CONV2D_BACKWARD_BIAS) {
    const DLTensor& dy = *c.input(0);
    const DLTensor& db = *c.output(0);
    if (numel(db) == 0) return;
    launch_sum_keep_axis(s, elem_of(dy.dtype), data_ptr<const void>(dy), data_ptr<void>(db),
                         dy.shape, dy.ndim, 1);
    return;
  }
  const auto p = read_params<nnp_conv2d_params>(c.params);
  // x [N,C,H,W], w [K,C/g,R,S], y [N,K,P,Q] whichever of them are inputs or outputs.
  const DLTensor *x, *w, *y;
  switch (c.kind) {
    case NNP_OP_CONV2D_FORWARD:
      x = c.input(0), w = c.input(1), y = c.output(0);
      break;
    case NNP_OP_CONV2D_BACKWARD_DATA:
      y = c.input(0), w = c.input(1), x = c.output(0);
      break;
    default:  // NNP_OP_CONV2D_BACKWARD_FILTER
      x = c.input(0), y = c.input(1), w = c.output(0);
      break;
  }
  const DLTensor& out = *c.output(0);
  const elem t = elem_of(out.dtype);
  const size_t es = dtype_size(out.dtype);
  if (numel(out) == 0) return;
  if (numel(*x) == 0 || numel(*w) == 0 || numel(*y) == 0) {
    // An empty sum: zeros (plus bias for forward).
    NNP_CUDA_CHECK(cudaMemsetAsync(data_ptr<void>(out), 0, numel(out) * es, s.handle));
    if (c.kind == NNP_OP_CONV2D_FORWARD && c.input(2) != nullptr)
      launch_bias_add(s, t, data_ptr<void>(out), data_ptr<const void>(*c.input(2)), y->shape[0],
                      y->shape[1], y->shape[2] * y->shape[3]);
    return;
  }
  check_int(*x, "x");
  check_int(*w, "w");
  check_int(*y, "y");

  const int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
  const int64_t K = w->shape[0], R = w->shape[2], S = w->shape[3];
  const int64_t P = y->shape[2], Q = y->shape[3];
  const bool symmetric = p.pad_top == p.pad_bottom && p.pad_left == p.pad_right;
  // cuDNN sees x (symmetric padding) or the explicitly padded xp (padding 0).
  const int64_t Hc = symmetric ? H : H + p.pad_top + p.pad_bottom;
  const int64_t Wc = symmetric ? W : W + p.pad_left + p.pad_right;
  const int pad_h = symmetric ? p.pad_top : 0, pad_w = symmetric ? p.pad_left : 0;
  if (N * C * Hc * Wc > INT_MAX) unsupported("conv2d: padded input exceeds cuDNN's 32-bit limit");

  const cudnnDataType_t dt = cudnn_type(t);
  const bool strict_fp32 = t == elem::f32 && !s.allow_tf32;
  const cudnnMathType_t math_request =
      t == elem::f32 ? (s.allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH) : CUDNN_TENSOR_OP_MATH;
  cudnnHandle_t h = s.dnn();
  tensor_desc xd(dt, N, C, Hc, Wc);
  filter_desc wd(dt, K, C / p.groups, R, S);
  tensor_desc yd(dt, N, K, P, Q);
  conv_desc cd(pad_h, pad_w, p);
  NNP_CUDNN_CHECK(cudnnSetConvolutionMathType(cd.d, math_request));

  const algo_key key = {c.kind,
                        static_cast<int64_t>(t),
                        s.allow_tf32 ? 1 : 0,
                        s.device,
                        N,
                        C,
                        Hc,
                        Wc,
                        K,
                        R,
                        S,
                        P,
                        Q,
                        pad_h,
                        pad_w,
                        p.stride_h,
                        p.stride_w,
                        p.dilation_h,
                        p.dilation_w,
                        p.groups};
  algo_choice choice{};
  if (!find_cached(key, &choice)) {
    bool found = false;
    int returned = 0;
    if (c.kind == NNP_OP_CONV2D_FORWARD) {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      NNP_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
          h, xd.d, wd.d, cd.d, yd.d, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf));
      found = pick(perf, returned, strict_fp32, &choice);
      if (found) {
        NNP_CUDNN_CHECK(cudnnSetConvolutionMathType(cd.d, choice.math));
        NNP_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
            h, xd.d, wd.d, cd.d, yd.d, static_cast<cudnnConvolutionFwdAlgo_t>(choice.algo),
            &choice.workspace));
      }
    } else if (c.kind == NNP_OP_CONV2D_BACKWARD_DATA) {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      NNP_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
          h, wd.d, yd.d, cd.d, xd.d, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perf));
      found = pick(perf, returned, strict_fp32, &choice);
      if (found) {
        NNP_CUDNN_CHECK(cudnnSetConvolutionMathType(cd.d, choice.math));
        NNP_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
            h, wd.d, yd.d, cd.d, xd.d, static_cast<cudnnConvolutionBwdDataAlgo_t>(choice.algo),
            &choice.workspace));
      }
    } else {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      NNP_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
          h, xd.d, yd.d, cd.d, wd.d, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, perf));
      found = pick(perf, returned, strict_fp32, &choice);
      if (found) {
        NNP_CUDNN_CHECK(cudnnSetConvolutionMathType(cd.d, choice.math));
        NNP_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
            h, xd.d, yd.d, cd.d, wd.d, static_cast<cudnnConvolutionBwdFilterAlgo_t>(choice.algo),
            &choice.workspace));
      }
    }
    if (!found)
      unsupported(
          format("conv2d: cuDNN has no algorithm for x [%lld, %lld, %lld, %lld], "
                 "w [%lld, %lld, %lld, %lld], groups %d, %s",
                 static_cast<long long>(N), static_cast<long long>(C), static_cast<long long>(H),
                 static_cast<long long>(W), static_cast<long long>(K),
                 static_cast<long long>(C / p.groups), static_cast<long long>(R),
                 static_cast<long long>(S), p.groups, dtype_name(out.dtype).c_str()));
    store_cached(key, choice);
  } else {
    NNP_CUDNN_CHECK(cudnnSetConvolutionMathType(cd.d, choice.math));
  }

  // Buffers: the padded x (or padded dx) in scratch when padding is asymmetric.
  void* xpad = nullptr;
  if (!symmetric) xpad = s.scratch(kScratchTemp0, static_cast<size_t>(N * C * Hc * Wc) * es);
  void* ws = choice.workspace > 0 ? s.scratch(kScratchWorkspace, choice.workspace) : nullptr;
  const float one = 1.0f, zero = 0.0f;

  if (c.kind == NNP_OP_CONV2D_FORWARD || c.kind == NNP_OP_CONV2D_BACKWARD_FILTER) {
    const void* xin = data_ptr<const void>(*x);
    if (!symmetric) {
      launch_pad2d(s, t, xin, xpad, N * C, H, W, p.pad_top, p.pad_bottom, p.pad_left, p.pad_right);
      xin = xpad;
    }
    if (c.kind == NNP_OP_CONV2D_FORWARD) {
      NNP_CUDNN_CHECK(
          cudnnConvolutionForward(h, &one, xd.d, xin, wd.d, data_ptr<const void>(*w), cd.d,
                                  static_cast<cudnnConvolutionFwdAlgo_t>(choice.algo), ws,
                                  choice.workspace, &zero, yd.d, data_ptr<void>(*y)));
      if (c.input(2) != nullptr)
        launch_bias_add(s, t, data_ptr<void>(*y), data_ptr<const void>(*c.input(2)), N, K, P * Q);
    } else {
      NNP_CUDNN_CHECK(
          cudnnConvolutionBackwardFilter(h, &one, xd.d, xin, yd.d, data_ptr<const void>(*y), cd.d,
                                         static_cast<cudnnConvolutionBwdFilterAlgo_t>(choice.algo),
                                         ws, choice.workspace, &zero, wd.d, data_ptr<void>(*w)));
    }
    return;
  }
  // backward data
  void* dx = symmetric ? data_ptr<void>(*x) : xpad;
  NNP_CUDNN_CHECK(cudnnConvolutionBackwardData(
      h, &one, wd.d, data_ptr<const void>(*w), yd.d, data_ptr<const void>(*y), cd.d,
      static_cast<cudnnConvolutionBwdDataAlgo_t>(choice.algo), ws, choice.workspace, &zero, xd.d,
      dx));
  if (!symmetric)
    launch_crop2d(s, t, xpad, data_ptr<void>(*x), N * C, H, W, p.pad_top, p.pad_bottom, p.pad_left,
                  p.pad_right);
}

}  // namespace nnp::cuda
