// conv_cudnn.cpp — the cuDNN path of the convolution ops (conv.cpp): descriptors, cuDNN's
// algorithm choice and the plans that cache it, the 16-bit fallback and the explicit padding
// windows. conv.cpp calls run_cudnn, and runs the direct kernels where it returns false.
//
// cuDNN sees 4-d tensors for 1 and 2 spatial dimensions (1-d: a unit height) and 5-d for 3, set
// with its Nd descriptors.
//
// Speed comes from cuDNN's algorithm choice, made once per *plan*. Outside graph capture the
// first call of a shape measures cuDNN's algorithms (cudnnFind*AlgorithmEx, as PyTorch's
// cudnn.benchmark, within the workspace the heuristics' candidates need and memory allows);
// during capture it takes cuDNN's heuristics (cudnnGet*Algorithm_v7). The candidates are tried
// in that order, and one that cuDNN refuses (NOT_SUPPORTED, BAD_PARAM) or whose workspace does
// not fit in memory is skipped for the next. The first that runs becomes the shape's plan —
// descriptors, algorithm, math type, workspace size — cached in a process-wide map keyed by
// direction, dtype, math mode, device and the whole geometry, so a later call creates no
// descriptor and asks cuDNN nothing before running. The workspace is the stream's grow-only
// scratch.
// 16-bit fallback: cuDNN's legacy API may refuse a float16/bfloat16 convolution (e.g. grouped or
// dilated backward-filter) only when asked to run it. Then the operands are converted to float32
// in scratch, the convolution runs in float32 (tensor-op math allowed: 16-bit values are exact in
// TF32) and the result is converted back; the plan remembers it.
// Padding: cuDNN pads symmetrically. An axis whose begin pad, used on both sides, gives another
// output size (asymmetric pads, ConvTranspose's output_padding beyond what the stride absorbs,
// the negative pads of its output_shape) is handed to cuDNN explicitly zero-padded and cropped
// to what the outputs read (forward, backward-filter: launch_conv_window into scratch), or cuDNN
// computes that window of dx in scratch and it is cropped back (backward-data).
//
// TF32: float32 uses CUDNN_FMA_MATH unless the stream allows TF32.
#include "conv_cudnn.hpp"

