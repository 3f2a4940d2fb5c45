// test_optim.cpp — optimiser updates, in place on parameter and state tensors: SGD (momentum,
// dampening, Nesterov, weight decay) and Adam / AdamW (bias-corrected, step >= 1), numerics
// against the reference.
// Cases: cases/<list>/sgd.txt "x100 lr=0.1 mom=0.9 damp=0 wd=0.01 nesterov1";
//        cases/<list>/adam.txt "x100 lr=1e-3 b1=0.9 b2=0.999 eps=1e-8 wd=0.01 step=3 adamw1".
#include <doctest/doctest.h>

#include "harness.hpp"

namespace {
using namespace conf;

OpCall make_sgd(const Case& c, Rng& rng) {
  auto p = make_params<nnp_sgd_params>();
  p.lr = c.d("lr", 0.1);
  p.momentum = c.d("mom", 0);
  p.dampening = c.d("damp", 0);
  p.weight_decay = c.d("wd", 0);
  p.nesterov = static_cast<int32_t>(c.i("nesterov", 0));
  const auto x = c.dims("x", {100});
  auto grad = rng.uniform_vec(numel(x));
  return op_call(NNP_OP_SGD_UPDATE, p, {tensor(x, std::move(grad))},
                 {tensor(x, rng.uniform_vec(numel(x))), p.momentum != 0 || c.i("buffer", 0)
                                                            ? tensor(x, rng.uniform_vec(numel(x)))
                                                            : absent_tensor()});
}

OpCall make_adam(const Case& c, Rng& rng) {
  auto p = make_params<nnp_adam_params>();
  p.lr = c.d("lr", 1e-3);
  p.beta1 = c.d("b1", 0.9);
  p.beta2 = c.d("b2", 0.999);
  p.epsilon = c.d("eps", 1e-8);
  p.weight_decay = c.d("wd", 0);
  p.step = c.i("step", 1);
  p.adamw = static_cast<int32_t>(c.i("adamw", 0));
  const auto x = c.dims("x", {100});
  auto grad = rng.uniform_vec(numel(x));
  const bool fresh = p.step == 1;  // first step: zero state, as a real optimiser starts
  return op_call(NNP_OP_ADAM_UPDATE, p, {tensor(x, std::move(grad))},
                 {tensor(x, rng.uniform_vec(numel(x))),
                  tensor(x, fresh ? std::vector<double>(static_cast<size_t>(numel(x)), 0.0)
                                  : rng.uniform_vec(numel(x), -0.1, 0.1)),
                  tensor(x, fresh ? std::vector<double>(static_cast<size_t>(numel(x)), 0.0)
                                  : rng.uniform_vec(numel(x), 0, 0.01))});
}

const RegisterTemplate reg_sgd("sgd_update", [] {
  Rng rng("template sgd");
  return make_sgd(parse_case("x20 lr=0.1 mom=0.9 wd=0.01"), rng);
});
const RegisterTemplate reg_adam("adam_update", [] {
  Rng rng("template adam");
  return make_adam(parse_case("x20 step=2 wd=0.01"), rng);
});

}  // namespace

TEST_CASE("sgd_update") { check_numerics_cases("sgd_update", "sgd", "sgd", make_sgd); }

TEST_CASE("adam_update") { check_numerics_cases("adam_update", "adam", "adam", make_adam); }

// Known answers on every device (the reference included): PyTorch's SGD (weight decay,
// momentum with dampening 0, Nesterov) and Adam/AdamW first step (bias correction).
TEST_CASE("optimisers: known answers") {
  // float64 where supported: the thresholds can then be tight.
  auto run = [](const std::string& what, const OpCall& call,
                const std::vector<std::vector<double>>& want) {
    check_known_outputs("optimiser_known", what, call, want, {DT::f64, DT::f32},
                        [](DT dt) { return dt == DT::f64 ? 1e-24 : 1e-12; });
  };
  Rng rng("known");
  for (int nesterov : {0, 1}) {
    OpCall sgd = make_sgd(parse_case("x1 lr=0.1 mom=0.9 wd=0.1"), rng);
    sgd.params_as<nnp_sgd_params>()->nesterov = nesterov;
    sgd.inputs[0].data = {0.5};
    sgd.outputs[0].data = {1.0};
    sgd.outputs[1].data = {0.2};
    // g = 0.5 + 0.1*1 = 0.6; buf = 0.9*0.2 + 0.6 = 0.78; step = nesterov ? 0.6 + 0.9*0.78 : 0.78
    const double step = nesterov ? 0.6 + 0.9 * 0.78 : 0.78;
    run(nesterov ? "sgd nesterov" : "sgd momentum", sgd, {{1 - 0.1 * step}, {0.78}});
  }
  for (int adamw : {0, 1}) {
    OpCall adam = make_adam(parse_case("x1 lr=0.01 b1=0.9 b2=0.999 eps=1e-8 wd=0.1 step=1"), rng);
    adam.params_as<nnp_adam_params>()->adamw = adamw;
    adam.inputs[0].data = {0.5};
    adam.outputs[0].data = {1.0};
    // Adam: g = 0.5 + 0.1 = 0.6. AdamW: param *= 1 - 0.01*0.1 first, g = 0.5.
    // Step 1: m_hat = g, v_hat = g^2, update = lr * g / (|g| + eps).
    const double g = adamw ? 0.5 : 0.6, p0 = adamw ? 1 - 0.01 * 0.1 : 1.0;
    run(adamw ? "adamw step1" : "adam step1", adam,
        {{p0 - 0.01 * g / (g + 1e-8)}, {0.1 * g}, {0.001 * g * g}});
  }
}
