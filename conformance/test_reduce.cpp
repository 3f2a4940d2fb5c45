// test_reduce.cpp — the reduce family against the reference: NNP_OP_REDUCE (sum, mean, max, min,
// l1, l2, sum_square, log_sum_exp over any set of axes, keepdims 0/1, all axes with n_axes = 0)
// and NNP_OP_CUMSUM (ABI 1.5; along one axis, exclusive, reverse, in place).
// Cases: cases/<list>/reduce.txt: "x3x4x5 op=sum axes=0,2 keep1" (no axes = every axis;
// nan1 puts a NaN in the middle of x); cases/<list>/cumsum.txt: "x3x4x5 axis=-1 exclusive1
// reverse1 inplace1 nan1".
#include <doctest/doctest.h>

#include "harness.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>

namespace {
using namespace conf;

call_spec make_reduce(const case_line& c, value_rng& rng) {
  static const std::map<std::string, int32_t> ops{{"sum", NNP_REDUCE_SUM},
                                                  {"mean", NNP_REDUCE_MEAN},
                                                  {"max", NNP_REDUCE_MAX},
                                                  {"min", NNP_REDUCE_MIN},
                                                  {"l2", NNP_REDUCE_L2},
                                                  {"l1", NNP_REDUCE_L1},
                                                  {"sum_square", NNP_REDUCE_SUM_SQUARE},
                                                  {"log_sum_exp", NNP_REDUCE_LOG_SUM_EXP}};
  auto p = make_params<nnp_reduce_params>();
  const auto it = ops.find(c.s("op", "sum"));
  p.op = it == ops.end() ? NNP_REDUCE_UNDEFINED : it->second;
  p.keepdims = static_cast<int32_t>(c.i("keep", 1));
  const auto axes = c.list("axes");
  p.n_axes = static_cast<int32_t>(std::min<size_t>(axes.size(), NNP_MAX_DIMS));
  const auto x = c.dims("x", {3, 4});
  const int rank = static_cast<int>(x.size());
  std::vector<bool> reduced(x.size(), axes.empty());
  for (int i = 0; i < p.n_axes; ++i) {
    p.axes[i] = static_cast<int32_t>(axes[static_cast<size_t>(i)]);
    // The expected shape is written out here, not taken from the library's helpers: a
    // negative axis counts from the end.
    const int a = p.axes[i] < 0 ? p.axes[i] + rank : p.axes[i];
    if (a >= 0 && a < rank) reduced[static_cast<size_t>(a)] = true;
  }
  std::vector<int64_t> y;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!reduced[i])
      y.push_back(x[i]);
    else if (p.keepdims)
      y.push_back(1);
  }
  call_spec call =
      make_spec(NNP_OP_REDUCE, p, {tensor(x, rng.uniform_vec(numel(x), -2, 2))}, {tensor(y)});
  if (c.i("nan", 0) && !call.inputs[0].data.empty())  // NaN propagates (max included)
    call.inputs[0].data[call.inputs[0].data.size() / 2] = std::nan("");
  return call;
}

const register_template reg_reduce("reduce", "reduce", "x3x4x5 op=mean axes=0,2 keep0",
                                   make_reduce);

// cumsum: x = shape, axis (default 0), exclusive1, reverse1, inplace1 (y is x), nan1.
call_spec make_cumsum(const case_line& c, value_rng& rng) {
  auto p = make_params<nnp_cumsum_params>();
  p.axis = static_cast<int32_t>(c.i("axis", 0));
  p.exclusive = static_cast<int32_t>(c.i("exclusive", 0));
  p.reverse = static_cast<int32_t>(c.i("reverse", 0));
  const auto x = c.dims("x", {3, 4});
  call_spec call = same_shape_spec(NNP_OP_CUMSUM, p, x, {rng.uniform_vec(numel(x), -2, 2)},
                                   c.i("inplace", 0) ? 0 : -1);
  if (c.i("nan", 0) && !call.inputs[0].data.empty())  // NaN carries on along its line
    call.inputs[0].data[call.inputs[0].data.size() / 2] = std::nan("");
  return call;
}

const register_template reg_cumsum("cumsum", "cumsum", "x3x4x5 axis=-2 exclusive1", make_cumsum);

}  // namespace

TEST_CASE("reduce") { check_numerics_cases("reduce", make_reduce); }

