// conv.cpp — 2-D convolution forward, backward-data and backward-filter through cuDNN's
// convolution API (cross-correlation, dilation, groups), float32/float16/bfloat16 with float32
// accumulation; backward-bias is our channel reduction (reduce.cu). Speed comes from cuDNN's
// algorithm choice: heuristics (cudnnGet*Algorithm_v7) on the first call of a shape; the
// candidates are tried in cuDNN's order, and one that cuDNN refuses (NOT_SUPPORTED, BAD_PARAM) or
// whose workspace does not fit in memory is skipped for the next. The first that runs becomes the
// shape's *plan* — descriptors, algorithm, math type, workspace size — cached in a process-wide
// map keyed by kind, dtype, math mode, device and every shape and parameter, so a later call
// creates no descriptor and asks cuDNN nothing before running. The workspace is the stream's
// grow-only scratch.
// 16-bit fallback: cuDNN's legacy API may refuse a float16/bfloat16 convolution (e.g. grouped or
// dilated backward-filter) only when asked to run it, after op_supported said yes. Then the
// operands are converted to float32 in scratch, the convolution runs in float32 (tensor-op math
// allowed: 16-bit values are exact in TF32) and the result is converted back; the plan remembers
// it.
// cuDNN has only symmetric padding: an asymmetric call zero-pads x explicitly into scratch
// (forward, backward-filter) or computes the padded dx in scratch and crops it (backward-data).
// TF32: float32 uses CUDNN_FMA_MATH unless the stream allows TF32.
#include "ops.hpp"

#include <array>
#include <climits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
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

// ---- plans -------------------------------------------------------------------------------------
struct algo_choice {
  int algo;
  cudnnMathType_t math;
};

constexpr size_t kMaxWorkspace = size_t{1} << 30;  // skip algorithms that want more than 1 GiB

cudnnDataType_t cudnn_type(elem t) {
  return float_code(t, CUDNN_DATA_FLOAT, CUDNN_DATA_HALF, CUDNN_DATA_BFLOAT16, "conv2d");
}

size_t elem_size(elem t) { return t == elem::f32 ? 4 : 2; }

// What cuDNN sees of one call: x [N, C, Hc, Wc] (padded explicitly when the padding is
// asymmetric), w [K, C/groups, R, S], y [N, K, P, Q], symmetric padding pad_h / pad_w.
struct conv_geom {
  int64_t N, C, Hc, Wc, K, R, S, P, Q;
  int pad_h, pad_w;
  nnp_conv2d_params p;
};

// A convolution ready to run: descriptors in the compute type, the algorithm, whose math type is
// set on cd, and its workspace size. Immutable once in the cache (cuDNN descriptors are only read
// by the calls that use them), so streams on any thread share it.
struct conv_plan {
  elem compute;  // the operands' type, or float32 for the 16-bit fallback
  tensor_desc xd;
  filter_desc wd;
  tensor_desc yd;
  conv_desc cd;
  int algo = 0;
  size_t ws_size = 0;

  conv_plan(const conv_geom& g, elem ct, cudnnMathType_t math)
      : compute(ct),
        xd(cudnn_type(ct), g.N, g.C, g.Hc, g.Wc),
        wd(cudnn_type(ct), g.K, g.C / g.p.groups, g.R, g.S),
        yd(cudnn_type(ct), g.N, g.K, g.P, g.Q),
        cd(g.pad_h, g.pad_w, g.p) {
    NNP_CUDNN_CHECK(cudnnSetConvolutionMathType(cd.d, math));
  }
};

using plan_key = std::array<int64_t, 20>;
std::mutex g_plans_mutex;
std::map<plan_key, std::shared_ptr<const conv_plan>> g_plans;

