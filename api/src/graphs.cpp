// Graphs of libnnplug (nnplug.h, "graphs"): stream capture and replay.
//
// A plugin with the four ABI 1.4 graph slots records natively: begin/end capture go to the
// plugin, and the ops and copies queued on the capturing stream go to its op_execute and
// memcpy_async as usual (it records them). For any other plugin libnnplug records each call
// (deep copies of params and tensor descriptors) and a launch replays them through op_execute
// and memcpy_async, without validating them again.
//
// Locks: a call on a graph holds the graph's slot mutex (slot_lock, as streams); a launch holds
// the stream's, then the graph's. begin/end capture change nnp_stream::capturing under
// streams_mutex, so wait_for_devices never synchronises a stream that is being captured.
#include "internal.hpp"

#include <cstring>
#include <new>

using namespace nnp::host;

namespace nnp::host {

namespace {

class graph_lock : public slot_lock<nnp_graph, handle_kind::graph> {
 public:
  nnp_status lock(const char* func, const char* arg, const nnp_graph* handle) {
    return slot_lock::lock(get_registry().graph_handles, func, arg, handle);
  }
};

bool has_native_capture(const nnp_plugin* p) {
  return has_slot(p, &nnp_plugin_api::stream_begin_capture) &&
         has_slot(p, &nnp_plugin_api::stream_end_capture) &&
         has_slot(p, &nnp_plugin_api::graph_launch) && has_slot(p, &nnp_plugin_api::graph_destroy);
}

// Deep copy of one tensor descriptor into call.tensors[slot] (dims reserved by the caller).
const DLTensor* copy_tensor(nnp_recorded_call& call, size_t slot, const DLTensor* t) {
  if (t == nullptr) return nullptr;
  DLTensor& c = call.tensors[slot];
  c = *t;
  const auto ndim = static_cast<size_t>(t->ndim);
  const size_t at = call.dims.size();
  call.dims.insert(call.dims.end(), t->shape, t->shape + ndim);
  c.shape = call.dims.data() + at;
  if (t->strides != nullptr) {
    call.dims.insert(call.dims.end(), t->strides, t->strides + ndim);
    c.strides = call.dims.data() + at + ndim;
  }
  return &c;
}

void record_op(nnp_graph& g, int32_t op_kind, const void* params, size_t n_inputs,
               const DLTensor* const* inputs, size_t n_outputs, const DLTensor* const* outputs) {
  nnp_recorded_call call;
  call.kind = op_kind;
  if (params != nullptr) {
    size_t size;
    std::memcpy(&size, params, sizeof size);  // plugin_params: <= sizeof the struct here
    call.params.resize((size + 7) / 8);
    std::memcpy(call.params.data(), params, size);
    call.has_params = true;
  }
  size_t n_dims = 0;
  auto count = [&](const DLTensor* t) {
    if (t != nullptr) n_dims += static_cast<size_t>(t->ndim) * (t->strides != nullptr ? 2 : 1);
  };
  for (size_t i = 0; i < n_inputs; ++i) count(inputs[i]);
  for (size_t i = 0; i < n_outputs; ++i) count(outputs[i]);
  call.dims.reserve(n_dims);  // never reallocated below: the descriptors point into it
  call.tensors.resize(n_inputs + n_outputs);
  for (size_t i = 0; i < n_inputs; ++i) call.in.push_back(copy_tensor(call, i, inputs[i]));
  for (size_t i = 0; i < n_outputs; ++i)
    call.out.push_back(copy_tensor(call, n_inputs + i, outputs[i]));
  g.calls.push_back(std::move(call));
}

// Replays a host-recorded graph on a plugin stream; stops at the first error.
nnp_status replay(const nnp_graph& g, nnp_stream* stream) {
  const nnp_plugin* p = stream->device->plugin;
  for (const nnp_recorded_call& c : g.calls) {
    nnp_status st;
    if (c.kind == nnp_recorded_call::kCopy)
      st = call_slot(p, "memcpy_async", [&] {
        return p->api->memcpy_async(stream->handle, c.dst, c.src, c.size_bytes,
                                    NNP_MEMCPY_DEVICE_TO_DEVICE);
      });
    else
      st = call_slot(p, "op_execute", [&] {
        return p->api->op_execute(stream->handle, c.kind, c.has_params ? c.params.data() : nullptr,
                                  c.in.size(), c.in.data(), c.out.size(), c.out.data());
      });
    if (st != NNP_STATUS_OK) return st;
  }
  return NNP_STATUS_OK;
}

// Sets ALLOW_TF32 on a plugin stream (host-recorded launches run with the capture's value).
nnp_status set_tf32(nnp_stream* stream, int64_t value) {
  const nnp_plugin* p = stream->device->plugin;
  return call_slot(p, "stream_set_attribute", [&] {
    return p->api->stream_set_attribute(stream->handle, NNP_STREAM_ATTR_ALLOW_TF32, value);
  });
}

nnp_status launch_host_recorded(const nnp_graph& g, nnp_stream* stream) {
  const bool switch_tf32 = g.allow_tf32 != stream->allow_tf32 &&
                           has_slot(stream->device->plugin, &nnp_plugin_api::stream_set_attribute);
  if (switch_tf32)
    if (nnp_status st = set_tf32(stream, g.allow_tf32)) return st;
  const nnp_status st = replay(g, stream);
  if (switch_tf32) {
    const std::string message = st != NNP_STATUS_OK ? nnp_last_error_message() : std::string();
    const nnp_status back = set_tf32(stream, stream->allow_tf32);
    if (st != NNP_STATUS_OK) return set_last_error(st, message);
    return back;
  }
  return st;
}

// Releases a graph whose slot is held (or that never had a handle): waits for the device's
// queued work, then frees the plugin's graph.
nnp_status release_graph(nnp_graph* g) {
  (void)wait_for_devices(g->device);  // errors stay pending on their streams
  nnp_status st = NNP_STATUS_OK;
  if (g->native != nullptr) {
    const nnp_plugin* p = g->device->plugin;
    st = call_slot(p, "graph_destroy", [&] { return p->api->graph_destroy(g->native); });
  }
  return st;
}

void forget_graph(nnp_graph* g) {
  registry& r = get_registry();
  std::lock_guard<std::mutex> lock(r.graphs_mutex);
  r.graphs.erase(g);
}

}  // namespace

nnp_status capture_op(nnp_stream* stream, int32_t op_kind, const void* params, size_t n_inputs,
                      const DLTensor* const* inputs, size_t n_outputs,
                      const DLTensor* const* outputs) {
  const nnp_device* dev = stream->device;
  const nnp_plugin* p = dev->plugin;
  if (stream->capturing.load(std::memory_order_relaxed) == nnp_stream::kNativeCapture)
    return call_slot(p, "op_execute", [&] {
      return p->api->op_execute(stream->handle, op_kind, params, n_inputs, inputs, n_outputs,
                                outputs);
    });
  // Refuse now what a launch could not run.
  if (nnp_status st = call_slot(p, "op_supported", [&] {
        return p->api->op_supported(dev->index, op_kind, params, n_inputs, inputs, n_outputs,
                                    outputs);
      }))
    return st;
  try {
    record_op(*stream->recording, op_kind, params, n_inputs, inputs, n_outputs, outputs);
  } catch (const std::bad_alloc&) {
    return set_last_error(NNP_STATUS_OUT_OF_MEMORY,
                          "nnp_op_execute: out of host memory while "
                          "recording the call into a graph");
  }
  return NNP_STATUS_OK;
}

nnp_status capture_copy(nnp_stream* stream, void* dst, const void* src, size_t size_bytes) {
  const nnp_plugin* p = stream->device->plugin;
  if (stream->capturing.load(std::memory_order_relaxed) == nnp_stream::kNativeCapture)
    return call_slot(p, "memcpy_async", [&] {
      return p->api->memcpy_async(stream->handle, dst, src, size_bytes,
                                  NNP_MEMCPY_DEVICE_TO_DEVICE);
    });
  try {
    nnp_recorded_call call;
    call.dst = dst;
    call.src = src;
    call.size_bytes = size_bytes;
    stream->recording->calls.push_back(std::move(call));
  } catch (const std::bad_alloc&) {
    return set_last_error(NNP_STATUS_OUT_OF_MEMORY,
                          "nnp_memcpy_async: out of host memory while "
                          "recording the copy into a graph");
  }
  return NNP_STATUS_OK;
}

nnp_status destroy_all_graphs() {
  registry& r = get_registry();
  return destroy_all_of<graph_lock>(r.graphs_mutex, r.graphs, "graph", [&r](graph_lock& held) {
    nnp_graph* g = held.get();
    const nnp_status st = release_graph(g);
    forget_graph(g);
    r.graph_handles.remove(g->self);
    held.unlock();
    delete g;
    return st;
  });
}

}  // namespace nnp::host

