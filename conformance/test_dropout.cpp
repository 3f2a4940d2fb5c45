// test_dropout.cpp — dropout forward (y and the uint8 mask, which must be bit-identical to the
// reference) and backward (mask regenerated from seed/offset), in place included; the mask of
// every backend is also checked against the Philox4x32-10 rule of nnplug_ops.h computed on the
// host (nnplug/kit/philox.hpp), also for backwards after other calls on the stream (a
// backend's mask cache); backward against finite differences of forward.
// Cases: cases/<list>/dropout.txt: "x1000 ratio=0.3 seed=42 offset=7 mask1 inplace1".
#include <doctest/doctest.h>

#include "harness.hpp"

#include <nnplug/kit/philox.hpp>

namespace {
using namespace conf;

nnp_dropout_params dr_params(const Case& c) {
  auto p = make_params<nnp_dropout_params>();
  p.ratio = c.d("ratio", 0.5);
  p.seed = static_cast<uint64_t>(c.i("seed", 1234));
  p.offset = static_cast<uint64_t>(c.i("offset", 0));
  return p;
}
OpCall dr_forward(const nnp_dropout_params& p, const std::vector<int64_t>& shape,
                  std::vector<double> x, bool mask, bool inplace) {
  OpCall call = op_call(NNP_OP_DROPOUT_FORWARD, p, {tensor(shape, std::move(x))},
                        {tensor(shape), mask ? int_tensor(DT::u8, shape) : absent_tensor()});
  if (inplace) call.outputs[0].alias_of = 0;
  return call;
}
OpCall dr_backward(const nnp_dropout_params& p, const std::vector<int64_t>& shape,
                   std::vector<double> dy, bool inplace) {
  return same_shape_call(NNP_OP_DROPOUT_BACKWARD, p, shape, {std::move(dy)}, inplace ? 0 : -1);
}

const RegisterTemplate reg_fwd("dropout_forward", [] {
  Rng rng("template dropout");
  return dr_forward(dr_params(parse_case("ratio=0.25")), {4, 9}, rng.uniform_vec(36), true, false);
});
const RegisterTemplate reg_bwd("dropout_backward", [] {
  Rng rng("template dropout bwd");
  return dr_backward(dr_params(parse_case("ratio=0.25")), {4, 9}, rng.uniform_vec(36), false);
});

}  // namespace

TEST_CASE("dropout_forward") {
  check_numerics_cases("dropout_forward", "dropout", "dropout_fwd", [](const Case& c, Rng& rng) {
    const auto shape = c.dims("x", {100});
    return dr_forward(dr_params(c), shape, rng.uniform_vec(numel(shape)), c.i("mask", 1) != 0,
                      c.i("inplace", 0) != 0);
  });
}

TEST_CASE("dropout_backward") {
  check_numerics_cases("dropout_backward", "dropout", "dropout_bwd", [](const Case& c, Rng& rng) {
    const auto shape = c.dims("x", {100});
    return dr_backward(dr_params(c), shape, rng.uniform_vec(numel(shape)), c.i("inplace", 0) != 0);
  });
}