std::shared_ptr<const conv_plan> find_plan(const plan_key& k) {
  std::lock_guard<std::mutex> lock(g_plans_mutex);
  auto it = g_plans.find(k);
  return it == g_plans.end() ? nullptr : it->second;
}
void store_plan(const plan_key& k, std::shared_ptr<const conv_plan> plan) {
  std::lock_guard<std::mutex> lock(g_plans_mutex);
  g_plans[k] = std::move(plan);
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

// cuDNN declines this configuration (BAD_PARAM 2xxx, NOT_SUPPORTED 3xxx): try something else.
bool is_refusal(cudnnStatus_t st) {
  const int group = static_cast<int>(st) / 1000;
  return group == 2 || group == 3;
}
bool is_out_of_memory(cudnnStatus_t st) { return status_of(st) == NNP_STATUS_OUT_OF_MEMORY; }

void check_int(const DLTensor& t, const char* what) {
  if (numel(t) > INT_MAX)
    unsupported(format("conv2d: %s has %lld elements, more than cuDNN's 32-bit limit (2^31 - 1)",
                       what,
                       static_cast<long long>(numel(t))));
}

// Device pointers of one call as cuDNN sees them (compute type, padded x).
struct conv_operands {
  const void* x = nullptr;  // forward, backward-filter
  const void* w = nullptr;  // forward, backward-data
  const void* y = nullptr;  // backward-data, backward-filter (dy)
  void* out = nullptr;      // y, dx (padded when asymmetric) or dw
  void* out32 = nullptr;    // float32 fallback: the unpadded float32 result, converted back last
};

// The call in nnplug's terms.
struct conv_args {
  int32_t kind;
  elem t;  // the operands' type
  bool symmetric;
  const DLTensor* x;  // [N, C, H, W]
  const DLTensor* w;  // [K, C/g, R, S]
  const DLTensor* y;  // [N, K, P, Q]
  int64_t H, W;
  nnp_conv2d_params p;
  conv_geom g;
};

size_t align256(size_t n) { return (n + 255) & ~size_t{255}; }

// Queues what the compute type ct needs before cuDNN runs: float32 copies of the inputs (ct
// differs from the operands' type) in kScratchTemp1, the explicitly padded x in kScratchTemp0;
// returns the pointers cuDNN works on.
conv_operands stage(stream& s, const conv_args& a, elem ct) {
  const bool convert = ct != a.t;
  const conv_geom& g = a.g;
  const int64_t nx = numel(*a.x), nw = numel(*a.w), ny = numel(*a.y);
  const int64_t nx_padded = g.N * g.C * g.Hc * g.Wc;
  char* f32 = nullptr;
  size_t used = 0;
  if (convert)  // room for each of x, w, y once, whichever are inputs or the output
    f32 = static_cast<char*>(s.scratch(kScratchTemp1, align256(static_cast<size_t>(nx) * 4) +
                                                          align256(static_cast<size_t>(nw) * 4) +
                                                          align256(static_cast<size_t>(ny) * 4)));
  auto take = [&](int64_t n) {
    void* p = f32 + used;
    used += align256(static_cast<size_t>(n) * 4);
    return p;
  };
  auto input = [&](const DLTensor& t) -> const void* {
    if (!convert) return data_ptr<const void>(t);
    void* p = take(numel(t));
    launch_cast(s, a.t, data_ptr<const void>(t), elem::f32, p, numel(t));
    return p;
  };
  auto padded = [&](const void* x) -> const void* {
    if (a.symmetric) return x;
    void* xp = s.scratch(kScratchTemp0, static_cast<size_t>(nx_padded) * elem_size(ct));
    launch_pad2d(s, ct, x, xp, g.N * g.C, a.H, a.W, a.p.pad_top, a.p.pad_bottom, a.p.pad_left,
                 a.p.pad_right);
    return xp;
  };
  conv_operands o;
  switch (a.kind) {
    case NNP_OP_CONV2D_FORWARD:
      o.x = padded(input(*a.x));
      o.w = input(*a.w);
      o.out = convert ? (o.out32 = take(ny)) : data_ptr<void>(*a.y);
      break;
    case NNP_OP_CONV2D_BACKWARD_FILTER:
      o.x = padded(input(*a.x));
      o.y = input(*a.y);
      o.out = convert ? (o.out32 = take(nw)) : data_ptr<void>(*a.w);
      break;
    default:  // backward data
      o.w = input(*a.w);
      o.y = input(*a.y);
      if (convert) o.out32 = take(nx);
      o.out = !a.symmetric
                  ? s.scratch(kScratchTemp0, static_cast<size_t>(nx_padded) * elem_size(ct))
                  : (convert ? o.out32 : data_ptr<void>(*a.x));
      break;
  }
  return o;
}

// Queues what follows cuDNN: the crop of the padded dx, the conversion back from float32.
void finish(stream& s, const conv_args& a, elem ct, const conv_operands& o) {
  const bool convert = ct != a.t;
  void* result = o.out;
  if (a.kind == NNP_OP_CONV2D_BACKWARD_DATA && !a.symmetric) {
    void* dst = convert ? o.out32 : data_ptr<void>(*a.x);
    launch_crop2d(s, ct, o.out, dst, a.g.N * a.g.C, a.H, a.W, a.p.pad_top, a.p.pad_bottom,
                  a.p.pad_left, a.p.pad_right);
    result = dst;
  }
  if (convert) {
    const DLTensor& out = a.kind == NNP_OP_CONV2D_FORWARD         ? *a.y
                          : a.kind == NNP_OP_CONV2D_BACKWARD_DATA ? *a.x
                                                                  : *a.w;
    launch_cast(s, elem::f32, result, a.t, data_ptr<void>(out), numel(out));
  }
}

cudnnStatus_t workspace_size(cudnnHandle_t h, int32_t kind, const conv_plan& pl, int algo,
                             size_t* ws) {
  if (kind == NNP_OP_CONV2D_FORWARD)
    return cudnnGetConvolutionForwardWorkspaceSize(
        h, pl.xd.d, pl.wd.d, pl.cd.d, pl.yd.d, static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws);
  if (kind == NNP_OP_CONV2D_BACKWARD_DATA)
    return cudnnGetConvolutionBackwardDataWorkspaceSize(
        h, pl.wd.d, pl.yd.d, pl.cd.d, pl.xd.d, static_cast<cudnnConvolutionBwdDataAlgo_t>(algo),
        ws);
  return cudnnGetConvolutionBackwardFilterWorkspaceSize(
      h, pl.xd.d, pl.yd.d, pl.cd.d, pl.wd.d, static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo),
      ws);
}

