// test_blas_split.cpp — blas_split.hpp's decomposition of a GEMM into parts whose sizes and
// leading dimensions all fit BLAS's integer, run with small limits (so that every split path is
// taken) against a plain loop over the whole product: every part must fit the limit and respect
// BLAS's leading-dimension rules, and the parts must add up to the same C.
#include "../blas_split.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace {

using nnp::cpu::gemm_part;
using nnp::cpu::split_gemm;

// C = op(A) op(B) + beta C with plain loops, in double (alpha is 1 throughout).
void plain_gemm(const gemm_part& g) {
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      double acc = 0;
      for (int64_t l = 0; l < g.k; ++l) {
        const float a = g.ta ? g.a[l * g.lda + i] : g.a[i * g.lda + l];
        const float b = g.tb ? g.b[j * g.ldb + l] : g.b[l * g.ldb + j];
        acc += double(a) * double(b);
      }
      float& c = g.c[i * g.ldc + j];
      c = static_cast<float>(acc + (g.beta == 0.0f ? 0.0 : double(g.beta) * double(c)));
    }
}

// Stored rows x cols with leading dimension ld >= cols, random values (padding too).
std::vector<float> stored(int64_t rows, int64_t ld, std::mt19937& rng) {
  std::uniform_int_distribution<int> v(-4, 4);  // small integers: sums are exact in float
  std::vector<float> m(static_cast<size_t>(rows * ld));
  for (float& x : m) x = static_cast<float>(v(rng));
  return m;
}

}  // namespace

TEST_CASE("split_gemm: parts fit the limit and add up to the whole product") {
  std::mt19937 rng(7);
  int checked = 0;
  for (int64_t limit : {1, 2, 3, 5, 1000})
    for (int trial = 0; trial < 60; ++trial) {
      std::uniform_int_distribution<int64_t> size(1, 7), extra(0, 3);
      const bool ta = trial % 2 != 0, tb = trial % 4 >= 2;
      const int64_t m = size(rng), n = size(rng), k = size(rng);
      // stored A: [m, k] or [k, m]; B: [k, n] or [n, k]; C [m, n]; leading dims with padding
      const int64_t a_rows = ta ? k : m, a_cols = ta ? m : k;
      const int64_t b_rows = tb ? n : k, b_cols = tb ? k : n;
      const int64_t lda = a_cols + extra(rng), ldb = b_cols + extra(rng), ldc = n + extra(rng);
      const std::vector<float> a = stored(a_rows, lda, rng), b = stored(b_rows, ldb, rng);
      const std::vector<float> c0 = stored(m, ldc, rng);
      const float beta = trial % 3 == 0 ? 0.0f : 2.0f;
      std::vector<float> want = c0, got = c0;
      plain_gemm({ta, tb, m, n, k, a.data(), lda, b.data(), ldb, beta, want.data(), ldc});
      int parts = 0;
      split_gemm({ta, tb, m, n, k, a.data(), lda, b.data(), ldb, beta, got.data(), ldc}, limit,
                 [&](const gemm_part& p) {
                   ++parts;
                   CHECK(p.m >= 1);
                   CHECK(p.n >= 1);
                   CHECK(p.k >= 1);
                   for (int64_t v : {p.m, p.n, p.k, p.lda, p.ldb, p.ldc}) CHECK(v <= limit);
                   // BLAS (row-major): lda >= columns of stored A, likewise B and C
                   CHECK(p.lda >= (p.ta ? p.m : p.k));
                   CHECK(p.ldb >= (p.tb ? p.k : p.n));
                   CHECK(p.ldc >= p.n);
                   plain_gemm(p);
                 });
      CHECK(parts >= 1);
      INFO("limit " << limit << " ta " << ta << " tb " << tb << " m " << m << " n " << n << " k "
                    << k << " lda " << lda << " ldb " << ldb << " ldc " << ldc);
      CHECK(got == want);
      ++checked;
    }
  CHECK(checked == 300);
}

TEST_CASE("split_gemm: sizes within the limit are one part, as given") {
  float a = 1, b = 2, c = 0;
  int parts = 0;
  const int64_t big = std::numeric_limits<int32_t>::max();
  split_gemm({false, true, 1, 1, 1, &a, big, &b, big, 0.0f, &c, big}, big, [&](const gemm_part& p) {
    ++parts;
    CHECK(p.lda == big);
    CHECK(p.ldc == big);
  });
  CHECK(parts == 1);
  // one beyond the 32-bit limit: cut, and no part passes it
  parts = 0;
  split_gemm({false, false, 1, 1, 1, &a, big + 1, &b, 1, 0.0f, &c, 1}, big,
             [&](const gemm_part& p) {
               ++parts;
               CHECK(p.lda == 1);
             });
  CHECK(parts == 1);
}
