// optimizer.cpp — reference optimiser updates, in place on parameter and state tensors,
// elementwise in double (PyTorch torch.optim formulas).
//   SGD:  g = grad + weight_decay * param
//         if momentum != 0: buf = momentum * buf + (1 - dampening) * g
//                           g = nesterov ? g + momentum * buf : buf
//         param -= lr * g
//   Adam (adamw = 0): g = grad + weight_decay * param;  AdamW (adamw = 1): param *= 1 - lr * wd
//         m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
//         param -= lr * (m / (1 - beta1^step)) / (sqrt(v / (1 - beta2^step)) + epsilon)
//   (Kingma & Ba 2015; Loshchilov & Hutter 2019.) The bias corrections use the freshly
//   updated m and v in double, before they are rounded to T.
//   Adam's optional inputs step (float32) and lr (T), ABI 1.4, replace params->step and
//   params->lr; their values are read when the op runs, and a step that is not a whole number
//   >= 1 is refused (nnplug/kit/step.hpp).
#include "reference.hpp"

#include <nnplug/kit/step.hpp>

#include <cmath>

namespace ref {
namespace {

template <typename T>
void sgd_t(const op_args& args) {
  const auto p = read_params<nnp_sgd_params>(args.params);
  const DLTensor& G = *args.in(0);
  const T* grad = nnp::data_ptr<const T>(G);
  T* param = nnp::data_ptr<T>(*args.out(0));
  T* buf = opt_out<T>(args, 1);
  const bool use_momentum = p.momentum != 0.0;
  // libnnplug checks this; fail before touching anything. The tensor, not its data: a
  // momentum_buffer without elements may have NULL data.
  if (use_momentum && args.out(1) == nullptr)
    nnp::fail(NNP_STATUS_INVALID_ARGUMENT, "SGD with momentum != 0 needs a momentum_buffer");
  const int64_t n = nnp::numel(G);
  for (int64_t i = 0; i < n; ++i) {
    double g = double(grad[i]) + p.weight_decay * double(param[i]);
    if (use_momentum) {
      const double b = p.momentum * double(buf[i]) + (1.0 - p.dampening) * g;
      buf[i] = static_cast<T>(b);
      g = p.nesterov ? g + p.momentum * b : b;
    }
    param[i] = static_cast<T>(double(param[i]) - p.lr * g);
  }
}

template <typename T>
void adam_t(const op_args& args) {
  auto p = read_params<nnp_adam_params>(args.params);
  const DLTensor& G = *args.in(0);
  const T* grad = nnp::data_ptr<const T>(G);
  T* param = nnp::data_ptr<T>(*args.out(0));
  T* m = nnp::data_ptr<T>(*args.out(1));
  T* v = nnp::data_ptr<T>(*args.out(2));
  const float* step_in = opt_in<float>(args, 1);
  const T* lr_in = opt_in<T>(args, 2);
  const double step = step_in != nullptr ? double(nnp::checked_step("adam_update", *step_in, 1.0f))
                                         : double(p.step);
  p.lr = lr_in != nullptr ? double(*lr_in) : p.lr;
  const double bias1 = 1.0 - std::pow(p.beta1, step);
  const double bias2 = 1.0 - std::pow(p.beta2, step);
  const int64_t n = nnp::numel(G);
  for (int64_t i = 0; i < n; ++i) {
    double w = param[i];
    double g = grad[i];
    if (p.adamw)
      w *= 1.0 - p.lr * p.weight_decay;
    else
      g += p.weight_decay * w;
    const double mi = p.beta1 * double(m[i]) + (1.0 - p.beta1) * g;
    const double vi = p.beta2 * double(v[i]) + (1.0 - p.beta2) * g * g;
    w -= p.lr * (mi / bias1) / (std::sqrt(vi / bias2) + p.epsilon);
    m[i] = static_cast<T>(mi);
    v[i] = static_cast<T>(vi);
    param[i] = static_cast<T>(w);
  }
}

}  // namespace

REF_FLOAT_OP(sgd_update, sgd_t, in(0))
REF_FLOAT_OP(adam_update, adam_t, in(0))

// The rows of this file's kernels (rows.hpp lists the files).
// clang-format off
const nnp::kit::op_row kOptimizerOps[] = {
    {NNP_OP_SGD_UPDATE,  kFloats,        sgd_update},
    {NNP_OP_ADAM_UPDATE, kFloats,        adam_update},
};
// clang-format on
extern const nnp::kit::op_row_list kOptimizerRows = nnp::kit::row_list(kOptimizerOps);

}  // namespace ref
