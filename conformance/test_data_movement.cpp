// test_data_movement.cpp — the data-movement ops of ABI 1.2: concat (variadic inputs), split
// (variadic outputs; ONNX num_outputs), slice and slice_backward (ONNX Slice, opset 13),
// gather and gather_backward (ONNX Gather). Every backend against the reference on the case
// lists, gradient checks of the backward ops (split as concat's backward), ONNX's own examples
// as known answers on every device, out-of-range gather indices, the variadic counts and the
// typed wrappers, and nnp_op_infer_shapes of the inferable cases.
// Cases: cases/<list>/{concat,split,slice,gather}.txt.
#include <doctest/doctest.h>

#include "harness.hpp"

#include <cstdint>
#include <limits>
#include <sstream>
#include <string>

namespace {
using namespace conf;

// A list of int64 values "a,b,..." where "max" and "min" stand for INT64_MAX and INT64_MIN.
std::vector<int64_t> int64_list(const case_line& c, const std::string& key) {
  std::vector<int64_t> out;
  std::stringstream ss(c.s(key, ""));
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (part == "max")
      out.push_back(std::numeric_limits<int64_t>::max());
    else if (part == "min")
      out.push_back(std::numeric_limits<int64_t>::min());
    else if (!part.empty())
      out.push_back(std::strtoll(part.c_str(), nullptr, 10));
  }
  return out;
}

int64_t axis_of(const case_line& c, size_t rank) {
  const int64_t a = c.i("axis", 0);
  return a < 0 ? a + static_cast<int64_t>(rank) : a;
}

// shape with dimension `axis` replaced by each of `parts`.
std::vector<std::vector<int64_t>> part_shapes(const std::vector<int64_t>& shape, int64_t axis,
                                              const std::vector<int64_t>& parts) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t p : parts) {
    std::vector<int64_t> s = shape;
    s[static_cast<size_t>(axis)] = p;
    out.push_back(s);
  }
  return out;
}

// ONNX num_outputs rule: ceil(d / n) each, the rest to the last.
std::vector<int64_t> onnx_split_sizes(int64_t d, int64_t n) {
  const int64_t chunk = (d + n - 1) / n;
  std::vector<int64_t> out(static_cast<size_t>(n), chunk);
  out.back() = d - chunk * (n - 1);
  return out;
}

// concat: x=SHAPE (y's shape but along axis) parts=a,b,.. axis=A
call_spec make_concat(const case_line& c, value_rng& rng) {
  const auto x = c.dims("x", {2, 3});
  auto p = make_params<nnp_concat_params>();
  p.axis = static_cast<int32_t>(c.i("axis", 0));
  const int64_t axis = axis_of(c, x.size());
  const auto parts = c.list("parts");
  std::vector<tensor_spec> in;
  int64_t sum = 0;
  for (const auto& s : part_shapes(x, axis, parts)) {
    in.push_back(tensor(s, rng.uniform_vec(numel(s))));
    sum += s[static_cast<size_t>(axis)];
  }
  std::vector<int64_t> y = x;
  y[static_cast<size_t>(axis)] = sum;
  return make_spec(NNP_OP_CONCAT, p, std::move(in), {tensor(y)});
}

// split: x=SHAPE axis=A parts=a,b,.. (the outputs' extents) or num_outputs=N (ONNX rule)
call_spec make_split(const case_line& c, value_rng& rng) {
  const auto x = c.dims("x", {4, 3});
  auto p = make_params<nnp_split_params>();
  p.axis = static_cast<int32_t>(c.i("axis", 0));
  p.num_outputs = static_cast<int32_t>(c.i("num_outputs", 0));
  const int64_t axis = axis_of(c, x.size());
  const auto parts =
      p.num_outputs > 0 ? onnx_split_sizes(x[size_t(axis)], p.num_outputs) : c.list("parts");
  std::vector<tensor_spec> out;
  for (const auto& s : part_shapes(x, axis, parts)) out.push_back(tensor(s));
  return make_spec(NNP_OP_SPLIT, p, {tensor(x, rng.uniform_vec(numel(x)))}, std::move(out));
}