// The mask follows the rule of nnplug_ops.h exactly (checked on every backend, reference too).
TEST_CASE("dropout mask rule") {
  for (const Case& c : load_cases("dropout")) {
    const auto shape = c.dims("x", {100});
    const auto p = dr_params(c);
    const int64_t n = numel(shape);
    const uint32_t threshold = nnp::dropout_threshold(p.ratio);
    std::vector<double> expected(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      expected[static_cast<size_t>(i)] =
          nnp::dropout_keep(p.seed, p.offset, static_cast<uint64_t>(i), threshold) ? 1 : 0;
    const OpCall call =
        dr_forward(p, shape, std::vector<double>(static_cast<size_t>(n), 1.0), true, false);
    for (Device* d : all_devices()) {
      if (!d->available) continue;
      std::string reason;
      if (op_supported(*d, call, DT::f32, &reason) != NNP_STATUS_OK) continue;
      const RunResult r = run_op(*d, call, DT::f32);
      REQUIRE_MESSAGE(r.status == NNP_STATUS_OK, d->name << ": " << r.message);
      Comparison cmp = compare_exact(r.outputs[1], expected);
      if (cmp.ok) {  // y = keep ? x * (float)(1 / (1 - ratio)) : 0, with x = 1
        std::vector<double> y(expected.size());
        const double scale = static_cast<float>(1.0 / (1.0 - p.ratio));
        for (size_t i = 0; i < y.size(); ++i) y[i] = expected[i] * scale;
        cmp = compare_exact(r.outputs[0], y);
      }
      const std::string name = "dropout_mask_rule " + c.text + " f32";
      report({d->name, "dropout_mask_rule", "float32", name, cmp.ok ? Outcome::pass : Outcome::fail,
              cmp.error, 0, cmp.detail});
      CHECK_MESSAGE(cmp.ok, d->name << ": " << name << ": " << cmp.detail);
    }
  }
}

// Backward regenerates the forward's mask from (seed, offset, ratio) whatever ran before on the
// stream, on every backend (reference too): a backward with no forward, backwards after more
// forwards than a backend may cache (the cpu keeps 4 masks per stream), and a backward with
// another ratio on the same counter. Known answers from the mask rule, dy = 1.
TEST_CASE("dropout_backward after other calls on the stream") {
  const int64_t n = 40003;  // more than one 32k-element block, with a tail
  const std::vector<int64_t> shape{n};
  const std::vector<double> ones(static_cast<size_t>(n), 1.0);
  auto params = [](double ratio, uint64_t seed, uint64_t offset) {
    auto p = make_params<nnp_dropout_params>();
    p.ratio = ratio;
    p.seed = seed;
    p.offset = offset;
    return p;
  };
  auto expected = [&](const nnp_dropout_params& p) {  // keep ? 1 * (float)(1 / (1 - ratio)) : 0
    const uint32_t threshold = nnp::dropout_threshold(p.ratio);
    const double scale = static_cast<float>(1.0 / (1.0 - p.ratio));
    std::vector<double> dx(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      dx[static_cast<size_t>(i)] =
          nnp::dropout_keep(p.seed, p.offset, static_cast<uint64_t>(i), threshold) ? scale : 0;
    return dx;
  };
  for (Device* d : all_devices()) {
    if (!d->available) continue;
    const OpCall probe = dr_backward(params(0.5, 7, 0), shape, ones, false);
    if (op_supported(*d, probe, DT::f32, nullptr) != NNP_STATUS_OK ||
        op_supported(*d, dr_forward(params(0.5, 7, 0), shape, ones, true, false), DT::f32,
                     nullptr) != NNP_STATUS_OK)
      continue;
    std::vector<std::string> problems;
    auto backward = [&](const nnp_dropout_params& p, const std::string& what) {
      const RunResult r = run_op(*d, dr_backward(p, shape, ones, false), DT::f32);
      const Comparison c = r.status == NNP_STATUS_OK ? compare_exact(r.outputs[0], expected(p))
                                                     : Comparison{false, 0, r.message};
      if (!c.ok) problems.push_back(what + ": " + c.detail);
    };
    backward(params(0.5, 99, 12345), "backward without a forward");
    for (uint64_t off = 0; off < 6; ++off) {
      const RunResult r =
          run_op(*d, dr_forward(params(0.5, 7, off * 250), shape, ones, true, false), DT::f32);
      if (r.status != NNP_STATUS_OK) problems.push_back("forward failed: " + r.message);
    }
    for (uint64_t off = 0; off < 6; ++off) {
      const std::string at = " (seed 7, offset " + std::to_string(off * 250) + ")";
      backward(params(0.5, 7, off * 250), "backward after 6 forwards" + at);
      backward(params(0.25, 7, off * 250), "backward with another ratio" + at);
    }
    const std::string name = "dropout_backward_sequence x" + std::to_string(n) + " f32";
    report({d->name, "dropout_backward_sequence", "float32", name,
            problems.empty() ? Outcome::pass : Outcome::fail, static_cast<double>(problems.size()),
            0, join(problems, "; ")});
    CHECK_MESSAGE(problems.empty(), d->name << ": " << name << ": " << join(problems, "; "));
  }
}

TEST_CASE("gradient dropout") {
  for (const Case& c : load_cases("dropout")) {
    const auto shape = c.dims("x", {100});
    if (numel(shape) > 4096) continue;
    const auto p = dr_params(c);
    Rng rng("gradient dropout " + c.text);
    GradientCheck g;
    g.name = "dropout_backward";
    g.case_text = c.text;
    g.forward = dr_forward(p, shape, rng.uniform_vec(numel(shape)), false, false);
    g.backward = [p, shape](const OpCall&, const auto&, const auto& r) {
      return dr_backward(p, shape, r[0], false);
    };
    g.wrt = {{0, 0}};
    check_gradient(g);
  }
}
