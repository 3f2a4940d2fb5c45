// test_vmath.cpp — vmath.hpp's fast_exp and fast_erf against libm: their documented error
// bounds over a sweep, and non-finite inputs (NaN propagates, exp(-inf) = 0, exp(+inf) clamps,
// erf(+-inf) = +-1) without undefined behaviour (the sanitizer build runs this: a NaN once
// reached a float-to-int conversion and a left shift of a negative value). The same for the
// 8-lane exp8 and erf8 where the CPU has AVX2 and FMA, and their agreement with the scalar
// functions lane by lane.
#include "../vmath.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

using nnp::cpu::fast_erf;
using nnp::cpu::fast_exp;

#ifdef NNP_CPU_X86_KERNELS
namespace {

bool has_avx2_fma() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

// f8 applied to x[0 .. n) (n a multiple of 8) into y.
template <typename F8>
NNP_CPU_AVX2_FMA void apply8(F8 f8, const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; i += 8) _mm256_storeu_ps(y + i, f8(_mm256_loadu_ps(x + i)));
}

struct exp8_fn {
  NNP_CPU_AVX2_FMA __m256 operator()(__m256 v) const { return nnp::cpu::exp8(v); }
};
struct erf8_fn {
  NNP_CPU_AVX2_FMA __m256 operator()(__m256 v) const { return nnp::cpu::erf8(v); }
};

template <typename F8>
std::vector<float> on8(const std::vector<float>& x) {
  std::vector<float> padded(x), y;
  padded.resize((x.size() + 7) / 8 * 8, 0.0f);
  y.resize(padded.size());
  apply8(F8{}, padded.data(), y.data(), padded.size());
  y.resize(x.size());
  return y;
}

std::vector<float> sweep(float lo, float hi, float step) {
  std::vector<float> x;
  for (float v = lo; v <= hi; v += step) x.push_back(v);
  return x;
}

}  // namespace

TEST_CASE("exp8 and erf8: error bounds, and close to the scalar functions lane by lane") {
  if (!has_avx2_fma()) return;  // nothing to run: the kernels that use them do not either
  const std::vector<float> xe = sweep(-87.0f, 88.0f, 0.01171875f);
  const std::vector<float> ye = on8<exp8_fn>(xe);
  double worst_exp = 0, worst_vs_scalar = 0;
  for (size_t i = 0; i < xe.size(); ++i) {
    const double want = std::exp(double(xe[i]));
    worst_exp = std::max(worst_exp, std::fabs(double(ye[i]) - want) / want);
    worst_vs_scalar =
        std::max(worst_vs_scalar, std::fabs(double(ye[i]) - double(fast_exp(xe[i]))) / want);
  }
  CHECK(worst_exp < 3e-6);
  CHECK(worst_vs_scalar < 1e-6);
  const std::vector<float> xf = sweep(-6.0f, 6.0f, 0.0009765625f);
  const std::vector<float> yf = on8<erf8_fn>(xf);
  double worst_erf = 0, worst_erf_vs_scalar = 0;
  for (size_t i = 0; i < xf.size(); ++i) {
    worst_erf = std::max(worst_erf, std::fabs(double(yf[i]) - std::erf(double(xf[i]))));
    worst_erf_vs_scalar =
        std::max(worst_erf_vs_scalar, std::fabs(double(yf[i]) - double(fast_erf(xf[i]))));
    CHECK(std::signbit(yf[i]) == std::signbit(xf[i]));
  }
  CHECK(worst_erf < 5e-7);
  CHECK(worst_erf_vs_scalar < 6e-7);
}

TEST_CASE("exp8 and erf8: non-finite inputs, as the scalar functions") {
  if (!has_avx2_fma()) return;
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {nan, -nan, -inf, -100.0f, inf, 0.0f, -0.0f, 1e-30f};
  const std::vector<float> e = on8<exp8_fn>(x), f = on8<erf8_fn>(x);
  CHECK(std::isnan(e[0]));
  CHECK(std::isnan(e[1]));
  CHECK(e[2] == 0.0f);
  CHECK(e[3] == 0.0f);
  CHECK(e[4] > 1e38f);
  CHECK(e[5] == 1.0f);
  CHECK(std::isnan(f[0]));
  CHECK(std::isnan(f[1]));
  CHECK(f[2] == -1.0f);
  CHECK(f[4] == 1.0f);
  CHECK(std::fabs(f[5]) < 1e-7f);
  CHECK(!std::signbit(f[5]));
  CHECK(std::signbit(f[6]));  // erf(-0) keeps the sign, as copysign does
  CHECK(f[7] < 1e-7f);
}
#endif

TEST_CASE("fast_exp: relative error below 3e-6 on [-87, 88]") {
  double worst = 0;
  for (float x = -87.0f; x <= 88.0f; x += 0.01171875f) {
    const double want = std::exp(double(x));
    worst = std::max(worst, std::fabs(double(fast_exp(x)) - want) / want);
  }
  CHECK(worst < 3e-6);
}

TEST_CASE("fast_erf: absolute error below 4e-7") {
  double worst = 0;
  for (float x = -6.0f; x <= 6.0f; x += 0.0009765625f)
    worst = std::max(worst, std::fabs(double(fast_erf(x)) - std::erf(double(x))));
  CHECK(worst < 4e-7);
}

TEST_CASE("fast_exp and fast_erf: non-finite inputs") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(fast_exp(nan)));
  CHECK(std::isnan(fast_exp(-nan)));
  CHECK(fast_exp(-inf) == 0.0f);
  CHECK(fast_exp(-100.0f) == 0.0f);
  CHECK(fast_exp(inf) > 1e38f);  // clamped to e^88.3
  CHECK(std::isnan(fast_erf(nan)));
  CHECK(fast_erf(inf) == 1.0f);
  CHECK(fast_erf(-inf) == -1.0f);
}
