// harness_codecs.hpp — internal to the harness (not for test files): one element encoded to and
// decoded from the bytes of a device tensor in dtype t (float16/bfloat16 round to nearest even).
// Implemented in harness_codecs.cpp; used by the guarded buffers (harness_buffers.cpp).
#pragma once

#include "harness.hpp"

#include <cstdint>

namespace conf {

void encode(double v, dtype_id t, uint8_t* dst);
double decode(const uint8_t* src, dtype_id t);

}  // namespace conf
