// test_elementwise.cpp — elementwise and data-movement ops: binary add/sub/mul/div/pow with
// numpy broadcasting (in place included), unary_forward / unary_backward (ONNX Exp, Log, Sqrt,
// Abs, Neg, Reciprocal, Floor, Ceil, Sin, Cos, Erf), where (ONNX Where), scale, clip (ONNX
// Clip), fill, strided copy, transpose, cast between float dtypes (also checked exactly against
// round-to-nearest-even on the host, and against known float16/bfloat16 answers): numerics
// against the reference, every unary backward against finite differences of its forward, and
// known answers for the IEEE / ONNX edge cases (log(0) = -inf, sqrt(-1) = NaN, 1/0 = inf,
// abs'(0) = 0, pow(NaN, 0) = 1, ...).
// Cases: cases/<list>/{binary,scale,clip,fill,copy,transpose,cast}.txt, unary.txt
// ("fn=log x4x33 inplace1"), pow.txt ("a2x3 b3 inplace=a"), where.txt ("c2x1 x3 y2x3 inplace=x").
#include <doctest/doctest.h>

#include "harness.hpp"

#include <cmath>
#include <limits>
#include <map>

namespace {
using namespace conf;

// The numpy broadcast of shapes (aligned to the right; a dimension of 1 takes the other size).
std::vector<int64_t> broadcast(std::vector<std::vector<int64_t>> shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[rank - s.size() + i];
      if (s[i] != 1) o = s[i];
    }
  return out;
}

// The binary call p on a and b (broadcast); inplace=a|b: the output aliases that operand when it
// has the output's shape.
call_spec binary_call(const case_line& c, const nnp_binary_params& p, const std::vector<int64_t>& a,
                      std::vector<double> a_data, const std::vector<int64_t>& b,
                      std::vector<double> b_data) {
  call_spec call =
      make_spec(NNP_OP_BINARY, p, {tensor(a, std::move(a_data)), tensor(b, std::move(b_data))},
                {tensor(broadcast({a, b}))});
  const std::string inplace = c.s("inplace", "");
  if (inplace == "a" && call.outputs[0].shape == a) call.outputs[0].alias_of = 0;
  if (inplace == "b" && call.outputs[0].shape == b) call.outputs[0].alias_of = 1;
  return call;
}

// binary: a=SHAPE b=SHAPE op=add|sub|mul|div inplace=a|b
call_spec make_binary(const case_line& c, value_rng& rng) {
  static const std::map<std::string, int32_t> ops{{"add", NNP_BINARY_ADD},
                                                  {"sub", NNP_BINARY_SUB},
                                                  {"mul", NNP_BINARY_MUL},
                                                  {"div", NNP_BINARY_DIV}};
  auto p = make_params<nnp_binary_params>();
  const auto it = ops.find(c.s("op", "add"));
  p.op = it == ops.end() ? NNP_BINARY_UNDEFINED : it->second;
  const auto a = c.dims("a", {3, 4}), b = c.dims("b", {3, 4});
  auto a_data = rng.uniform_vec(numel(a));
  return binary_call(
      c, p, a, std::move(a_data), b,
      p.op == NNP_BINARY_DIV ? rng.away_from_zero(numel(b), 0.25, 2) : rng.uniform_vec(numel(b)));
}

call_spec make_scale(const case_line& c, value_rng& rng) {
  auto p = make_params<nnp_scale_params>();
  p.alpha = c.d("alpha", 2.0);
  const auto x = c.dims("x", {3, 5});
  return same_shape_spec(NNP_OP_SCALE, p, x, {rng.uniform_vec(numel(x))},
                         c.i("inplace", 0) ? 0 : -1);
}

// clip: x = shape, min / max (each optional; min > max allowed: ONNX gives max), inplace1.
// Inputs span [-1, 1), so bounds inside that range clip both ends.
call_spec make_clip(const case_line& c, value_rng& rng) {
  auto p = make_params<nnp_clip_params>();
  p.has_min = c.has("min") ? 1 : 0;
  p.min = c.d("min", 0.0);
  p.has_max = c.has("max") ? 1 : 0;
  p.max = c.d("max", 0.0);
  const auto x = c.dims("x", {3, 5});
  return same_shape_spec(NNP_OP_CLIP, p, x, {rng.uniform_vec(numel(x))},
                         c.i("inplace", 0) ? 0 : -1);
}