// Queues the convolution with `algo` (its math type already set on pl.cd); cuDNN's status.
cudnnStatus_t execute(cudnnHandle_t h, int32_t kind, const conv_plan& pl, int algo, void* ws,
                      size_t ws_size, const conv_operands& o) {
  const float one = 1.0f, zero = 0.0f;
  if (kind == NNP_OP_CONV2D_FORWARD)
    return cudnnConvolutionForward(h, &one, pl.xd.d, o.x, pl.wd.d, o.w, pl.cd.d,
                                   static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws, ws_size, &zero,
                                   pl.yd.d, o.out);
  if (kind == NNP_OP_CONV2D_BACKWARD_DATA)
    return cudnnConvolutionBackwardData(h, &one, pl.wd.d, o.w, pl.yd.d, o.y, pl.cd.d,
                                        static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ws,
                                        ws_size, &zero, pl.xd.d, o.out);
  return cudnnConvolutionBackwardFilter(h, &one, pl.xd.d, o.x, pl.yd.d, o.y, pl.cd.d,
                                        static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), ws,
                                        ws_size, &zero, pl.wd.d, o.out);
}

// cuDNN's heuristic candidates for pl; *st is the heuristics' status.
std::vector<algo_choice> candidates(cudnnHandle_t h, int32_t kind, const conv_plan& pl,
                                    bool strict_fp32, cudnnStatus_t* st) {
  int returned = 0;
  if (kind == NNP_OP_CONV2D_FORWARD) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    *st = cudnnGetConvolutionForwardAlgorithm_v7(h, pl.xd.d, pl.wd.d, pl.cd.d, pl.yd.d,
                                                 CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf);
    return *st == CUDNN_STATUS_SUCCESS ? usable(perf, returned, strict_fp32)
                                       : std::vector<algo_choice>{};
  }
  if (kind == NNP_OP_CONV2D_BACKWARD_DATA) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    *st = cudnnGetConvolutionBackwardDataAlgorithm_v7(h, pl.wd.d, pl.yd.d, pl.cd.d, pl.xd.d,
                                                      CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                      &returned, perf);
    return *st == CUDNN_STATUS_SUCCESS ? usable(perf, returned, strict_fp32)
                                       : std::vector<algo_choice>{};
  }
  cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  *st = cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, pl.xd.d, pl.yd.d, pl.cd.d, pl.wd.d,
                                                      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                                                      &returned, perf);
  return *st == CUDNN_STATUS_SUCCESS ? usable(perf, returned, strict_fp32)
                                     : std::vector<algo_choice>{};
}

