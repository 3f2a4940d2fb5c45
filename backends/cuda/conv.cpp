// conv.cpp — 2-D convolution forward, backward-data and backward-filter through cuDNN's
// convolution API (cross-correlation, dilation, groups), float32/float16/bfloat16 with float32
// accumulation; backward-bias is our channel reduction (reduce.cu). Speed comes from cuDNN's
// algorithm choice: heuristics (cudnnGet*Algorithm_v7) once per shape, cached in a map keyed by
// shape, params, dtype and math mode (a candidate cuDNN then refuses with NOT_SUPPORTED is
// skipped for the next); the workspace is the stream's grow-only scratch.
// cuDNN has only symmetric padding: an asymmetric call zero-pads x explicitly into scratch
// (forward, backward-filter) or computes the padded dx in scratch and crops it (backward-data).
// TF32: float32 uses CUDNN_FMA_MATH unless the stream allows TF32.
#include "ops.hpp"

#include <array>
#include <climits>
#include <map>
#include <mutex>
#include <vector>

namespace nnp::cuda {
namespace {

// ---- RAII descriptors ---------------------------------------------------------------------------
// A cuDNN descriptor made by Create and released by Destroy when the object goes (also when the
// derived constructor that sets it up throws).
template <typename D, cudnnStatus_t (*Create)(D*), cudnnStatus_t (*Destroy)(D)>
struct cudnn_descriptor {
  D d = nullptr;
  cudnn_descriptor() { NNP_CUDNN_CHECK(Create(&d)); }
  ~cudnn_descriptor() { Destroy(d); }
  cudnn_descriptor(const cudnn_descriptor&) = delete;
  cudnn_descriptor& operator=(const cudnn_descriptor&) = delete;
};

struct tensor_desc : cudnn_descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor,
                                      cudnnDestroyTensorDescriptor> {
  tensor_desc(cudnnDataType_t dt, int64_t n, int64_t c, int64_t h, int64_t w) {
    NNP_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, dt, static_cast<int>(n),
                                               static_cast<int>(c), static_cast<int>(h),
                                               static_cast<int>(w)));
  }
};

struct filter_desc : cudnn_descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor,
                                      cudnnDestroyFilterDescriptor> {
  filter_desc(cudnnDataType_t dt, int64_t k, int64_t c, int64_t r, int64_t s) {
    NNP_CUDNN_CHECK(cudnnSetFilter4dDescriptor(d, dt, CUDNN_TENSOR_NCHW, static_cast<int>(k),
                                               static_cast<int>(c), static_cast<int>(r),
                                               static_cast<int>(s)));
  }
};

