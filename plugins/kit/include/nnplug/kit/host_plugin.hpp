// nnplug/kit/host_plugin.hpp — a whole plugin function table for a backend whose devices are
// host memory (DLPack kDLCPU) with synchronous streams: the backend describes itself once, in a
// constexpr host_backend (name, version, kernel rows, device properties, optional hooks), and
// host_plugin_table<B>() fills every slot of nnplug_plugin.h from that description. The
// reference and cpu backends, the template's C++ variant and the test fixtures are written
// this way; a plugin for a discrete device fills its slots itself (kit::table, plugin.hpp).
//
// What the slots do (the contract of nnplug.h for synchronous host devices):
//  - get_device_count: n_devices, and no_device_reason when that is 0;
//  - get_device_props: name "<name>:<index>", plugin_name, description, kDLCPU, device_id =
//    index, memory_bytes = physical memory, auto_priority, num_threads = 1; then the props
//    hook may change any of them; only the fields the caller's struct_size holds are written;
//  - mem_alloc / mem_free: 64-byte aligned host memory (host_device.hpp);
//  - streams: each stream remembers its device (or is whatever stream_new returns); ops and
//    copies are complete when op_execute / memcpy_async return, so stream_synchronize has
//    nothing to wait for and host buffers may be reused at once;
//  - memcpy_async: the kind is checked; overlapping ranges are moved with memmove, others by
//    the copy hook (default memcpy);
//  - stream_set_attribute: NNP_STREAM_ATTR_ALLOW_TF32 takes 0 or 1 and is ignored (no TF32 on
//    a CPU: float32 math is full precision); any other attribute is UNSUPPORTED;
//  - op_supported / op_execute: the kernel rows (plugin.hpp), so the two always agree;
//  - initialize / shutdown: the hooks, or NULL (optional slots) when there are none.
// Every slot runs inside nnp::guard: errors become statuses with their message.
//
// Example (a complete plugin):
//   const nnp::kit::op_row kRows[] = {{NNP_OP_SCALE, nnp::kit::f32, scale}};
//   constexpr nnp::kit::host_backend kBackend =
//       nnp::kit::host_backend_of("mine", "1.0.0", kRows, "my backend (float32 scale)");
//   const nnp_plugin_api kTable = nnp::kit::host_plugin_table<kBackend>();
//   NNP_KIT_PLUGIN_ENTRY(kTable)
//
// Thread safety: the slots keep no shared state of their own (hooks must be thread-safe as
// the slots they serve). Header-only; C++17.
#pragma once

#include <nnplug/kit/host_device.hpp>
#include <nnplug/kit/plugin.hpp>

#include <string>
#include <vector>

namespace nnp::kit {

struct host_backend {
  const char* name;     // the plugin name (libnnplug-<name>.so); devices are "<name>:<i>"
  const char* version;  // the plugin's version string
  const op_row* rows;   // the kernel rows (plugin.hpp)
  size_t n_rows;
  const char* description;                 // nnp_device_props.description
  int32_t n_devices = 1;                   // devices this plugin exposes
  const char* no_device_reason = nullptr;  // get_device_count's reason when n_devices is 0
  int32_t auto_priority = 0;               // nnp_device_props.auto_priority
  uint64_t memory_bytes = 0;               // 0: the machine's physical memory