// Known answers from nnplug_ops.h, on every device (the reference included, since the oracle is
// only as good as its own semantics): NaN propagates through max; empty reductions give 0
// (sum), NaN (mean), -inf (max).
TEST_CASE("reduce: NaN and empty reductions (known answers)") {
  const double nan = std::nan("");
  const double inf = std::numeric_limits<double>::infinity();
  struct known_case {
    const char* text;
    std::vector<double> x, y;
  };
  const std::vector<known_case> known{
      {"x3 op=max keep0", {1, nan, 3}, {nan}},
      {"x3 op=sum keep0", {1, nan, 3}, {nan}},
      {"x2x3 op=max axes=1 keep0", {1, 5, 2, -1, -7, -2}, {5, -1}},
      {"x0x2 op=sum axes=0 keep0", {}, {0, 0}},
      {"x0x2 op=mean axes=0 keep0", {}, {nan, nan}},
      {"x0x2 op=max axes=0 keep0", {}, {-inf, -inf}},
      // ABI 1.2 ops (ONNX ReduceMin, ReduceL2, ReduceL1, ReduceSumSquare, ReduceLogSumExp):
      // min propagates NaN; empty reductions give +inf (min), 0 (l1, l2, sum_square) and -inf
      // (log_sum_exp); log_sum_exp does not overflow and keeps infinities.
      {"x3 op=min keep0", {1, nan, 3}, {nan}},
      {"x2x3 op=min axes=1 keep0", {1, 5, 2, -1, -7, -2}, {1, -7}},
      {"x0x2 op=min axes=0 keep0", {}, {inf, inf}},
      {"x0x2 op=l1 axes=0 keep0", {}, {0, 0}},
      {"x0x2 op=l2 axes=0 keep0", {}, {0, 0}},
      {"x0x2 op=sum_square axes=0 keep0", {}, {0, 0}},
      {"x0x2 op=log_sum_exp axes=0 keep0", {}, {-inf, -inf}},
      {"x2x2 op=l1 axes=1 keep0", {3, -4, -1, 0}, {7, 1}},
      {"x2x2 op=l2 axes=1 keep0", {3, -4, 0, -2}, {5, 2}},
      {"x2x2 op=sum_square axes=1 keep0", {3, -4, 0, -2}, {25, 4}},
      {"x2 op=log_sum_exp keep0", {-inf, -inf}, {-inf}},
      {"x2 op=log_sum_exp keep0", {1, inf}, {inf}},
      {"x2 op=log_sum_exp keep0", {1, nan}, {nan}},
      {"x2 op=log_sum_exp keep0", {0, 0}, {double(float(std::log(2.0)))}},
      {"x2 op=log_sum_exp keep0", {1000, 1000}, {double(float(1000 + std::log(2.0)))}},
  };
  for (const known_case& k : known) {
    value_rng rng("known");
    call_spec call = make_reduce(parse_case(k.text), rng);
    call.inputs[0].data = k.x;
    check_known_answer("reduce", k.text, call, k.y, 0);  // NaN and -inf: bit-exactly
  }
}

// Long sums on every device: 2^20 elements of 1 + 2^-10 sum to 2^20 + 2^10 and average 1 + 2^-10.
// A float32 running sum over all of them drifts (its unit in the last place passes 2^-10 at
// 2^14, and the increments round from there on: a relative error near 1e-3); sums in bounded
// blocks or parts, as every backend does, are within 1e-6.
TEST_CASE("reduce: long sums do not drift (known answers)") {
  const double v = 1.0 + std::ldexp(1.0, -10), n = std::ldexp(1.0, 20);
  for (const char* text : {"x1048576 op=sum keep0", "x1048576 op=mean keep0",
                           "x1024x1024 op=l1 keep0", "x1024x1024 op=sum axes=1,0 keep1"}) {
    value_rng rng("known");
    call_spec call = make_reduce(parse_case(text), rng);
    call.inputs[0].data.assign(static_cast<size_t>(n), v);
    const bool mean = std::string(text).find("mean") != std::string::npos;
    check_known_answer("reduce", text, call, {mean ? v : n * v}, 1e-12);
  }
}

// Output shapes as literals, on every device (the reference included): accepted with the literal
// shape, refused one larger or smaller in any dimension.
TEST_CASE("reduce: output shapes (known answers)") {
  const std::vector<known_shape> known{
      {"x3x4x5 op=sum axes=0,2 keep1", {1, 4, 1}},
      {"x3x4x5 op=mean axes=-1 keep0", {3, 4}},
      {"x2x3x4x5 op=max axes=-1,0 keep0", {3, 4}},
      {"x2x3x4x5 op=sum axes=3,1 keep1", {2, 1, 4, 1}},
      {"x6x7 op=sum keep1", {1, 1}},
      {"x6x7 op=max keep0", {}},
  };
  check_output_shapes("reduce_out_shape", known, make_reduce);
}

TEST_CASE("cumsum") { check_numerics_cases("cumsum", make_cumsum); }

