// Validation of op calls (validate.cpp, driven by the op table; shape rules in
// validate_shapes_<family>.cpp, listed in validate_call.hpp): the one place where libnnplug checks
// every op kind of nnplug_ops.h before a plugin sees the call, and where nnp_op_infer_shapes gets
// its answers.
#pragma once

#include <nnplug/nnplug.h>

#include "op_table.hpp"

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

// A validated call meets a plugin built for ABI 1.<plugin_minor>: UNSUPPORTED (with the
// thread's last error set) if the kind is newer than that, if the call passes a tensor (not
// NULL, within the counts) that the op gained after that minor, or if a params field newer
// than that is covered by the caller's struct_size and not at its default; else OK.
nnp_status check_plugin_minor(int32_t op_kind, const void* params, size_t n_inputs,
                              const DLTensor* const* inputs, size_t n_outputs,
                              const DLTensor* const* outputs, const char* plugin,
                              int32_t plugin_minor);

// The params struct a plugin receives for a validated call (docs/security.md, "params"): the
// caller's first struct_size bytes, at most sizeof the struct as compiled into libnnplug, in a
// buffer of k_max_params_bytes whose other bytes are zero, with struct_size set to the bytes
// taken. A plugin (and a graph recording) so never reads a byte the host did not validate,
// whatever struct_size the caller wrote: validation accepts only sizes that end at a field's
// end or reach the full struct. The zeros that mean a default are resolved: a stride, dilation
// or groups of 0 in nnp_conv2d_params arrives as 1. NULL for an op without a params struct, or
// for NULL params.
class plugin_params {
 public:
  // `params` of a call that validate_op accepted for `op_kind`.
  plugin_params(int32_t op_kind, const void* params);
  plugin_params(const plugin_params&) = delete;
  plugin_params& operator=(const plugin_params&) = delete;
  const void* get() const { return params_; }

 private:
  alignas(std::max_align_t) unsigned char bytes_[k_max_params_bytes];
  const void* params_ = nullptr;
};

// nnp_op_infer_shapes: the same checks on the inputs and params, then the output shapes.
nnp_status infer_shapes(int32_t op_kind, const void* params, size_t n_inputs,
                        const DLTensor* const* inputs, size_t n_outputs, nnp_shape* out_shapes);

}  // namespace nnp::host