// The slice params of a case: starts=.. ends=.. [axes=..] [steps=..] (ONNX lists).
nnp_slice_params slice_params(const case_line& c) {
  auto p = make_params<nnp_slice_params>();
  const auto starts = int64_list(c, "starts"), ends = int64_list(c, "ends");
  const auto axes = int64_list(c, "axes"), steps = int64_list(c, "steps");
  p.n_axes = static_cast<int32_t>(starts.size());
  p.has_axes = c.has("axes");
  p.has_steps = c.has("steps");
  for (size_t i = 0; i < starts.size() && i < NNP_MAX_DIMS; ++i) {
    p.starts[i] = starts[i];
    p.ends[i] = i < ends.size() ? ends[i] : 0;
    if (i < axes.size()) p.axes[i] = axes[i];
    if (i < steps.size()) p.steps[i] = steps[i];
  }
  return p;
}

// y's shape for a slice of x, written out from ONNX's text (not the kit's helper).
std::vector<int64_t> sliced_shape(const std::vector<int64_t>& x, const nnp_slice_params& p) {
  std::vector<int64_t> y = x;
  const int64_t rank = static_cast<int64_t>(x.size());
  for (int i = 0; i < p.n_axes; ++i) {
    int64_t a = p.has_axes ? p.axes[i] : i;
    if (a < 0) a += rank;
    const int64_t d = x[size_t(a)], step = p.has_steps ? p.steps[i] : 1;
    long double start = p.starts[i], end = p.ends[i];
    if (start < 0) start += d;
    if (end < 0) end += d;
    if (step > 0) {
      start = std::min<long double>(std::max<long double>(start, 0), d);
      end = std::min<long double>(std::max<long double>(end, 0), d);
    } else {
      start = std::min<long double>(std::max<long double>(start, 0), d - 1);
      end = std::min<long double>(std::max<long double>(end, -1), d - 1);
    }
    const long double n = std::ceil((end - start) / static_cast<long double>(step));
    y[size_t(a)] = n > 0 ? static_cast<int64_t>(n) : 0;
  }
  return y;
}

// slice: x=SHAPE starts=.. ends=.. [axes=..] [steps=..]
call_spec make_slice(const case_line& c, value_rng& rng) {
  const auto x = c.dims("x", {3, 5});
  const auto p = slice_params(c);
  return make_spec(NNP_OP_SLICE, p, {tensor(x, rng.uniform_vec(numel(x)))},
                   {tensor(sliced_shape(x, p))});
}
call_spec make_slice_backward(const case_line& c, value_rng& rng) {
  const auto x = c.dims("x", {3, 5});
  const auto p = slice_params(c);
  const auto y = sliced_shape(x, p);
  return make_spec(NNP_OP_SLICE_BACKWARD, p, {tensor(y, rng.uniform_vec(numel(y)))}, {tensor(x)});
}

// gather: data=SHAPE idx=SHAPE axis=A (indices uniform in [-d, d), repeats likely)
std::vector<double> random_indices(value_rng& rng, const std::vector<int64_t>& shape, int64_t d) {
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (double& e : v) e = static_cast<double>(rng.integer(-d, d - 1));
  return v;
}
std::vector<int64_t> gathered_shape(const std::vector<int64_t>& data,
                                    const std::vector<int64_t>& idx, int64_t axis) {
  std::vector<int64_t> y(data.begin(), data.begin() + axis);
  y.insert(y.end(), idx.begin(), idx.end());
  y.insert(y.end(), data.begin() + axis + 1, data.end());
  return y;
}
call_spec make_gather(const case_line& c, value_rng& rng) {
  const auto data = c.dims("data", {4, 3}), idx = c.dims("idx", {2});
  auto p = make_params<nnp_gather_params>();
  p.axis = static_cast<int32_t>(c.i("axis", 0));
  const int64_t axis = axis_of(c, data.size());
  return make_spec(NNP_OP_GATHER, p,
                   {tensor(data, rng.uniform_vec(numel(data))),
                    int_tensor(dtype_id::i64, idx, random_indices(rng, idx, data[size_t(axis)]))},
                   {tensor(gathered_shape(data, idx, axis))});
}
call_spec make_gather_backward(const case_line& c, value_rng& rng) {
  call_spec f = make_gather(c, rng);
  const auto y = f.outputs[0].shape;
  return make_spec(NNP_OP_GATHER_BACKWARD, *f.params_as<nnp_gather_params>(),
                   {tensor(y, rng.uniform_vec(numel(y))), f.inputs[1]},
                   {tensor(f.inputs[0].shape)});
}

