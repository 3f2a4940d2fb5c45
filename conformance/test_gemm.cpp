// test_gemm.cpp — NNP_OP_GEMM numerics: Y = alpha op(A) op(B) + beta C, transposes, batch,
// C broadcast unidirectionally (ONNX: rank 0, [1], [N], [1, N], [M, 1], [M, N]; batched also
// [batch, M, N], [batch, 1, N]), and Y aliasing C (in-place accumulate).
// Cases: cases/<list>/gemm.txt, e.g. "m4 n5 k3 ta1 tb0 batch2 bat=ab c=mn alpha=1.5 beta=0.5".
#include <doctest/doctest.h>

#include "harness.hpp"

namespace {
using namespace conf;

// Keys: m n k; ta tb (0/1); batch (0 = rank 2) and bat=a|b|ab (which operands are batched);
// c=none|n|mn|bmn or the other ONNX bias forms c=scalar|1|1n|m1 (and b1n: [batch, 1, N]);
// alpha beta; inplace1 (Y aliases C, needs c=mn without batch or c=bmn).
call_spec make_gemm(const case_line& c, value_rng& rng) {
  const int64_t M = c.i("m", 4), N = c.i("n", 4), K = c.i("k", 4), batch = c.i("batch", 0);
  const std::string bat = c.s("bat", "ab");
  const bool ta = c.i("ta", 0) != 0, tb = c.i("tb", 0) != 0;
  auto p = make_params<nnp_gemm_params>();
  p.trans_a = ta;
  p.trans_b = tb;
  p.alpha = c.d("alpha", 1.0);
  p.beta = c.d("beta", 0.0);
  std::vector<int64_t> a = ta ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K};
  std::vector<int64_t> b = tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N};
  const bool batched = batch > 0;
  if (batched && bat.find('a') != std::string::npos) a.insert(a.begin(), batch);
  if (batched && bat.find('b') != std::string::npos) b.insert(b.begin(), batch);
  auto a_data = rng.uniform_vec(numel(a));
  auto b_data = rng.uniform_vec(numel(b));
  std::vector<int64_t> y = batched ? std::vector<int64_t>{batch, M, N} : std::vector<int64_t>{M, N};
  const std::string cs = c.s("c", "none");
  std::vector<int64_t> cshape;
  if (cs == "n") cshape = {N};
  if (cs == "mn") cshape = {M, N};
  if (cs == "bmn") cshape = {batch, M, N};
  if (cs == "1") cshape = {1};
  if (cs == "1n") cshape = {1, N};
  if (cs == "m1") cshape = {M, 1};
  if (cs == "b1n") cshape = {batch, 1, N};
  call_spec call =
      make_spec(NNP_OP_GEMM, p,
                {tensor(a, std::move(a_data)), tensor(b, std::move(b_data)),
                 cs == "none" ? absent_tensor() : tensor(cshape, rng.uniform_vec(numel(cshape)))},
                {tensor(y)});
  if (c.i("inplace", 0) && cs != "none" && cshape == y) call.outputs[0].alias_of = 2;
  return call;
}

const register_template reg_gemm("gemm", "gemm", "m3 n4 k5 c=mn beta=0.5", make_gemm);

}  // namespace

TEST_CASE("gemm") { check_numerics_cases("gemm", make_gemm); }

// Known answers on every device (the reference included): op(A) with trans_a/trans_b as in
// BLAS, C broadcast from [N], alpha and beta.
TEST_CASE("gemm: known answers") {
  const std::vector<double> a{1, 2, 3, 4}, b{5, 6, 7, 8}, c{1, -1};
  struct known_case {
    const char* text;
    std::vector<double> y;
  };
  const std::vector<known_case> known{
      {"m2 n2 k2", {19, 22, 43, 50}},
      {"m2 n2 k2 ta1", {26, 30, 38, 44}},
      {"m2 n2 k2 tb1", {17, 23, 39, 53}},
      {"m2 n2 k2 ta1 tb1", {23, 31, 34, 46}},
      {"m2 n2 k2 c=n alpha=2 beta=3", {41, 41, 89, 97}},
      // ONNX bias forms: [M, 1] (one value per row), [1, N], [1] and rank 0 (c[0] = 1).
      {"m2 n2 k2 c=m1 beta=1", {20, 23, 42, 49}},
      {"m2 n2 k2 c=1n beta=1", {20, 21, 44, 49}},
      {"m2 n2 k2 c=1 beta=2", {21, 24, 45, 52}},
      {"m2 n2 k2 c=scalar beta=-1", {18, 21, 42, 49}},
  };
  for (const known_case& k : known) {
    value_rng rng("known");
    call_spec call = make_gemm(parse_case(k.text), rng);
    call.inputs[0].data = a;
    call.inputs[1].data = b;
    if (!call.inputs[2].absent)
      call.inputs[2].data.assign(c.begin(),
                                 c.begin() + static_cast<long>(call.inputs[2].data.size()));
    check_known_answer("gemm", k.text, call, k.y);
  }
}
