// test_attention.cpp — scaled dot-product attention (ONNX Attention): forward and backward
// numerics against the reference, the backward against finite differences of the forward,
// the forward against the composition of gemm, binary add, softmax and gemm run on the
// reference, and known answers (fully masked rows, causal).
// Cases: cases/<list>/attention.txt: "b2 hq4 hkv2 tq5 tk7 d8 dv6 packed1 causal1 mask=bhqk
// scale=0.3" (mask= none | qk | bhqk | b11k: the mask's shape, broadcast to [B, Hq, Tq, Tk];
// packed1 = rank-3 [B, T, H*D] layout; scale 0 = 1/sqrt(D); maskinf1 = -inf mask entries: every
// 7th, and with a [.., Tq, Tk] mask the whole rows i = 0 (mod 64) and i = Tq - 1, fully masked
// rows at the edges of 64-row tiles).
#include <doctest/doctest.h>

#include "harness.hpp"

#include <cmath>
#include <limits>

namespace {
using namespace conf;

struct attn_setup {
  nnp_attention_params p;
  int64_t b, hq, hkv, tq, tk, d, dv;
  bool packed;
  bool mask_inf;              // maskinf1
  std::vector<int64_t> mask;  // empty: no mask
  std::vector<int64_t> shape(int64_t heads, int64_t t, int64_t width) const {
    return packed ? std::vector<int64_t>{b, t, heads * width}
                  : std::vector<int64_t>{b, heads, t, width};
  }
  std::vector<int64_t> q() const { return shape(hq, tq, d); }
  std::vector<int64_t> k() const { return shape(hkv, tk, d); }
  std::vector<int64_t> v() const { return shape(hkv, tk, dv); }
  std::vector<int64_t> y() const { return shape(hq, tq, dv); }
  std::vector<int64_t> lse() const { return {b, hq, tq}; }
};

attn_setup attn_case(const case_line& c) {
  attn_setup v{};
  v.p = make_params<nnp_attention_params>();
  v.b = c.i("b", 2);
  v.hq = c.i("hq", 2);
  v.hkv = c.i("hkv", v.hq);
  v.tq = c.i("tq", 5);
  v.tk = c.i("tk", v.tq);
  v.d = c.i("d", 8);
  v.dv = c.i("dv", v.d);
  v.packed = c.i("packed", 0) != 0;
  v.mask_inf = c.i("maskinf", 0) != 0;
  v.p.is_causal = static_cast<int32_t>(c.i("causal", 0));
  v.p.scale = c.d("scale", 0.0);
  if (v.packed) {
    v.p.q_num_heads = static_cast<int32_t>(v.hq);
    v.p.kv_num_heads = static_cast<int32_t>(v.hkv);
  }
  const std::string m = c.s("mask", "none");
  if (m == "qk") v.mask = {v.tq, v.tk};
  if (m == "bhqk") v.mask = {v.b, v.hq, v.tq, v.tk};
  if (m == "b11k") v.mask = {v.b, 1, 1, v.tk};
  return v;
}

struct attn_inputs {
  std::vector<double> q, k, v, mask;
};
attn_inputs attn_data(const attn_setup& v, value_rng& rng) {
  attn_inputs d;
  d.q = rng.uniform_vec(numel(v.q()), -2, 2);
  d.k = rng.uniform_vec(numel(v.k()), -2, 2);
  d.v = rng.uniform_vec(numel(v.v()));
  if (!v.mask.empty()) d.mask = rng.uniform_vec(numel(v.mask), -3, 1);
  if (v.mask_inf && !v.mask.empty()) {
    const bool rows = v.mask[v.mask.size() - 2] == v.tq && v.tq > 1;  // qk, bhqk
    for (size_t n = 0; n < d.mask.size(); ++n) {
      const int64_t i = static_cast<int64_t>(n) / v.tk % v.tq;
      if (n % 7 == 3 || (rows && (i % 64 == 0 || i == v.tq - 1)))
        d.mask[n] = -std::numeric_limits<double>::infinity();
    }
  }
  return d;
}
tensor_spec mask_tensor(const attn_setup& v, std::vector<double> mask) {
  return v.mask.empty() ? absent_tensor() : tensor(v.mask, std::move(mask));
}

// softmax_lse [B, Hq, Tq]: float32 in a 16-bit case (the op table's accumulation rule, ABI 1.9).
tensor_spec lse_tensor(const attn_setup& v, std::vector<double> data = {}) {
  return accumulation_tensor(v.lse(), std::move(data));
}

call_spec attn_forward(const attn_setup& v, const attn_inputs& d, bool lse = true) {
  return make_spec(
      NNP_OP_ATTENTION_FORWARD, v.p,
      {tensor(v.q(), d.q), tensor(v.k(), d.k), tensor(v.v(), d.v), mask_tensor(v, d.mask)},
      {tensor(v.y()), lse ? lse_tensor(v) : absent_tensor()});
}
call_spec attn_backward(const attn_setup& v, const attn_inputs& d, std::vector<double> y,
                        std::vector<double> dy, std::vector<double> lse) {
  return make_spec(
      NNP_OP_ATTENTION_BACKWARD, v.p,
      {tensor(v.q(), d.q), tensor(v.k(), d.k), tensor(v.v(), d.v), mask_tensor(v, d.mask),
       tensor(v.y(), std::move(y)), tensor(v.y(), std::move(dy)), lse_tensor(v, std::move(lse))},
      {tensor(v.q()), tensor(v.k()), tensor(v.v())});
}

const register_template reg_fwd("attention_forward", [] {
  value_rng rng("template attention");
  const attn_setup v = attn_case(parse_case("b2 hq2 tq3 tk4 d4 mask=qk"));
  return attn_forward(v, attn_data(v, rng));
});
const register_template reg_bwd("attention_backward", [] {
  value_rng rng("template attention bwd");
  const attn_setup v = attn_case(parse_case("b2 hq2 tq3 tk4 d4 packed1"));
  const attn_inputs d = attn_data(v, rng);
  return attn_backward(v, d, rng.uniform_vec(numel(v.y())), rng.uniform_vec(numel(v.y())),
                       rng.uniform_vec(numel(v.lse()), 1, 2));
});

// Output 0 of `call` run on the reference in float64 (which must run it).
std::vector<double> on_reference(const call_spec& call) {
  auto out = reference_outputs(call, dtype_id::f64);
  REQUIRE(!out.empty());
  return out[0];
}

// Reads the element (b, h, i, e) of a [B, H, T, W] operand in the case's layout.
double at(const attn_setup& v, const std::vector<double>& t, int64_t heads, int64_t len,
          int64_t width, int64_t b, int64_t h, int64_t i, int64_t e) {
  return v.packed ? t[((b * len + i) * heads + h) * width + e]
                  : t[((b * heads + h) * len + i) * width + e];
}

}  // namespace