const register_template reg_concat("concat", "concat", "x2x3x4 parts=1,2,3 axis=1", make_concat);
const register_template reg_split("split", "split", "x5x3 parts=2,3 axis=0", make_split);
const register_template reg_slice("slice", "slice", "x4x5 starts=1,-1 ends=3,0 axes=0,1 steps=1,-2",
                                  make_slice);
const register_template reg_slice_backward("slice_backward", "slice_backward",
                                           "x4x5 starts=-3,-1 ends=3,0 axes=0,1 steps=1,-2",
                                           make_slice_backward);
const register_template reg_gather("gather", "gather", "data4x3 idx2x2 axis=0", make_gather);
const register_template reg_gather_backward("gather_backward", "gather_backward",
                                            "data4x3 idx2x2 axis=1", make_gather_backward);

// The gradient check of <family>_backward (slice_backward, gather_backward) against finite
// differences of the forward make(c, rng) on every case of the family: the backward call is the
// forward's with dy (shaped like y) in place of x, its other inputs (gather's indices) kept, and
// dx (shaped like x) as its output.
void check_backward_gradient(const std::string& family, int32_t backward_kind,
                             const case_call_fn& make) {
  for (const case_line& c : load_cases(family)) {
    value_rng rng(family + " grad " + c.text);
    gradient_check g;
    g.name = family + "_backward";
    g.case_text = c.text;
    g.forward = make(c, rng);
    g.backward = [backward_kind](const call_spec& f, const auto&, const auto& r) {
      call_spec b = f;
      b.kind = backward_kind;
      b.inputs[0] = tensor(f.outputs[0].shape, r[0]);
      b.outputs = {tensor(f.inputs[0].shape)};
      return b;
    };
    g.wrt = {{0, 0}};
    check_gradient(g);
  }
}

}  // namespace

TEST_CASE("concat") { check_numerics_cases("concat", make_concat); }

TEST_CASE("split") { check_numerics_cases("split", make_split); }

TEST_CASE("slice") { check_numerics_cases("slice", make_slice); }

TEST_CASE("slice_backward") {
  check_numerics_cases("slice_backward", "slice", "slice_backward", make_slice_backward);
}

TEST_CASE("gather") { check_numerics_cases("gather", make_gather); }

TEST_CASE("gather_backward") {
  check_numerics_cases("gather_backward", "gather", "gather_backward", make_gather_backward);
}

// Gradients: split of dy is concat's backward; slice_backward and gather_backward against
// finite differences of their forwards.
TEST_CASE("concat: split is its gradient") {
  for (const case_line& c : load_cases("concat")) {
    value_rng rng("concat grad " + c.text);
    gradient_check g;
    g.name = "concat_backward_split";
    g.case_text = c.text;
    g.forward = make_concat(c, rng);
    const int32_t axis = g.forward.params_as<nnp_concat_params>()->axis;
    g.backward = [axis](const call_spec& f, const auto&, const auto& r) {
      auto p = make_params<nnp_split_params>();
      p.axis = axis;
      std::vector<tensor_spec> outs;
      for (const tensor_spec& x : f.inputs) outs.push_back(tensor(x.shape));
      return make_spec(NNP_OP_SPLIT, p, {tensor(f.outputs[0].shape, r[0])}, std::move(outs));
    };
    for (size_t i = 0; i < g.forward.inputs.size(); ++i)
      g.wrt.push_back({static_cast<int>(i), static_cast<int>(i)});
    check_gradient(g);
  }
}