#include <array>
#include <climits>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace nnp::cuda {
namespace {

using nnp::conv_nd_geometry;
using nnp::kConvMaxSpatial;

// ---- cuDNN calls with the arguments this file always passes -------------------------------------
cudnnStatus_t set_tensor_nd(cudnnTensorDescriptor_t d, cudnnDataType_t t, int nb, const int* dims,
                            const int* strides) {
  return cudnnSetTensorNdDescriptor(d, t, nb, dims, strides);
}
cudnnStatus_t set_filter_nd(cudnnFilterDescriptor_t d, cudnnDataType_t t, int nb, const int* dims) {
  return cudnnSetFilterNdDescriptor(d, t, CUDNN_TENSOR_NCHW, nb, dims);
}
cudnnStatus_t set_convolution_nd(cudnnConvolutionDescriptor_t d, int n, const int* pads,
                                 const int* strides, const int* dilations) {
  return cudnnSetConvolutionNdDescriptor(d, n, pads, strides, dilations, CUDNN_CROSS_CORRELATION,
                                         CUDNN_DATA_FLOAT);
}
void check_cudnn(cudnnStatus_t st, const char* call) {
  if (st != CUDNN_STATUS_SUCCESS) throw_cudnn(st, call, __FILE__, __LINE__);
}

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

// Sizes cuDNN takes: [a, b, spatial[0..nsp)] as int (the caller checked they fit).
struct nd_dims {
  int nb = 0;
  int v[2 + kConvMaxSpatial] = {};
  nd_dims(int64_t a, int64_t b, const int64_t* spatial3, int nsp) : nb(2 + nsp) {
    v[0] = static_cast<int>(a);
    v[1] = static_cast<int>(b);
    for (int i = 0; i < nsp; ++i) v[2 + i] = static_cast<int>(spatial3[kConvMaxSpatial - nsp + i]);
  }
};

struct tensor_desc : cudnn_descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor,
                                      cudnnDestroyTensorDescriptor> {
  tensor_desc(cudnnDataType_t dt, const nd_dims& dims) {
    int strides[2 + kConvMaxSpatial];
    strides[dims.nb - 1] = 1;
    for (int i = dims.nb - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims.v[i + 1];
    check_cudnn(set_tensor_nd(d, dt, dims.nb, dims.v, strides), "cudnnSetTensorNdDescriptor");
  }
};

struct filter_desc : cudnn_descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor,
                                      cudnnDestroyFilterDescriptor> {
  filter_desc(cudnnDataType_t dt, const nd_dims& dims) {
    check_cudnn(set_filter_nd(d, dt, dims.nb, dims.v), "cudnnSetFilterNdDescriptor");
  }
};

// Whether the product of the factors (each >= 1) is at most INT_MAX.
bool product_fits_int(std::initializer_list<int64_t> factors) {
  int64_t p = 1;
  for (int64_t f : factors) {
    if (f < 1 || f > INT_MAX / p) return false;
    p *= f;
  }
  return true;
}

struct conv_desc : cudnn_descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                                    cudnnDestroyConvolutionDescriptor> {
  conv_desc(const conv_nd_geometry& g, const cudnn_view& v) {
    int pads[kConvMaxSpatial], strides[kConvMaxSpatial], dilations[kConvMaxSpatial];
    for (int i = 0; i < v.nsp; ++i) {
      const int a = kConvMaxSpatial - v.nsp + i;
      pads[i] = static_cast<int>(v.pad[a]);
      strides[i] = static_cast<int>(g.stride[a]);
      dilations[i] = static_cast<int>(g.dilation[a]);
    }
    check_cudnn(set_convolution_nd(d, v.nsp, pads, strides, dilations),
                "cudnnSetConvolutionNdDescriptor");
    if (g.groups > 1) NNP_CUDNN_CHECK(cudnnSetConvolutionGroupCount(d, static_cast<int>(g.groups)));
  }
};

// ---- plans --------------------------------------------------------------------------------------
struct algo_choice {
  int algo;
  cudnnMathType_t math;
};

constexpr size_t kMaxWorkspace = size_t{1} << 30;  // skip algorithms that want more than 1 GiB

cudnnDataType_t cudnn_type(elem t) {
  return float_code(t, CUDNN_DATA_FLOAT, CUDNN_DATA_HALF, CUDNN_DATA_BFLOAT16, "conv");
}

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

  conv_plan(const conv_nd_geometry& g, const cudnn_view& v, elem ct, cudnnMathType_t math)
      : compute(ct),
        xd(cudnn_type(ct), nd_dims(g.n, g.ci, v.in, v.nsp)),
        wd(cudnn_type(ct), nd_dims(g.co, g.cig(), g.kernel, v.nsp)),
        yd(cudnn_type(ct), nd_dims(g.n, g.co, g.out, v.nsp)),
        cd(g, v) {
    NNP_CUDNN_CHECK(cudnnSetConvolutionMathType(cd.d, math));
  }
};

// direction, dtype, TF32, device, spatial, n, ci, co, groups, then in, kernel, out, stride,
// dilation, pad of the 3 axes.
using plan_key = std::array<int64_t, 9 + 6 * kConvMaxSpatial>;
std::mutex g_plans_mutex;
// A null plan: cuDNN ran none of its algorithms for this key; the direct kernels compute it.
std::map<plan_key, std::shared_ptr<const conv_plan>> g_plans;

bool find_plan(const plan_key& k, std::shared_ptr<const conv_plan>* plan) {
  std::lock_guard<std::mutex> lock(g_plans_mutex);
  auto it = g_plans.find(k);
  if (it == g_plans.end()) return false;
  *plan = it->second;
  return true;
}
void store_plan(const plan_key& k, std::shared_ptr<const conv_plan> plan) {
  std::lock_guard<std::mutex> lock(g_plans_mutex);
  g_plans[k] = std::move(plan);
}

// The usable results in cuDNN's order of preference: succeeded, within the workspace limit and,
// for strict float32, without tensor-op math. perf is an array of *AlgoPerf_t.
template <typename Perf>
// Deterministic algorithms (CUDNN_DETERMINISTIC: the same result bit for bit on every call)
// come first, in cuDNN's order; the others (atomics: backward-data and backward-filter ALGO_0,
// for instance) only after them, for a configuration no deterministic algorithm runs.
std::vector<algo_choice> usable(const Perf* perf, int n, bool strict_fp32, size_t max_ws) {
  std::vector<algo_choice> out, nondeterministic;
  for (int i = 0; i < n; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > max_ws) continue;
    if (strict_fp32 && (perf[i].mathType == CUDNN_TENSOR_OP_MATH ||
                        perf[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
      continue;
    (perf[i].determinism == CUDNN_DETERMINISTIC ? out : nondeterministic)
        .push_back(algo_choice{static_cast<int>(perf[i].algo),
                               strict_fp32 ? CUDNN_FMA_MATH : perf[i].mathType});
  }
  out.insert(out.end(), nondeterministic.begin(), nondeterministic.end());
  return out;
}

// The largest workspace among the usable results (what Find is given).
template <typename Perf>
size_t largest_workspace(const Perf* perf, int n) {
  size_t m = 0;
  for (int i = 0; i < n; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= kMaxWorkspace &&
        perf[i].memory > m)
      m = perf[i].memory;
  return m;
}

// cuDNN declines this configuration (BAD_PARAM 2xxx, NOT_SUPPORTED 3xxx): try something else.
bool is_refusal(cudnnStatus_t st) {
  const int group = static_cast<int>(st) / 1000;
  return group == 2 || group == 3;
}
bool is_out_of_memory(cudnnStatus_t st) { return status_of(st) == NNP_STATUS_OUT_OF_MEMORY; }

// ---- one call -----------------------------------------------------------------------------------
void* result_of(const conv_job& j) {
  return j.d == dir::forward ? j.out : j.d == dir::backward_data ? j.in : j.w;
}
int64_t result_count(const conv_job& j) {
  return j.d == dir::forward ? j.n_out : j.d == dir::backward_data ? j.n_in : j.n_w;
}

// Device pointers of one call as cuDNN sees them (compute type, windowed input).
struct conv_operands {
  const void* in = nullptr;   // forward, backward-filter
  const void* w = nullptr;    // forward, backward-data
  const void* out = nullptr;  // backward-data, backward-filter (the output gradient)
  void* result = nullptr;     // out, the (windowed) in, or w
  void* result32 = nullptr;   // float32 fallback: the float32 result, converted back last
};

size_t align256(size_t n) { return (n + 255) & ~size_t{255}; }

// Queues what the compute type ct needs before cuDNN runs: float32 copies of the inputs (ct
// differs from the operands' type) in kScratchTemp1, the windowed input in kScratchTemp0;
// returns the pointers cuDNN works on.
conv_operands stage(stream& s, const conv_job& j, elem ct) {
  const bool convert = ct != j.t;
  char* f32 = nullptr;
  size_t used = 0;
  if (convert)  // room for each of in, w, out once, whichever are inputs or the result
    f32 = static_cast<char*>(
        s.scratch(kScratchTemp1, align256(static_cast<size_t>(j.n_in) * 4) +
                                     align256(static_cast<size_t>(j.n_w) * 4) +
                                     align256(static_cast<size_t>(j.n_out) * 4)));
  auto take = [&](int64_t n) {
    void* p = f32 + used;
    used += align256(static_cast<size_t>(n) * 4);
    return p;
  };
  auto input = [&](const void* p, int64_t n) -> const void* {
    if (!convert) return p;
    void* q = take(n);
    launch_cast(s, j.t, p, elem::f32, q, n);
    return q;
  };
  auto windowed = [&](const void* x) -> const void* {
    if (!j.v.windowed) return x;
    void* xw = s.scratch(kScratchTemp0, static_cast<size_t>(j.n_in_cudnn) * elem_size(ct));
    launch_conv_window(s, ct, x, j.g.in, xw, j.v.in, j.v.shift, j.g.n * j.g.ci);
    return xw;
  };
  conv_operands o;
  switch (j.d) {
    case dir::forward:
      o.in = windowed(input(j.in, j.n_in));
      o.w = input(j.w, j.n_w);
      o.result = convert ? (o.result32 = take(j.n_out)) : j.out;
      break;
    case dir::backward_filter:
      o.in = windowed(input(j.in, j.n_in));
      o.out = input(j.out, j.n_out);
      o.result = convert ? (o.result32 = take(j.n_w)) : j.w;
      break;
    case dir::backward_data:
      o.w = input(j.w, j.n_w);
      o.out = input(j.out, j.n_out);
      if (convert) o.result32 = take(j.n_in);
      o.result = j.v.windowed
                     ? s.scratch(kScratchTemp0, static_cast<size_t>(j.n_in_cudnn) * elem_size(ct))
                     : (convert ? o.result32 : j.in);
      break;
  }
  return o;
}

// Queues what follows cuDNN: the crop of the windowed dx, the conversion back from float32.
void finish(stream& s, const conv_job& j, elem ct, const conv_operands& o) {
  const bool convert = ct != j.t;
  void* result = o.result;
  if (j.d == dir::backward_data && j.v.windowed) {
    void* dst = convert ? o.result32 : j.in;
    int64_t back[kConvMaxSpatial];
    for (int a = 0; a < kConvMaxSpatial; ++a) back[a] = -j.v.shift[a];
    launch_conv_window(s, ct, o.result, j.v.in, dst, j.g.in, back, j.g.n * j.g.ci);
    result = dst;
  }
  if (convert) launch_cast(s, elem::f32, result, j.t, result_of(j), result_count(j));
}

cudnnStatus_t workspace_size(cudnnHandle_t h, dir d, const conv_plan& pl, int algo, size_t* ws) {
  if (d == dir::forward)
    return cudnnGetConvolutionForwardWorkspaceSize(
        h, pl.xd.d, pl.wd.d, pl.cd.d, pl.yd.d, static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws);
  if (d == dir::backward_data)
    return cudnnGetConvolutionBackwardDataWorkspaceSize(
        h, pl.wd.d, pl.yd.d, pl.cd.d, pl.xd.d, static_cast<cudnnConvolutionBwdDataAlgo_t>(algo),
        ws);
  return cudnnGetConvolutionBackwardFilterWorkspaceSize(
      h, pl.xd.d, pl.yd.d, pl.cd.d, pl.wd.d, static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo),
      ws);
}

// Queues the convolution with `algo` (its math type already set on pl.cd); cuDNN's status.
cudnnStatus_t execute(cudnnHandle_t h, dir d, const conv_plan& pl, int algo, void* ws,
                      size_t ws_size, const conv_operands& o) {
  const float one = 1.0f, zero = 0.0f;
  if (d == dir::forward)
    return cudnnConvolutionForward(h, &one, pl.xd.d, o.in, pl.wd.d, o.w, pl.cd.d,
                                   static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws, ws_size, &zero,
                                   pl.yd.d, o.result);
  if (d == dir::backward_data)
    return cudnnConvolutionBackwardData(h, &one, pl.wd.d, o.w, pl.yd.d, o.out, pl.cd.d,
                                        static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ws,
                                        ws_size, &zero, pl.xd.d, o.result);
  return cudnnConvolutionBackwardFilter(h, &one, pl.xd.d, o.in, pl.yd.d, o.out, pl.cd.d,
                                        static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), ws,
                                        ws_size, &zero, pl.wd.d, o.result);
}

// Measures cuDNN's algorithms on the call's operands (cudnnFind*AlgorithmEx; it runs them and
// waits for the device, so never during graph capture) with the workspace `heuristic` says the
// largest candidate needs, or as much of it as memory gives. Candidates fastest first; false
// when Find could not run (the caller keeps the heuristics' order).
template <typename Perf, typename FindFn>
bool measured(stream& s, const Perf* heuristic, int n_heuristic, bool strict_fp32, int count,
              FindFn&& find, std::vector<algo_choice>* out) {
  size_t ws_size = largest_workspace(heuristic, n_heuristic);
  void* ws = nullptr;
  while (ws_size > 0 && (ws = s.try_scratch(kScratchWorkspace, ws_size)) == nullptr) ws_size /= 2;
  std::vector<Perf> perf(static_cast<size_t>(count));
  int returned = 0;
  if (find(count, &returned, perf.data(), ws, ws_size) != CUDNN_STATUS_SUCCESS) return false;
  *out = usable(perf.data(), returned, strict_fp32, ws_size);
  return !out->empty();
}

// cuDNN's candidates for pl, measured on o when the stream is not capturing, else from the
// heuristics; *st is the heuristics' status.
std::vector<algo_choice> candidates(stream& s, dir d, const conv_plan& pl, bool strict_fp32,
                                    const conv_operands& o, cudnnStatus_t* st) {
  cudnnHandle_t h = s.dnn();
  const bool measure = !s.capturing();
  int returned = 0;
  std::vector<algo_choice> found;
  if (d == dir::forward) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    *st = cudnnGetConvolutionForwardAlgorithm_v7(h, pl.xd.d, pl.wd.d, pl.cd.d, pl.yd.d,
                                                 CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf);
    if (*st != CUDNN_STATUS_SUCCESS) return {};
    if (measure && measured(
                       s, perf, returned, strict_fp32, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                       [&](int n, int* r, cudnnConvolutionFwdAlgoPerf_t* p, void* ws, size_t wss) {
                         return cudnnFindConvolutionForwardAlgorithmEx(h, pl.xd.d, o.in, pl.wd.d,
                                                                       o.w, pl.cd.d, pl.yd.d,
                                                                       o.result, n, r, p, ws, wss);
                       },
                       &found))
      return found;
    return usable(perf, returned, strict_fp32, kMaxWorkspace);
  }
  if (d == dir::backward_data) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    *st = cudnnGetConvolutionBackwardDataAlgorithm_v7(h, pl.wd.d, pl.yd.d, pl.cd.d, pl.xd.d,
                                                      CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                      &returned, perf);
    if (*st != CUDNN_STATUS_SUCCESS) return {};
    if (measure &&
        measured(
            s, perf, returned, strict_fp32, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
            [&](int n, int* r, cudnnConvolutionBwdDataAlgoPerf_t* p, void* ws, size_t wss) {
              return cudnnFindConvolutionBackwardDataAlgorithmEx(
                  h, pl.wd.d, o.w, pl.yd.d, o.out, pl.cd.d, pl.xd.d, o.result, n, r, p, ws, wss);
            },
            &found))
      return found;
    return usable(perf, returned, strict_fp32, kMaxWorkspace);
  }
  cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  *st = cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, pl.xd.d, pl.yd.d, pl.cd.d, pl.wd.d,
                                                      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                                                      &returned, perf);
  if (*st != CUDNN_STATUS_SUCCESS) return {};
  if (measure &&
      measured(
          s, perf, returned, strict_fp32, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
          [&](int n, int* r, cudnnConvolutionBwdFilterAlgoPerf_t* p, void* ws, size_t wss) {
            return cudnnFindConvolutionBackwardFilterAlgorithmEx(
                h, pl.xd.d, o.in, pl.yd.d, o.out, pl.cd.d, pl.wd.d, o.result, n, r, p, ws, wss);
          },
          &found))
    return found;
  return usable(perf, returned, strict_fp32, kMaxWorkspace);
}

