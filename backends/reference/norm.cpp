// norm.cpp — reference batch normalisation (ONNX BatchNormalization, cuDNN spatial mode) and
// layer normalisation (ONNX LayerNormalization), forward and backward. Statistics in double,
// two passes (mean, then squared deviations).
//
// Batch norm, per channel c over M = N*H*W elements (x is [N, C] or [N, C, H, W]):
//   mean = sum x / M;  var = sum (x - mean)^2 / M;  inv_std = 1 / sqrt(var + eps)
//   y = scale * (x - mean) * inv_std + bias
//   training: running_mean = momentum * running_mean + (1 - momentum) * mean
//             running_var  = momentum * running_var  + (1 - momentum) * var * M / (M - 1)
//             (M = 1 uses var; running_var_rule = 1: var, ONNX's population variance)
//             saved_mean = mean, saved_inv_std = inv_std
//   backward: dbias = sum dy;  dscale = sum dy * xhat;  xhat = (x - mean) * inv_std
//             dx = scale * inv_std / M * (M * dy - dbias - xhat * dscale)
// Layer norm over the trailing dims [axis, rank): outer O, inner I (scale, bias are [I]):
//   mean, var, inv_std as above over I;  y = (x - mean) * inv_std * scale + bias
//   backward: g = dy * scale;  dx = inv_std * (g - mean_I(g) - xhat * mean_I(g * xhat))
//             dscale = sum_O dy * xhat;  dbias = sum_O dy
#include "reference.hpp"

#include <cmath>
#include <vector>