extern "C" {

NNP_API nnp_status nnp_stream_begin_capture(nnp_stream* handle) {
  constexpr const char* kFunc = "nnp_stream_begin_capture";
  stream_lock stream;
  if (nnp_status st = stream.lock(kFunc, "stream", handle)) return st;
  if (is_capturing(stream.get()))
    return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                           "%s: stream is already capturing (nnp_stream_end_capture first)", kFunc);
  nnp_stream* s = stream.get();
  const nnp_plugin* p = s->device->plugin;
  // Work queued before the capture runs now, outside the graph; its error stays with the
  // stream, as nnp_memcpy leaves one (reported by the next nnp_stream_synchronize).
  if (const nnp_status st = call_slot(p, "stream_synchronize",
                                      [&] { return p->api->stream_synchronize(s->handle); })) {
    std::lock_guard<std::mutex> lock(s->pending_mutex);
    if (s->pending == NNP_STATUS_OK) {
      s->pending = st;
      s->pending_message = nnp_last_error_message();
    }
  }
  registry& r = get_registry();
  if (has_native_capture(p)) {
    std::lock_guard<std::mutex> lock(r.streams_mutex);
    if (nnp_status st = call_slot(p, "stream_begin_capture",
                                  [&] { return p->api->stream_begin_capture(s->handle); }))
      return st;
    s->capturing.store(nnp_stream::kNativeCapture, std::memory_order_release);
    return NNP_STATUS_OK;
  }
  try {
    s->recording = std::make_unique<nnp_graph>();
  } catch (const std::bad_alloc&) {
    return set_last_errorf(NNP_STATUS_OUT_OF_MEMORY, "%s: out of host memory", kFunc);
  }
  s->recording->device = s->device;
  s->recording->allow_tf32 = s->allow_tf32;
  std::lock_guard<std::mutex> lock(r.streams_mutex);
  s->capturing.store(nnp_stream::kHostCapture, std::memory_order_release);
  return NNP_STATUS_OK;
}

