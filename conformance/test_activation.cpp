// test_activation.cpp — activation forward and backward (relu, leaky_relu, sigmoid, tanh,
// gelu erf/tanh forms, elu): numerics against the reference, in place (y aliases x, dx
// aliases dy), and backward against finite differences of forward (inputs kept away from the
// kink at 0).
// Cases: cases/<list>/activation.txt: "fn=leaky_relu x4x33 alpha=0.1 inplace1 range=50"
// (inputs uniform in [-range, range], default 4).
#include <doctest/doctest.h>

#include "harness.hpp"

#include <cmath>

namespace {
using namespace conf;

int32_t activation_fn(const std::string& name) {
  for (const auto& [n, fn] : activation_functions())
    if (n == name) return fn;
  return NNP_ACTIVATION_UNDEFINED;
}

nnp_activation_params act_params(const case_line& c) {
  auto p = make_params<nnp_activation_params>();
  p.function = activation_fn(c.s("fn", "relu"));
  p.alpha = c.d("alpha", p.function == NNP_ACTIVATION_ELU ? 1.0 : 0.01);
  return p;
}

// act.backward takes x (dx = f'(x) * dy).
constexpr same_shape_ops<nnp_activation_params> act{NNP_OP_ACTIVATION_FORWARD,
                                                    NNP_OP_ACTIVATION_BACKWARD};

// A case's shape (default [4, 8]) and inputs, uniform in [-range, range] (default 4).
std::vector<int64_t> case_shape(const case_line& c) { return c.dims("x", {4, 8}); }
std::vector<double> case_x(const case_line& c, value_rng& rng) {
  return rng.uniform_vec(numel(case_shape(c)), -c.d("range", 4), c.d("range", 4));
}

const register_template reg_fwd("activation_forward", "act", "fn=tanh",
                                forward_template_of(act, act_params, {3, 5}));
const register_template reg_bwd("activation_backward", "act bwd", "fn=sigmoid",
                                backward_template_of(act, act_params, {3, 5}));

}  // namespace

TEST_CASE("activation_forward") {
  check_numerics_cases("activation_forward", "activation", "act_fwd",
                       forward_case_of(act, act_params, case_shape, case_x));
}

TEST_CASE("activation_backward") {
  check_numerics_cases(
      "activation_backward", "activation", "act_bwd", [](const case_line& c, value_rng& rng) {
        const auto x = case_x(c, rng);
        return act.backward(act_params(c), case_shape(c), x, rng.uniform_vec(numel(case_shape(c))),
                            c.i("inplace", 0) != 0);
      });
}

TEST_CASE("gradient activation") {
  for (const case_line& c : load_cases("activation")) {
    const auto shape = case_shape(c);
    value_rng rng("gradient act " + c.text);
    const nnp_activation_params p = act_params(c);
    gradient_check g;
    g.name = "activation_backward";
    g.case_text = c.text;
    g.forward = act.forward(p, shape, rng.away_from_zero(numel(shape), 0.05, 3), false);
    g.backward = [p, shape](const call_spec& f, const auto&, const auto& r) {
      return act.backward(p, shape, f.inputs[0].data, r[0], false);
    };
    g.wrt = {{0, 0}};
    check_gradient(g);
  }
}

// Known answers on every device (the reference included): the ONNX forms of each function at
// a few points, and relu's derivative at 0 (defined as 0).
TEST_CASE("activation: known answers") {
  const std::vector<double> x{-2, -1, 0, 1, 2};
  const double e1 = std::exp(-1.0), e2 = std::exp(-2.0);
  auto gelu_tanh = [](double v) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  };
  auto gelu_erf = [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); };
  struct known_case {
    const char* text;
    std::vector<double> y;
  };
  const std::vector<known_case> known{
      {"fn=relu", {0, 0, 0, 1, 2}},
      {"fn=leaky_relu alpha=0.1", {-0.2, -0.1, 0, 1, 2}},
      {"fn=sigmoid", {1 / (1 + 1 / e2), 1 / (1 + 1 / e1), 0.5, 1 / (1 + e1), 1 / (1 + e2)}},
      {"fn=tanh", {std::tanh(-2.0), std::tanh(-1.0), 0, std::tanh(1.0), std::tanh(2.0)}},
      {"fn=gelu_erf", {gelu_erf(-2), gelu_erf(-1), 0, gelu_erf(1), gelu_erf(2)}},
      {"fn=gelu_tanh", {gelu_tanh(-2), gelu_tanh(-1), 0, gelu_tanh(1), gelu_tanh(2)}},
      {"fn=elu alpha=0.5", {0.5 * (e2 - 1), 0.5 * (e1 - 1), 0, 1, 2}},
  };
  for (const known_case& k : known) {
    const call_spec call = act.forward(act_params(parse_case(k.text)), {5}, x, false);
    // relu backward at 0 is 0: dx = f'(x) * dy with dy = 1.
    const call_spec bwd =
        act.backward(act_params(parse_case("fn=relu")), {5}, x, std::vector<double>(5, 1.0), false);
    check_known_answer("activation", k.text, call, k.y, 1e-12, [&bwd](device_entry& d) {
      if (op_supported(d, bwd, dtype_id::f32, nullptr) != NNP_STATUS_OK) return;
      const run_result rb = run_op(d, bwd, dtype_id::f32);
      REQUIRE(rb.status == NNP_STATUS_OK);
      CHECK_MESSAGE(compare_exact(rb.outputs[0], {0, 0, 0, 1, 1}).ok,
                    d.name << ": relu backward at {-2,-1,0,1,2} must be {0,0,0,1,1}");
    });
  }
}