TEST_CASE("slice_backward: gradient of slice") {
  check_backward_gradient("slice", NNP_OP_SLICE_BACKWARD, make_slice);
}

TEST_CASE("gather_backward: gradient of gather") {
  check_backward_gradient("gather", NNP_OP_GATHER_BACKWARD, make_gather);
}

// ONNX's own examples (onnx/docs/Operators.md), on every device.
TEST_CASE("data movement: ONNX examples as known answers") {
  const std::vector<double> d24{1, 2, 3, 4, 5, 6, 7, 8};
  {  // Slice: axes [0, 1], starts [1, 0], ends [2, 3], steps [1, 2] -> [[5, 7]]
    auto p = slice_params(parse_case("starts=1,0 ends=2,3 axes=0,1 steps=1,2"));
    check_known_answer("slice", "onnx slice",
                       make_spec(NNP_OP_SLICE, p, {tensor({2, 4}, d24)}, {tensor({1, 2})}), {5, 7},
                       0);
  }
  {  // Slice with a negative end and an end past the dim: starts [0, 1], ends [-1, 1000]
    auto p = slice_params(parse_case("starts=0,1 ends=-1,1000"));
    check_known_answer("slice", "onnx slice_start_out_of_bounds / neg end",
                       make_spec(NNP_OP_SLICE, p, {tensor({2, 4}, d24)}, {tensor({1, 3})}),
                       {2, 3, 4}, 0);
  }
  {  // Negative step to INT64_MIN: the whole axis reversed
    auto p = slice_params(parse_case("starts=-1 ends=min axes=1 steps=-1"));
    check_known_answer("slice", "reverse with INT64_MIN end",
                       make_spec(NNP_OP_SLICE, p, {tensor({2, 4}, d24)}, {tensor({2, 4})}),
                       {4, 3, 2, 1, 8, 7, 6, 5}, 0);
  }
  {  // Negative step with a stride: starts [INT64_MAX] (clamped to d-1), steps [-3]
    auto p = slice_params(parse_case("starts=max ends=min axes=-1 steps=-3"));
    check_known_answer(
        "slice", "stride -3 from INT64_MAX",
        make_spec(NNP_OP_SLICE, p, {tensor({1, 7}, {0, 1, 2, 3, 4, 5, 6})}, {tensor({1, 3})}),
        {6, 3, 0}, 0);
  }
  {  // slice_backward scatters dy into zeros
    auto p = slice_params(parse_case("starts=1,0 ends=2,3 axes=0,1 steps=1,2"));
    check_known_answer(
        "slice_backward", "onnx slice backward",
        make_spec(NNP_OP_SLICE_BACKWARD, p, {tensor({1, 2}, {10, 20})}, {tensor({2, 4})}),
        {0, 0, 0, 0, 10, 0, 20, 0}, 0);
  }
  {  // Gather axis 0: data [[1, 1.2], [2.3, 3.4], [4.5, 5.7]], indices [[0, 1], [1, 2]]
    auto p = make_params<nnp_gather_params>();
    check_known_answer("gather", "onnx gather_0",
                       make_spec(NNP_OP_GATHER, p,
                                 {tensor({3, 2}, {1, 1.2, 2.3, 3.4, 4.5, 5.7}),
                                  int_tensor(dtype_id::i64, {2, 2}, {0, 1, 1, 2})},
                                 {tensor({2, 2, 2})}),
                       {1, 1.2, 2.3, 3.4, 2.3, 3.4, 4.5, 5.7}, 1e-14);
  }
  {  // Gather axis 1 with a negative index: data 3x3, indices [[0, 2]] and [-1]
    auto p = make_params<nnp_gather_params>();
    p.axis = 1;
    check_known_answer("gather", "onnx gather_1 / negative index",
                       make_spec(NNP_OP_GATHER, p,
                                 {tensor({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}),
                                  int_tensor(dtype_id::i64, {1, 2}, {0, -1})},
                                 {tensor({3, 1, 2})}),
                       {1, 3, 4, 6, 7, 9}, 0);
  }
  {  // gather_backward adds repeated indices: rows 0 and 2 of dx, row 2 twice
    auto p = make_params<nnp_gather_params>();
    check_known_answer(
        "gather_backward", "repeated indices add",
        make_spec(NNP_OP_GATHER_BACKWARD, p,
                  {tensor({3, 2}, {1, 2, 3, 4, 5, 6}), int_tensor(dtype_id::i64, {3}, {2, 0, -1})},
                  {tensor({3, 2})}),
        {3, 4, 0, 0, 6, 8}, 0);
  }
  {  // Concat of three along axis 1
    auto p = make_params<nnp_concat_params>();
    p.axis = -1;
    check_known_answer(
        "concat", "concat axis -1",
        make_spec(NNP_OP_CONCAT, p,
                  {tensor({2, 1}, {1, 2}), tensor({2, 2}, {3, 4, 5, 6}), tensor({2, 0})},
                  {tensor({2, 3})}),
        {1, 3, 4, 2, 5, 6}, 0);
  }
  {  // Split num_outputs = 4 of 7 elements: [1, 2], [3, 4], [5, 6], [7] (ONNX split_1d_uneven)
    auto p = make_params<nnp_split_params>();
    p.num_outputs = 4;
    check_known_outputs("split_known", "onnx split uneven",
                        make_spec(NNP_OP_SPLIT, p, {tensor({7}, {1, 2, 3, 4, 5, 6, 7})},
                                  {tensor({2}), tensor({2}), tensor({2}), tensor({1})}),
                        {{1, 2}, {3, 4}, {5, 6}, {7}}, {dtype_id::f32},
                        [](dtype_id) { return 0.0; });
  }
}