struct conv_desc : cudnn_descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                                    cudnnDestroyConvolutionDescriptor> {
  conv_desc(int pad_h, int pad_w, const nnp_conv2d_params& p) {
    NNP_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(d, pad_h, pad_w, p.stride_h, p.stride_w,
                                                    p.dilation_h, p.dilation_w,
                                                    CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    if (p.groups > 1) NNP_CUDNN_CHECK(cudnnSetConvolutionGroupCount(d, p.groups));
  }
};

// ---- algorithm cache ----------------------------------------------------------------------------
using algo_key = std::array<int64_t, 20>;
struct algo_choice {
  int algo;
  cudnnMathType_t math;
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

// The usable heuristic results in cuDNN's order of preference: succeeded, within the workspace
// limit and, for strict float32, without tensor-op math. perf is an array of *AlgoPerf_t.
template <typename Perf>
std::vector<algo_choice> usable(const Perf* perf, int n, bool strict_fp32) {
  std::vector<algo_choice> out;
  for (int i = 0; i < n; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > kMaxWorkspace) continue;
    if (strict_fp32 && (perf[i].mathType == CUDNN_TENSOR_OP_MATH ||
                        perf[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
      continue;
    out.push_back(algo_choice{static_cast<int>(perf[i].algo),
                              strict_fp32 ? CUDNN_FMA_MATH : perf[i].mathType});
  }
  return out;
}

bool is_not_supported(cudnnStatus_t st) { return static_cast<int>(st) / 1000 == 3; }

cudnnDataType_t cudnn_type(elem t) {
  return float_code(t, CUDNN_DATA_FLOAT, CUDNN_DATA_HALF, CUDNN_DATA_BFLOAT16, "conv2d");
}

void check_int(const DLTensor& t, const char* what) {
  if (numel(t) > INT_MAX)
    unsupported(format("conv2d: %s has %lld elements, more than cuDNN's 32-bit limit", what,
                       static_cast<long long>(numel(t))));
}

// One convolution call with its descriptors and device pointers, ready to run with any
// algorithm.
struct conv_call {
  int32_t kind;
  cudnnHandle_t h;
  const tensor_desc* xd;
  const filter_desc* wd;
  const tensor_desc* yd;
  const conv_desc* cd;
  const void* x;  // forward, backward-filter
  const void* w;  // forward, backward-data
  const void* y;  // backward-data, backward-filter (dy)
  void* out;      // y, dx or dw

  std::vector<algo_choice> candidates(bool strict_fp32) const {
    int returned = 0;
    if (kind == NNP_OP_CONV2D_FORWARD) {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      NNP_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
          h, xd->d, wd->d, cd->d, yd->d, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf));
      return usable(perf, returned, strict_fp32);
    }
    if (kind == NNP_OP_CONV2D_BACKWARD_DATA) {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      NNP_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
          h, wd->d, yd->d, cd->d, xd->d, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perf));
      return usable(perf, returned, strict_fp32);
    }
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    NNP_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        h, xd->d, yd->d, cd->d, wd->d, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, perf));
    return usable(perf, returned, strict_fp32);
  }

  // Sets the math type, sizes the workspace and queues the convolution; returns cuDNN's status
  // (NOT_SUPPORTED lets the caller try the next algorithm).
  cudnnStatus_t run(stream& s, const algo_choice& a) const {
    cudnnStatus_t st = cudnnSetConvolutionMathType(cd->d, a.math);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    size_t ws_size = 0;
    if (kind == NNP_OP_CONV2D_FORWARD)
      st = cudnnGetConvolutionForwardWorkspaceSize(
          h, xd->d, wd->d, cd->d, yd->d, static_cast<cudnnConvolutionFwdAlgo_t>(a.algo), &ws_size);
    else if (kind == NNP_OP_CONV2D_BACKWARD_DATA)
      st = cudnnGetConvolutionBackwardDataWorkspaceSize(
          h, wd->d, yd->d, cd->d, xd->d, static_cast<cudnnConvolutionBwdDataAlgo_t>(a.algo),
          &ws_size);
    else
      st = cudnnGetConvolutionBackwardFilterWorkspaceSize(
          h, xd->d, yd->d, cd->d, wd->d, static_cast<cudnnConvolutionBwdFilterAlgo_t>(a.algo),
          &ws_size);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    void* ws = ws_size > 0 ? s.scratch(kScratchWorkspace, ws_size) : nullptr;
    const float one = 1.0f, zero = 0.0f;
    if (kind == NNP_OP_CONV2D_FORWARD)
      return cudnnConvolutionForward(h, &one, xd->d, x, wd->d, w, cd->d,
                                     static_cast<cudnnConvolutionFwdAlgo_t>(a.algo), ws, ws_size,
                                     &zero, yd->d, out);
    if (kind == NNP_OP_CONV2D_BACKWARD_DATA)
      return cudnnConvolutionBackwardData(h, &one, wd->d, w, yd->d, y, cd->d,
                                          static_cast<cudnnConvolutionBwdDataAlgo_t>(a.algo), ws,
                                          ws_size, &zero, xd->d, out);
    return cudnnConvolutionBackwardFilter(h, &one, xd->d, x, yd->d, y, cd->d,
                                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(a.algo), ws,
                                          ws_size, &zero, wd->d, out);
  }
};

}  // namespace