  // Optional hooks; nullptr gives the default described above.
  void (*props)(int32_t index, nnp_device_props& props) = nullptr;  // adjusts the defaults
  void (*initialize)() = nullptr;  // the initialize slot; throws nnp::error to refuse loading
  void (*shutdown)() = nullptr;    // the shutdown slot; must not throw
  void* (*stream_new)(int32_t index) = nullptr;  // a stream's state (default: its index)
  void (*stream_delete)(void* stream) = nullptr;
  void (*copy)(void* dst, const void* src, size_t size_bytes) = nullptr;  // disjoint ranges
  // Instead of rows: the row lists of the backend's kernel files (plugin.hpp's op_row_list).
  const op_row_list* const* lists = nullptr;
  size_t n_lists = 0;
};

// A host_backend with the required fields; set the optional ones on the result (in a
// constexpr lambda, C++17 has no designated initialisers).
template <size_t N>
constexpr host_backend host_backend_of(const char* name, const char* version,
                                       const op_row (&rows)[N], const char* description) {
  host_backend b{name, version, rows, N, description};
  return b;
}
// The same for a backend whose kernel files each define an op_row_list.
template <size_t N>
constexpr host_backend host_backend_of(const char* name, const char* version,
                                       const op_row_list* const (&lists)[N],
                                       const char* description) {
  host_backend b{name, version, nullptr, 0, description};
  b.lists = lists;
  b.n_lists = N;
  return b;
}

namespace host_slots {

struct default_stream {
  int32_t device;
};

template <const host_backend& B>
void check_device(int32_t index) {
  if (index < 0 || index >= B.n_devices)
    fail(NNP_STATUS_INVALID_ARGUMENT,
         format("device index %d out of range (the %s backend has %d device%s)", index, B.name,
                B.n_devices, B.n_devices == 1 ? "" : "s"));
}

template <const host_backend& B>
inline constexpr op_rows kOps =
    op_rows{B.name, B.rows, B.n_rows, check_device<B>, B.lists, B.n_lists};

template <const host_backend& B>
nnp_status get_device_count(int32_t* n_devices, const char** reason) {
  return guard([&] {
    if (n_devices == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "n_devices is NULL");
    *n_devices = B.n_devices;
    if (reason != nullptr) *reason = B.n_devices == 0 ? B.no_device_reason : nullptr;
  });
}

template <const host_backend& B>
nnp_status get_device_props(int32_t index, nnp_device_props* props) {
  return guard([&] {
    check_device<B>(index);
    if (props == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "props is NULL");
    // The device names live as long as the plugin: built once, on first use.
    static const std::vector<std::string> names = [] {
      std::vector<std::string> v;
      for (int32_t i = 0; i < B.n_devices; ++i) v.push_back(format("%s:%d", B.name, i));
      return v;
    }();
    nnp_device_props full{};
    full.struct_size = props->struct_size;
    full.name = names[static_cast<size_t>(index)].c_str();
    full.plugin_name = B.name;
    full.description = B.description;
    full.device_type = kDLCPU;
    full.device_id = index;
    full.memory_bytes = B.memory_bytes != 0 ? B.memory_bytes : host_memory_bytes();
    full.auto_priority = B.auto_priority;
    full.num_threads = 1;
    if (B.props != nullptr) B.props(index, full);
    full.struct_size = props->struct_size;
    std::memcpy(props, &full, std::min<size_t>(props->struct_size, sizeof full));
  });
}

template <const host_backend& B>
nnp_status mem_alloc(int32_t index, size_t size_bytes, void** ptr) {
  return guard([&] {
    check_device<B>(index);
    if (ptr == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "ptr is NULL");
    *ptr = host_alloc(size_bytes, B.name);
  });
}

template <const host_backend& B>
nnp_status mem_free(int32_t index, void* ptr) {
  return guard([&] {
    check_device<B>(index);
    host_free(ptr);
  });
}

template <const host_backend& B>
nnp_status stream_create(int32_t index, void** stream) {
  return guard([&] {
    check_device<B>(index);
    if (stream == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "stream is NULL");
    *stream = B.stream_new != nullptr ? B.stream_new(index) : new default_stream{index};
  });
}

template <const host_backend& B>
nnp_status stream_destroy(void* stream) {
  return guard([&] {
    if (B.stream_delete != nullptr)
      B.stream_delete(stream);
    else
      delete static_cast<default_stream*>(stream);
  });
}

inline nnp_status stream_synchronize(void* stream) {
  return guard([&] {
    if (stream == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "stream is NULL");
    // Every op and copy finished inside its call: nothing is pending.
  });
}

template <const host_backend& B>
nnp_status memcpy_async(void* stream, void* dst, const void* src, size_t size_bytes, int32_t kind) {
  return guard([&] {
    if (stream == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "stream is NULL");
    const auto d = reinterpret_cast<uintptr_t>(dst);
    const auto s = reinterpret_cast<uintptr_t>(src);
    const bool overlap = d < s + size_bytes && s < d + size_bytes;
    if (B.copy == nullptr || overlap || size_bytes == 0) {
      host_memcpy(dst, src, size_bytes, kind);
      return;
    }
    check_memcpy_kind(kind);
    if (dst == nullptr || src == nullptr)
      fail(NNP_STATUS_INVALID_ARGUMENT, "memcpy with a NULL pointer");
    B.copy(dst, src, size_bytes);
  });
}

template <const host_backend& B>
nnp_status stream_set_attribute(void* stream, int32_t attribute, int64_t value) {
  return guard([&] {
    if (stream == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "stream is NULL");
    accept_stream_attribute(attribute, value, B.name);
  });
}

template <const host_backend& B>
nnp_status initialize() {
  return guard([] { B.initialize(); });
}

template <const host_backend& B>
void shutdown() {
  (void)guard([] { B.shutdown(); });
}

}  // namespace host_slots

// The complete function table of the host backend B (a constexpr host_backend with static
// storage). The caller may replace slots of the returned table before publishing it.
template <const host_backend& B>
nnp_plugin_api host_plugin_table() {
  namespace hs = host_slots;
  nnp_plugin_api t = table(B.name, B.version);
  t.initialize = B.initialize != nullptr ? hs::initialize<B> : nullptr;
  t.shutdown = B.shutdown != nullptr ? hs::shutdown<B> : nullptr;
  t.get_device_count = hs::get_device_count<B>;
  t.get_device_props = hs::get_device_props<B>;
  set_memory_slots(t, hs::mem_alloc<B>, hs::mem_free<B>, hs::stream_create<B>,
                   hs::stream_destroy<B>, hs::stream_synchronize, hs::memcpy_async<B>);
  t.op_supported = op_supported_slot<hs::kOps<B>>;
  t.op_execute = op_execute_slot<hs::kOps<B>>;
  t.stream_set_attribute = hs::stream_set_attribute<B>;
  return t;
}

}  // namespace nnp::kit