TEST_CASE("attention_forward") {
  check_numerics_cases("attention_forward", "attention", "attention_fwd",
                       [](const case_line& c, value_rng& rng) {
                         const attn_setup v = attn_case(c);
                         return attn_forward(v, attn_data(v, rng));
                       });
}

TEST_CASE("attention_backward") {
  for (const case_line& c : load_cases("attention")) {
    value_rng rng("attention_bwd " + c.text);
    const attn_setup v = attn_case(c);
    const attn_inputs d = attn_data(v, rng);
    const auto dy = rng.uniform_vec(numel(v.y()));
    check_numerics_fn("attention_backward", c.text, [&](dtype_id dt) {
      const auto out = reference_outputs(attn_forward(v, d), dt);
      REQUIRE(out.size() == 2);
      return attn_backward(v, d, out[0], dy, out[1]);
    });
  }
}

TEST_CASE("gradient attention") {
  for (const case_line& c : load_cases("attention")) {
    const attn_setup v = attn_case(c);
    if (numel(v.q()) + numel(v.k()) + numel(v.v()) > 1024) continue;
    value_rng rng("gradient attention " + c.text);
    gradient_check g;
    g.name = "attention_backward";
    g.case_text = c.text;
    g.forward = attn_forward(v, attn_data(v, rng));
    g.backward = [v](const call_spec& f, const std::vector<std::vector<double>>& out,
                     const std::vector<std::vector<double>>& r) {
      const attn_inputs d{f.inputs[0].data, f.inputs[1].data, f.inputs[2].data, f.inputs[3].data};
      return attn_backward(v, d, out[0], r[0], out[1]);
    };
    g.wrt = {{0, 0}, {1, 1}, {2, 2}};
    check_gradient(g);
  }
}

