// test_vmath.cpp — vmath.hpp's fast_exp and fast_erf against libm: their documented error
// bounds over a sweep, and non-finite inputs (NaN propagates, exp(-inf) = 0, exp(+inf) clamps,
// erf(+-inf) = +-1) without undefined behaviour (the sanitizer build runs this: a NaN once
// reached a float-to-int conversion and a left shift of a negative value).
#include "../vmath.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

using nnp::cpu::fast_erf;
using nnp::cpu::fast_exp;

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
