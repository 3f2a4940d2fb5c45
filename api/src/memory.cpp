// Device memory of libnnplug: nnp_malloc/nnp_free (every allocation is tracked, pointer ->
// device, so a foreign pointer is rejected) and copies host<->device, within a device, and
// across devices and plugins (staged through host memory when there is no direct path).
//
// Copy routes (decide_route):
//   host -> host                 std::memcpy
//   host -> device, device->host the device plugin's memcpy_async (H2D / D2H)
//   same device                  the plugin's memcpy_async (D2D)
//   two host-memory (kDLCPU) devices of different plugins or indices: std::memcpy after
//                                synchronising the stream given (both are host memory)
//   any other pair               D2H into a host staging buffer, then H2D (synchronous)
// Synchronous copies (nnp_memcpy, and the staged route) use one internal stream per device,
// created on first use and guarded by the device's copy mutex.
//
// nnp_malloc, nnp_free and nnp_memcpy run inside the call gate (handles.hpp);
// nnp_memcpy_async with a stream holds the stream instead.
#include "internal.hpp"

#include <cstring>
#include <tuple>
#include <vector>

using namespace nnp::host;

namespace {

// Queues a copy within one device's plugin on `stream_handle`.
nnp_status plugin_copy(const nnp_device* dev, void* stream_handle, void* dst, const void* src,
                       size_t size_bytes, nnp_memcpy_kind kind) {
  const nnp_plugin* p = dev->plugin;
  return call_slot(p, "memcpy_async",
                   [&] { return p->api->memcpy_async(stream_handle, dst, src, size_bytes, kind); });
}

// Runs a copy on the device's internal copy stream and waits for it.
nnp_status plugin_copy_sync(nnp_device* dev, void* dst, const void* src, size_t size_bytes,
                            nnp_memcpy_kind kind) {
  const nnp_plugin* p = dev->plugin;
  std::lock_guard<std::mutex> lock(dev->copy_mutex);
  if (dev->copy_stream == nullptr) {
    void* handle = nullptr;
    const nnp_status st =
        call_slot(p, "stream_create", [&] { return p->api->stream_create(dev->index, &handle); });
    if (st != NNP_STATUS_OK) return st;
    dev->copy_stream = handle;
  }
  nnp_status st = plugin_copy(dev, dev->copy_stream, dst, src, size_bytes, kind);
  const nnp_status sync = call_slot(p, "stream_synchronize",
                                    [&] { return p->api->stream_synchronize(dev->copy_stream); });
  return st != NNP_STATUS_OK ? st : sync;
}

// Copy within one plugin's memory: on the user's stream when given, else synchronously.
nnp_status one_device_copy(nnp_stream* stream, nnp_device* dev, void* dst, const void* src,
                           size_t size_bytes, nnp_memcpy_kind kind) {
  if (stream != nullptr) return plugin_copy(dev, stream->handle, dst, src, size_bytes, kind);
  return plugin_copy_sync(dev, dst, src, size_bytes, kind);
}

nnp_status sync_stream(nnp_stream* stream) {
  if (stream == nullptr) return NNP_STATUS_OK;
  const nnp_plugin* p = stream->device->plugin;
  return call_slot(p, "stream_synchronize",
                   [&] { return p->api->stream_synchronize(stream->handle); });
}

bool is_host_memory_device(const nnp_device* d) { return d->dl.device_type == kDLCPU; }

// The device of a live nnp_malloc allocation that holds address p, if that device's memory is
// not the host's; else NULL.
const nnp_device* device_owning(const void* p) {
  registry& r = get_registry();
  std::lock_guard<std::mutex> lock(r.allocations_mutex);
  auto it = r.allocations.upper_bound(p);
  if (it == r.allocations.begin()) return nullptr;
  --it;
  const auto base = reinterpret_cast<uintptr_t>(it->first);
  const auto at = reinterpret_cast<uintptr_t>(p);
  if (at - base >= it->second.size_bytes || is_host_memory_device(it->second.device))
    return nullptr;
  return it->second.device;
}

nnp_status cross_device_copy(nnp_stream* stream, nnp_device* dst_dev, void* dst,
                             nnp_device* src_dev, const void* src, size_t size_bytes) {
  // Keep stream order: everything queued before this copy completes first.
  if (nnp_status st = sync_stream(stream)) return st;
  if (is_host_memory_device(dst_dev) && is_host_memory_device(src_dev)) {
    std::memmove(dst, src, size_bytes);
    return NNP_STATUS_OK;
  }
  std::vector<unsigned char> staging;
  try {
    staging.resize(size_bytes);
  } catch (const std::bad_alloc&) {
    return set_last_errorf(NNP_STATUS_OUT_OF_MEMORY,
                           "nnp_memcpy: cannot allocate a %zu-byte host staging buffer",
                           size_bytes);
  }
  if (nnp_status st =
          plugin_copy_sync(src_dev, staging.data(), src, size_bytes, NNP_MEMCPY_DEVICE_TO_HOST))
    return st;
  return plugin_copy_sync(dst_dev, dst, staging.data(), size_bytes, NNP_MEMCPY_HOST_TO_DEVICE);
}

// The copy itself, with the handles resolved (and the stream held, or the call gate entered).
nnp_status do_memcpy(const char* func, nnp_stream* stream, const nnp_device* dst_handle, void* dst,
                     const nnp_device* src_handle, const void* src, size_t size_bytes) {
  nnp_device* dst_device = nullptr;
  nnp_device* src_device = nullptr;
  if (dst_handle != nullptr)
    if (nnp_status st = resolve_device(func, "dst_device", dst_handle, &dst_device)) return st;
  if (src_handle != nullptr)
    if (nnp_status st = resolve_device(func, "src_device", src_handle, &src_device)) return st;
  if (stream != nullptr) {
    if (stream->device != dst_device && stream->device != src_device)
      return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                             "%s: stream belongs to %s, which is neither dst_device (%s) nor "
                             "src_device (%s)",
                             func, stream->device->name.c_str(),
                             dst_device ? dst_device->name.c_str() : "host",
                             src_device ? src_device->name.c_str() : "host");
  }
  if (stream != nullptr && is_capturing(stream) &&
      (dst_device != stream->device || src_device != stream->device))
    return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                           "%s: the stream is capturing a graph, which records only copies within "
                           "%s (this one is %s to %s); copy host data into device buffers outside "
                           "the capture",
                           func, stream->device->name.c_str(),
                           src_device ? src_device->name.c_str() : "host",
                           dst_device ? dst_device->name.c_str() : "host");
  if (size_bytes == 0) return NNP_STATUS_OK;
  if (dst == nullptr)
    return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT, "%s: dst is NULL with size_bytes %zu", func,
                           size_bytes);
  if (src == nullptr)
    return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT, "%s: src is NULL with size_bytes %zu", func,
                           size_bytes);
  // A pointer given as host memory (NULL device) that is a live allocation of a device whose
  // memory the host cannot address: copying through it would fault.
  for (const auto& [label, ptr, dev] :
       {std::tuple<const char*, const void*, nnp_device*>{"dst", dst, dst_device},
        std::tuple<const char*, const void*, nnp_device*>{"src", src, src_device}}) {
    if (dev != nullptr) continue;
    if (const nnp_device* owner = device_owning(ptr))
      return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                             "%s: %s %p is memory of %s (from nnp_malloc), which the host cannot "
                             "address; pass that device as %s_device",
                             func, label, ptr, owner->name.c_str(), label);
  }
  if (stream != nullptr && is_capturing(stream)) return capture_copy(stream, dst, src, size_bytes);

  if (dst_device == nullptr && src_device == nullptr) {
    std::memmove(dst, src, size_bytes);
    return NNP_STATUS_OK;
  }
  // nnp_memcpy follows the legacy-stream rule: it is ordered after all work already queued on
  // the streams of the devices involved (nnplug.h).
  if (stream == nullptr)
    if (nnp_status st = wait_for_devices(dst_device, src_device)) return st;
  if (src_device == nullptr)
    return one_device_copy(stream, dst_device, dst, src, size_bytes, NNP_MEMCPY_HOST_TO_DEVICE);
  if (dst_device == nullptr)
    return one_device_copy(stream, src_device, dst, src, size_bytes, NNP_MEMCPY_DEVICE_TO_HOST);
  if (dst_device == src_device)
    return one_device_copy(stream, dst_device, dst, src, size_bytes, NNP_MEMCPY_DEVICE_TO_DEVICE);
  return cross_device_copy(stream, dst_device, dst, src_device, src, size_bytes);
}

}  // namespace

