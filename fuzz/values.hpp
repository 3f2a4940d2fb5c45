// values.hpp — the values nnplug-fuzz-op-execute puts in a call's buffers, and element access
// by dtype (float16/bfloat16 through the plugin kit's conversions, rounding once to nearest
// even). Deterministic: a generator seeded from the input.
#pragma once

#include "call_desc.hpp"

#include <cstdint>
#include <vector>

namespace fuzz {

// splitmix64.
struct rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

// float16, bfloat16, float32 or float64 (one lane).
bool is_float(DLDataType t);
// One element of dtype t (is_float) at p, as a double; and v stored there, rounded to t.
double load_float(const uint8_t* p, DLDataType t);
void store_float(uint8_t* p, DLDataType t, double v);
// The initial bytes of every buffer of plan p for call c (empty for output-only buffers: the
// device's sentinel).
std::vector<std::vector<uint8_t>> make_values(const call_desc& c, const call_plan& p);

}  // namespace fuzz
