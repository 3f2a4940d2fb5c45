// test_harness.cpp — self-checks of the conformance harness, so that a passing suite means
// something: NMSE, NaN and Inf rules, exact comparison, float16/bfloat16 rounding, case-file
// parsing, tolerance precedence, and that guard bytes, untouched-input and untouched-output
// checks really catch an op that writes out of bounds (an output shifted into its guard).
#include <doctest/doctest.h>

#include "harness.hpp"

#include <cmath>
#include <limits>

using namespace conf;

TEST_CASE("harness: NMSE, NaN and Inf rules") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(compare_nmse({1, 2, 3}, {1, 2, 3}, 0).ok);
  const comparison c = compare_nmse({1, 2, 3.001}, {1, 2, 3}, 1e-9);
  CHECK_FALSE(c.ok);
  CHECK(c.error == doctest::Approx(1e-6 / 14).epsilon(1e-3));
  CHECK(compare_nmse({1, 2, 3.001}, {1, 2, 3}, 1e-6).ok);
  CHECK_FALSE(compare_nmse({1, nan, 3}, {1, 2, 3}, 1).ok);  // NaN fails
  CHECK_FALSE(compare_nmse({1, 2, 3}, {1, nan, 3}, 1).ok);  // a number where NaN is expected
  CHECK(compare_nmse({1, nan, 3}, {1, nan, 3}, 0).ok);      // NaN where the reference has NaN
  CHECK(compare_nmse({inf, -inf, 1}, {inf, -inf, 1}, 0).ok);
  CHECK_FALSE(compare_nmse({inf, 1}, {-inf, 1}, 1).ok);   // Inf sign
  CHECK_FALSE(compare_nmse({inf, 1}, {1e308, 1}, 1).ok);  // Inf position
  CHECK_FALSE(compare_nmse({1, 2}, {1, 2, 3}, 1).ok);     // size
  CHECK(compare_nmse({0, 0}, {0, 0}, 0).ok);              // all-zero reference
  CHECK(compare_exact({0, 1, 1}, {0, 1, 1}).ok);
  const comparison e = compare_exact({0, 1, 0, 0}, {0, 1, 1, 1});
  CHECK_FALSE(e.ok);
  CHECK(e.error == 2);
}

TEST_CASE("harness: float16 and bfloat16 rounding") {
  CHECK(quantize(1.0, dtype_id::f16) == 1.0);
  CHECK(quantize(65504.0, dtype_id::f16) == 65504.0);
  CHECK(std::isinf(quantize(65520.0, dtype_id::f16)));  // rounds up to Inf
  CHECK(quantize(65519.0, dtype_id::f16) == 65504.0);
  CHECK(quantize(1.0 + 1.0 / 2048, dtype_id::f16) == 1.0);  // tie to even
  CHECK(quantize(1.0 + 3.0 / 2048, dtype_id::f16) == 1.0 + 2.0 / 1024);
  CHECK(quantize(std::ldexp(1.0, -24), dtype_id::f16) == std::ldexp(1.0, -24));  // subnormal
  CHECK(quantize(std::ldexp(1.0, -26), dtype_id::f16) == 0.0);
  CHECK(quantize(-2.5, dtype_id::f16) == -2.5);
  CHECK(std::isnan(quantize(std::nan(""), dtype_id::f16)));
  CHECK(quantize(1.0 + 1.0 / 256, dtype_id::bf16) == 1.0);  // tie to even
  CHECK(quantize(1.0 + 3.0 / 256, dtype_id::bf16) == 1.0 + 2.0 / 128);
  CHECK(std::isnan(quantize(std::nan(""), dtype_id::bf16)));
  CHECK(quantize(0.1, dtype_id::f32) == static_cast<double>(0.1f));
  CHECK(quantize(3.7, dtype_id::i64) == 3.0);
  // From float64, rounded once: just below a tie of float16 (2.8271484375, between 2.826171875
  // and 2.828125) and of bfloat16 (1.01171875, between 1.0078125 and 1.015625), where rounding
  // through float32 first would land on the tie and go to the even neighbour above.
  const double below_f16_tie = 2.8271484375 - std::ldexp(1.0, -40);
  CHECK(static_cast<double>(static_cast<float>(below_f16_tie)) == 2.8271484375);
  CHECK(quantize(below_f16_tie, dtype_id::f16) == 2.826171875);
  CHECK(quantize(-below_f16_tie, dtype_id::f16) == -2.826171875);
  CHECK(quantize(2.8271484375 + std::ldexp(1.0, -40), dtype_id::f16) == 2.828125);
  CHECK(quantize(2.8271484375, dtype_id::f16) == 2.828125);  // an exact tie: to even
  const double below_bf16_tie = 1.01171875 - std::ldexp(1.0, -40);
  CHECK(quantize(below_bf16_tie, dtype_id::bf16) == 1.0078125);
  CHECK(quantize(1.01171875, dtype_id::bf16) == 1.015625);
  CHECK(std::isinf(quantize(1e300, dtype_id::f16)));
  CHECK(quantize(std::ldexp(1.0, -25) + std::ldexp(1.0, -60), dtype_id::f16) ==
        std::ldexp(1.0, -24));
  CHECK(quantize(std::ldexp(1.0, -25), dtype_id::f16) == 0.0);  // the tie below the least subnormal
}