extern "C" {

NNP_API nnp_status nnp_malloc(nnp_device* handle, size_t size_bytes, void** ptr) {
  gate_guard in_call(get_registry().gate);
  nnp_device* device = nullptr;
  if (nnp_status st = resolve_device("nnp_malloc", "device", handle, &device)) return st;
  if (ptr == nullptr) return set_last_error(NNP_STATUS_INVALID_ARGUMENT, "nnp_malloc: ptr is NULL");
  if (size_bytes == 0)
    return set_last_error(NNP_STATUS_INVALID_ARGUMENT,
                          "nnp_malloc: size_bytes: expected > 0, got 0");
  const nnp_plugin* p = device->plugin;
  void* mem = nullptr;
  const nnp_status st =
      call_slot(p, "mem_alloc", [&] { return p->api->mem_alloc(device->index, size_bytes, &mem); });
  if (st != NNP_STATUS_OK) return st;
  if (mem == nullptr)
    return set_last_errorf(NNP_STATUS_INTERNAL, "%s: mem_alloc returned OK and a NULL pointer",
                           p->name.c_str());
  try {
    registry& r = get_registry();
    std::lock_guard<std::mutex> lock(r.allocations_mutex);
    r.allocations.emplace(mem, allocation{device, size_bytes});
  } catch (const std::bad_alloc&) {
    p->api->mem_free(device->index, mem);
    return set_last_error(NNP_STATUS_OUT_OF_MEMORY, "nnp_malloc: out of host memory");
  }
  *ptr = mem;
  return NNP_STATUS_OK;
}

NNP_API nnp_status nnp_free(nnp_device* handle, void* ptr) {
  if (ptr == nullptr) return NNP_STATUS_OK;
  registry& r = get_registry();
  gate_guard in_call(r.gate);
  nnp_device* device = nullptr;
  if (nnp_status st = resolve_device("nnp_free", "device", handle, &device)) return st;
  {
    std::lock_guard<std::mutex> lock(r.allocations_mutex);
    auto it = r.allocations.find(ptr);
    if (it == r.allocations.end())
      return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                             "nnp_free: ptr %p was not allocated by nnp_malloc (or was already "
                             "freed)",
                             ptr);
    if (it->second.device != device)
      return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                             "nnp_free: ptr %p was allocated on %s, not on %s", ptr,
                             it->second.device->name.c_str(), device->name.c_str());
  }
  // Queued work may still use the memory: wait for the device's streams first. Their errors
  // stay pending on the streams; the memory is freed regardless.
  (void)wait_for_devices(device);
  {
    std::lock_guard<std::mutex> lock(r.allocations_mutex);
    if (r.allocations.erase(ptr) == 0)  // another thread freed it while we waited
      return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT, "nnp_free: ptr %p was already freed",
                             ptr);
  }
  const nnp_plugin* p = device->plugin;
  return call_slot(p, "mem_free", [&] { return p->api->mem_free(device->index, ptr); });
}

NNP_API nnp_status nnp_memcpy_async(nnp_stream* handle, nnp_device* dst_device, void* dst,
                                    nnp_device* src_device, const void* src, size_t size_bytes) {
  if (handle == nullptr) {
    gate_guard in_call(get_registry().gate);
    return do_memcpy("nnp_memcpy_async", nullptr, dst_device, dst, src_device, src, size_bytes);
  }
  // Holding the stream keeps nnp_shutdown from releasing the devices too (it destroys every
  // stream before it releases anything else).
  stream_lock stream;
  if (nnp_status st = stream.lock("nnp_memcpy_async", "stream", handle)) return st;
  return do_memcpy("nnp_memcpy_async", stream.get(), dst_device, dst, src_device, src, size_bytes);
}

NNP_API nnp_status nnp_memcpy(nnp_device* dst_device, void* dst, nnp_device* src_device,
                              const void* src, size_t size_bytes) {
  gate_guard in_call(get_registry().gate);
  return do_memcpy("nnp_memcpy", nullptr, dst_device, dst, src_device, src, size_bytes);
}

}  // extern "C"
