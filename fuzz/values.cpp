// values.cpp — the fuzz target's buffer values (values.hpp).
#include "values.hpp"

#include <nnplug/kit/half.hpp>

#include <cmath>
#include <cstring>
#include <limits>

namespace fuzz {

bool is_float(DLDataType t) {
  return t.lanes == 1 && ((t.code == kDLFloat && (t.bits == 16 || t.bits == 32 || t.bits == 64)) ||
                          (t.code == kDLBfloat && t.bits == 16));
}

double load_float(const uint8_t* p, DLDataType t) {
  if (t.code == kDLBfloat) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return nnp::bf16_to_float(h);
  }
  if (t.bits == 16) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return nnp::half_to_float(h);
  }
  if (t.bits == 32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  double d;
  std::memcpy(&d, p, 8);
  return d;
}
void store_float(uint8_t* p, DLDataType t, double v) {
  if (t.code == kDLBfloat) {
    const uint16_t h = nnp::double_to_bf16(v);
    std::memcpy(p, &h, 2);
  } else if (t.bits == 16) {
    const uint16_t h = nnp::double_to_half(v);
    std::memcpy(p, &h, 2);
  } else if (t.bits == 32) {
    const float f = static_cast<float>(v);
    std::memcpy(p, &f, 4);
  } else {
    std::memcpy(p, &v, 8);
  }
}

// Values: dyadic numbers with few significant bits (exact in every float dtype, so sums and
// products of a few of them are exact and the devices' summation orders agree), sometimes
// with NaN, infinities, signed zeros and subnormals.
static double float_value(rng& r, uint8_t mode, DLDataType t) {
  const uint64_t x = r.next();
  if ((mode & 2) && (x >> 60) == 0) {
    const double tiny = t.code == kDLFloat && t.bits == 16   ? std::ldexp(1.0, -24)
                        : t.code == kDLFloat && t.bits == 64 ? std::ldexp(1.0, -1070)
                                                             : std::ldexp(1.0, -140);
    const double special[6] = {
        std::numeric_limits<double>::quiet_NaN(), HUGE_VAL, -HUGE_VAL, -0.0, tiny, -tiny};
    return special[(x >> 8) % 6];
  }
  if (mode & 1) {  // |value| < 64 (exp stays finite in float32), down to 2^-14
    const int m = static_cast<int>(x % 511) - 255, e = static_cast<int>((x >> 16) % 13) - 14;
    return std::ldexp(m, e);
  }
  return (static_cast<int>(x % 65) - 32) / 8.0;
}

static int64_t int_value(rng& r, uint8_t mode) {
  const uint64_t x = r.next();
  switch (mode) {
    case 0:
      return static_cast<int64_t>(x % 2);
    case 1:
      return static_cast<int64_t>(x % 4);
    case 2:
      return static_cast<int64_t>(x % 12) - 4;
    default: {
      if ((x >> 61) != 0) return static_cast<int64_t>(x % 4);
      const int64_t special[7] = {-100,
                                  -1,
                                  std::numeric_limits<int64_t>::min(),
                                  std::numeric_limits<int64_t>::max(),
                                  int64_t{1} << 31,
                                  1000,
                                  -(int64_t{1} << 40)};
      return special[(x >> 8) % 7];
    }
  }
}

// The initial bytes of every buffer (empty for output-only buffers: the device's sentinel).
std::vector<std::vector<uint8_t>> make_values(const call_desc& c, const call_plan& p) {
  std::vector<std::vector<uint8_t>> v(p.buffers.size());
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    const buffer_plan& bp = p.buffers[b];
    if (bp.output_only) continue;
    std::vector<uint8_t>& out = v[b];
    out.resize(bp.size);
    rng r{(static_cast<uint64_t>(c.seed) << 32) ^ (b * 0x1000193u) ^ 0x6E6E70u};
    const DLDataType t = c.tensor(static_cast<size_t>(bp.owner)).dtype;
    // Adam's second moment v is a running mean of squares: never negative (outside that domain
    // sqrt(v) is NaN on one device and, for a subnormal beta2 that float32 rounds to 0, finite
    // on the other).
    const bool nonnegative =
        c.kind == NNP_OP_ADAM_UPDATE && static_cast<size_t>(bp.owner) == c.in.size() + 2;
    const size_t item = item_size(t);
    size_t k = 0;
    if (item != 0) {
      for (; k + item <= out.size(); k += item) {
        uint8_t* e = &out[k];
        if (is_float(t)) {
          const double x = float_value(r, c.value_mode, t);
          store_float(e, t, nonnegative ? std::fabs(x) : x);
        } else if ((t.code == kDLInt || t.code == kDLUInt) && item > 1) {
          const int64_t x = int_value(r, c.int_mode);
          std::memcpy(e, &x, item);  // little-endian truncation
        } else if (item == 1) {
          const uint64_t x = r.next();
          *e = c.int_mode == 3 ? static_cast<uint8_t>(x) : static_cast<uint8_t>(x & 1);
        } else {
          for (size_t i = 0; i < item; ++i) e[i] = static_cast<uint8_t>(r.next());
        }
      }
    }
    for (; k < out.size(); ++k) out[k] = static_cast<uint8_t>(r.next());
  }
  return v;
}

}  // namespace fuzz
