// test_reduce.cpp — NNP_OP_REDUCE (sum, mean, max, min, l1, l2, sum_square, log_sum_exp over any
// set of axes, keepdims 0/1, all axes with n_axes = 0) numerics against the reference.
// Cases: cases/<list>/reduce.txt: "x3x4x5 op=sum axes=0,2 keep1" (no axes = every axis;
// nan1 puts a NaN in the middle of x).
#include <doctest/doctest.h>

#include "harness.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

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
      op_call(NNP_OP_REDUCE, p, {tensor(x, rng.uniform_vec(numel(x), -2, 2))}, {tensor(y)});
  if (c.i("nan", 0) && !call.inputs[0].data.empty())  // NaN propagates (max included)
    call.inputs[0].data[call.inputs[0].data.size() / 2] = std::nan("");
  return call;
}

const register_template reg_reduce("reduce", [] {
  value_rng rng("template reduce");
  return make_reduce(parse_case("x3x4x5 op=mean axes=0,2 keep0"), rng);
});

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

// Output shapes as literals, on every device (the reference included): accepted with the literal
// shape, refused one larger or smaller in any dimension.
TEST_CASE("reduce: output shapes (known answers)") {
  struct known_case {
    const char* text;
    std::vector<int64_t> y;
  };
  const std::vector<known_case> known{
      {"x3x4x5 op=sum axes=0,2 keep1", {1, 4, 1}},
      {"x3x4x5 op=mean axes=-1 keep0", {3, 4}},
      {"x2x3x4x5 op=max axes=-1,0 keep0", {3, 4}},
      {"x2x3x4x5 op=sum axes=3,1 keep1", {2, 1, 4, 1}},
      {"x6x7 op=sum keep1", {1, 1}},
      {"x6x7 op=max keep0", {}},
  };
  for (const known_case& k : known) {
    value_rng rng("known shape");
    call_spec call = make_reduce(parse_case(k.text), rng);
    call.outputs[0].shape = k.y;
    check_output_shape("reduce_out_shape", k.text, call);
  }
}