const char* dir_call(dir d) {
  return d == dir::forward         ? "cudnnConvolutionForward"
         : d == dir::backward_data ? "cudnnConvolutionBackwardData"
                                   : "cudnnConvolutionBackwardFilter";
}

// Runs the convolution on o with the first of cuDNN's candidates for pl that works, and records
// it in pl (algorithm, math type on pl.cd, workspace size). Refusals and out-of-memory (for the
// workspace, or inside cuDNN; *oom is set) move on to the next candidate; other errors are
// thrown. Returns false when none ran.
bool search_and_run(stream& s, dir d, conv_plan& pl, bool strict_fp32, const conv_operands& o,
                    bool* oom) {
  cudnnHandle_t h = s.dnn();
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  const std::vector<algo_choice> cands = candidates(s, d, pl, strict_fp32, o, &st);
  if (st != CUDNN_STATUS_SUCCESS) {
    if (!is_refusal(st)) throw_cudnn(st, "cudnnGetConvolution*Algorithm_v7", __FILE__, __LINE__);
    return false;
  }
  for (const algo_choice& c : cands) {
    st = cudnnSetConvolutionMathType(pl.cd.d, c.math);
    size_t ws_size = 0;
    if (st == CUDNN_STATUS_SUCCESS) st = workspace_size(h, d, pl, c.algo, &ws_size);
    if (st == CUDNN_STATUS_SUCCESS) {
      void* ws = ws_size > 0 ? s.try_scratch(kScratchWorkspace, ws_size) : nullptr;
      if (ws_size > 0 && ws == nullptr) {
        *oom = true;
        continue;
      }
      st = execute(h, d, pl, c.algo, ws, ws_size, o);
      if (st == CUDNN_STATUS_SUCCESS) {
        pl.algo = c.algo;
        pl.ws_size = ws_size;
        return true;
      }
    }
    if (is_out_of_memory(st)) {
      *oom = true;
    } else if (!is_refusal(st)) {
      throw_cudnn(st, dir_call(d), __FILE__, __LINE__);
    }
  }
  return false;
}