namespace ref {
namespace {

// x viewed as [N, C, HW].
struct bn_view {
  int64_t N, C, HW;
  int64_t index(int64_t n, int64_t c, int64_t i) const { return (n * C + c) * HW + i; }
};

// Without elements (N, C or HW = 0) N is 0 too: the loops over N*HW do nothing, whatever
// huge extent sits beside the 0 ([2^40, 3, 0, 2] is a valid x).
bn_view bn_view_of(const DLTensor& x) {
  const int64_t hw = dims_product(x, 2, x.ndim);
  return bn_view{hw == 0 ? 0 : x.shape[0], x.shape[1], hw};
}

// The operands of batch norm and layer norm backward, which share one layout: inputs
// {x, dy, scale, saved mean, saved inv_std}, outputs {dx, dscale (optional), dbias (optional)}.
template <typename T>
struct backward_operands {
  const T *x, *dy, *scale, *mean, *inv_std;
  T *dx, *dscale, *dbias;
};

template <typename T>
backward_operands<T> backward_operands_of(const op_args& a) {
  return backward_operands<T>{nnp::data_ptr<const T>(*a.in(0)),
                              nnp::data_ptr<const T>(*a.in(1)),
                              nnp::data_ptr<const T>(*a.in(2)),
                              nnp::data_ptr<const T>(*a.in(3)),
                              nnp::data_ptr<const T>(*a.in(4)),
                              nnp::data_ptr<T>(*a.out(0)),
                              opt_out<T>(a, 1),
                              opt_out<T>(a, 2)};
}

// y = scale * (x - mean) * inv_std + bias for channel c.
template <typename T>
void bn_normalize(const bn_view& v, int64_t c, const T* x, T* y, double mean, double inv_std,
                  double scale, double bias) {
  for (int64_t n = 0; n < v.N; ++n)
    for (int64_t i = 0; i < v.HW; ++i) {
      const int64_t e = v.index(n, c, i);
      y[e] = static_cast<T>(scale * (double(x[e]) - mean) * inv_std + bias);
    }
}

template <typename T>
void bn_training_t(const op_args& args) {
  const auto p = read_params<nnp_batch_norm_params>(args.params);
  const bn_view v = bn_view_of(*args.in(0));
  const T* x = nnp::data_ptr<const T>(*args.in(0));
  const T* scale = nnp::data_ptr<const T>(*args.in(1));
  const T* bias = nnp::data_ptr<const T>(*args.in(2));
  T* y = nnp::data_ptr<T>(*args.out(0));
  T* running_mean = opt_out<T>(args, 1);
  T* running_var = opt_out<T>(args, 2);
  T* saved_mean = opt_out<T>(args, 3);
  T* saved_inv_std = opt_out<T>(args, 4);
  const double M = double(v.N) * double(v.HW);

  for (int64_t c = 0; c < v.C; ++c) {
    double sum = 0.0;
    for (int64_t n = 0; n < v.N; ++n)
      for (int64_t i = 0; i < v.HW; ++i) sum += double(x[v.index(n, c, i)]);
    const double mean = sum / M;
    double sq = 0.0;
    for (int64_t n = 0; n < v.N; ++n)
      for (int64_t i = 0; i < v.HW; ++i) {
        const double d = double(x[v.index(n, c, i)]) - mean;
        sq += d * d;
      }
    const double var = sq / M;
    const double inv_std = 1.0 / std::sqrt(var + p.epsilon);
    bn_normalize(v, c, x, y, mean, inv_std, double(scale[c]), double(bias[c]));
    const double unbiased = M > 1.0 && p.running_var_rule == 0 ? var * M / (M - 1.0) : var;
    if (running_mean != nullptr)
      running_mean[c] =
          static_cast<T>(p.momentum * double(running_mean[c]) + (1.0 - p.momentum) * mean);
    if (running_var != nullptr)
      running_var[c] =
          static_cast<T>(p.momentum * double(running_var[c]) + (1.0 - p.momentum) * unbiased);
    if (saved_mean != nullptr) saved_mean[c] = static_cast<T>(mean);
    if (saved_inv_std != nullptr) saved_inv_std[c] = static_cast<T>(inv_std);
  }
}

template <typename T>
void bn_inference_t(const op_args& args) {
  const auto p = read_params<nnp_batch_norm_params>(args.params);
  const bn_view v = bn_view_of(*args.in(0));
  const T* x = nnp::data_ptr<const T>(*args.in(0));
  const T* scale = nnp::data_ptr<const T>(*args.in(1));
  const T* bias = nnp::data_ptr<const T>(*args.in(2));
  const T* mean = nnp::data_ptr<const T>(*args.in(3));
  const T* var = nnp::data_ptr<const T>(*args.in(4));
  T* y = nnp::data_ptr<T>(*args.out(0));
  for (int64_t c = 0; c < v.C; ++c) {
    const double inv_std = 1.0 / std::sqrt(double(var[c]) + p.epsilon);
    bn_normalize(v, c, x, y, double(mean[c]), inv_std, double(scale[c]), double(bias[c]));
  }
}

template <typename T>
void bn_backward_t(const op_args& args) {
  const bn_view v = bn_view_of(*args.in(0));
  const auto [x, dy, scale, saved_mean, saved_inv_std, dx, dscale, dbias] =
      backward_operands_of<T>(args);
  const double M = double(v.N) * double(v.HW);

  for (int64_t c = 0; c < v.C; ++c) {
    const double mean = saved_mean[c], inv_std = saved_inv_std[c];
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for (int64_t n = 0; n < v.N; ++n)
      for (int64_t i = 0; i < v.HW; ++i) {
        const int64_t e = v.index(n, c, i);
        sum_dy += double(dy[e]);
        sum_dy_xhat += double(dy[e]) * (double(x[e]) - mean) * inv_std;
      }
    const double k = double(scale[c]) * inv_std / M;
    for (int64_t n = 0; n < v.N; ++n)
      for (int64_t i = 0; i < v.HW; ++i) {
        const int64_t e = v.index(n, c, i);
        const double xhat = (double(x[e]) - mean) * inv_std;
        dx[e] = static_cast<T>(k * (M * double(dy[e]) - sum_dy - xhat * sum_dy_xhat));
      }
    if (dscale != nullptr) dscale[c] = static_cast<T>(sum_dy_xhat);
    if (dbias != nullptr) dbias[c] = static_cast<T>(sum_dy);
  }
}

// x viewed as [O, I] with I the product of the normalised dims [axis, rank).
struct ln_view {
  int64_t O, I;
};

ln_view ln_view_of(const DLTensor& x, int32_t axis_param) {
  const int axis = nnp::normalize_axis(axis_param, x.ndim);
  if (axis < 0)
    nnp::fail(NNP_STATUS_INVALID_ARGUMENT,
              nnp::format("layer norm axis %d out of range for rank %d", axis_param, x.ndim));
  return ln_view{dims_product(x, 0, axis), dims_product(x, axis, x.ndim)};
}

template <typename T>
void ln_forward_t(const op_args& args) {
  const auto p = read_params<nnp_layer_norm_params>(args.params);
  const ln_view v = ln_view_of(*args.in(0), p.axis);
  const T* x = nnp::data_ptr<const T>(*args.in(0));
  const T* scale = nnp::data_ptr<const T>(*args.in(1));
  const T* bias = opt_in<T>(args, 2);
  T* y = nnp::data_ptr<T>(*args.out(0));
  T* mean_out = opt_out<T>(args, 1);
  T* inv_std_out = opt_out<T>(args, 2);

  for (int64_t o = 0; o < v.O; ++o) {
    const T* xo = x + o * v.I;
    double sum = 0.0;
    for (int64_t j = 0; j < v.I; ++j) sum += double(xo[j]);
    const double mean = sum / double(v.I);
    double sq = 0.0;
    for (int64_t j = 0; j < v.I; ++j) sq += (double(xo[j]) - mean) * (double(xo[j]) - mean);
    const double inv_std = 1.0 / std::sqrt(sq / double(v.I) + p.epsilon);
    for (int64_t j = 0; j < v.I; ++j) {
      const double b = bias != nullptr ? double(bias[j]) : 0.0;
      y[o * v.I + j] = static_cast<T>((double(xo[j]) - mean) * inv_std * double(scale[j]) + b);
    }
    if (mean_out != nullptr) mean_out[o] = static_cast<T>(mean);
    if (inv_std_out != nullptr) inv_std_out[o] = static_cast<T>(inv_std);
  }
}

template <typename T>
void ln_backward_t(const op_args& args) {
  const auto p = read_params<nnp_layer_norm_params>(args.params);
  const ln_view v = ln_view_of(*args.in(0), p.axis);
  const auto [x, dy, scale, mean, inv_std, dx, dscale, dbias] = backward_operands_of<T>(args);

  std::vector<double> dscale_acc(static_cast<size_t>(v.I), 0.0);
  std::vector<double> dbias_acc(static_cast<size_t>(v.I), 0.0);
  for (int64_t o = 0; o < v.O; ++o) {
    const double mu = mean[o], rs = inv_std[o];
    double mean_g = 0.0, mean_g_xhat = 0.0;  // means over I of g and g * xhat
    for (int64_t j = 0; j < v.I; ++j) {
      const int64_t e = o * v.I + j;
      const double xhat = (double(x[e]) - mu) * rs;
      const double g = double(dy[e]) * double(scale[j]);
      mean_g += g;
      mean_g_xhat += g * xhat;
      dscale_acc[size_t(j)] += double(dy[e]) * xhat;
      dbias_acc[size_t(j)] += double(dy[e]);
    }
    mean_g /= double(v.I);
    mean_g_xhat /= double(v.I);
    for (int64_t j = 0; j < v.I; ++j) {
      const int64_t e = o * v.I + j;
      const double xhat = (double(x[e]) - mu) * rs;
      const double g = double(dy[e]) * double(scale[j]);
      dx[e] = static_cast<T>(rs * (g - mean_g - xhat * mean_g_xhat));
    }
  }
  for (int64_t j = 0; j < v.I; ++j) {
    if (dscale != nullptr) dscale[j] = static_cast<T>(dscale_acc[size_t(j)]);
    if (dbias != nullptr) dbias[j] = static_cast<T>(dbias_acc[size_t(j)]);
  }
}

}  // namespace

REF_FLOAT_OP(batch_norm_forward_training, bn_training_t, in(0))
REF_FLOAT_OP(batch_norm_forward_inference, bn_inference_t, in(0))
REF_FLOAT_OP(batch_norm_backward, bn_backward_t, in(0))
REF_FLOAT_OP(layer_norm_forward, ln_forward_t, in(0))
REF_FLOAT_OP(layer_norm_backward, ln_backward_t, in(0))

// The rows of this file's kernels (rows.hpp lists the files).
// clang-format off
const nnp::kit::op_row kNormOps[] = {
    {NNP_OP_BATCH_NORM_FORWARD_TRAINING,  kFloats,        batch_norm_forward_training},
    {NNP_OP_BATCH_NORM_FORWARD_INFERENCE, kFloats,        batch_norm_forward_inference},
    {NNP_OP_BATCH_NORM_BACKWARD,          kFloats,        batch_norm_backward},
    {NNP_OP_LAYER_NORM_FORWARD,           kFloats,        layer_norm_forward},
    {NNP_OP_LAYER_NORM_BACKWARD,          kFloats,        layer_norm_backward},
};
// clang-format on
extern const nnp::kit::op_row_list kNormRows = nnp::kit::row_list(kNormOps);

}  // namespace ref