// What the search met, for the error message when nothing ran.
struct search_log {
  size_t tried = 0;
  bool out_of_memory = false;
  std::string last = "no candidate";
};

const char* kind_call(int32_t kind) {
  return kind == NNP_OP_CONV2D_FORWARD         ? "cudnnConvolutionForward"
         : kind == NNP_OP_CONV2D_BACKWARD_DATA ? "cudnnConvolutionBackwardData"
                                               : "cudnnConvolutionBackwardFilter";
}

// Runs the convolution on o with the first of cuDNN's candidates for pl that works, and records
// it in pl (algorithm, math type on pl.cd, workspace size). Refusals and out-of-memory (for the
// workspace, or inside cuDNN) move on to the next candidate; other errors are thrown. Returns
// false when none ran.
bool search_and_run(stream& s, int32_t kind, conv_plan& pl, bool strict_fp32,
                    const conv_operands& o, search_log* log) {
  cudnnHandle_t h = s.dnn();
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  const std::vector<algo_choice> cands = candidates(h, kind, pl, strict_fp32, &st);
  if (st != CUDNN_STATUS_SUCCESS) {
    if (!is_refusal(st)) throw_cudnn(st, "cudnnGetConvolution*Algorithm_v7", __FILE__, __LINE__);
    log->last = format("heuristics: %s", cudnnGetErrorString(st));
    return false;
  }
  for (const algo_choice& c : cands) {
    ++log->tried;
    st = cudnnSetConvolutionMathType(pl.cd.d, c.math);
    size_t ws_size = 0;
    if (st == CUDNN_STATUS_SUCCESS) st = workspace_size(h, kind, pl, c.algo, &ws_size);
    if (st == CUDNN_STATUS_SUCCESS) {
      void* ws = ws_size > 0 ? s.try_scratch(kScratchWorkspace, ws_size) : nullptr;
      if (ws_size > 0 && ws == nullptr) {
        log->out_of_memory = true;
        log->last =
            format("algorithm %d: out of memory for its %zu-byte workspace", c.algo, ws_size);
        continue;
      }
      st = execute(h, kind, pl, c.algo, ws, ws_size, o);
      if (st == CUDNN_STATUS_SUCCESS) {
        pl.algo = c.algo;
        pl.ws_size = ws_size;
        return true;
      }
    }
    if (is_out_of_memory(st)) {
      log->out_of_memory = true;
    } else if (!is_refusal(st)) {
      throw_cudnn(st, kind_call(kind), __FILE__, __LINE__);
    }
    log->last = format("algorithm %d: %s", c.algo, cudnnGetErrorString(st));
  }
  return false;
}

