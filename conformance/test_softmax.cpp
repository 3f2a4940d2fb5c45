// test_softmax.cpp — softmax and log-softmax over any axis: forward and backward numerics
// against the reference (in place included) and backward against finite differences.
// Cases: cases/<list>/softmax.txt: "x4x10 axis-1 log1 inplace1 range=500 offset=1e5" (inputs
// uniform in [offset-range, offset+range], default 0 and 5: large ranges overflow a softmax
// without max subtraction; large offsets catch a log-softmax computed as x - (max + log sum)).
#include <doctest/doctest.h>

#include "harness.hpp"

#include <cmath>

namespace {
using namespace conf;

nnp_softmax_params sm_params(const case_line& c) {
  auto p = make_params<nnp_softmax_params>();
  p.axis = static_cast<int32_t>(c.i("axis", -1));
  p.log = static_cast<int32_t>(c.i("log", 0));
  return p;
}
// sm.backward takes the forward's y.
constexpr same_shape_ops<nnp_softmax_params> sm{NNP_OP_SOFTMAX_FORWARD, NNP_OP_SOFTMAX_BACKWARD};

// A case's shape (default [4, 10]) and inputs, uniform in [-range, range] (default 5).
std::vector<int64_t> case_shape(const case_line& c) { return c.dims("x", {4, 10}); }
// offset=O shifts every input by O: with O = 1e4 or 1e5 the float32 log-softmax must subtract
// the max before log(sum), not after (max + log(sum) rounded to float32 loses ~1e-3).
std::vector<double> case_x(const case_line& c, value_rng& rng) {
  const double r = c.d("range", 5), o = c.d("offset", 0);
  return rng.uniform_vec(numel(case_shape(c)), o - r, o + r);
}

const register_template reg_fwd("softmax_forward", "softmax", "axis1",
                                forward_template_of(sm, sm_params, {3, 5, 2}));
const register_template reg_bwd("softmax_backward", "softmax bwd", "axis1 log1",
                                backward_template_of(sm, sm_params, {3, 5, 2}));

}  // namespace

TEST_CASE("softmax_forward") {
  check_numerics_cases("softmax_forward", "softmax", "softmax_fwd",
                       forward_case_of(sm, sm_params, case_shape, case_x));
}

TEST_CASE("softmax_backward") {
  for (const case_line& c : load_cases("softmax")) {
    value_rng rng("softmax_bwd " + c.text);
    const auto shape = case_shape(c);
    const auto p = sm_params(c);
    const auto x = case_x(c, rng);
    const auto dy = rng.uniform_vec(numel(shape));
    check_numerics_fn("softmax_backward", c.text, [&](dtype_id dt) {
      const auto y = reference_outputs(sm.forward(p, shape, x, false), dt);
      return sm.backward(p, shape, y.empty() ? x : y[0], dy, c.i("inplace", 0) != 0);
    });
  }
}

TEST_CASE("gradient softmax") {
  for (const case_line& c : load_cases("softmax")) {
    const auto shape = case_shape(c);
    if (numel(shape) > 512) continue;  // finite differences on small shapes only
    value_rng rng("gradient softmax " + c.text);
    const auto p = sm_params(c);
    gradient_check g;
    g.name = p.log ? "log_softmax_backward" : "softmax_backward";
    g.case_text = c.text;
    g.forward = sm.forward(p, shape, rng.uniform_vec(numel(shape), -3, 3), false);
    g.backward = [p, shape](const call_spec&, const std::vector<std::vector<double>>& out,
                            const std::vector<std::vector<double>>& r) {
      return sm.backward(p, shape, out[0], r[0], false);
    };
    g.wrt = {{0, 0}};
    check_gradient(g);
  }
}

// Known answers on every device (the reference included): softmax of log(1), log(2), log(3)
// is 1/6, 2/6, 3/6 along the axis; log-softmax their logarithms.
TEST_CASE("softmax: known answers") {
  // [2, 3] with axis 1, and the same values laid out [3, 2] with axis 0.
  const double l1 = 0, l2 = std::log(2.0), l3 = std::log(3.0);
  const std::vector<double> p{1. / 6, 2. / 6, 3. / 6};
  struct known_case {
    const char* text;
    std::vector<int64_t> shape;
    std::vector<double> x, y;
  };
  std::vector<known_case> known{
      {"axis1", {2, 3}, {l1, l2, l3, l1 + 5, l2 + 5, l3 + 5}, {p[0], p[1], p[2], p[0], p[1], p[2]}},
      {"axis0", {3, 2}, {l1, l1, l2, l2, l3, l3}, {p[0], p[0], p[1], p[1], p[2], p[2]}},
      {"axis-1 log1",
       {1, 3},
       {l1 - 50, l2 - 50, l3 - 50},
       {std::log(p[0]), std::log(p[1]), std::log(p[2])}},
  };
  // log-softmax of [1e5, 1e5+1, 1e5+2, 1e5+3] (exact in float32) is [-3, -2, -1, 0] -
  // log(1 + e^-1 + e^-2 + e^-3); x - (max + log sum) in float32 gives -0.4375 for the last.
  const double lse = std::log(1 + std::exp(-1.0) + std::exp(-2.0) + std::exp(-3.0));
  known.push_back({"axis-1 log1 offset=1e5",
                   {1, 4},
                   {1e5, 1e5 + 1, 1e5 + 2, 1e5 + 3},
                   {-3 - lse, -2 - lse, -1 - lse, -lse}});
  known.push_back({"axis0 log1 offset=-1e4",
                   {4, 1},
                   {-1e4, -1e4 + 1, -1e4 + 2, -1e4 + 3},
                   {-3 - lse, -2 - lse, -1 - lse, -lse}});
  for (const known_case& k : known) {
    check_known_answer("softmax", k.text,
                       sm.forward(sm_params(parse_case(k.text)), k.shape, k.x, false), k.y);
  }
}
