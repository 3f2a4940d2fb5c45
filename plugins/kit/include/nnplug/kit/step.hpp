// nnplug/kit/step.hpp — the step counter an op reads on the device (ABI 1.4): the optional
// float32 input `step` of adam_update and dropout_forward/backward, whose value is read when
// the op runs. The rules of nnplug_ops.h for that value, defined once so that backends agree:
//  - adam_update's step must be a whole number >= 1, dropout's a whole number >= 0 (below 2^64);
//  - a backend that can refuse when the op runs (reference, cpu) refuses other values with
//    INVALID_ARGUMENT (checked_step);
//  - one that cannot (a CUDA kernel) reads them as adam_step_value / dropout_step_value say:
//    adam reads values below 1, and NaN, as 1 and others as they are; dropout reads NaN and
//    values below 0 as 0, drops a fraction, and reads values from 2^64 on as 2^64 - 1.
// Whole numbers in range read the same either way, so backends agree on every valid value.
// The value helpers are usable from CUDA device code.
#pragma once

#include <nnplug/kit/error.hpp>
#include <nnplug/kit/philox.hpp>  // NNP_HD

#include <cmath>
#include <cstdint>

namespace nnp {

// 2^64 as a float (exact): the first value a uint64_t cannot hold.
constexpr float kStepLimit = 18446744073709551616.0f;

// adam_update's step as a backend that cannot refuse reads it.
NNP_HD double adam_step_value(float step) {
  return step >= 1.0f ? static_cast<double>(step) : 1.0;  // NaN compares false: 1
}

// dropout's step as a backend that cannot refuse reads it.
NNP_HD uint64_t dropout_step_value(float step) {
  if (!(step > 0.0f)) return 0;  // NaN, 0 and below
  if (step >= kStepLimit) return ~uint64_t{0};
  return static_cast<uint64_t>(step);  // toward zero: a fraction is dropped
}

// The Philox counter offset of a dropout call with a step counter: offset + step *
// offset_per_step in uint64 arithmetic (modulo 2^64).
NNP_HD uint64_t dropout_step_offset(uint64_t offset, uint64_t offset_per_step, uint64_t step) {
  return offset + step * offset_per_step;
}

// The value of a step counter for a backend that refuses invalid ones (reference, cpu): a whole
// number >= lowest (1 for adam_update, 0 for dropout) and below 2^64, else INVALID_ARGUMENT
// naming the op. Host code.
inline float checked_step(const char* op, float step, float lowest) {
  if (!(std::isfinite(step) && step >= lowest && step < kStepLimit && std::floor(step) == step))
    fail(NNP_STATUS_INVALID_ARGUMENT,
         format("%s: the step input holds %.9g when the op runs: expected a whole number >= %g "
                "(below 2^64)",
                op, static_cast<double>(step), static_cast<double>(lowest)));
  return step;
}

}  // namespace nnp