// A plan for compute type ct, or NULL (with the reason in log) when cuDNN refuses even the
// descriptors of a 16-bit type.
std::shared_ptr<conv_plan> new_plan(const conv_geom& g, elem ct, cudnnMathType_t math,
                                    search_log* log) {
  try {
    return std::make_shared<conv_plan>(g, ct, math);
  } catch (const nnp::error& e) {
    if (ct == elem::f32 ||
        (e.status() != NNP_STATUS_UNSUPPORTED && e.status() != NNP_STATUS_INVALID_ARGUMENT))
      throw;
    log->last = e.what();
    return nullptr;
  }
}

// x [N,C,H,W], w [K,C/g,R,S], y [N,K,P,Q] of a conv2d call, whichever are inputs or outputs.
struct conv_tensors {
  const DLTensor *x, *w, *y;
};
conv_tensors conv_tensors_of(const op_call& c) {
  switch (c.kind) {
    case NNP_OP_CONV2D_FORWARD:
      return {c.in(0), c.in(1), c.out(0)};
    case NNP_OP_CONV2D_BACKWARD_DATA:
      return {c.out(0), c.in(1), c.in(0)};
    default:  // NNP_OP_CONV2D_BACKWARD_FILTER
      return {c.in(0), c.out(0), c.in(1)};
  }
}

// Whether op_conv2d hands the call to cuDNN (an empty operand gives zeros without it).
bool runs_cudnn(const op_call& c, const conv_tensors& t) {
  return numel(*c.out(0)) > 0 && numel(*t.x) > 0 && numel(*t.w) > 0 && numel(*t.y) > 0;
}

}  // namespace

