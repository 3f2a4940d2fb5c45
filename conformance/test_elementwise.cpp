// test_elementwise.cpp — elementwise and data-movement ops: binary add/sub/mul/div with numpy
// broadcasting (in place included), scale, clip (ONNX Clip), fill, strided copy, transpose, cast
// between float dtypes (also checked exactly against round-to-nearest-even on the host, and
// against known float16/bfloat16 answers).
// Cases: cases/<list>/{binary,scale,clip,fill,copy,transpose,cast}.txt.
#include <doctest/doctest.h>

#include "harness.hpp"

#include <limits>
#include <map>

namespace {
using namespace conf;

std::vector<int64_t> broadcast(std::vector<int64_t> a, std::vector<int64_t> b) {
  if (a.size() < b.size()) std::swap(a, b);
  std::vector<int64_t> out = a;
  const size_t off = a.size() - b.size();
  for (size_t i = 0; i < b.size(); ++i) {
    const int64_t x = a[off + i], y = b[i];
    out[off + i] = x == 1 ? y : x;
  }
  return out;
}

// binary: a=SHAPE b=SHAPE op=add|sub|mul|div inplace=a|b
OpCall make_binary(const Case& c, Rng& rng) {
  static const std::map<std::string, int32_t> ops{{"add", NNP_BINARY_ADD},
                                                  {"sub", NNP_BINARY_SUB},
                                                  {"mul", NNP_BINARY_MUL},
                                                  {"div", NNP_BINARY_DIV}};
  auto p = make_params<nnp_binary_params>();
  const auto it = ops.find(c.s("op", "add"));
  p.op = it == ops.end() ? NNP_BINARY_UNDEFINED : it->second;
  const auto a = c.dims("a", {3, 4}), b = c.dims("b", {3, 4});
  auto a_data = rng.uniform_vec(numel(a));
  OpCall call = op_call(NNP_OP_BINARY, p,
                        {tensor(a, std::move(a_data)),
                         tensor(b, p.op == NNP_BINARY_DIV ? rng.away_from_zero(numel(b), 0.25, 2)
                                                          : rng.uniform_vec(numel(b)))},
                        {tensor(broadcast(a, b))});
  const std::string inplace = c.s("inplace", "");
  if (inplace == "a" && call.outputs[0].shape == a) call.outputs[0].alias_of = 0;
  if (inplace == "b" && call.outputs[0].shape == b) call.outputs[0].alias_of = 1;
  return call;
}

OpCall make_scale(const Case& c, Rng& rng) {
  auto p = make_params<nnp_scale_params>();
  p.alpha = c.d("alpha", 2.0);
  const auto x = c.dims("x", {3, 5});
  return same_shape_call(NNP_OP_SCALE, p, x, {rng.uniform_vec(numel(x))},
                         c.i("inplace", 0) ? 0 : -1);
}

// clip: x = shape, min / max (each optional; min > max allowed: ONNX gives max), inplace1.
// Inputs span [-1, 1), so bounds inside that range clip both ends.
OpCall make_clip(const Case& c, Rng& rng) {
  auto p = make_params<nnp_clip_params>();
  p.has_min = c.has("min") ? 1 : 0;
  p.min = c.d("min", 0.0);
  p.has_max = c.has("max") ? 1 : 0;
  p.max = c.d("max", 0.0);
  const auto x = c.dims("x", {3, 5});
  return same_shape_call(NNP_OP_CLIP, p, x, {rng.uniform_vec(numel(x))},
                         c.i("inplace", 0) ? 0 : -1);
}

OpCall make_fill(const Case& c) {
  auto p = make_params<nnp_fill_params>();
  p.value = c.d("value", 1.0);
  return op_call(NNP_OP_FILL, p, {}, {tensor(c.dims("x", {3, 5}))});
}

// copy: x=SHAPE xstrides=a,b,.. ystrides=a,b,.. (strides in elements; default compact)
OpCall make_copy(const Case& c, Rng& rng) {
  const auto x = c.dims("x", {3, 5});
  OpCall call = op_call(NNP_OP_COPY, {tensor(x, rng.uniform_vec(numel(x)))}, {tensor(x)});
  call.inputs[0].strides = c.list("xstrides");
  call.outputs[0].strides = c.list("ystrides");
  return call;
}

// transpose: x=SHAPE perm=p0,p1,..
OpCall make_transpose(const Case& c, Rng& rng) {
  const auto x = c.dims("x", {3, 5});
  const auto perm = c.list("perm");
  auto p = make_params<nnp_transpose_params>();
  std::vector<int64_t> y;
  for (size_t i = 0; i < perm.size() && i < NNP_MAX_DIMS; ++i) {
    p.perm[i] = static_cast<int32_t>(perm[i]);
    y.push_back(perm[i] >= 0 && perm[i] < static_cast<int64_t>(x.size())
                    ? x[static_cast<size_t>(perm[i])]
                    : 1);
  }
  return op_call(NNP_OP_TRANSPOSE, p, {tensor(x, rng.uniform_vec(numel(x)))}, {tensor(y)});
}

DT dtype_by_name(const std::string& s) {
  if (s == "f64") return DT::f64;
  if (s == "f16") return DT::f16;
  if (s == "bf16") return DT::bf16;
  return DT::f32;
}

// cast: x=SHAPE to=f32|f64|f16|bf16 (the source is the case dtype)
OpCall make_cast(const Case& c, Rng& rng) {
  const auto x = c.dims("x", {3, 5});
  TensorSpec y = tensor(x);
  y.follows_case_dtype = false;
  y.dtype = dtype_by_name(c.s("to", "f32"));
  return op_call(NNP_OP_CAST, {tensor(x, rng.uniform_vec(numel(x), -300, 300))}, {y});
}

const RegisterTemplate reg_binary("binary", [] {
  Rng rng("template binary");
  return make_binary(parse_case("a2x3x4 b3x1 op=mul"), rng);
});
const RegisterTemplate reg_scale("scale", [] {
  Rng rng("template scale");
  return make_scale(parse_case("x3x5 alpha=3"), rng);
});
const RegisterTemplate reg_clip("clip", [] {
  Rng rng("template clip");
  return make_clip(parse_case("x3x5 min=-0.5 max=0.5"), rng);
});
const RegisterTemplate reg_fill("fill", [] { return make_fill(parse_case("x3x5 value=2")); });
const RegisterTemplate reg_copy("copy", [] {
  Rng rng("template copy");
  return make_copy(parse_case("x3x5"), rng);
});
const RegisterTemplate reg_transpose("transpose", [] {
  Rng rng("template transpose");
  return make_transpose(parse_case("x2x3x4 perm=2,0,1"), rng);
});
const RegisterTemplate reg_cast("cast", [] {
  Rng rng("template cast");
  return make_cast(parse_case("x3x5 to=f64"), rng);
});

// Output 0 of `call` in dtype dt must be exactly `want` on every device that supports it (the
// reference included); a failed run is a failure. Reported as `op`, case `name`, in dt.
void check_exact_everywhere(const std::string& op, const std::string& name, const OpCall& call,
                            DT dt, const std::vector<double>& want) {
  for (Device* d : all_devices()) {
    if (!d->available || op_supported(*d, call, dt, nullptr) != NNP_STATUS_OK) continue;
    const RunResult r = run_op(*d, call, dt);
    const Comparison cmp = r.status == NNP_STATUS_OK ? compare_exact(r.outputs[0], want)
                                                     : Comparison{false, 0, r.message};
    report({d->name, op, dt_name(dt), name, cmp.ok ? Outcome::pass : Outcome::fail, cmp.error, 0,
            cmp.detail});
    CHECK_MESSAGE(cmp.ok, d->name << ": " << name << ": " << cmp.detail);
  }
}

}  // namespace