// A plan for compute type ct, or NULL when cuDNN refuses its descriptors.
std::shared_ptr<conv_plan> new_plan(const conv_job& j, elem ct, cudnnMathType_t math) {
  try {
    return std::make_shared<conv_plan>(j.g, j.v, ct, math);
  } catch (const nnp::error& e) {
    if (e.status() != NNP_STATUS_UNSUPPORTED && e.status() != NNP_STATUS_INVALID_ARGUMENT) throw;
    return nullptr;
  }
}

}  // namespace

// ---- what conv.cpp calls (conv_cudnn.hpp) -------------------------------------------------------
// The geometry of a call whose operands are all non-empty.
cudnn_view view_of(const conv_nd_geometry& g) {
  cudnn_view v;
  v.nsp = g.spatial == 3 ? 3 : 2;
  for (int a = 0; a < kConvMaxSpatial; ++a) {
    const nnp::wide_int span = nnp::wide_int{g.dilation[a]} * (g.kernel[a] - 1) + 1;
    const nnp::wide_int p = g.pad[a];
    const nnp::wide_int padded = nnp::wide_int{g.in[a]} + 2 * p;
    const bool symmetric =
        p >= 0 && p <= INT_MAX && padded >= span && (padded - span) / g.stride[a] + 1 == g.out[a];
    if (symmetric) {
      v.in[a] = g.in[a];
      v.pad[a] = g.pad[a];
    } else {
      const nnp::wide_int extent = nnp::wide_int{g.out[a] - 1} * g.stride[a] + span;
      v.in[a] = extent > INT_MAX ? INT_MAX + int64_t{1} : static_cast<int64_t>(extent);
      v.shift[a] = g.pad[a];
      v.windowed = true;
    }
    if (span > INT_MAX || g.stride[a] > INT_MAX || g.dilation[a] > INT_MAX) v.fits = false;
  }
  v.fits = v.fits && product_fits_int({g.n, g.ci, v.in[0], v.in[1], v.in[2]}) &&
           product_fits_int({g.n, g.co, g.out[0], g.out[1], g.out[2]}) &&
           product_fits_int({g.co, g.cig(), g.kernel[0], g.kernel[1], g.kernel[2]}) &&
           g.groups <= INT_MAX;
  return v;
}

