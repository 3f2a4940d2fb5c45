// The operand split of the cuda backend's 3xTF32 products (tf32x3.hpp), compiled for the host:
// the TF32 rounding (round to nearest, ties away from zero, the low 13 bits cut), the parts'
// error bounds, the three-term product against the exact one in double, and non-finite
// operands. The device rounds with cvt.rna.tf32.f32; the GPU check's "attention mma" step runs
// the kernels that use the split against the reference.
#include "../tf32x3.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

namespace {

using nnp::cuda::bits_float;
using nnp::cuda::float_bits;
using nnp::cuda::tf32_parts;
using nnp::cuda::tf32_rna;
using nnp::cuda::tf32_split;

double as_double(uint32_t bits) { return static_cast<double>(bits_float(bits)); }

// Random normal floats with exponents in [-40, 40] and either sign.
float random_float(std::mt19937& rng) {
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> ex(-40, 40);
  const float x = std::ldexp(mant(rng), ex(rng));
  return (rng() & 1) != 0 ? -x : x;
}

// The three-term product of the kernels (mma3's order), in double: the tensor cores' float32
// accumulation is left out, so this checks the split alone.
double product3(float a, float b) {
  const tf32_parts pa = tf32_split(a), pb = tf32_split(b);
  return as_double(pa.small) * as_double(pb.cross) + as_double(pa.cross) * as_double(pb.small) +
         as_double(pa.big) * as_double(pb.big);
}

}  // namespace

TEST_CASE("tf32x3: TF32 rounding keeps 10 significand bits, to nearest, ties away from zero") {
  CHECK(tf32_rna(1.0f) == float_bits(1.0f));
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: away from zero.
  CHECK(bits_float(tf32_rna(1.0f + 0x1p-11f)) == 1.0f + 0x1p-10f);
  CHECK(bits_float(tf32_rna(-(1.0f + 0x1p-11f))) == -(1.0f + 0x1p-10f));
  // Just below halfway: down.
  CHECK(bits_float(tf32_rna(1.0f + 0x1p-11f - 0x1p-23f)) == 1.0f);
  // A carry out of the significand raises the exponent.
  CHECK(bits_float(tf32_rna(2.0f - 0x1p-23f)) == 2.0f);
  // The largest float32 rounds to infinity; infinities stay, NaN stays NaN.
  CHECK(std::isinf(bits_float(tf32_rna(std::numeric_limits<float>::max()))));
  CHECK(bits_float(tf32_rna(-INFINITY)) == -INFINITY);
  CHECK(std::isnan(bits_float(tf32_rna(NAN))));

  std::mt19937 rng(7);
  for (int i = 0; i < 100000; ++i) {
    const float x = random_float(rng);
    const uint32_t r = tf32_rna(x);
    REQUIRE((r & 0x1fffu) == 0u);
    REQUIRE(std::fabs(static_cast<double>(x) - as_double(r)) <= 0x1p-11 * std::fabs(x));
  }
}

TEST_CASE("tf32x3: big + small is within 2^-22 |x|, and the product within 3 * 2^-22 |a b|") {
  std::mt19937 rng(11);
  double worst_split = 0.0, worst_product = 0.0;
  for (int i = 0; i < 100000; ++i) {
    const float x = random_float(rng);
    const tf32_parts p = tf32_split(x);
    REQUIRE(p.cross == p.big);
    REQUIRE((p.small & 0x1fffu) == 0u);
    const double e =
        std::fabs(static_cast<double>(x) - as_double(p.big) - as_double(p.small)) / std::fabs(x);
    worst_split = e > worst_split ? e : worst_split;

    const float a = random_float(rng), b = random_float(rng);
    const double exact = static_cast<double>(a) * static_cast<double>(b);
    const double pe = std::fabs(product3(a, b) - exact) / std::fabs(exact);
    worst_product = pe > worst_product ? pe : worst_product;
  }
  CHECK(worst_split <= 0x1p-22);
  CHECK(worst_product <= 3 * 0x1p-22);
  // TF32 alone (one product of the big parts) loses the low bits; 3xTF32 drops only
  // a_small b_small: (1 + 2^-12)(1 + 2^-13) = 1 + 2^-12 + 2^-13 + 2^-25.
  const float a = 1.0f + 0x1p-12f, b = 1.0f + 0x1p-13f;
  CHECK(as_double(tf32_rna(a)) * as_double(tf32_rna(b)) == 1.0);
  CHECK(product3(a, b) == 1.0 + 0x1p-12 + 0x1p-13);
}

TEST_CASE("tf32x3: non-finite operands give the exact product's infinity or NaN") {
  const tf32_parts inf = tf32_split(INFINITY);
  CHECK(bits_float(inf.big) == INFINITY);
  CHECK(inf.small == 0u);
  CHECK(inf.cross == 0u);
  // inf * 1: the cross terms are 0 * 1 and 0 * 0, not inf * 0 = NaN.
  CHECK(product3(INFINITY, 1.0f) == INFINITY);
  CHECK(product3(-INFINITY, 3.0f) == -INFINITY);
  CHECK(product3(2.5f, -INFINITY) == -INFINITY);
  // inf * 0 and NaN * x are NaN, as in exact arithmetic.
  CHECK(std::isnan(product3(INFINITY, 0.0f)));
  CHECK(std::isnan(product3(NAN, 1.0f)));
  CHECK(std::isnan(product3(1.0f, NAN)));
}
