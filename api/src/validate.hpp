// Validation of op calls (validate.cpp): the one place where libnnplug checks every op kind of
// nnplug_ops.h before a plugin sees the call.
#pragma once

#include <nnplug/nnplug_ops.h>

#include <cstddef>
#include <cstdint>

namespace nnp::host {

// Checks an op call as nnplug_ops.h specifies: kind, tensor counts, required tensors, ranks,
// shapes, dtypes, strides, devices (every tensor on `device`), params and aliasing. With
// require_data = false (nnp_op_supported) data pointers may be NULL. On failure sets the
// thread's last error ("<op>: <argument>: expected ..., got ...") and returns
// INVALID_ARGUMENT, or UNSUPPORTED for an unknown op kind.
nnp_status validate_op(int32_t op_kind, const void* params, size_t n_inputs,
                       const DLTensor* const* inputs, size_t n_outputs,
                       const DLTensor* const* outputs, const DLDevice& device, bool require_data);

}  // namespace nnp::host