TEST_CASE("harness: case-file tokens") {
  const case_line c = parse_case(
      "  n2 c3  h7 w7 k4 r3 s3 stride2 pad_t1 axis-1 x2x3x4 perm=2,0,1 "
      "red=mean alpha=1e-3 flag");
  CHECK(c.text ==
        "n2 c3 h7 w7 k4 r3 s3 stride2 pad_t1 axis-1 x2x3x4 perm=2,0,1 red=mean "
        "alpha=1e-3 flag");
  CHECK(c.i("n", 0) == 2);
  CHECK(c.i("stride", 0) == 2);
  CHECK(c.i("pad_t", 0) == 1);
  CHECK(c.i("axis", 0) == -1);
  CHECK(c.i("missing", 42) == 42);
  CHECK(c.dims("x") == std::vector<int64_t>{2, 3, 4});
  CHECK(c.list("perm") == std::vector<int64_t>{2, 0, 1});
  CHECK(c.s("red", "") == "mean");
  CHECK(c.d("alpha", 0) == doctest::Approx(1e-3));
  CHECK(c.has("flag"));
  CHECK_FALSE(c.has("pad"));
}

TEST_CASE("harness: tolerance precedence") {
  // Specific rules beat wildcards (defaults come from tolerances.txt and built-ins).
  CHECK(tolerance("no_such_op", dtype_id::f32) > 0);
  CHECK(tolerance("no_such_op", dtype_id::f64) <= tolerance("no_such_op", dtype_id::f32));
  CHECK(tolerance("no_such_op", dtype_id::f16) >= tolerance("no_such_op", dtype_id::f32));
  CHECK(tolerance("gradient", dtype_id::f64) > tolerance("no_such_op", dtype_id::f64));
}

TEST_CASE("harness: guard bytes and untouched tensors are checked") {
  device_entry& ref = reference_device();
  REQUIRE(ref.available);
  auto p = make_params<nnp_scale_params>();
  p.alpha = 2;
  call_spec call;
  call.kind = NNP_OP_SCALE;
  call.set_params(p);
  call.inputs = {tensor({3, 5}, std::vector<double>(15, 1.5))};
  call.outputs = {tensor({3, 5})};

  const run_result good = run_op(ref, call, dtype_id::f32);
  REQUIRE(good.status == NNP_STATUS_OK);
  CHECK(good.problems.empty());
  CHECK(good.outputs[0] == std::vector<double>(15, 3.0));

  // An output placed one element into its leading guard: the op writes into the guard.
  const run_result shifted = run_op(ref, call, dtype_id::f32, nullptr,
                                    [](raw_call& raw) { raw.out[0].byte_offset -= sizeof(float); });
  REQUIRE(shifted.status == NNP_STATUS_OK);
  REQUIRE_FALSE(shifted.problems.empty());
  CHECK(shifted.problems[0].find("guard before") != std::string::npos);
  // ... and leaves its last element unwritten (still the NaN fill), which NMSE rejects.
  CHECK(std::isnan(shifted.outputs[0].back()));
  CHECK_FALSE(compare_nmse(shifted.outputs[0], good.outputs[0], 1).ok);

  // The output pointed at the input: the input is modified, which must be reported.
  const run_result into_input = run_op(ref, call, dtype_id::f32, nullptr,
                                       [](raw_call& raw) { raw.out[0].data = raw.in[0].data; });
  if (into_input.status == NNP_STATUS_OK) {
    CHECK_FALSE(into_input.problems.empty());
  }

  // A rejected call leaves outputs untouched.
  const run_result rejected =
      run_op(ref, call, dtype_id::f32, nullptr, [](raw_call& raw) { raw.params = nullptr; });
  CHECK(rejected.status == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(rejected.outputs_untouched);
}

TEST_CASE("harness: random inputs are deterministic per case") {
  value_rng a("gemm m4 n5 k3"), b("gemm m4 n5 k3"), c("gemm m4 n5 k4");
  const auto va = a.uniform_vec(16), vb = b.uniform_vec(16), vc = c.uniform_vec(16);
  CHECK(va == vb);
  CHECK(va != vc);
  value_rng d("distinct");
  auto v = d.distinct(100, 0.5);
  std::sort(v.begin(), v.end());
  CHECK(std::adjacent_find(v.begin(), v.end()) == v.end());
}

TEST_CASE("harness: the finite-difference check catches a wrong backward") {
  REQUIRE(reference_device().available);
  auto sigmoid = make_params<nnp_activation_params>();
  sigmoid.function = NNP_ACTIVATION_SIGMOID;
  auto tanh_fn = sigmoid;
  tanh_fn.function = NNP_ACTIVATION_TANH;
  value_rng rng("harness gradient");
  gradient_check g;
  g.name = "harness_gradient";
  g.case_text = "x4x5";
  g.forward.kind = NNP_OP_ACTIVATION_FORWARD;
  g.forward.set_params(sigmoid);
  g.forward.inputs = {tensor({4, 5}, rng.uniform_vec(20, -2, 2))};
  g.forward.outputs = {tensor({4, 5})};
  g.wrt = {{0, 0}};
  auto backward_with = [](nnp_activation_params p) {
    return [p](const call_spec& f, const std::vector<std::vector<double>>&,
               const std::vector<std::vector<double>>& r) {
      call_spec b;
      b.kind = NNP_OP_ACTIVATION_BACKWARD;
      b.set_params(p);
      b.inputs = {tensor({4, 5}, f.inputs[0].data), tensor({4, 5}, r[0])};
      b.outputs = {tensor({4, 5})};
      return b;
    };
  };
  g.backward = backward_with(sigmoid);
  const report_entry right = evaluate_gradient(g);
  CHECK_MESSAGE(right.outcome == case_outcome::pass, right.message);
  g.backward = backward_with(tanh_fn);  // the derivative of another function
  const report_entry wrong = evaluate_gradient(g);
  CHECK(wrong.outcome == case_outcome::fail);
  CHECK(wrong.error > 1e-2);
}
