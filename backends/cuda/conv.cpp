// conv.cpp — convolution on cuDNN: N-d (ONNX Conv, NNP_OP_CONV_*; ONNX ConvTranspose,
// NNP_OP_CONV_TRANSPOSE_*; 1 to 3 spatial dimensions) and 2-D (NNP_OP_CONV2D_*, mapped to the
// same N-d path), forward, backward-data and backward-filter, float32/float16/bfloat16 with
// float32 accumulation; backward-bias is our channel reduction (reduce.cu).
//
// Every op is one of three directions on the geometry of nnplug/kit/conv_nd.hpp (input
// [n, ci, in..] -> output [n, co, out..], filter [co, ci/groups, kernel..]):
//   conv forward = forward, conv backward-data = backward-data, backward-filter = backward-filter;
//   conv-transpose forward = backward-data + bias (its y is the geometry's input, its x the
//   output), its backward-data = forward (dy -> dx), its backward-filter = backward-filter with
//   dy as the input and x as the output gradient.
// The cuDNN path (conv_cudnn.cpp) runs every call it can: descriptors, the algorithm choice and
// its plans, the 16-bit fallback, explicit padding windows; TF32 as the stream allows.
// Direct kernels (conv_direct.cu): where cuDNN cannot take the call (an operand or padded input
// beyond its 32-bit sizes), where it ran none of its algorithms in either type, and where an
// operand is empty (the result is then bias, zeros, or NaN from 0 * inf at padding) the result
// comes from the direct kernels alone, which compute the reference formula exactly.
//
// Non-finite values (docs/ops.md, "Non-finite values"): Winograd and FFT algorithms mix the
// elements of a tile, so an Inf or NaN in an operand can spread to outputs it does not reach,
// cancel to a finite value, or an Inf become NaN; nor do cuDNN's algorithms always multiply the
// padding zeros by the filter (0 * inf = NaN). The rule: on the stream's side stream (forked
// before cuDNN's work is queued, so the two run at the same time), a flag in scratch is zeroed
// (cudaMemsetAsync) and one kernel sets it when any element of the op's two inputs (x and w,
// dy and w, or x and dy) is ±inf or NaN (16-byte loads, one launch for both); after cuDNN's
// result (and the bias) the stream joins the side stream and the direct kernel is launched with
// a pointer to the flag: it returns at once when the flag is 0, and otherwise recomputes the
// whole result with the reference's formula, overwriting cuDNN's. The check only reads what
// cuDNN reads, and writes its own flag. The finite case pays, on the op's critical path, one
// wave of empty blocks (the check overlaps cuDNN's kernels); nothing comes back to the host, so
// it works under graph capture, where the check becomes a parallel branch of the graph.
#include "conv_cudnn.hpp"

#include <nnplug/kit/conv_nd.hpp>

#include <cstdlib>
#include <string>

namespace nnp::cuda {
namespace {

using nnp::conv_nd_geometry;
using nnp::kConvMaxSpatial;

// The direct kernel of the job's direction (flag: see launch_conv_direct_*).
void run_direct(stream& s, const conv_job& j, const int* flag) {
  switch (j.d) {
    case dir::forward:
      launch_conv_direct_forward(s, j.t, j.g, j.in, j.w, j.bias, j.out, flag);
      return;
    case dir::backward_data:
      launch_conv_direct_backward_data(s, j.t, j.g, j.out, j.w, j.bias, j.in, flag);
      return;
    case dir::backward_filter:
      launch_conv_direct_backward_filter(s, j.t, j.g, j.in, j.out, j.w, flag);
      return;
  }
}

// Joins the side stream once if it forked: by join(), or when it goes out of scope (an op that
// throws after forking still leaves no side work unjoined, which would end a capture in error).
class side_work {
 public:
  explicit side_work(stream& s) : s_(s) {}
  side_work(const side_work&) = delete;
  side_work& operator=(const side_work&) = delete;
  ~side_work() {
    if (!forked_) return;
    try {
      s_.join();
    } catch (...) {  // the op's own error, if any, is the one reported
    }
  }
  void fork() {
    s_.fork();
    forked_ = true;
  }
  void join() {
    if (!forked_) return;
    forked_ = false;
    s_.join();
  }