TEST_CASE("gather: out-of-range indices fail on backends that check") {
  for (int64_t bad : {int64_t{3}, int64_t{-4}, std::numeric_limits<int64_t>::max()}) {
    auto p = make_params<nnp_gather_params>();
    const call_spec fwd = make_spec(NNP_OP_GATHER, p,
                                    {tensor({3, 2}, {1, 2, 3, 4, 5, 6}),
                                     int_tensor(dtype_id::i64, {2}, {0, static_cast<double>(bad)})},
                                    {tensor({2, 2})});
    call_spec bwd = fwd;
    bwd.kind = NNP_OP_GATHER_BACKWARD;
    bwd.inputs[0] = tensor({2, 2}, {1, 2, 3, 4});
    bwd.outputs[0] = tensor({3, 2});
    for (device_entry* d : all_devices()) {
      if (!d->available || d->plugin == "cuda") continue;  // cuda: documented zero-fill
      for (const call_spec* call : {&fwd, static_cast<const call_spec*>(&bwd)}) {
        if (op_supported(*d, *call, dtype_id::f32, nullptr) != NNP_STATUS_OK) continue;
        const run_result r = run_op(*d, *call, dtype_id::f32);
        CAPTURE(d->name);
        CAPTURE(r.message);
        CHECK(r.status == NNP_STATUS_INVALID_ARGUMENT);
        CHECK(r.message.find("indices") != std::string::npos);
        report({d->name, call == &fwd ? "gather" : "gather_backward", "float32",
                "index " + std::to_string(bad) + " out of range",
                r.status == NNP_STATUS_INVALID_ARGUMENT ? case_outcome::pass : case_outcome::fail,
                0, 0, r.message});
      }
    }
  }
}