// Known answers from nnplug_ops.h (nnp_cumsum_params), on every device (the reference included),
// bit-exactly: the four forms, axes counted from either end, in place, NaN and Inf carried on,
// empty tensors, and the float64 running sum of float32 x.
TEST_CASE("cumsum: known answers") {
  const double nan = std::nan("");
  const double inf = std::numeric_limits<double>::infinity();
  const double two24 = 16777216.0;  // 2^24: 2^24 + 1 is not a float32, 2^24 + 2 is
  struct known_case {
    const char* text;
    std::vector<double> x, y;
  };
  const std::vector<known_case> known{
      {"x3 axis=0", {1, 2, 3}, {1, 3, 6}},
      {"x3 axis=0 exclusive1", {1, 2, 3}, {0, 1, 3}},
      {"x3 axis=0 reverse1", {1, 2, 3}, {6, 5, 3}},
      {"x3 axis=0 exclusive1 reverse1", {1, 2, 3}, {5, 3, 0}},
      {"x3 axis=-1 inplace1", {1, 2, 3}, {1, 3, 6}},
      {"x3 axis=0 exclusive1 inplace1", {1, 2, 3}, {0, 1, 3}},
      {"x3 axis=0 exclusive1 reverse1 inplace1", {1, 2, 3}, {5, 3, 0}},
      // [[1, 2, 3], [4, 5, 6]]
      {"x2x3 axis=0", {1, 2, 3, 4, 5, 6}, {1, 2, 3, 5, 7, 9}},
      {"x2x3 axis=-1", {1, 2, 3, 4, 5, 6}, {1, 3, 6, 4, 9, 15}},
      {"x2x3 axis=1 reverse1", {1, 2, 3, 4, 5, 6}, {6, 5, 3, 15, 11, 6}},
      {"x2x3 axis=-2 exclusive1 reverse1", {1, 2, 3, 4, 5, 6}, {4, 5, 6, 0, 0, 0}},
      {"x2x3 axis=0 exclusive1 inplace1", {1, 2, 3, 4, 5, 6}, {0, 0, 0, 1, 2, 3}},
      // A size-1 axis: y = x (exclusive: 0).
      {"x2x1 axis=1", {7, -8}, {7, -8}},
      {"x2x1 axis=1 exclusive1", {7, -8}, {0, 0}},
      // Non-finite values carry on to the rest of the line (in the direction of the sum).
      {"x3 axis=0", {1, nan, 3}, {1, nan, nan}},
      {"x3 axis=0 reverse1", {1, nan, 3}, {nan, nan, 3}},
      {"x3 axis=0 exclusive1", {1, nan, 3}, {0, 1, nan}},
      {"x4 axis=0", {1, inf, -inf, 2}, {1, inf, nan, nan}},
      // Empty tensors: an empty axis, and an empty dimension beside the axis.
      {"x2x0x3 axis=1", {}, {}},
      {"x0x3 axis=1 exclusive1", {}, {}},
      // The running sum is float64, rounded once per element: a float32 sum would stay at 2^24.
      {"x3 axis=0", {two24, 1, 1}, {two24, two24, two24 + 2}},
      {"x3 axis=0 reverse1", {1, 1, two24}, {two24 + 2, two24, two24}},
  };
  for (const known_case& k : known) {
    value_rng rng("known");
    call_spec call = make_cumsum(parse_case(k.text), rng);
    call.inputs[0].data = k.x;
    check_known_answer("cumsum", k.text, call, k.y, 0);
  }
}

// The backward nnplug_ops.h states: dx = cumsum(dy) with the same axis and exclusive, reverse
// flipped (no backward op), checked against finite differences of the forward.
TEST_CASE("cumsum: gradient is cumsum with reverse flipped") {
  for (const char* text : {"x3x4x5 axis=1", "x3x4x5 axis=-1 exclusive1", "x3x4x5 axis=0 reverse1",
                           "x3x4x5 axis=2 exclusive1 reverse1"}) {
    const case_line c = parse_case(text);
    value_rng rng(std::string("gradient cumsum ") + text);
    gradient_check g;
    g.name = "cumsum";
    g.case_text = text;
    g.forward = make_cumsum(c, rng);
    auto q = *g.forward.params_as<nnp_cumsum_params>();
    q.reverse = q.reverse ? 0 : 1;
    const auto shape = c.dims("x", {});
    g.backward = [q, shape](const call_spec&, const auto&, const auto& r) {
      return same_shape_spec(NNP_OP_CUMSUM, q, shape, {r[0]});
    };
    g.wrt = {{0, 0}};
    check_gradient(g);
  }
}