void check_conv2d_limits(const op_call& c) {
  if (c.kind == NNP_OP_CONV2D_BACKWARD_BIAS) return;  // own kernel, 64-bit sizes
  const conv_tensors t = conv_tensors_of(c);
  if (!runs_cudnn(c, t)) return;
  check_int(*t.x, "x");
  check_int(*t.w, "w");
  check_int(*t.y, "y");
  const auto p = read_params<nnp_conv2d_params>(c.params);
  const bool symmetric = p.pad_top == p.pad_bottom && p.pad_left == p.pad_right;
  if (symmetric) return;
  // cuDNN then sees the explicitly padded x (each factor below 2^31: no overflow in int64)
  const int64_t hc = t.x->shape[2] + p.pad_top + p.pad_bottom;
  const int64_t wc = t.x->shape[3] + p.pad_left + p.pad_right;
  const int64_t nc = t.x->shape[0] * t.x->shape[1];
  if (nc > INT_MAX / hc || nc * hc > INT_MAX / wc)
    unsupported("conv2d: the padded input exceeds cuDNN's 32-bit limit (2^31 - 1 elements)");
}

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
  const conv_tensors ct = conv_tensors_of(c);
  const DLTensor *x = ct.x, *w = ct.w, *y = ct.y;
  const DLTensor& out = *c.out(0);
  const elem t = elem_of(out.dtype);
  const size_t es = dtype_size(out.dtype);
  if (numel(out) == 0) return;
  if (!runs_cudnn(c, ct)) {
    // An empty sum: zeros (plus bias for forward).
    NNP_CUDA_CHECK(cudaMemsetAsync(data_ptr<void>(out), 0, numel(out) * es, s.handle));
    if (c.kind == NNP_OP_CONV2D_FORWARD && c.in(2) != nullptr)
      launch_bias_add(s, t, data_ptr<void>(out), data_ptr<const void>(*c.in(2)), y->shape[0],
                      y->shape[1], y->shape[2] * y->shape[3]);
    return;
  }
  check_conv2d_limits(c);  // the row check did this already; kept beside the casts it guards

  const int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
  const int64_t K = w->shape[0], R = w->shape[2], S = w->shape[3];
  const int64_t P = y->shape[2], Q = y->shape[3];
  const bool symmetric = p.pad_top == p.pad_bottom && p.pad_left == p.pad_right;
  // cuDNN sees x (symmetric padding) or the explicitly padded xp (padding 0).
  const int64_t Hc = symmetric ? H : H + p.pad_top + p.pad_bottom;
  const int64_t Wc = symmetric ? W : W + p.pad_left + p.pad_right;
  const int pad_h = symmetric ? p.pad_top : 0, pad_w = symmetric ? p.pad_left : 0;

  const conv_args a{
      c.kind, t, symmetric, x, w,
      y,      H, W,         p, conv_geom{N, C, Hc, Wc, K, R, S, P, Q, pad_h, pad_w, p}};
  const bool strict_fp32 = t == elem::f32 && !s.allow_tf32;
  const cudnnMathType_t math_request =
      t == elem::f32 ? (s.allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH) : CUDNN_TENSOR_OP_MATH;
  cudnnHandle_t h = s.dnn();
  const plan_key key = {c.kind,
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

  bool done = false;
  bool keep_plan = true;
  if (std::shared_ptr<const conv_plan> plan = find_plan(key)) {
    // The shape's plan: no descriptor to create, no question to cuDNN before running.
    const conv_operands o = stage(s, a, plan->compute);
    void* ws = plan->ws_size > 0 ? s.try_scratch(kScratchWorkspace, plan->ws_size) : nullptr;
    cudnnStatus_t st = CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED;
    if (plan->ws_size == 0 || ws != nullptr)
      st = execute(h, c.kind, *plan, plan->algo, ws, plan->ws_size, o);
    if (st == CUDNN_STATUS_SUCCESS) {
      finish(s, a, plan->compute, o);
      done = true;
    } else if (is_out_of_memory(st) || is_refusal(st)) {
      // No memory for its workspace now, or refused for these pointers (alignment): search
      // again for this call, and keep the cached plan for the next.
      keep_plan = false;
    } else {
      throw_cudnn(st, kind_call(c.kind), __FILE__, __LINE__);
    }
  }
  if (!done) {
    // First call of this shape: cuDNN's candidates in order, in the operands' type; for 16-bit
    // types, when cuDNN runs none of them, in float32 (see the top of the file).
    search_log log;
    elem ct = t;
    std::shared_ptr<conv_plan> plan = new_plan(a.g, t, math_request, &log);
    conv_operands o;
    bool ran = false;
    if (plan != nullptr) {
      o = stage(s, a, t);
      ran = search_and_run(s, c.kind, *plan, strict_fp32, o, &log);
    }
    if (!ran && t != elem::f32) {
      ct = elem::f32;
      plan = new_plan(a.g, elem::f32, CUDNN_DEFAULT_MATH, &log);
      o = stage(s, a, elem::f32);
      ran = search_and_run(s, c.kind, *plan, /*strict_fp32=*/false, o, &log);
    }
    if (!ran) {
      const std::string what = format(
          "conv2d: cuDNN ran no algorithm for x [%lld, %lld, %lld, %lld], "
          "w [%lld, %lld, %lld, %lld], groups %d, %s%s (%zu tried; last: %s)",
          static_cast<long long>(N), static_cast<long long>(C), static_cast<long long>(H),
          static_cast<long long>(W), static_cast<long long>(K),
          static_cast<long long>(C / p.groups), static_cast<long long>(R),
          static_cast<long long>(S), p.groups, dtype_name(out.dtype).c_str(),
          t != elem::f32 ? " (also in float32)" : "", log.tried, log.last.c_str());
      fail(log.out_of_memory ? NNP_STATUS_OUT_OF_MEMORY : NNP_STATUS_UNSUPPORTED, what);
    }
    if (keep_plan) store_plan(key, plan);
    finish(s, a, ct, o);
  }

  if (c.kind == NNP_OP_CONV2D_FORWARD && c.in(2) != nullptr)
    launch_bias_add(s, t, data_ptr<void>(*y), data_ptr<const void>(*c.in(2)), N, K, P * Q);
}

}  // namespace nnp::cuda
