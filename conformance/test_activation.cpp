// test_activation.cpp — activation forward and backward (relu, leaky_relu, sigmoid, tanh,
// gelu erf/tanh forms, elu): numerics against the reference, in place (y aliases x, dx
// aliases dy), and backward against finite differences of forward (inputs kept away from the
// kink at 0).
// Cases: cases/<list>/activation.txt: "fn=leaky_relu x4x33 alpha=0.1 inplace1 range=50"
// (inputs uniform in [-range, range], default 4).
#include <doctest/doctest.h>

#include "harness.hpp"

#include <map>

namespace {
using namespace conf;

int32_t activation_fn(const std::string& name) {
  static const std::map<std::string, int32_t> fns{{"relu", NNP_ACTIVATION_RELU},
                                                  {"leaky_relu", NNP_ACTIVATION_LEAKY_RELU},
                                                  {"sigmoid", NNP_ACTIVATION_SIGMOID},
                                                  {"tanh", NNP_ACTIVATION_TANH},
                                                  {"gelu_erf", NNP_ACTIVATION_GELU_ERF},
                                                  {"gelu_tanh", NNP_ACTIVATION_GELU_TANH},
                                                  {"elu", NNP_ACTIVATION_ELU}};
  auto it = fns.find(name);
  return it == fns.end() ? NNP_ACTIVATION_UNDEFINED : it->second;
}

nnp_activation_params act_params(const Case& c) {
  auto p = make_params<nnp_activation_params>();
  p.function = activation_fn(c.s("fn", "relu"));
  p.alpha = c.d("alpha", p.function == NNP_ACTIVATION_ELU ? 1.0 : 0.01);
  return p;
}

OpCall act_forward(const nnp_activation_params& p, const std::vector<int64_t>& shape,
                   std::vector<double> x, bool inplace) {
  OpCall call;
  call.kind = NNP_OP_ACTIVATION_FORWARD;
  call.set_params(p);
  call.inputs.push_back(tensor(shape, std::move(x)));
  call.outputs.push_back(tensor(shape));
  if (inplace) call.outputs[0].alias_of = 0;
  return call;
}
OpCall act_backward(const nnp_activation_params& p, const std::vector<int64_t>& shape,
                    std::vector<double> x, std::vector<double> dy, bool inplace) {
  OpCall call;
  call.kind = NNP_OP_ACTIVATION_BACKWARD;
  call.set_params(p);
  call.inputs.push_back(tensor(shape, std::move(x)));
  call.inputs.push_back(tensor(shape, std::move(dy)));
  call.outputs.push_back(tensor(shape));
  if (inplace) call.outputs[0].alias_of = 1;
  return call;
}

const RegisterTemplate reg_fwd("activation_forward", [] {
  Rng rng("template act");
  return act_forward(act_params(parse_case("fn=tanh")), {3, 5}, rng.uniform_vec(15), false);
});
const RegisterTemplate reg_bwd("activation_backward", [] {
  Rng rng("template act bwd");
  return act_backward(act_params(parse_case("fn=sigmoid")), {3, 5}, rng.uniform_vec(15),
                      rng.uniform_vec(15), false);
});

}  // namespace

TEST_CASE("activation_forward") {
  for (const Case& c : load_cases("activation")) {
    Rng rng("act_fwd " + c.text);
    const auto shape = c.dims("x", {4, 8});
    check_numerics("activation_forward", c.text,
                   act_forward(act_params(c), shape,
                               rng.uniform_vec(numel(shape), -c.d("range", 4), c.d("range", 4)),
                               c.i("inplace", 0) != 0));
  }
}

TEST_CASE("activation_backward") {
  for (const Case& c : load_cases("activation")) {
    Rng rng("act_bwd " + c.text);
    const auto shape = c.dims("x", {4, 8});
    const auto x = rng.uniform_vec(numel(shape), -c.d("range", 4), c.d("range", 4));
    check_numerics("activation_backward", c.text,
                   act_backward(act_params(c), shape, x, rng.uniform_vec(numel(shape)),
                                c.i("inplace", 0) != 0));
  }
}

TEST_CASE("gradient activation") {
  for (const Case& c : load_cases("activation")) {
    const auto shape = c.dims("x", {4, 8});
    Rng rng("gradient act " + c.text);
    const nnp_activation_params p = act_params(c);
    GradientCheck g;
    g.name = "activation_backward";
    g.case_text = c.text;
    g.forward = act_forward(p, shape, rng.away_from_zero(numel(shape), 0.05, 3), false);
    g.backward = [p, shape](const OpCall& f, const auto&, const auto& r) {
      return act_backward(p, shape, f.inputs[0].data, r[0], false);
    };
    g.wrt = {{0, 0}};
    check_gradient(g);
  }
}
