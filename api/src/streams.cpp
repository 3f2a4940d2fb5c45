// Streams of libnnplug: create/destroy/synchronize/attributes/native handle, forwarded to the
// owning plugin. Live streams are tracked so nnp_shutdown() can destroy them. Every call on a
// stream holds the stream's slot mutex (stream_lock): calls on one stream are serialised, a
// destroyed stream's handle is refused as stale, and a stream is destroyed only between calls.
#include "internal.hpp"

#include <vector>

namespace nnp::host {

nnp_status wait_for_devices(const nnp_device* a, const nnp_device* b) {
  registry& r = get_registry();
  nnp_status first = NNP_STATUS_OK;
  std::string first_message;
  std::lock_guard<std::mutex> lock(r.streams_mutex);
  for (nnp_stream* s : r.streams) {
    if (s->device != a && s->device != b) continue;
    if (is_capturing(s)) continue;  // nothing queued: synchronised when the capture began
    const nnp_plugin* p = s->device->plugin;
    const nnp_status st =
        call_slot(p, "stream_synchronize", [&] { return p->api->stream_synchronize(s->handle); });
    if (st == NNP_STATUS_OK) continue;
    const std::string message = nnp_last_error_message();
    {
      std::lock_guard<std::mutex> pl(s->pending_mutex);
      if (s->pending == NNP_STATUS_OK) {
        s->pending = st;
        s->pending_message = message;
      }
    }
    if (first == NNP_STATUS_OK) {
      first = st;
      first_message = message;
    }
  }
  if (first != NNP_STATUS_OK) return set_last_error(first, first_message);
  return NNP_STATUS_OK;
}

namespace {

// Takes the error kept for the stream by wait_for_devices, if any (message set).
nnp_status take_pending(nnp_stream* stream) {
  std::lock_guard<std::mutex> lock(stream->pending_mutex);
  const nnp_status st = stream->pending;
  if (st == NNP_STATUS_OK) return st;
  stream->pending = NNP_STATUS_OK;
  return set_last_error(st, std::move(stream->pending_message));
}

}  // namespace

nnp_status destroy_stream(stream_lock& held, bool take_error) {
  registry& r = get_registry();
  nnp_stream* stream = held.get();
  {
    std::lock_guard<std::mutex> lock(r.streams_mutex);
    r.streams.erase(stream);
  }
  // A host capture in progress is discarded (a plugin discards its own in stream_destroy).
  stream->recording.reset();
  const nnp_plugin* p = stream->device->plugin;
  const nnp_status st =
      call_slot(p, "stream_destroy", [&] { return p->api->stream_destroy(stream->handle); });
  const nnp_status pending =
      st == NNP_STATUS_OK && take_error ? take_pending(stream) : NNP_STATUS_OK;
  r.stream_handles.remove(stream->self);  // under the slot mutex: waiting calls find it stale
  held.unlock();
  delete stream;
  return st != NNP_STATUS_OK ? st : pending;
}

nnp_status destroy_all_streams() {
  registry& r = get_registry();
  return destroy_all_of<stream_lock>(r.streams_mutex, r.streams, "stream", [](stream_lock& held) {
    return destroy_stream(held, /*take_error=*/false);
  });
}

}  // namespace nnp::host

using namespace nnp::host;