NNP_API nnp_status nnp_stream_end_capture(nnp_stream* handle, nnp_graph** out) {
  constexpr const char* kFunc = "nnp_stream_end_capture";
  stream_lock stream;
  if (nnp_status st = stream.lock(kFunc, "stream", handle)) return st;
  nnp_stream* s = stream.get();
  if (!is_capturing(s))
    return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                           "%s: stream is not capturing (nnp_stream_begin_capture first)", kFunc);
  if (out == nullptr)
    return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT, "%s: graph is NULL (the capture goes on)",
                           kFunc);
  registry& r = get_registry();
  std::unique_ptr<nnp_graph> g;
  if (s->capturing.load(std::memory_order_relaxed) == nnp_stream::kNativeCapture) {
    const nnp_plugin* p = s->device->plugin;
    void* native = nullptr;
    nnp_status st;
    {
      std::lock_guard<std::mutex> lock(r.streams_mutex);
      st = call_slot(p, "stream_end_capture",
                     [&] { return p->api->stream_end_capture(s->handle, &native); });
      s->capturing.store(nnp_stream::kNotCapturing, std::memory_order_release);
    }
    if (st != NNP_STATUS_OK) return st;
    if (native == nullptr)
      return set_last_errorf(NNP_STATUS_INTERNAL,
                             "%s: stream_end_capture returned OK and a NULL graph",
                             p->name.c_str());
    try {
      g = std::make_unique<nnp_graph>();
    } catch (const std::bad_alloc&) {
      (void)p->api->graph_destroy(native);
      return set_last_errorf(NNP_STATUS_OUT_OF_MEMORY, "%s: out of host memory", kFunc);
    }
    g->device = s->device;
    g->native = native;
  } else {
    std::lock_guard<std::mutex> lock(r.streams_mutex);
    g = std::move(s->recording);
    s->capturing.store(nnp_stream::kNotCapturing, std::memory_order_release);
  }
  try {
    g->self = r.graph_handles.add(g.get());
    std::lock_guard<std::mutex> lock(r.graphs_mutex);
    r.graphs.insert(g.get());
  } catch (const std::bad_alloc&) {
    if (g->self != 0) r.graph_handles.remove(g->self);
    (void)release_graph(g.get());
    return set_last_errorf(NNP_STATUS_OUT_OF_MEMORY, "%s: out of host memory", kFunc);
  }
  *out = reinterpret_cast<nnp_graph*>(g.release()->self);
  return NNP_STATUS_OK;
}

NNP_API nnp_status nnp_graph_launch(nnp_graph* graph_handle, nnp_stream* stream_handle) {
  constexpr const char* kFunc = "nnp_graph_launch";
  stream_lock stream;
  if (nnp_status st = stream.lock(kFunc, "stream", stream_handle)) return st;
  graph_lock graph;
  if (nnp_status st = graph.lock(kFunc, "graph", graph_handle)) return st;
  nnp_stream* s = stream.get();
  const nnp_graph* g = graph.get();
  if (is_capturing(s))
    return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                           "%s: stream is capturing; graphs cannot be launched into a capture",
                           kFunc);
  if (s->device != g->device)
    return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                           "%s: stream belongs to %s, but the graph was captured on %s", kFunc,
                           s->device->name.c_str(), g->device->name.c_str());
  if (g->native == nullptr) return launch_host_recorded(*g, s);
  const nnp_plugin* p = s->device->plugin;
  return call_slot(p, "graph_launch", [&] { return p->api->graph_launch(g->native, s->handle); });
}

NNP_API nnp_status nnp_graph_destroy(nnp_graph* handle) {
  if (handle == nullptr) return NNP_STATUS_OK;
  graph_lock held;
  if (nnp_status st = held.lock("nnp_graph_destroy", "graph", handle)) return st;
  nnp_graph* g = held.get();
  const nnp_status st = release_graph(g);
  forget_graph(g);
  get_registry().graph_handles.remove(g->self);  // under the slot mutex: waiters find it stale
  held.unlock();
  delete g;
  return st;
}

}  // extern "C"
