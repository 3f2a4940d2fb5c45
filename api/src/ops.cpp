// Op dispatch of libnnplug: nnp_op_execute / nnp_op_supported validate the call (validate.cpp,
// driven by the op table), check it against the plugin's ABI minor, and forward it with a
// bounded, zero-extended copy of its params (plugin_params) to the
// plugin of the stream's (device's) device; nnp_op_infer_shapes; the typed wrappers of
// nnplug_op_wrappers.h (generated: api/src/generated/op_wrappers.inc).
#include "internal.hpp"
#include "op_table.hpp"
#include "validate.hpp"

using namespace nnp::host;

namespace {

// Whether every output of a validated call has no elements (a 0 among its dims; absent optional
// outputs do not count). Such a call has nothing to compute or write, whatever its inputs: a
// tensor without elements may have any other dimension, up to INT64_MAX, and a kernel that
// loops over that dimension would not finish.
bool no_output_elements(size_t n_outputs, const DLTensor* const* outputs) {
  for (size_t i = 0; i < n_outputs; ++i) {
    const DLTensor* t = outputs[i];
    if (t == nullptr) continue;
    bool empty = false;
    for (int d = 0; d < t->ndim && !empty; ++d) empty = t->shape[d] == 0;
    if (!empty) return false;
  }
  return true;
}

}  // namespace

extern "C" {

NNP_API nnp_status nnp_op_execute(nnp_stream* handle, int32_t op_kind, const void* params,
                                  size_t n_inputs, const DLTensor* const* inputs, size_t n_outputs,
                                  const DLTensor* const* outputs) {
  stream_lock stream;
  if (nnp_status st = stream.lock("nnp_op_execute", "stream", handle)) return st;
  const nnp_device* dev = stream->device;
  if (nnp_status st = validate_op(op_kind, params, n_inputs, inputs, n_outputs, outputs, dev->dl,
                                  /*require_data=*/true))
    return st;
  const plugin_params plugin_copy(op_kind, params);  // what plugins and recordings see
  params = plugin_copy.get();
  // Collectives run through their communicator's transport (comm.cpp), also without elements:
  // every rank must take part.
  if (is_collective(op_kind)) {
    if (is_capturing(stream.get()))
      return set_last_errorf(NNP_STATUS_UNSUPPORTED,
                             "nnp_op_execute: %s: collectives cannot be captured into a graph "
                             "(the stream is capturing)",
                             find_op(op_kind)->name);
    return execute_collective(stream.get(), op_kind, params, n_inputs, inputs, n_outputs, outputs);
  }
  const nnp_plugin* p = dev->plugin;
  if (nnp_status st = check_plugin_minor(op_kind, params, n_inputs, inputs, n_outputs, outputs,
                                         p->name.c_str(), p->api->abi_version_minor))
    return st;
  // Empty means no work: a call whose outputs all have no elements is not run; the plugin only
  // says whether it supports it, so that nnp_op_execute and nnp_op_supported still agree.
  if (no_output_elements(n_outputs, outputs))
    return call_slot(p, "op_supported", [&] {
      return p->api->op_supported(dev->index, op_kind, params, n_inputs, inputs, n_outputs,
                                  outputs);
    });
  if (is_capturing(stream.get()))
    return capture_op(stream.get(), op_kind, params, n_inputs, inputs, n_outputs, outputs);
  auto run = [&] {
    return call_slot(p, "op_execute", [&] {
      return p->api->op_execute(stream->handle, op_kind, params, n_inputs, inputs, n_outputs,
                                outputs);
    });
  };
  if (profiling())
    return profile_op(stream.get(), op_kind, params, n_inputs, inputs, n_outputs, outputs, run);
  return run();
}

NNP_API nnp_status nnp_op_supported(const nnp_device* handle, int32_t op_kind, const void* params,
                                    size_t n_inputs, const DLTensor* const* inputs,
                                    size_t n_outputs, const DLTensor* const* outputs) {
  gate_guard in_call(get_registry().gate);
  nnp_device* device = nullptr;
  if (nnp_status st = resolve_device("nnp_op_supported", "device", handle, &device)) return st;
  if (nnp_status st = validate_op(op_kind, params, n_inputs, inputs, n_outputs, outputs, device->dl,
                                  /*require_data=*/false))
    return st;
  const plugin_params plugin_copy(op_kind, params);
  params = plugin_copy.get();
  if (is_collective(op_kind))
    return collective_supported(device, op_kind, params, n_inputs, inputs, n_outputs, outputs);
  const nnp_plugin* p = device->plugin;
  if (nnp_status st = check_plugin_minor(op_kind, params, n_inputs, inputs, n_outputs, outputs,
                                         p->name.c_str(), p->api->abi_version_minor))
    return st;
  return call_slot(p, "op_supported", [&] {
    return p->api->op_supported(device->index, op_kind, params, n_inputs, inputs, n_outputs,
                                outputs);
  });
}

NNP_API nnp_status nnp_op_infer_shapes(int32_t op_kind, const void* params, size_t n_inputs,
                                       const DLTensor* const* inputs, size_t n_outputs,
                                       nnp_shape* out_shapes) {
  return infer_shapes(op_kind, params, n_inputs, inputs, n_outputs, out_shapes);
}

#include "generated/op_wrappers.inc"

}  // extern "C"
