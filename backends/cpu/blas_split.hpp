// blas_split.hpp — a row-major SGEMM of any int64 sizes as SGEMMs whose sizes and leading
// dimensions all fit BLAS's integer (OpenBLAS's blasint is 32-bit: a size or leading dimension
// beyond 2^31 - 1 would be truncated, and the call would return with a wrong or unwritten
// result). Header-only and free of BLAS, so that a unit test can run the decomposition with a
// small limit against a plain loop (tests/test_blas_split.cpp).
//
//   C[m, n] = alpha * op(A)[m, k] * op(B)[k, n] + beta * C, row-major; op(X) = X or X^T.
//   op(A)(i, l) = a[i * lda + l] (ta = false) or a[l * lda + i] (ta = true); likewise B;
//   C(i, j) = c[i * ldc + j].
//
// Sizes beyond the limit are cut into blocks (rows of C, columns of C, or slices of K, the
// later slices accumulating with beta = 1). A leading dimension beyond the limit is the distance
// between two stored rows: the part is cut into single stored rows, whose leading dimension
// BLAS does not read (it is then given as the row's length). Speed: none of this runs unless a
// size or leading dimension passes the limit, which needs operands of 8 GiB or more.
#pragma once

#include <algorithm>
#include <cstdint>

namespace nnp::cpu {

struct gemm_part {
  bool ta, tb;
  int64_t m, n, k;
  const float* a;
  int64_t lda;
  const float* b;
  int64_t ldb;
  float beta;
  float* c;
  int64_t ldc;
};

// Calls run(part) for parts whose m, n, k, lda, ldb and ldc are all <= limit (limit >= 1), in an
// order whose results add up to the whole product: parts that share C elements (slices of K)
// come in K order, the first with the caller's beta and the others with beta = 1. m, n, k >= 1.
template <typename F>
void split_gemm(const gemm_part& g, int64_t limit, const F& run) {
  const auto rows_of_c = [&](int64_t block, int64_t ldc) {  // blocks of rows of C
    for (int64_t i = 0; i < g.m; i += block) {
      gemm_part p = g;
      p.m = std::min(block, g.m - i);
      p.a = g.ta ? g.a + i : g.a + i * g.lda;
      p.c = g.c + i * g.ldc;
      if (block == 1) {
        if (!g.ta) p.lda = g.k;  // one stored row of A: its leading dimension is not read
        if (ldc > 0) p.ldc = ldc;
      }
      split_gemm(p, limit, run);
    }
  };
  const auto cols_of_c = [&](int64_t block) {  // blocks of columns of C
    for (int64_t j = 0; j < g.n; j += block) {
      gemm_part p = g;
      p.n = std::min(block, g.n - j);
      p.b = g.tb ? g.b + j * g.ldb : g.b + j;
      p.c = g.c + j;
      if (block == 1 && g.tb) p.ldb = g.k;  // one stored row of B^T
      split_gemm(p, limit, run);
    }
  };
  const auto slices_of_k = [&](int64_t block) {  // slices of K, accumulated in order
    for (int64_t l = 0; l < g.k; l += block) {
      gemm_part p = g;
      p.k = std::min(block, g.k - l);
      p.a = g.ta ? g.a + l * g.lda : g.a + l;
      p.b = g.tb ? g.b + l : g.b + l * g.ldb;
      p.beta = l == 0 ? g.beta : 1.0f;
      if (block == 1) {
        if (g.ta) p.lda = g.m;   // one stored row of A^T
        if (!g.tb) p.ldb = g.n;  // one stored row of B
      }
      split_gemm(p, limit, run);
    }
  };
  if (g.m > limit) return rows_of_c(limit, 0);
  if (g.n > limit) return cols_of_c(limit);
  if (g.k > limit) return slices_of_k(limit);
  // Every size fits; a leading dimension that does not is cut to single stored rows.
  if (g.lda > limit) return g.ta ? slices_of_k(1) : rows_of_c(1, 0);
  if (g.ldb > limit) return g.tb ? cols_of_c(1) : slices_of_k(1);
  if (g.ldc > limit) return rows_of_c(1, g.n);
  run(g);
}

}  // namespace nnp::cpu
