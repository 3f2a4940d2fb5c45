// Streams of libnnplug: create/destroy/synchronize/attributes, forwarded to the owning plugin.
// Live streams are tracked so nnp_shutdown() can destroy them and a destroyed handle is
// rejected instead of reaching a plugin.
#include "internal.hpp"

namespace nnp::host {

nnp_status check_stream(const char* func, const char* arg, const nnp_stream* stream) {
  if (stream == nullptr)
    return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT, "%s: %s is NULL", func, arg);
  if (stream->magic != nnp_stream::kMagic)
    return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                           "%s: %s is not a valid nnp_stream (destroyed?)", func, arg);
  return NNP_STATUS_OK;
}

nnp_status wait_for_devices(const nnp_device* a, const nnp_device* b) {
  registry& r = get_registry();
  nnp_status first = NNP_STATUS_OK;
  std::string first_message;
  std::lock_guard<std::mutex> lock(r.streams_mutex);
  for (nnp_stream* s : r.streams) {
    if (s->device != a && s->device != b) continue;
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

}  // namespace nnp::host

using namespace nnp::host;

extern "C" {

NNP_API nnp_status nnp_stream_create(nnp_device* device, nnp_stream** stream) {
  if (nnp_status st = check_device("nnp_stream_create", "device", device)) return st;
  if (stream == nullptr)
    return set_last_error(NNP_STATUS_INVALID_ARGUMENT, "nnp_stream_create: stream is NULL");
  try {
    const nnp_plugin* p = device->plugin;
    void* handle = nullptr;
    const nnp_status st = call_slot(p, "stream_create",
                                    [&] { return p->api->stream_create(device->index, &handle); });
    if (st != NNP_STATUS_OK) return st;
    auto* s = new nnp_stream();
    s->device = device;
    s->handle = handle;
    registry& r = get_registry();
    {
      std::lock_guard<std::mutex> lock(r.streams_mutex);
      r.streams.insert(s);
    }
    *stream = s;
    return NNP_STATUS_OK;
  } catch (const std::bad_alloc&) {
    return set_last_error(NNP_STATUS_OUT_OF_MEMORY, "nnp_stream_create: out of host memory");
  }
}

NNP_API nnp_status nnp_stream_destroy(nnp_stream* stream) {
  if (stream == nullptr) return NNP_STATUS_OK;
  registry& r = get_registry();
  {
    std::lock_guard<std::mutex> lock(r.streams_mutex);
    if (r.streams.erase(stream) == 0)
      return set_last_error(NNP_STATUS_INVALID_ARGUMENT,
                            "nnp_stream_destroy: stream is not a live nnp_stream (destroyed "
                            "twice, or after nnp_shutdown?)");
  }
  const nnp_plugin* p = stream->device->plugin;
  const nnp_status st =
      call_slot(p, "stream_destroy", [&] { return p->api->stream_destroy(stream->handle); });
  const nnp_status pending = st == NNP_STATUS_OK ? take_pending(stream) : NNP_STATUS_OK;
  stream->magic = 0;
  delete stream;
  return st != NNP_STATUS_OK ? st : pending;
}

NNP_API nnp_status nnp_stream_synchronize(nnp_stream* stream) {
  if (nnp_status st = check_stream("nnp_stream_synchronize", "stream", stream)) return st;
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
  return take_pending(stream);
}

NNP_API nnp_device* nnp_stream_device(const nnp_stream* stream) {
  if (stream == nullptr || stream->magic != nnp_stream::kMagic) return nullptr;
  return stream->device;
}

NNP_API nnp_status nnp_stream_set_attribute(nnp_stream* stream, int32_t attribute, int64_t value) {
  if (nnp_status st = check_stream("nnp_stream_set_attribute", "stream", stream)) return st;
  if (attribute != NNP_STREAM_ATTR_ALLOW_TF32)
    return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                           "nnp_stream_set_attribute: attribute: expected an "
                           "nnp_stream_attribute (1 = ALLOW_TF32), got %d",
                           static_cast<int>(attribute));
  if (attribute == NNP_STREAM_ATTR_ALLOW_TF32 && value != 0 && value != 1)
    return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                           "nnp_stream_set_attribute: ALLOW_TF32 value: expected 0 or 1, got %lld",
                           static_cast<long long>(value));
  const nnp_plugin* p = stream->device->plugin;
  if (!has_slot(p, &nnp_plugin_api::stream_set_attribute))
    return set_last_errorf(NNP_STATUS_UNSUPPORTED,
                           "nnp_stream_set_attribute: plugin '%s' has no stream attributes",
                           p->name.c_str());
  return call_slot(p, "stream_set_attribute",
                   [&] { return p->api->stream_set_attribute(stream->handle, attribute, value); });
}

}  // extern "C"
