// activation.cpp — reference activation functions, forward and backward (ONNX Relu, LeakyRelu,
// Sigmoid, Tanh, Gelu (erf and tanh approximations), Elu). Elementwise, evaluated in double:
//   forward  y  = f(x)                      (y may alias x)
//   backward dx = f'(x) * dy                (dx may alias dy)
// Derivatives (x is the forward input):
//   relu       x > 0 ? 1 : 0                 (0 at x = 0, as the header says)
//   leaky_relu x > 0 ? 1 : alpha             (alpha at x = 0, as PyTorch)
//   sigmoid    s (1 - s),  s = sigmoid(x)
//   tanh       1 - tanh(x)^2
//   gelu_erf   Phi(x) + x phi(x),  Phi = 0.5 (1 + erf(x / sqrt 2)), phi = exp(-x^2/2) / sqrt(2 pi)
//   gelu_tanh  0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2),
//              t = tanh(sqrt(2/pi) (x + 0.044715 x^3))
//   elu        x > 0 ? 1 : alpha exp(x)
#include "reference.hpp"

#include <cmath>

namespace ref {
namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kInvSqrt2 = 0.7071067811865476;     // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.3989422804014327;   // 1 / sqrt(2 pi)
constexpr double kGeluCubic = 0.044715;

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double forward_value(int32_t f, double alpha, double x) {
  switch (f) {
    case NNP_ACTIVATION_RELU:
      return x > 0.0 ? x : 0.0;
    case NNP_ACTIVATION_LEAKY_RELU:
      return x >= 0.0 ? x : alpha * x;
    case NNP_ACTIVATION_SIGMOID:
      return sigmoid(x);
    case NNP_ACTIVATION_TANH:
      return std::tanh(x);
    case NNP_ACTIVATION_GELU_ERF:
      return 0.5 * x * (1.0 + std::erf(x * kInvSqrt2));
    case NNP_ACTIVATION_GELU_TANH:
      return 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + kGeluCubic * x * x * x)));
    case NNP_ACTIVATION_ELU:
      return x > 0.0 ? x : alpha * (std::exp(x) - 1.0);
    default:
      nnp::unsupported(nnp::format("activation function %d is not known", f));
  }
}

double derivative(int32_t f, double alpha, double x) {
  switch (f) {
    case NNP_ACTIVATION_RELU:
      return x > 0.0 ? 1.0 : 0.0;
    case NNP_ACTIVATION_LEAKY_RELU:
      return x > 0.0 ? 1.0 : alpha;
    case NNP_ACTIVATION_SIGMOID: {
      const double s = sigmoid(x);
      return s * (1.0 - s);
    }
    case NNP_ACTIVATION_TANH: {
      const double t = std::tanh(x);
      return 1.0 - t * t;
    }
    case NNP_ACTIVATION_GELU_ERF:
      return 0.5 * (1.0 + std::erf(x * kInvSqrt2)) + x * kInvSqrt2Pi * std::exp(-0.5 * x * x);
    case NNP_ACTIVATION_GELU_TANH: {
      const double t = std::tanh(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
      return 0.5 * (1.0 + t) +
             0.5 * x * (1.0 - t * t) * kSqrt2OverPi * (1.0 + 3.0 * kGeluCubic * x * x);
    }
    case NNP_ACTIVATION_ELU:
      return x > 0.0 ? 1.0 : alpha * std::exp(x);
    default:
      nnp::unsupported(nnp::format("activation function %d is not known", f));
  }
}

template <typename T>
void forward_t(const op_args& args) {
  const auto p = read_params<nnp_activation_params>(args.params);
  map_unary<T>(args, [&](double x) { return forward_value(p.function, p.alpha, x); });
}

template <typename T>
void backward_t(const op_args& args) {
  const auto p = read_params<nnp_activation_params>(args.params);
  const DLTensor& X = *args.in(0);
  const T* x = nnp::data_ptr<const T>(X);
  const T* dy = nnp::data_ptr<const T>(*args.in(1));
  T* dx = nnp::data_ptr<T>(*args.out(0));
  const int64_t n = nnp::numel(X);
  for (int64_t i = 0; i < n; ++i)
    dx[i] = static_cast<T>(derivative(p.function, p.alpha, x[i]) * double(dy[i]));
}

}  // namespace

REF_FLOAT_OP(activation_forward, forward_t, in(0))
REF_FLOAT_OP(activation_backward, backward_t, in(0))

// The rows of this file's kernels (rows.hpp lists the files).
// clang-format off
const nnp::kit::op_row kActivationOps[] = {
    {NNP_OP_ACTIVATION_FORWARD,  kFloats,        activation_forward},
    {NNP_OP_ACTIVATION_BACKWARD, kFloats,        activation_backward},
};
// clang-format on
extern const nnp::kit::op_row_list kActivationRows = nnp::kit::row_list(kActivationOps);

}  // namespace ref