call_spec make_fill(const case_line& c) {
  auto p = make_params<nnp_fill_params>();
  p.value = c.d("value", 1.0);
  return make_spec(NNP_OP_FILL, p, {}, {tensor(c.dims("x", {3, 5}))});
}

// copy: x=SHAPE xstrides=a,b,.. ystrides=a,b,.. (strides in elements; default compact)
call_spec make_copy(const case_line& c, value_rng& rng) {
  const auto x = c.dims("x", {3, 5});
  call_spec call = make_spec(NNP_OP_COPY, {tensor(x, rng.uniform_vec(numel(x)))}, {tensor(x)});
  call.inputs[0].strides = c.list("xstrides");
  call.outputs[0].strides = c.list("ystrides");
  return call;
}

// transpose: x=SHAPE perm=p0,p1,..
call_spec make_transpose(const case_line& c, value_rng& rng) {
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
  return make_spec(NNP_OP_TRANSPOSE, p, {tensor(x, rng.uniform_vec(numel(x)))}, {tensor(y)});
}

dtype_id dtype_by_name(const std::string& s) {
  if (s == "f64") return dtype_id::f64;
  if (s == "f16") return dtype_id::f16;
  if (s == "bf16") return dtype_id::bf16;
  return dtype_id::f32;
}

// cast: x=SHAPE to=f32|f64|f16|bf16 (the source is the case dtype)
call_spec make_cast(const case_line& c, value_rng& rng) {
  const auto x = c.dims("x", {3, 5});
  tensor_spec y = tensor(x);
  y.follows_case_dtype = false;
  y.dtype = dtype_by_name(c.s("to", "f32"));
  return make_spec(NNP_OP_CAST, {tensor(x, rng.uniform_vec(numel(x), -300, 300))}, {y});
}

const register_template reg_binary("binary", "binary", "a2x3x4 b3x1 op=mul", make_binary);
const register_template reg_scale("scale", "scale", "x3x5 alpha=3", make_scale);
const register_template reg_clip("clip", "clip", "x3x5 min=-0.5 max=0.5", make_clip);
const register_template reg_fill("fill", [] { return make_fill(parse_case("x3x5 value=2")); });
const register_template reg_copy("copy", "copy", "x3x5", make_copy);
const register_template reg_transpose("transpose", "transpose", "x2x3x4 perm=2,0,1",
                                      make_transpose);
const register_template reg_cast("cast", "cast", "x3x5 to=f64", make_cast);

// Output 0 of `call` in dtype dt must be exactly `want` on every device that supports it (the
// reference included); a failed run is a failure. Reported as `op`, case `name`, in dt.
void check_exact_everywhere(const std::string& op, const std::string& name, const call_spec& call,
                            dtype_id dt, const std::vector<double>& want) {
  for (device_entry* d : all_devices()) {
    if (!d->available || op_supported(*d, call, dt, nullptr) != NNP_STATUS_OK) continue;
    const run_result r = run_op(*d, call, dt);
    const comparison cmp = r.status == NNP_STATUS_OK ? compare_exact(r.outputs[0], want)
                                                     : comparison{false, 0, r.message};
    report({d->name, op, dt_name(dt), name, cmp.ok ? case_outcome::pass : case_outcome::fail,
            cmp.error, 0, cmp.detail});
    CHECK_MESSAGE(cmp.ok, d->name << ": " << name << ": " << cmp.detail);
  }
}

}  // namespace

TEST_CASE("binary") { check_numerics_cases("binary", make_binary); }

TEST_CASE("scale") { check_numerics_cases("scale", make_scale); }

TEST_CASE("clip") { check_numerics_cases("clip", make_clip); }

TEST_CASE("fill") {
  for (const case_line& c : load_cases("fill")) check_numerics("fill", c.text, make_fill(c));
}

TEST_CASE("copy") { check_numerics_cases("copy", make_copy); }

TEST_CASE("transpose") { check_numerics_cases("transpose", make_transpose); }