void op_conv2d(stream& s, const op_call& c) {
  if (c.kind == NNP_OP_CONV2D_BACKWARD_BIAS) {
    const DLTensor& dy = *c.in(0);
    const DLTensor& db = *c.out(0);
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
      x = c.in(0), w = c.in(1), y = c.out(0);
      break;
    case NNP_OP_CONV2D_BACKWARD_DATA:
      y = c.in(0), w = c.in(1), x = c.out(0);
      break;
    default:  // NNP_OP_CONV2D_BACKWARD_FILTER
      x = c.in(0), y = c.in(1), w = c.out(0);
      break;
  }
  const DLTensor& out = *c.out(0);
  const elem t = elem_of(out.dtype);
  const size_t es = dtype_size(out.dtype);
  if (numel(out) == 0) return;
  if (numel(*x) == 0 || numel(*w) == 0 || numel(*y) == 0) {
    // An empty sum: zeros (plus bias for forward).
    NNP_CUDA_CHECK(cudaMemsetAsync(data_ptr<void>(out), 0, numel(out) * es, s.handle));
    if (c.kind == NNP_OP_CONV2D_FORWARD && c.in(2) != nullptr)
      launch_bias_add(s, t, data_ptr<void>(out), data_ptr<const void>(*c.in(2)), y->shape[0],
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
  const tensor_desc xd(dt, N, C, Hc, Wc);
  const filter_desc wd(dt, K, C / p.groups, R, S);
  const tensor_desc yd(dt, N, K, P, Q);
  const conv_desc cd(pad_h, pad_w, p);
  NNP_CUDNN_CHECK(cudnnSetConvolutionMathType(cd.d, math_request));

  // The padded x (or padded dx) lives in scratch when padding is asymmetric.
  void* xpad = nullptr;
  if (!symmetric) xpad = s.scratch(kScratchTemp0, static_cast<size_t>(N * C * Hc * Wc) * es);
  conv_call call{c.kind, h, &xd, &wd, &yd, &cd, nullptr, nullptr, nullptr, nullptr};
  switch (c.kind) {
    case NNP_OP_CONV2D_FORWARD:
    case NNP_OP_CONV2D_BACKWARD_FILTER:
      call.x = data_ptr<const void>(*x);
      if (!symmetric) {
        launch_pad2d(s, t, call.x, xpad, N * C, H, W, p.pad_top, p.pad_bottom, p.pad_left,
                     p.pad_right);
        call.x = xpad;
      }
      if (c.kind == NNP_OP_CONV2D_FORWARD) {
        call.w = data_ptr<const void>(*w);
        call.out = data_ptr<void>(*y);
      } else {
        call.y = data_ptr<const void>(*y);
        call.out = data_ptr<void>(*w);
      }
      break;
    default:  // backward data
      call.w = data_ptr<const void>(*w);
      call.y = data_ptr<const void>(*y);
      call.out = symmetric ? data_ptr<void>(*x) : xpad;
      break;
  }

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
  algo_choice chosen{};
  if (find_cached(key, &chosen)) {
    NNP_CUDNN_CHECK(call.run(s, chosen));
  } else {
    // First call of this shape: the heuristics' candidates in order; an algorithm cuDNN then
    // refuses (NOT_SUPPORTED) is skipped, the first that runs is cached.
    const std::vector<algo_choice> cands = call.candidates(strict_fp32);
    cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
    bool ran = false;
    for (const algo_choice& a : cands) {
      last = call.run(s, a);
      if (last == CUDNN_STATUS_SUCCESS) {
        store_cached(key, a);
        ran = true;
        break;
      }
      if (!is_not_supported(last)) NNP_CUDNN_CHECK(last);
    }
    if (!ran)
      unsupported(
          format("conv2d: cuDNN has no algorithm for x [%lld, %lld, %lld, %lld], "
                 "w [%lld, %lld, %lld, %lld], groups %d, %s (%zu candidates; last: %s)",
                 static_cast<long long>(N), static_cast<long long>(C), static_cast<long long>(H),
                 static_cast<long long>(W), static_cast<long long>(K),
                 static_cast<long long>(C / p.groups), static_cast<long long>(R),
                 static_cast<long long>(S), p.groups, dtype_name(out.dtype).c_str(), cands.size(),
                 cudnnGetErrorString(last)));
  }

  if (c.kind == NNP_OP_CONV2D_FORWARD && c.in(2) != nullptr)
    launch_bias_add(s, t, data_ptr<void>(*y), data_ptr<const void>(*c.in(2)), N, K, P * Q);
  if (c.kind == NNP_OP_CONV2D_BACKWARD_DATA && !symmetric)
    launch_crop2d(s, t, xpad, data_ptr<void>(*x), N * C, H, W, p.pad_top, p.pad_bottom, p.pad_left,
                  p.pad_right);
}

}  // namespace nnp::cuda