TEST_CASE("binary") { check_numerics_cases("binary", make_binary); }

TEST_CASE("scale") { check_numerics_cases("scale", make_scale); }

TEST_CASE("clip") { check_numerics_cases("clip", make_clip); }

TEST_CASE("fill") {
  for (const Case& c : load_cases("fill")) check_numerics("fill", c.text, make_fill(c));
}

TEST_CASE("copy") { check_numerics_cases("copy", make_copy); }

TEST_CASE("transpose") { check_numerics_cases("transpose", make_transpose); }

TEST_CASE("cast") {
  for (const Case& c : load_cases("cast")) {
    Rng rng("cast " + c.text);
    const OpCall call = make_cast(c, rng);
    check_numerics("cast", c.text, call);
    // Exact check against round-to-nearest-even on the host, on every device.
    for (DT dt : float_dtypes()) {
      const OpCall q = quantized(call, dt);
      std::vector<double> expected = q.inputs[0].data;
      for (double& v : expected) v = quantize(v, q.outputs[0].dtype);
      check_exact_everywhere("cast_rounding", "cast_rounding " + c.text + " " + dt_short(dt), q, dt,
                             expected);
    }
  }
}

// float16 / bfloat16 casts on every device that has them (the reference casts float32 <->
// float64 only): known answers for round to nearest even (ties), overflow to Inf, the largest
// finite half and subnormals, then back to float32, which must be exact.
TEST_CASE("cast: float16 and bfloat16 known answers") {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> in{
      1.0,     65504.0, 65520.0,         1.0 + 1.0 / 2048, 1.0 + 3.0 / 2048,
      0x1p-24, -2.0,    1.0 + 1.0 / 256, 1.0 + 3.0 / 256};
  struct Known {
    DT to;
    std::vector<double> out;
  };
  const std::vector<Known> known{
      // bits 3C00 7BFF 7C00 3C00 3C02 0001 C000 3C04 3C0C
      {DT::f16,
       {1.0, 65504.0, inf, 1.0, 1.0 + 2.0 / 1024, 0x1p-24, -2.0, 1.0 + 4.0 / 1024,
        1.0 + 12.0 / 1024}},
      // bits 3F80 4780 4780 3F80 3F80 3380 C000 3F80 3F82
      {DT::bf16, {1.0, 65536.0, 65536.0, 1.0, 1.0, 0x1p-24, -2.0, 1.0, 1.0 + 2.0 / 128}},
  };
  const int64_t n = static_cast<int64_t>(in.size());
  for (const Known& k : known) {
    // float32 -> k.to (the input follows the case dtype, float32), then k.to -> float32.
    const OpCall down = op_call(NNP_OP_CAST, {tensor({n}, in)}, {int_tensor(k.to, {n})});
    const OpCall up = op_call(NNP_OP_CAST, {tensor({n}, k.out)}, {int_tensor(DT::f32, {n})});
    const std::vector<std::pair<const OpCall*, DT>> calls{{&down, DT::f32}, {&up, k.to}};
    for (const auto& [call, dt] : calls) {
      const std::string name =
          std::string("cast_known ") + dt_short(dt) + " to " + dt_short(call->outputs[0].dtype);
      check_exact_everywhere("cast_known", name, *call, dt, k.out);
    }
  }
}