// copy moves whole elements of any dtype: 1-byte elements (uint8) on every device that takes
// them, bit-exact (y read back in logical order is x). The strides make the cpu backend's
// transposing paths run on 1-byte elements: a source that is a transposed view (tiles of 64 x
// 64, odd sizes; a large one over several tasks), the vit's qkv split as a view (rows of 16
// bytes), and a column-major destination (tiles after ordering by destination stride).
TEST_CASE("copy of 1-byte elements through transposed strides") {
  struct byte_case {
    std::vector<int64_t> shape, xstrides, ystrides;  // strides: empty = compact
  };
  const std::vector<byte_case> cases{
      {{70, 33}, {1, 70}, {}},
      {{3, 301, 300}, {90300, 1, 301}, {}},
      {{3, 32, 4, 17, 16}, {64, 3264, 16, 192, 1}, {}},
      {{70, 130}, {}, {1, 70}},
  };
  for (const byte_case& c : cases) {
    const int64_t n = numel(c.shape);
    std::vector<double> data(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) data[size_t(i)] = static_cast<double>((i * 7 + i / 251) % 256);
    call_spec call = make_spec(NNP_OP_COPY, {int_tensor(dtype_id::u8, c.shape, data)},
                               {int_tensor(dtype_id::u8, c.shape)});
    call.inputs[0].strides = c.xstrides;
    call.outputs[0].strides = c.ystrides;
    const auto list = [](const char* key, const std::vector<int64_t>& v) {
      std::string r = v.empty() ? "" : std::string(" ") + key + "=";
      for (size_t k = 0; k < v.size(); ++k) r += (k ? "," : "") + std::to_string(v[k]);
      return r;
    };
    std::string name = "u8 x";
    for (size_t k = 0; k < c.shape.size(); ++k) name += (k ? "x" : "") + std::to_string(c.shape[k]);
    check_known_answer("copy", name + list("xstrides", c.xstrides) + list("ystrides", c.ystrides),
                       call, data, 0);
  }
}