 private:
  stream& s_;
  bool forked_ = false;
};

// NNPLUG_CUDA_CONV_SMALL=0 leaves the few-tap forward and the few-channel backward-data kernels
// out (cuDNN then runs those calls), to measure them side by side (docs/cuda-backend.md).
bool small_kernels_enabled() {
  static const bool enabled = [] {
    const char* e = std::getenv("NNPLUG_CUDA_CONV_SMALL");
    return e == nullptr || std::string(e) != "0";
  }();
  return enabled;
}

// The forward of geometry g by the few-tap kernel (conv_direct.cu: groups = 1, at most 27
// input channels x taps, the bias and the clamp fused), where it takes the call; false
// otherwise.
bool small_forward(stream& s, const conv_nd_geometry& g, const DLTensor* x, const DLTensor* w,
                   const DLTensor* y, const DLTensor* bias, const nnp::conv_clamp& clamp) {
  if (!small_kernels_enabled() || numel(*x) == 0 || numel(*w) == 0 || numel(*y) == 0) return false;
  return launch_conv_small_forward(
      s, elem_of(y->dtype), g, data_ptr<const void>(*x), data_ptr<const void>(*w),
      bias != nullptr ? data_ptr<const void>(*bias) : nullptr, data_ptr<void>(*y),
      static_cast<float>(clamp.lo), static_cast<float>(clamp.hi));
}

// Runs direction d on geometry g with its input, filter and output tensors (the one d computes
// is written) and the optional bias of the result's channels.
void run_conv(stream& s, dir d, const conv_nd_geometry& g, const DLTensor* in, const DLTensor* w,
              const DLTensor* out, const DLTensor* bias) {
  const DLTensor& result = d == dir::forward ? *out : d == dir::backward_data ? *in : *w;
  conv_job j{};
  j.d = d;
  j.t = elem_of(result.dtype);
  j.g = g;
  j.in = data_ptr<void>(*in);
  j.w = data_ptr<void>(*w);
  j.out = data_ptr<void>(*out);
  j.bias = bias != nullptr ? data_ptr<const void>(*bias) : nullptr;
  j.n_in = numel(*in);
  j.n_w = numel(*w);
  j.n_out = numel(*out);
  if (numel(result) == 0) return;
  if (j.n_in == 0 || j.n_w == 0 || j.n_out == 0) {
    // An empty sum: bias or zeros, or NaN where a padding tap meets an infinite weight.
    run_direct(s, j, nullptr);
    return;
  }
  j.v = view_of(g);
  if (!j.v.fits) {  // beyond cuDNN's 32-bit sizes
    run_direct(s, j, nullptr);
    return;
  }
  // The few-channel backward-data kernel (conv_direct.cu: groups = 1, at most 4 input channels)
  // computes the direct formula with its bias, so it needs neither the guard nor the bias pass.
  if (d == dir::backward_data && small_kernels_enabled() &&
      launch_conv_small_backward_data(s, j.t, g, j.out, j.w, j.bias, j.in))
    return;
  j.n_in_cudnn = g.n * g.ci * j.v.in[0] * j.v.in[1] * j.v.in[2];
  // The non-finite rule (top of the file), its check beside cuDNN's work.
  // NNPLUG_CUDA_CONV_NONFINITE_GUARD=0 leaves the guard out, only to measure what it costs
  // (docs/cuda-backend.md): non-finite inputs may then give results of another class.
  static const bool guard = [] {
    const char* e = std::getenv("NNPLUG_CUDA_CONV_NONFINITE_GUARD");
    return e == nullptr || std::string(e) != "0";
  }();
  side_work check(s);
  int* flag = nullptr;
  if (guard) {
    flag = static_cast<int*>(s.scratch(kScratchGuard, sizeof(int)));
    check.fork();
    NNP_CUDA_CHECK(cudaMemsetAsync(flag, 0, sizeof(int), s.side()));
    if (d == dir::forward)
      launch_nonfinite_flag(s, s.side(), j.t, j.in, j.n_in, j.w, j.n_w, flag);
    else if (d == dir::backward_data)
      launch_nonfinite_flag(s, s.side(), j.t, j.out, j.n_out, j.w, j.n_w, flag);
    else
      launch_nonfinite_flag(s, s.side(), j.t, j.in, j.n_in, j.out, j.n_out, flag);
  }
  if (!run_cudnn(s, j)) {
    check.join();
    run_direct(s, j, nullptr);
    return;
  }
  if (j.bias != nullptr) {
    if (d == dir::forward)
      launch_bias_add(s, j.t, j.out, j.bias, g.n, g.co, g.out_size());
    else if (d == dir::backward_data)
      launch_bias_add(s, j.t, j.in, j.bias, g.n, g.ci, g.in_size());
  }
  if (!guard) return;
  check.join();
  run_direct(s, j, flag);
}

// ---- geometries of the ops ----------------------------------------------------------------------
// NNP_OP_CONV2D_*: x [N, C, H, W], w [K, C/groups, R, S], y [N, K, P, Q] as a 2-d geometry.
conv_nd_geometry geometry_of_conv2d(const nnp_conv2d_params& p, const DLTensor& x,
                                    const DLTensor& w, const DLTensor& y) {
  conv_nd_geometry g{};
  g.spatial = 2;
  g.n = x.shape[0];
  g.ci = x.shape[1];
  g.co = w.shape[0];
  g.groups = p.groups;
  const int64_t in[3] = {1, x.shape[2], x.shape[3]};
  const int64_t kernel[3] = {1, w.shape[2], w.shape[3]};
  const int64_t out[3] = {1, y.shape[2], y.shape[3]};
  const int64_t stride[3] = {1, p.stride_h, p.stride_w};
  const int64_t dilation[3] = {1, p.dilation_h, p.dilation_w};
  const int64_t pad[3] = {0, p.pad_top, p.pad_left};
  for (int a = 0; a < kConvMaxSpatial; ++a) {
    g.in[a] = in[a];
    g.kernel[a] = kernel[a];
    g.out[a] = out[a];
    g.stride[a] = stride[a];
    g.dilation[a] = dilation[a];
    g.pad[a] = pad[a];
  }
  return g;
}

}  // namespace

// ---- the ops ------------------------------------------------------------------------------------
void op_conv2d_forward(stream& s, const op_call& c) {
  const auto p = c.params_as<nnp_conv2d_params>();
  const conv_nd_geometry g = geometry_of_conv2d(p, *c.in(0), *c.in(1), *c.out(0));
  if (small_forward(s, g, c.in(0), c.in(1), c.out(0), c.in(2), nnp::conv_clamp{})) return;
  run_conv(s, dir::forward, g, c.in(0), c.in(1), c.out(0), c.in(2));
}

void op_conv2d_backward_data(stream& s, const op_call& c) {
  const auto p = c.params_as<nnp_conv2d_params>();
  run_conv(s, dir::backward_data, geometry_of_conv2d(p, *c.out(0), *c.in(1), *c.in(0)), c.out(0),
           c.in(1), c.in(0), nullptr);
}

void op_conv2d_backward_filter(stream& s, const op_call& c) {
  const auto p = c.params_as<nnp_conv2d_params>();
  run_conv(s, dir::backward_filter, geometry_of_conv2d(p, *c.in(0), *c.out(0), *c.in(1)), c.in(0),
           c.out(0), c.in(1), nullptr);
}

// The fused clamp (ABI 1.7): in the few-tap kernel where it runs, else one clip pass over y
// after cuDNN's convolution and bias, the same for every pair of bounds: cuDNN's fused bias +
// activation forward (cudnnConvolutionBiasActivationForward) takes ReLU or identity activations
// only, so it could serve clip_min = 0 alone; whether it pays for ReLU is for a GPU measurement
// to decide.
void op_conv_forward(stream& s, const op_call& c) {
  const auto p = c.params_as<nnp_conv_params>();
  const conv_nd_geometry g = nnp::conv_nd_of_conv(p, *c.in(0), *c.in(1), *c.out(0));
  const nnp::conv_clamp clamp = nnp::conv_clamp_of(p);
  if (small_forward(s, g, c.in(0), c.in(1), c.out(0), c.in(2), clamp)) return;
  run_conv(s, dir::forward, g, c.in(0), c.in(1), c.out(0), c.in(2));
  if (clamp.active) {
    const DLTensor& y = *c.out(0);
    launch_clip(s, elem_of(y.dtype), data_ptr<const void>(y), data_ptr<void>(y), numel(y),
                static_cast<float>(clamp.lo), static_cast<float>(clamp.hi));
  }
}

void op_conv_backward_data(stream& s, const op_call& c) {
  const auto p = c.params_as<nnp_conv_params>();
  run_conv(s, dir::backward_data, nnp::conv_nd_of_conv(p, *c.out(0), *c.in(1), *c.in(0)), c.out(0),
           c.in(1), c.in(0), nullptr);
}

void op_conv_backward_filter(stream& s, const op_call& c) {
  const auto p = c.params_as<nnp_conv_params>();
  run_conv(s, dir::backward_filter, nnp::conv_nd_of_conv(p, *c.in(0), *c.out(0), *c.in(1)), c.in(0),
           c.out(0), c.in(1), nullptr);
}

// db[m] = sum over n and every position of dy[n, m, ...] (both families, and conv2d's).
void op_conv_backward_bias(stream& s, const op_call& c) {
  const DLTensor& dy = *c.in(0);
  const DLTensor& db = *c.out(0);
  if (numel(db) == 0) return;
  launch_sum_keep_axis(s, elem_of(dy.dtype), data_ptr<const void>(dy), data_ptr<void>(db), dy.shape,
                       dy.ndim, 1);
}

// ConvTranspose: x [N, C, D..] is the geometry's output, y [N, K, O..] its input.
void op_conv_transpose_forward(stream& s, const op_call& c) {
  const auto p = c.params_as<nnp_conv_transpose_params>();
  run_conv(s, dir::backward_data, nnp::conv_nd_of_transpose(p, *c.in(0), *c.in(1), *c.out(0)),
           c.out(0), c.in(1), c.in(0), c.in(2));
}

void op_conv_transpose_backward_data(stream& s, const op_call& c) {
  const auto p = c.params_as<nnp_conv_transpose_params>();
  run_conv(s, dir::forward, nnp::conv_nd_of_transpose(p, *c.out(0), *c.in(1), *c.in(0)), c.in(0),
           c.in(1), c.out(0), nullptr);
}

void op_conv_transpose_backward_filter(stream& s, const op_call& c) {
  const auto p = c.params_as<nnp_conv_transpose_params>();
  run_conv(s, dir::backward_filter, nnp::conv_nd_of_transpose(p, *c.in(0), *c.out(0), *c.in(1)),
           c.in(1), c.out(0), c.in(0), nullptr);
}

// conv_forward's fused max pooling (ABI 1.8) is not implemented here: UNSUPPORTED, so that
// nnp_op_supported says so and callers (nnplug.onnx) keep the convolution and the pooling apart.
void check_conv_forward(const op_call& c) {
  const int64_t pool = nnp::conv_max_pool_of(c.params_as<nnp_conv_params>());
  if (pool > 1)
    unsupported(
        format("conv_forward: the fused max pooling (max_pool = %lld) is not implemented "
               "on cuda (run conv_forward, then pool_forward)",
               static_cast<long long>(pool)));
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kConvOps[] = {
    {NNP_OP_CONV2D_FORWARD,                 kHalfFloats, on_stream<op_conv2d_forward>},
    {NNP_OP_CONV2D_BACKWARD_DATA,           kHalfFloats, on_stream<op_conv2d_backward_data>},
    {NNP_OP_CONV2D_BACKWARD_FILTER,         kHalfFloats, on_stream<op_conv2d_backward_filter>},
    {NNP_OP_CONV2D_BACKWARD_BIAS,           kHalfFloats, on_stream<op_conv_backward_bias>},
    {NNP_OP_CONV_FORWARD,                   kHalfFloats, on_stream<op_conv_forward>, check_conv_forward},
    {NNP_OP_CONV_BACKWARD_DATA,             kHalfFloats, on_stream<op_conv_backward_data>},
    {NNP_OP_CONV_BACKWARD_FILTER,           kHalfFloats, on_stream<op_conv_backward_filter>},
    {NNP_OP_CONV_BACKWARD_BIAS,             kHalfFloats, on_stream<op_conv_backward_bias>},
    {NNP_OP_CONV_TRANSPOSE_FORWARD,         kHalfFloats, on_stream<op_conv_transpose_forward>},
    {NNP_OP_CONV_TRANSPOSE_BACKWARD_DATA,   kHalfFloats, on_stream<op_conv_transpose_backward_data>},
    {NNP_OP_CONV_TRANSPOSE_BACKWARD_FILTER, kHalfFloats, on_stream<op_conv_transpose_backward_filter>},
};
// clang-format on
extern const kit::op_row_list kConvRows = kit::row_list(kConvOps);

}  // namespace nnp::cuda