// Variadic counts: 1..NNP_MAX_VARIADIC tensors; 0 and NNP_MAX_VARIADIC + 1 are refused with a
// message naming the count; a bad tensor deep in the list is named with its list index.
TEST_CASE("concat and split: variadic counts") {
  device_entry& ref = reference_device();
  auto concat_of = [](size_t n) {
    std::vector<tensor_spec> in;
    std::vector<double> want;
    for (size_t i = 0; i < n; ++i) {
      in.push_back(tensor({1, 2}, {double(i), -double(i)}));
      want.push_back(double(i));
      want.push_back(-double(i));
    }
    auto p = make_params<nnp_concat_params>();
    return std::make_pair(
        make_spec(NNP_OP_CONCAT, p, std::move(in), {tensor({static_cast<int64_t>(n), 2})}), want);
  };
  const auto [call64, want64] = concat_of(NNP_MAX_VARIADIC);
  check_known_answer("concat", "64 inputs", call64, want64, 0);
  const auto [call65, want65] = concat_of(NNP_MAX_VARIADIC + 1);
  (void)want65;
  run_result r = run_op(ref, call65, dtype_id::f32);
  CHECK(r.status == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(r.message.find("n_inputs: expected 1..64, got 65") != std::string::npos);
  auto p = make_params<nnp_concat_params>();
  r = run_op(ref, make_spec(NNP_OP_CONCAT, p, {}, {tensor({0, 2})}), dtype_id::f32);
  CHECK(r.status == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(r.message.find("n_inputs: expected 1..64, got 0") != std::string::npos);
  // The third input has the wrong trailing dim: named inputs[2] (xs[2]).
  r = run_op(ref,
             make_spec(NNP_OP_CONCAT, p, {tensor({1, 2}), tensor({1, 2}), tensor({1, 3})},
                       {tensor({3, 2})}),
             dtype_id::f32);
  CHECK(r.status == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(r.message.find("inputs[2] (xs[2])") != std::string::npos);
  // split: the outputs' extents must add up to x's.
  auto sp = make_params<nnp_split_params>();
  r = run_op(ref, make_spec(NNP_OP_SPLIT, sp, {tensor({5, 2})}, {tensor({2, 2}), tensor({2, 2})}),
             dtype_id::f32);
  CHECK(r.status == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(r.message.find("add up to 5") != std::string::npos);
  // Outputs of split must not overlap each other.
  r = run_op(ref, make_spec(NNP_OP_SPLIT, sp, {tensor({4, 2})}, {tensor({2, 2}), tensor({2, 2})}),
             dtype_id::f32, nullptr, [](raw_call& raw) { raw.out[1].data = raw.out[0].data; });
  CHECK(r.status == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(r.message.find("overlaps") != std::string::npos);
  // num_outputs that cannot give a non-negative last chunk (5 into 4: 2, 2, 2, -1).
  sp.num_outputs = 4;
  r = run_op(ref,
             make_spec(NNP_OP_SPLIT, sp, {tensor({5})},
                       {tensor({2}), tensor({2}), tensor({2}), tensor({0})}),
             dtype_id::f32);
  CHECK(r.status == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(r.message.find("params->num_outputs") != std::string::npos);
}

TEST_CASE("slice: params errors name the field") {
  device_entry& ref = reference_device();
  struct bad_case {
    const char* text;
    const char* field;
  };
  for (const bad_case& b : {bad_case{"starts=0 ends=1 axes=2", "params->axes[0]"},
                            bad_case{"starts=0,0 ends=1,1 axes=1,-1", "params->axes[1]"},
                            bad_case{"starts=0 ends=1 steps=0", "params->steps[0]"},
                            bad_case{"starts=0,0,0 ends=1,1,1", "params->n_axes"}}) {
    CAPTURE(b.text);
    const auto p = slice_params(parse_case(b.text));
    const run_result r =
        run_op(ref, make_spec(NNP_OP_SLICE, p, {tensor({3, 4})}, {tensor({1, 4})}), dtype_id::f32);
    CHECK(r.status == NNP_STATUS_INVALID_ARGUMENT);
    CHECK(r.message.find(b.field) != std::string::npos);
  }
}

// The typed wrappers take a count and an array for the variadic tensors.
TEST_CASE("concat and split: typed wrappers") {
  device_entry& ref = reference_device();
  float a[2] = {1, 2}, b[4] = {3, 4, 5, 6}, y[6] = {}, s0[2] = {}, s1[4] = {};
  int64_t sa[] = {1, 2}, sb[] = {2, 2}, sy[] = {3, 2};
  auto t = [&](void* data, int64_t* shape) {
    DLTensor d{};
    d.data = data;
    d.device = ref.dl;
    d.ndim = 2;
    d.dtype = DLDataType{kDLFloat, 32, 1};
    d.shape = shape;
    return d;
  };
  const DLTensor ta = t(a, sa), tb = t(b, sb), ty = t(y, sy), t0 = t(s0, sa), t1 = t(s1, sb);
  if (ref.dl.device_type != kDLCPU) return;  // host arrays only
  auto cp = make_params<nnp_concat_params>();
  const DLTensor* xs[] = {&ta, &tb};
  REQUIRE_MESSAGE(nnp_concat(ref.stream, &cp, 2, xs, &ty) == NNP_STATUS_OK,
                  nnp_last_error_message());
  REQUIRE(nnp_stream_synchronize(ref.stream) == NNP_STATUS_OK);
  CHECK(std::vector<float>(y, y + 6) == std::vector<float>{1, 2, 3, 4, 5, 6});
  auto sp = make_params<nnp_split_params>();
  const DLTensor* ys[] = {&t0, &t1};
  REQUIRE_MESSAGE(nnp_split(ref.stream, &sp, &ty, 2, ys) == NNP_STATUS_OK,
                  nnp_last_error_message());
  REQUIRE(nnp_stream_synchronize(ref.stream) == NNP_STATUS_OK);
  CHECK(std::vector<float>(s0, s0 + 2) == std::vector<float>{1, 2});
  CHECK(std::vector<float>(s1, s1 + 4) == std::vector<float>{3, 4, 5, 6});
  CHECK(nnp_concat(ref.stream, &cp, 0, nullptr, &ty) == NNP_STATUS_INVALID_ARGUMENT);
}

TEST_CASE("data movement: nnp_op_infer_shapes") {
  int64_t s0[] = {2, 3}, s1[] = {2, 5}, sx[] = {7, 2};
  auto t = [](int64_t* shape) {
    DLTensor d{};
    d.ndim = 2;
    d.dtype = DLDataType{kDLInt, 32, 1};  // any dtype
    d.shape = shape;
    return d;
  };
  const DLTensor a = t(s0), b = t(s1), x = t(sx);
  auto cp = make_params<nnp_concat_params>();
  cp.axis = -1;
  const DLTensor* xs[] = {&a, &b};
  nnp_shape y{};
  REQUIRE_MESSAGE(nnp_op_infer_shapes(NNP_OP_CONCAT, &cp, 2, xs, 1, &y) == NNP_STATUS_OK,
                  nnp_last_error_message());
  CHECK(y.ndim == 2);
  CHECK(y.dims[0] == 2);
  CHECK(y.dims[1] == 8);
  CHECK(y.dtype.code == kDLInt);
  auto sp = make_params<nnp_split_params>();
  const DLTensor* xin[] = {&x};
  nnp_shape parts[3] = {};
  CHECK(nnp_op_infer_shapes(NNP_OP_SPLIT, &sp, 1, xin, 3, parts) == NNP_STATUS_UNSUPPORTED);
  sp.num_outputs = 3;  // ONNX: ceil(7 / 3) = 3, 3, 1
  REQUIRE_MESSAGE(nnp_op_infer_shapes(NNP_OP_SPLIT, &sp, 1, xin, 3, parts) == NNP_STATUS_OK,
                  nnp_last_error_message());
  CHECK(parts[0].dims[0] == 3);
  CHECK(parts[1].dims[0] == 3);
  CHECK(parts[2].dims[0] == 1);
  CHECK(parts[2].dims[1] == 2);
  auto slp = slice_params(parse_case("starts=-1 ends=min axes=0 steps=-2"));
  nnp_shape sl{};
  REQUIRE(nnp_op_infer_shapes(NNP_OP_SLICE, &slp, 1, xin, 1, &sl) == NNP_STATUS_OK);
  CHECK(sl.dims[0] == 4);
  CHECK(sl.dims[1] == 2);
}