TEST_CASE("cast") {
  for (const case_line& c : load_cases("cast")) {
    value_rng rng("cast " + c.text);
    const call_spec call = make_cast(c, rng);
    check_numerics("cast", c.text, call);
    // Exact check against round-to-nearest-even on the host, on every device.
    for (dtype_id dt : float_dtypes()) {
      const call_spec q = quantized(call, dt);
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
  struct known_case {
    dtype_id to;
    std::vector<double> out;
  };
  const std::vector<known_case> known{
      // bits 3C00 7BFF 7C00 3C00 3C02 0001 C000 3C04 3C0C
      {dtype_id::f16,
       {1.0, 65504.0, inf, 1.0, 1.0 + 2.0 / 1024, 0x1p-24, -2.0, 1.0 + 4.0 / 1024,
        1.0 + 12.0 / 1024}},
      // bits 3F80 4780 4780 3F80 3F80 3380 C000 3F80 3F82
      {dtype_id::bf16, {1.0, 65536.0, 65536.0, 1.0, 1.0, 0x1p-24, -2.0, 1.0, 1.0 + 2.0 / 128}},
  };
  const int64_t n = static_cast<int64_t>(in.size());
  for (const known_case& k : known) {
    // float32 -> k.to (the input follows the case dtype, float32), then k.to -> float32.
    const call_spec down = make_spec(NNP_OP_CAST, {tensor({n}, in)}, {int_tensor(k.to, {n})});
    const call_spec up =
        make_spec(NNP_OP_CAST, {tensor({n}, k.out)}, {int_tensor(dtype_id::f32, {n})});
    const std::vector<std::pair<const call_spec*, dtype_id>> calls{{&down, dtype_id::f32},
                                                                   {&up, k.to}};
    for (const auto& [call, dt] : calls) {
      const std::string name =
          std::string("cast_known ") + dt_short(dt) + " to " + dt_short(call->outputs[0].dtype);
      check_exact_everywhere("cast_known", name, *call, dt, k.out);
    }
  }
}

// Every pair of float dtypes on every device that has it, against rounding on the host: the
// reference casts float32 <-> float64 only, so the numerics cases cannot check the 16-bit
// pairs; here the answer is the input rounded to the source dtype, then to the target (round
// to nearest even; beyond float16's range, +-inf). Inputs: values over float16's range and
// beyond it, tiny ones (subnormal in float16), exact ties of both 16-bit formats, and their
// negatives.
TEST_CASE("cast: every pair of float dtypes against rounding on the host") {
  value_rng rng("cast pairs");
  std::vector<double> in = rng.uniform_vec(64, -300, 300);
  for (const double v : rng.away_from_zero(16, 1e-8, 1e-4)) in.push_back(v);
  for (const double v : rng.away_from_zero(16, 6e4, 1e6)) in.push_back(v);
  for (const double v : {1.0 + 1.0 / 2048, 1.0 + 3.0 / 2048, 1.0 + 1.0 / 256, 1.0 + 3.0 / 256,
                         65520.0, 0x1p-25, 3.0 * 0x1p-26, 1e300, 0.0})
    for (const double sign : {1.0, -1.0}) in.push_back(sign * v);
  const int64_t n = static_cast<int64_t>(in.size());
  const dtype_id floats[] = {dtype_id::f32, dtype_id::f64, dtype_id::f16, dtype_id::bf16};
  for (const dtype_id from : floats) {
    for (const dtype_id to : floats) {
      std::vector<double> want(in.size());
      for (size_t i = 0; i < in.size(); ++i) want[i] = quantize(quantize(in[i], from), to);
      const call_spec call = make_spec(NNP_OP_CAST, {tensor({n}, in)}, {int_tensor(to, {n})});
      const std::string name = std::string("cast_pairs ") + dt_short(from) + " to " + dt_short(to);
      check_exact_everywhere("cast_pairs", name, call, from, want);
    }
  }
}

namespace {
using namespace conf;

// ---- unary ---------------------------------------------------------------------------------
int32_t unary_op(const std::string& name) {
  static const std::map<std::string, int32_t> ops{
      {"exp", NNP_UNARY_EXP},     {"log", NNP_UNARY_LOG},   {"sqrt", NNP_UNARY_SQRT},
      {"abs", NNP_UNARY_ABS},     {"neg", NNP_UNARY_NEG},   {"reciprocal", NNP_UNARY_RECIPROCAL},
      {"floor", NNP_UNARY_FLOOR}, {"ceil", NNP_UNARY_CEIL}, {"sin", NNP_UNARY_SIN},
      {"cos", NNP_UNARY_COS},     {"erf", NNP_UNARY_ERF}};
  const auto it = ops.find(name);
  return it == ops.end() ? NNP_UNARY_UNDEFINED : it->second;
}

nnp_unary_params unary_params(const case_line& c) {
  auto p = make_params<nnp_unary_params>();
  p.op = unary_op(c.s("fn", "exp"));
  return p;
}

bool has_backward(int32_t op) { return op != NNP_UNARY_FLOOR && op != NNP_UNARY_CEIL; }

// Inputs in each function's domain, away from its singular points (log, sqrt: x > 0;
// reciprocal: |x| >= 0.25; abs: |x| >= 0.05, away from the kink), else uniform in [-3, 3].
std::vector<double> unary_x(int32_t op, int64_t n, value_rng& rng) {
  switch (op) {
    case NNP_UNARY_LOG:
    case NNP_UNARY_SQRT:
      return rng.uniform_vec(n, 0.05, 4);
    case NNP_UNARY_RECIPROCAL:
      return rng.away_from_zero(n, 0.25, 3);
    case NNP_UNARY_ABS:
      return rng.away_from_zero(n, 0.05, 3);
    default:
      return rng.uniform_vec(n, -3, 3);
  }
}

// unary.backward takes x (dx = f'(x) * dy).
constexpr same_shape_ops<nnp_unary_params> unary{NNP_OP_UNARY_FORWARD, NNP_OP_UNARY_BACKWARD};

// ---- pow -----------------------------------------------------------------------------------

// pow: a=SHAPE b=SHAPE inplace=a|b; base in [0.1, 3], exponent in [-2.5, 2.5]; intexp1: any
// sign of base, integer exponents in [-3, 3] (a negative base is then defined).
call_spec make_pow(const case_line& c, value_rng& rng) {
  auto p = make_params<nnp_binary_params>();
  p.op = NNP_BINARY_POW;
  const auto a = c.dims("a", {3, 4}), b = c.dims("b", {3, 4});
  const bool intexp = c.i("intexp", 0) != 0;
  std::vector<double> base =
      intexp ? rng.uniform_vec(numel(a), -2, 2) : rng.uniform_vec(numel(a), 0.1, 3);
  std::vector<double> expo(static_cast<size_t>(numel(b)));
  for (double& e : expo) e = intexp ? double(rng.integer(-3, 3)) : rng.uniform(-2.5, 2.5);
  return binary_call(c, p, a, std::move(base), b, std::move(expo));
}

// ---- where ---------------------------------------------------------------------------------
// where: c=SHAPE x=SHAPE y=SHAPE inplace=x|y; condition bytes 0 (half) or 1..255.
call_spec make_where(const case_line& c, value_rng& rng) {
  const auto cs = c.dims("c", {3, 4}), xs = c.dims("x", {3, 4}), ys = c.dims("y", {3, 4});
  std::vector<double> cond(static_cast<size_t>(numel(cs)));
  for (double& v : cond) v = rng.integer(0, 1) ? double(rng.integer(1, 255)) : 0.0;
  call_spec call =
      make_spec(NNP_OP_WHERE,
                {int_tensor(dtype_id::u8, cs, std::move(cond)),
                 tensor(xs, rng.uniform_vec(numel(xs))), tensor(ys, rng.uniform_vec(numel(ys)))},
                {tensor(broadcast({cs, xs, ys}))});
  const std::string inplace = c.s("inplace", "");
  if (inplace == "x" && call.outputs[0].shape == xs) call.outputs[0].alias_of = 1;
  if (inplace == "y" && call.outputs[0].shape == ys) call.outputs[0].alias_of = 2;
  return call;
}

const register_template reg_unary_fwd("unary_forward", "unary", "fn=sin",
                                      forward_template_of(unary, unary_params, {3, 5}));
const register_template reg_unary_bwd("unary_backward", "unary bwd", "fn=exp",
                                      backward_template_of(unary, unary_params, {3, 5}));
// condition has the output's rank (the error tests drop its leading dimension).
const register_template reg_where("where", "where", "c2x3x4 x3x4 y3x1", make_where);

}  // namespace

TEST_CASE("unary_forward") {
  check_numerics_cases(
      "unary_forward", "unary", "unary_fwd", [](const case_line& c, value_rng& rng) {
        const auto p = unary_params(c);
        const auto shape = c.dims("x", {4, 8});
        return unary.forward(p, shape, unary_x(p.op, numel(shape), rng), c.i("inplace", 0) != 0);
      });
}

TEST_CASE("unary_backward") {
  check_numerics_cases(
      "unary_backward", "unary", "unary_bwd", [](const case_line& c, value_rng& rng) {
        auto p = unary_params(c);
        if (!has_backward(p.op)) p.op = NNP_UNARY_NEG;  // floor / ceil: none (tested below)
        const auto shape = c.dims("x", {4, 8});
        auto x = unary_x(p.op, numel(shape), rng);
        return unary.backward(p, shape, std::move(x), rng.uniform_vec(numel(shape)),
                              c.i("inplace", 0) != 0);
      });
}

TEST_CASE("gradient unary") {
  for (const case_line& c : load_cases("unary")) {
    const auto p = unary_params(c);
    if (!has_backward(p.op)) continue;
    const auto shape = c.dims("x", {4, 8});
    value_rng rng("gradient unary " + c.text);
    gradient_check g;
    g.name = "unary_backward";
    g.case_text = c.text;
    g.forward = unary.forward(p, shape, unary_x(p.op, numel(shape), rng), false);
    g.backward = [p, shape](const call_spec& f, const auto&, const auto& r) {
      return unary.backward(p, shape, f.inputs[0].data, r[0], false);
    };
    g.wrt = {{0, 0}};
    check_gradient(g);
  }
}

// Known answers on every device (the reference included): IEEE / ONNX values at the edges.
TEST_CASE("unary: known answers") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::nan("");
  struct known_case {
    const char* fn;
    std::vector<double> x, y;
  };
  const std::vector<known_case> known{
      {"exp", {0, 1, -inf, inf, nan}, {1, double(float(std::exp(1.0))), 0, inf, nan}},
      {"log", {1, 0, -0.0, -1, inf, nan}, {0, -inf, -inf, nan, inf, nan}},
      {"sqrt", {4, 0, -1, inf, nan}, {2, 0, nan, inf, nan}},
      {"abs", {-2, 0, 3, -inf, nan}, {2, 0, 3, inf, nan}},
      {"neg", {-2, 0, 3, inf, nan}, {2, -0.0, -3, -inf, nan}},
      {"reciprocal", {2, 0, -0.0, -4, inf}, {0.5, inf, -inf, -0.25, 0}},
      {"floor", {1.5, -1.5, 2, -0.25, inf, nan}, {1, -2, 2, -1, inf, nan}},
      {"ceil", {1.5, -1.5, 2, -0.25, -inf, nan}, {2, -1, 2, -0.0, -inf, nan}},
      {"sin", {0, -inf, nan}, {0, nan, nan}},
      {"cos", {0, inf, nan}, {1, nan, nan}},
      {"erf", {0, inf, -inf, nan}, {0, 1, -1, nan}},
  };
  for (const known_case& k : known) {
    const auto n = static_cast<int64_t>(k.x.size());
    const call_spec call =
        unary.forward(unary_params(parse_case(std::string("fn=") + k.fn)), {n}, k.x, false);
    check_known_answer("unary", k.fn, call, k.y, 0);  // bit-exactly (NaN, inf, -0 included)
  }
  // Derivatives at the edges: abs'(0) = 0 (documented), sqrt'(0) = inf, log'(0) = inf,
  // reciprocal'(0) = -inf, with dy = 1.
  const std::vector<known_case> grads{
      {"abs", {-2, 0, 3}, {-1, 0, 1}}, {"sqrt", {0, 4}, {inf, 0.25}},
      {"log", {0, 2}, {inf, 0.5}},     {"reciprocal", {0, 2}, {-inf, -0.25}},
      {"neg", {0, 5}, {-1, -1}},
  };
  for (const known_case& k : grads) {
    const auto n = static_cast<int64_t>(k.x.size());
    const call_spec call = unary.backward(unary_params(parse_case(std::string("fn=") + k.fn)), {n},
                                          k.x, std::vector<double>(k.x.size(), 1.0), false);
    check_known_answer("unary_backward", k.fn, call, k.y, 0);
  }
}

TEST_CASE("pow") { check_numerics_cases("binary_pow", "pow", "pow", make_pow); }

// Known answers (C pow, ONNX Pow): pow(x, 0) = 1 even for NaN x, pow(1, y) = 1 even for NaN y,
// negative base with an integer exponent, with a non-integer one NaN, 0^-1 = inf.
TEST_CASE("pow: known answers") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::nan("");
  const std::vector<double> a{nan, 1, -2, -2, 0, 4, 2, -8, inf};
  const std::vector<double> b{0, nan, 3, 0.5, -1, 0.5, -2, 1, -1};
  const std::vector<double> want{1, 1, -8, nan, inf, 2, 0.25, -8, 0};
  const int64_t n = static_cast<int64_t>(a.size());
  value_rng rng("known");
  call_spec call = make_pow(parse_case("a" + std::to_string(n) + " b" + std::to_string(n)), rng);
  call.inputs[0].data = a;
  call.inputs[1].data = b;
  check_known_answer("pow", "edge values", call, want, 0);
  // Broadcasting: [2, 1] ^ [3].
  call_spec bc = make_pow(parse_case("a2x1 b3"), rng);
  bc.inputs[0].data = {2, 3};
  bc.inputs[1].data = {0, 1, 2};
  check_known_answer("pow", "broadcast a2x1 b3", bc, {1, 2, 4, 1, 3, 9}, 0);
}

