// Optimiser updates on the CPU (NNP_OP_SGD_UPDATE, NNP_OP_ADAM_UPDATE), in place on the
// parameter and its state tensors, PyTorch's formulas.
//
// Speed: one fused streaming pass per update (Adam reads grad, param, m, v and writes three of
// them: 28 bytes per parameter), split into ~32k-element TBB tasks; the bias corrections are
// folded into two scalars computed once per call, so the loop is a handful of FMAs and one
// sqrt per element.
//
// Adam's optional inputs step and lr (float32, ABI 1.4) replace params->step and params->lr:
// the op runs inside the call, so they are read then, and a step that is not a whole number
// >= 1 is refused as the reference refuses it (nnplug/kit/step.hpp). A value read from the
// tensor enters the same double arithmetic as the params field: a step tensor holding s and an
// lr tensor holding l give bit for bit the result of params step = s, lr = l.
#include "cpu_backend.hpp"

#include <nnplug/kit/step.hpp>

#include <cmath>

namespace nnp::cpu {
namespace {

struct adam_consts {
  float step_size, inv_sqrt_bc2, b1, b2, ob1, ob2, eps, wd, decay;
  bool adamw;
};

// Operands are distinct tensors (outputs never overlap inputs): __restrict lets the loop
// vectorise without run-time overlap checks.
void adam_kernel(const adam_consts& k, const float* __restrict grad, float* __restrict param,
                 float* __restrict m, float* __restrict v, int64_t b, int64_t e) {
  for (int64_t i = b; i < e; ++i) {
    float w = param[i];
    float g = grad[i];
    if (k.adamw)
      w *= k.decay;
    else
      g += k.wd * w;
    const float mi = k.b1 * m[i] + k.ob1 * g;
    const float vi = k.b2 * v[i] + k.ob2 * g * g;
    m[i] = mi;
    v[i] = vi;
    param[i] = w - k.step_size * mi / (std::sqrt(vi) * k.inv_sqrt_bc2 + k.eps);
  }
}

}  // namespace

void sgd_update(const op_call& c) {
  const auto& p = c.params_as<nnp_sgd_params>();
  const float* grad = f32(c.in(0));
  float* param = f32(c.out(0));
  float* buf = f32(c.out(1));
  const int64_t n = numel(*c.in(0));
  const float lr = static_cast<float>(p.lr), mom = static_cast<float>(p.momentum);
  const float damp = static_cast<float>(1.0 - p.dampening), wd = static_cast<float>(p.weight_decay);
  const bool nesterov = p.nesterov != 0, use_mom = p.momentum != 0.0;
  parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      float g = grad[i] + wd * param[i];
      if (use_mom) {
        const float v = mom * buf[i] + damp * g;
        buf[i] = v;
        g = nesterov ? g + mom * v : v;
      }
      param[i] -= lr * g;
    }
  });
}

void adam_update(const op_call& c) {
  auto p = c.params_as<nnp_adam_params>();
  const float* grad = f32(c.in(0));
  float *param = f32(c.out(0)), *m = f32(c.out(1)), *v = f32(c.out(2));
  const int64_t n = numel(*c.in(0));
  const float* step_in = f32(c.in(1));
  if (const float* lr_in = f32(c.in(2))) p.lr = static_cast<double>(*lr_in);
  const double step = step_in != nullptr
                          ? static_cast<double>(checked_step("adam_update", *step_in, 1.0f))
                          : static_cast<double>(p.step);
  const double bc1 = 1.0 - std::pow(p.beta1, step), bc2 = 1.0 - std::pow(p.beta2, step);
  // param -= lr * (m / bc1) / (sqrt(v / bc2) + eps) = step_size * m / (sqrt(v) * inv_sqrt_bc2 +
  // eps)
  adam_consts k{};
  k.step_size = static_cast<float>(p.lr / bc1);
  k.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  k.b1 = static_cast<float>(p.beta1);
  k.b2 = static_cast<float>(p.beta2);
  k.ob1 = static_cast<float>(1.0 - p.beta1);
  k.ob2 = static_cast<float>(1.0 - p.beta2);
  k.eps = static_cast<float>(p.epsilon);
  k.wd = static_cast<float>(p.weight_decay);
  k.decay = static_cast<float>(1.0 - p.lr * p.weight_decay);
  k.adamw = p.adamw != 0;
  parallel_for(n, kElementwiseGrain,
               [&](int64_t b, int64_t e) { adam_kernel(k, grad, param, m, v, b, e); });
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kOptimOps[] = {
    {NNP_OP_SGD_UPDATE,  kit::f32,            sgd_update},
    {NNP_OP_ADAM_UPDATE, kit::f32,            adam_update},
};
// clang-format on
extern const kit::op_row_list kOptimRows = kit::row_list(kOptimOps);

}  // namespace nnp::cpu
