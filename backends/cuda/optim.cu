// optim.cu — SGD (momentum, Nesterov, weight decay; PyTorch's torch.optim.SGD) and Adam / AdamW
// (PyTorch's formulas) as one fused elementwise kernel each, updating parameter and state in
// place; float32 arithmetic, bias corrections computed once on the host in double.
//
// Adam's optional inputs step and lr (float32 device scalars, ABI 1.4) are read by the kernel,
// when it runs, never copied to the host (so a captured and replayed launch sees the values of
// its time): each thread loads them once and computes the bias corrections in double as the
// host does. A kernel cannot refuse a step that is not a whole number >= 1: it reads values
// below 1, and NaN, as 1 (nnp::adam_step_value, nnplug/kit/step.hpp).
#include "common.cuh"

#include <nnplug/kit/step.hpp>

#include <cmath>

namespace nnp::cuda {
namespace {

__global__ void sgd_kernel(const float* grad, float* param, float* buf, int64_t n, float lr,
                           float momentum, float dampening, float weight_decay, int nesterov) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    float g = grad[i] + weight_decay * param[i];
    if (momentum != 0.0f) {
      const float b = momentum * buf[i] + (1.0f - dampening) * g;
      buf[i] = b;
      g = nesterov ? g + momentum * b : b;
    }
    param[i] -= lr * g;
  }
}

// step_in / lr_in: the optional device scalars; when given they replace bias_c1 and bias_c2
// (recomputed from the step with beta1d, beta2d: the params in double) and lr.
__global__ void adam_kernel(const float* grad, float* param, float* m, float* v, int64_t n,
                            float lr, float beta1, float beta2, float eps, float weight_decay,
                            int adamw, float bias_c1, float bias_c2, const float* step_in,
                            const float* lr_in, double beta1d, double beta2d) {
  if (step_in != nullptr) {
    const double step = nnp::adam_step_value(*step_in);
    bias_c1 = static_cast<float>(1.0 - pow(beta1d, step));
    bias_c2 = static_cast<float>(1.0 - pow(beta2d, step));
  }
  if (lr_in != nullptr) lr = *lr_in;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    float p = param[i];
    float g = grad[i];
    if (adamw)
      p *= 1.0f - lr * weight_decay;
    else
      g += weight_decay * p;
    const float mi = beta1 * m[i] + (1.0f - beta1) * g;
    const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    param[i] = p - lr * (mi / bias_c1) / (sqrtf(vi / bias_c2) + eps);
  }
}

}  // namespace

void op_sgd(stream& s, const op_call& c) {
  const auto p = read_params<nnp_sgd_params>(c.params);
  const DLTensor& param = *c.out(0);
  const int64_t n = numel(param);
  if (n == 0) return;
  const DLTensor* buf = c.out(1);
  if (p.momentum != 0.0 && buf == nullptr)
    fail(NNP_STATUS_INVALID_ARGUMENT, "sgd: momentum_buffer is required when momentum != 0");
  sgd_kernel<<<grid_for(n), kThreads, 0, s.handle>>>(
      data_ptr<const float>(*c.in(0)), data_ptr<float>(param),
      buf != nullptr ? data_ptr<float>(*buf) : nullptr, n, static_cast<float>(p.lr),
      static_cast<float>(p.momentum), static_cast<float>(p.dampening),
      static_cast<float>(p.weight_decay), p.nesterov);
  NNP_CUDA_CHECK_LAUNCH();
}

void op_adam(stream& s, const op_call& c) {
  const auto p = read_params<nnp_adam_params>(c.params);
  const DLTensor& param = *c.out(0);
  const int64_t n = numel(param);
  if (n == 0) return;
  // Without a step input: the bias corrections of params->step, computed here once.
  const double step = static_cast<double>(p.step);
  const double bc1 = 1.0 - std::pow(p.beta1, step);
  const double bc2 = 1.0 - std::pow(p.beta2, step);
  const DLTensor* step_in = c.in(1);
  const DLTensor* lr_in = c.in(2);
  adam_kernel<<<grid_for(n), kThreads, 0, s.handle>>>(
      data_ptr<const float>(*c.in(0)), data_ptr<float>(param), data_ptr<float>(*c.out(1)),
      data_ptr<float>(*c.out(2)), n, static_cast<float>(p.lr), static_cast<float>(p.beta1),
      static_cast<float>(p.beta2), static_cast<float>(p.epsilon),
      static_cast<float>(p.weight_decay), p.adamw, static_cast<float>(bc1), static_cast<float>(bc2),
      step_in != nullptr ? data_ptr<const float>(*step_in) : nullptr,
      lr_in != nullptr ? data_ptr<const float>(*lr_in) : nullptr, p.beta1, p.beta2);
  NNP_CUDA_CHECK_LAUNCH();
}

}  // namespace nnp::cuda