TEST_CASE("where") { check_numerics_cases("where", make_where); }

// Known answers: any nonzero byte is true; broadcasting of all three inputs.
TEST_CASE("where: known answers") {
  value_rng rng("known");
  call_spec call = make_where(parse_case("c4 x4 y4"), rng);
  call.inputs[0].data = {0, 1, 255, 0};
  call.inputs[1].data = {1, 2, 3, 4};
  call.inputs[2].data = {-1, -2, -3, -4};
  check_known_answer("where", "c4 x4 y4", call, {-1, 2, 3, -4}, 0);
  call_spec bc = make_where(parse_case("c2x1 x3 y1"), rng);
  bc.inputs[0].data = {7, 0};
  bc.inputs[1].data = {1, 2, 3};
  bc.inputs[2].data = {9};
  check_known_answer("where", "c2x1 x3 y1", bc, {1, 2, 3, 9, 9, 9}, 0);
  call_spec sc = make_where(parse_case("c=scalar x2x2 y2"), rng);
  sc.inputs[0].data = {0};
  sc.inputs[1].data = {1, 2, 3, 4};
  sc.inputs[2].data = {5, 6};
  check_known_answer("where", "c=scalar x2x2 y2", sc, {5, 6, 5, 6}, 0);
}

// Output shapes as literals, on every device.
TEST_CASE("where: output shapes (known answers)") {
  const std::vector<known_shape> known{
      {"c2x1x4 x3x4 y2x3x1", {2, 3, 4}},
      {"c=scalar x5 y2x1", {2, 5}},
      {"c4x1x1 x1x3x1 y1x1x2", {4, 3, 2}},
  };
  check_output_shapes("where_out_shape", known, make_where);
}