// The fused op against the ops it fuses, run on the reference in float64: for every (b, h),
// S = scale * Q K^T (gemm, trans_b), S += mask (binary add), P = softmax(S), Y = P V (gemm).
// Rank-4 cases without grouped heads, causal masking, mask broadcasting over (b, h) or -inf
// mask entries (a fully masked row is Y = 0 here, NaN for softmax).
TEST_CASE("attention_forward: the composition of gemm, binary, softmax, gemm") {
  for (const case_line& c : load_cases("attention")) {
    const attn_setup v = attn_case(c);
    if (v.packed || v.hq != v.hkv || v.p.is_causal || v.mask_inf ||
        (!v.mask.empty() && v.mask.size() != 2))
      continue;
    value_rng rng("attention composition " + c.text);
    const attn_inputs d = attn_data(v, rng);
    const int64_t bh = v.b * v.hq;
    auto gp = make_params<nnp_gemm_params>();
    gp.trans_b = 1;
    gp.alpha = v.p.scale != 0 ? v.p.scale : 1 / std::sqrt(double(v.d));
    auto s = on_reference(make_spec(NNP_OP_GEMM, gp,
                                    {tensor({bh, v.tq, v.d}, d.q), tensor({bh, v.tk, v.d}, d.k)},
                                    {tensor({bh, v.tq, v.tk})}));
    if (!v.mask.empty()) {
      auto bp = make_params<nnp_binary_params>();
      bp.op = NNP_BINARY_ADD;
      s = on_reference(make_spec(NNP_OP_BINARY, bp,
                                 {tensor({bh, v.tq, v.tk}, s), tensor(v.mask, d.mask)},
                                 {tensor({bh, v.tq, v.tk})}));
    }
    auto sp = make_params<nnp_softmax_params>();
    sp.axis = -1;
    const auto pr = on_reference(make_spec(
        NNP_OP_SOFTMAX_FORWARD, sp, {tensor({bh, v.tq, v.tk}, s)}, {tensor({bh, v.tq, v.tk})}));
    auto pv = make_params<nnp_gemm_params>();
    pv.alpha = 1;
    const auto y = on_reference(
        make_spec(NNP_OP_GEMM, pv, {tensor({bh, v.tq, v.tk}, pr), tensor({bh, v.tk, v.dv}, d.v)},
                  {tensor({bh, v.tq, v.dv})}));
    check_known_answer("attention_composition", c.text, attn_forward(v, d, false), y, 1e-10);
  }
}

// Known answers: with a causal mask the first query sees only the first key (Y row 0 = V row
// 0); a row whose mask is -inf everywhere gives Y = 0 and lse = -inf.
TEST_CASE("attention_forward: known answers") {
  const double inf = std::numeric_limits<double>::infinity();
  const attn_setup v = attn_case(parse_case("b1 hq1 tq2 tk3 d2 dv2 causal1 mask=qk"));
  value_rng rng("attention known");
  attn_inputs d = attn_data(v, rng);
  d.mask = {0, 0, 0, -inf, -inf, -inf};  // row 1 fully masked
  std::vector<double> want(4);
  for (int e = 0; e < 2; ++e) want[e] = at(v, d.v, 1, 3, 2, 0, 0, 0, e);
  // Row 0's only score: lse = s * q_0 . k_0 with s = 1/sqrt(2).
  const double lse0 = (d.q[0] * d.k[0] + d.q[1] * d.k[1]) / std::sqrt(2.0);
  check_known_outputs("attention_known", "causal + masked row", attn_forward(v, d),
                      {want, {lse0, -inf}}, {dtype_id::f32, dtype_id::f64},
                      [](dtype_id dt) { return dt == dtype_id::f32 ? 1e-12 : 1e-20; });
}