extern "C" {

NNP_API nnp_status nnp_stream_create(nnp_device* handle, nnp_stream** stream) {
  registry& r = get_registry();
  gate_guard in_call(r.gate);
  nnp_device* device = nullptr;
  if (nnp_status st = resolve_device("nnp_stream_create", "device", handle, &device)) return st;
  if (stream == nullptr)
    return set_last_error(NNP_STATUS_INVALID_ARGUMENT, "nnp_stream_create: stream is NULL");
  const nnp_plugin* p = device->plugin;
  void* plugin_stream = nullptr;
  const nnp_status st = call_slot(
      p, "stream_create", [&] { return p->api->stream_create(device->index, &plugin_stream); });
  if (st != NNP_STATUS_OK) return st;
  nnp_stream* s = nullptr;
  try {
    s = new nnp_stream();
    s->device = device;
    s->handle = plugin_stream;
    s->self = r.stream_handles.add(s);
    std::lock_guard<std::mutex> lock(r.streams_mutex);
    r.streams.insert(s);
  } catch (const std::bad_alloc&) {
    if (s != nullptr && s->self != 0) r.stream_handles.remove(s->self);
    delete s;
    (void)p->api->stream_destroy(plugin_stream);
    return set_last_error(NNP_STATUS_OUT_OF_MEMORY, "nnp_stream_create: out of host memory");
  }
  *stream = reinterpret_cast<nnp_stream*>(s->self);
  return NNP_STATUS_OK;
}

NNP_API nnp_status nnp_stream_destroy(nnp_stream* handle) {
  if (handle == nullptr) return NNP_STATUS_OK;
  stream_lock held;
  if (nnp_status st = held.lock("nnp_stream_destroy", "stream", handle)) return st;
  return destroy_stream(held, /*take_error=*/true);
}

NNP_API nnp_status nnp_stream_synchronize(nnp_stream* handle) {
  stream_lock stream;
  if (nnp_status st = stream.lock("nnp_stream_synchronize", "stream", handle)) return st;
  if (is_capturing(stream.get()))
    return set_last_error(NNP_STATUS_INVALID_ARGUMENT,
                          "nnp_stream_synchronize: the stream is capturing a graph (nothing of the "
                          "capture runs until nnp_graph_launch; nnp_stream_end_capture first)");
  const nnp_plugin* p = stream->device->plugin;
  const nnp_status st = call_slot(p, "stream_synchronize",
                                  [&] { return p->api->stream_synchronize(stream->handle); });
  if (st != NNP_STATUS_OK) {
    // Errors are reported once each, oldest first: a pending one goes now, this one next time.
    std::string message = nnp_last_error_message();
    std::lock_guard<std::mutex> lock(stream->pending_mutex);
    if (stream->pending != NNP_STATUS_OK) {
      std::swap(message, stream->pending_message);
      const nnp_status older = stream->pending;
      stream->pending = st;
      return set_last_error(older, std::move(message));
    }
    return set_last_error(st, std::move(message));
  }
  return take_pending(stream.get());
}

NNP_API nnp_device* nnp_stream_device(const nnp_stream* handle) {
  stream_lock stream;
  if (stream.lock("nnp_stream_device", "stream", handle) != NNP_STATUS_OK) return nullptr;
  return reinterpret_cast<nnp_device*>(stream->device->self.load(std::memory_order_acquire));
}

NNP_API nnp_status nnp_stream_set_attribute(nnp_stream* handle, int32_t attribute, int64_t value) {
  stream_lock stream;
  if (nnp_status st = stream.lock("nnp_stream_set_attribute", "stream", handle)) return st;
  if (attribute != NNP_STREAM_ATTR_ALLOW_TF32)
    return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                           "nnp_stream_set_attribute: attribute: expected an "
                           "nnp_stream_attribute (1 = ALLOW_TF32), got %d",
                           static_cast<int>(attribute));
  if (attribute == NNP_STREAM_ATTR_ALLOW_TF32 && value != 0 && value != 1)
    return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                           "nnp_stream_set_attribute: ALLOW_TF32 value: expected 0 or 1, got %lld",
                           static_cast<long long>(value));
  if (is_capturing(stream.get()))
    return set_last_error(NNP_STATUS_INVALID_ARGUMENT,
                          "nnp_stream_set_attribute: the stream is capturing a graph (its ops "
                          "keep the attributes in force when the capture began)");
  const nnp_plugin* p = stream->device->plugin;
  if (!has_slot(p, &nnp_plugin_api::stream_set_attribute))
    return set_last_errorf(NNP_STATUS_UNSUPPORTED,
                           "nnp_stream_set_attribute: plugin '%s' has no stream attributes",
                           p->name.c_str());
  const nnp_status st = call_slot(p, "stream_set_attribute", [&] {
    return p->api->stream_set_attribute(stream->handle, attribute, value);
  });
  if (st == NNP_STATUS_OK) stream->allow_tf32 = value;
  return st;
}

NNP_API nnp_status nnp_stream_get_native(nnp_stream* handle, void** native) {
  stream_lock stream;
  if (nnp_status st = stream.lock("nnp_stream_get_native", "stream", handle)) return st;
  if (native == nullptr)
    return set_last_error(NNP_STATUS_INVALID_ARGUMENT, "nnp_stream_get_native: native is NULL");
  const nnp_plugin* p = stream->device->plugin;
  if (!has_slot(p, &nnp_plugin_api::stream_get_native))
    return set_last_errorf(NNP_STATUS_UNSUPPORTED,
                           "nnp_stream_get_native: plugin '%s' has no native streams (its "
                           "work runs inside each call or on streams it does not expose)",
                           p->name.c_str());
  void* value = nullptr;
  const nnp_status st = call_slot(
      p, "stream_get_native", [&] { return p->api->stream_get_native(stream->handle, &value); });
  if (st == NNP_STATUS_OK) *native = value;
  return st;
}

}  // extern "C"