// Queues the call on cuDNN (see the top of the file); false when cuDNN runs nothing for it (the
// direct kernels then compute it).
bool run_cudnn(stream& s, const conv_job& j) {
  const conv_nd_geometry& g = j.g;
  const bool strict_fp32 = j.t == elem::f32 && !s.allow_tf32;
  const cudnnMathType_t math_request = j.t == elem::f32
                                           ? (s.allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH)
                                           : CUDNN_TENSOR_OP_MATH;
  cudnnHandle_t h = s.dnn();
  const plan_key key = {static_cast<int64_t>(j.d),
                        static_cast<int64_t>(j.t),
                        s.allow_tf32 ? 1 : 0,
                        s.device,
                        g.spatial,
                        g.n,
                        g.ci,
                        g.co,
                        g.groups,
                        g.in[0],
                        g.in[1],
                        g.in[2],
                        g.kernel[0],
                        g.kernel[1],
                        g.kernel[2],
                        g.out[0],
                        g.out[1],
                        g.out[2],
                        g.stride[0],
                        g.stride[1],
                        g.stride[2],
                        g.dilation[0],
                        g.dilation[1],
                        g.dilation[2],
                        g.pad[0],
                        g.pad[1],
                        g.pad[2]};

  bool keep_plan = true;
  std::shared_ptr<const conv_plan> cached;
  if (find_plan(key, &cached)) {
    if (cached == nullptr) return false;  // cuDNN ran nothing for this shape before
    // The shape's plan: no descriptor to create, no question to cuDNN before running.
    const conv_operands o = stage(s, j, cached->compute);
    void* ws = cached->ws_size > 0 ? s.try_scratch(kScratchWorkspace, cached->ws_size) : nullptr;
    cudnnStatus_t st = CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED;
    if (cached->ws_size == 0 || ws != nullptr)
      st = execute(h, j.d, *cached, cached->algo, ws, cached->ws_size, o);
    if (st == CUDNN_STATUS_SUCCESS) {
      finish(s, j, cached->compute, o);
      return true;
    }
    if (!is_out_of_memory(st) && !is_refusal(st))
      throw_cudnn(st, dir_call(j.d), __FILE__, __LINE__);
    // No memory for its workspace now, or refused for these pointers (alignment): search again
    // for this call, and keep the cached plan for the next.
    keep_plan = false;
  }
  // First call of this shape: cuDNN's candidates in order, in the operands' type; for 16-bit
  // types, when cuDNN runs none of them, in float32 (see the top of the file).
  bool oom = false;
  elem ct = j.t;
  std::shared_ptr<conv_plan> plan = new_plan(j, j.t, math_request);
  conv_operands o;
  bool ran = false;
  if (plan != nullptr) {
    o = stage(s, j, j.t);
    ran = search_and_run(s, j.d, *plan, strict_fp32, o, &oom);
  }
  if (!ran && j.t != elem::f32) {
    ct = elem::f32;
    plan = new_plan(j, elem::f32, CUDNN_DEFAULT_MATH);
    if (plan != nullptr) {
      o = stage(s, j, elem::f32);
      ran = search_and_run(s, j.d, *plan, /*strict_fp32=*/false, o, &oom);
    }
  }
  if (!ran) {
    // Remembered unless memory was short (another call may find it).
    if (keep_plan && !oom) store_plan(key, nullptr);
    return false;
  }
  if (keep_plan) store_plan(key, plan);
  finish(s, j, ct, o);
  return true;
}

}  // namespace nnp::cuda
