// Internal declarations of libnnplug: the registry of loaded plugins, their devices and
// streams, the thread-local last error, logging, and the call wrapper around plugin slots.
//
// Ownership: one registry object, allocated on first use and never destroyed by a static
// destructor (nnp_shutdown() empties it explicitly). Plugins and devices are owned by the
// registry and live until nnp_shutdown(); streams until nnp_stream_destroy()/nnp_shutdown().
//
// The structs nnp_plugin, nnp_device and nnp_stream below are libnnplug's objects; the
// nnp_plugin*, nnp_device* and nnp_stream* values the caller holds are handles (handles.hpp),
// never their addresses. Every public function turns a handle into its object first
// (resolve_device, stream_lock, resolve_plugin) and never dereferences a handle.
#pragma once

#include "handles.hpp"

#include <nnplug/nnplug.h>

#include <boost/dll/shared_library.hpp>

#include <atomic>
#include <cstdint>
#include <type_traits>
#include <deque>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <map>
#include <unordered_set>
#include <vector>

// ------------------------------------------------------------------------------ handles --
struct nnp_device {
  std::atomic<uintptr_t> self{0};  // its handle, made when first handed out (device_handle)
  nnp_plugin* plugin = nullptr;
  int32_t index = 0;         // the plugin's device index
  std::string name;          // "<plugin>:<index>"
  std::string description;   // copied from the plugin's props
  nnp_device_props props{};  // name/plugin_name/description point into this object
  DLDevice dl{kDLCPU, 0};
  // Internal stream for synchronous copies (nnp_memcpy), created on first use.
  std::mutex copy_mutex;
  void* copy_stream = nullptr;
};

struct nnp_plugin {
  std::atomic<uintptr_t> self{0};  // its handle, made when first handed out (plugin_handle)
  std::string name;
  std::string path;
  std::string version;
  boost::dll::shared_library library;
  const nnp_plugin_api* api = nullptr;
  size_t api_size = 0;  // min(api->struct_size, sizeof(nnp_plugin_api)): the slots we may read
  nnp_host_api host{};  // host services given to this plugin; host_context = this
  bool initialized = false;
  std::string zero_devices_reason;  // the plugin's reason when it has 0 devices
  std::vector<std::unique_ptr<nnp_device>> devices;
};

// One call recorded by a host capture (graphs.cpp): an op with deep copies of its params and
// tensor descriptors, or a device-to-device copy (kind = kCopy).
struct nnp_recorded_call {
  static constexpr int32_t kCopy = -1;
  int32_t kind = kCopy;
  std::vector<uint64_t> params;  // the params struct (struct_size bytes), 8-byte aligned
  bool has_params = false;
  std::vector<DLTensor> tensors;         // inputs, then outputs (absent ones unused)
  std::vector<int64_t> dims;             // their shapes and strides
  std::vector<const DLTensor*> in, out;  // into `tensors`, NULL for absent optional ones
  void* dst = nullptr;                   // copies
  const void* src = nullptr;
  size_t size_bytes = 0;
};

// A graph (nnplug.h, "graphs"): the plugin's own (native) or the calls libnnplug recorded.
struct nnp_graph {
  uintptr_t self = 0;  // its handle
  nnp_device* device = nullptr;
  void* native = nullptr;  // the plugin's graph, or NULL for a host-recorded one
  std::vector<nnp_recorded_call> calls;
  int64_t allow_tf32 = 0;  // the stream attribute at capture (host-recorded graphs)
};

struct nnp_stream {
  uintptr_t self = 0;  // its handle
  nnp_device* device = nullptr;
  void* handle = nullptr;  // the plugin's stream
  // Graph capture (graphs.cpp). `capturing` is read without the slot mutex by wait_for_devices
  // (under streams_mutex, which begin/end capture also hold when they change it); `recording`
  // (host captures) only under the slot mutex.
  enum capture_state : int { kNotCapturing = 0, kHostCapture = 1, kNativeCapture = 2 };
  std::atomic<int> capturing{kNotCapturing};
  std::unique_ptr<nnp_graph> recording;
  int64_t allow_tf32 = 0;  // NNP_STREAM_ATTR_ALLOW_TF32 as last set
  // An error of this stream's queued work that libnnplug met while waiting for the device on
  // the user's behalf (nnp_memcpy, nnp_free): the stream's next nnp_stream_synchronize or
  // nnp_stream_destroy reports it. Guarded by pending_mutex (those waits run on any thread).
  std::mutex pending_mutex;
  nnp_status pending = NNP_STATUS_OK;
  std::string pending_message;
};

namespace nnp::host {

// ----------------------------------------------------------------------------- errors --
// Sets the calling thread's last error and returns `status` (for `return fail(...)`).
nnp_status set_last_error(nnp_status status, const std::string& message);
nnp_status set_last_errorf(nnp_status status, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

// What a plugin reported through host->set_error during the current slot call, or the
// exception the slot threw (call_slot).
struct plugin_error {
  bool set = false;
  bool thrown = false;  // message is "<slot> threw an exception: <what()>"
  nnp_status status = NNP_STATUS_OK;
  std::string message;  // without the plugin prefix
};
plugin_error& thread_plugin_error();

// The host services of nnp_host_api (set_error, log) for a plugin called `name`: the message
// becomes the thread's plugin error and last error, "<name>: <message>" / a log line with that
// prefix. Never throw.
void report_plugin_error(const char* name, nnp_status status, const char* message) noexcept;
void report_plugin_log(const char* name, int32_t level, const char* message) noexcept;
// The nnp_host_api handed to a device plugin (loader.cpp) or a communication plugin (comm.cpp)
// whose messages carry the prefix `*name`: the host's ABI version, and set_error / log as
// report_plugin_error / report_plugin_log with host_context = name. `name` (the plugin
// object's own member) must outlive every call the plugin makes through it.
nnp_host_api plugin_host_api(const std::string* name);

// A slot threw (what: the exception's what(), or NULL if it is not a std::exception): sets
// the thread's plugin error and last error, "<plugin>: <slot> threw an exception: <what>",
// and returns NNP_STATUS_INTERNAL.
nnp_status slot_threw(const char* plugin, const char* slot, const char* what) noexcept;

// ------------------------------------------------------------------------- environment --
// The value of an environment variable, or NULL. Every read of the environment in libnnplug
// goes through here (env.cpp): secure_getenv, so set-uid/set-gid processes see none.
const char* env_value(const char* name);

// ------------------------------------------------------------------------- op profile --
// NNPLUG_PROFILE (profile.cpp, docs/profiling.md): whether the profile is on (read once), and
// one op call timed through it: `run` calls the plugin's op_execute, then the stream is
// synchronised (an error of that synchronisation becomes the stream's pending error, as
// wait_for_devices does) and the call's time added to the tables printed at exit.
bool profiling();
nnp_status profile_op(nnp_stream* stream, int32_t kind, const void* params, size_t n_inputs,
                      const DLTensor* const* inputs, size_t n_outputs,
                      const DLTensor* const* outputs, const std::function<nnp_status()>& run);

// ------------------------------------------------------------------ plugin file checks --
// Made on a candidate before dlopen (plugin_file.cpp, docs/security.md); each returns "" or
// the reason the candidate is refused.
// The folder: refused when writable by others (S_IWOTH).
std::string check_plugin_folder(const std::string& folder);
// The file (symlinks followed): a regular file, not writable by others, an ELF shared object
// of the host's class, byte order and machine, and long enough for its program and section
// header tables and every PT_LOAD segment. Never blocks (a FIFO is refused, not opened).
std::string check_plugin_file(const std::string& path);

// ----------------------------------------------------------------------------- logging --
int log_level();  // nnp_log_level from NNPLUG_LOG (default warning)
void log(int level, const std::string& message);
void logf(int level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// ------------------------------------------------------------------------ plugin calls --
// Calls a plugin slot (a lambda returning nnp_status): clears the thread's plugin error,
// catches anything thrown, and makes sure a failure leaves a message naming the plugin and
// the slot.
template <typename F>
nnp_status call_named_slot(const char* plugin_name, const char* slot, F&& body) noexcept {
  thread_plugin_error().set = false;
  thread_plugin_error().thrown = false;
  nnp_status st;
  try {
    st = body();
  } catch (const std::exception& e) {
    return slot_threw(plugin_name, slot, e.what());
  } catch (...) {
    return slot_threw(plugin_name, slot, nullptr);
  }
  if (st != NNP_STATUS_OK && !thread_plugin_error().set)
    set_last_errorf(st, "%s: %s failed (%s)", plugin_name, slot, nnp_status_string(st));
  return st;
}
template <typename F>
nnp_status call_slot(const nnp_plugin* plugin, const char* slot, F&& body) noexcept {
  return call_named_slot(plugin->name.c_str(), slot, std::forward<F>(body));
}

// True if the plugin's table has the slot at `offset` (inside its struct_size) and non-NULL.
template <typename Slot>
bool has_slot(const nnp_plugin* plugin, Slot nnp_plugin_api::*member) {
  const auto* base = reinterpret_cast<const char*>(plugin->api);
  const auto* field = reinterpret_cast<const char*>(&(plugin->api->*member));
  const size_t end = static_cast<size_t>(field - base) + sizeof(Slot);
  return end <= plugin->api_size && plugin->api->*member != nullptr;
}

// ---------------------------------------------------------------------------- registry --
struct allocation {
  nnp_device* device;
  size_t size_bytes;
};

struct load_record_data {
  std::string path, name, plugin_version, reason;
  int32_t abi_major = -1, abi_minor = -1;
  int32_t state = NNP_LOAD_UNDEFINED;
  int32_t status = NNP_STATUS_OK;
  int32_t n_devices = 0;
};

struct registry {
  std::recursive_mutex mutex;  // plugins, devices, records, default loading
  bool defaults_loaded = false;
  std::vector<std::unique_ptr<nnp_plugin>> plugins;  // in load order
  std::deque<load_record_data> records;              // stable addresses

  // Handles (handles.hpp) and the gate of the calls that take device or plugin handles.
  handle_table plugin_handles{handle_kind::plugin};
  handle_table device_handles{handle_kind::device};
  handle_table stream_handles{handle_kind::stream};
  handle_table graph_handles{handle_kind::graph};
  call_gate gate;

  // Live streams. Lock order: a stream's slot mutex, then a graph's slot mutex, then
  // streams_mutex, then graphs_mutex.
  std::mutex streams_mutex;
  std::unordered_set<nnp_stream*> streams;
  std::mutex graphs_mutex;
  std::unordered_set<nnp_graph*> graphs;

  std::mutex allocations_mutex;
  // By address (ordered: nnp_memcpy finds the allocation a host-side pointer falls in).
  std::map<const void*, allocation, std::less<>> allocations;
};

registry& get_registry();

// Loads defaults once (takes the registry lock).
nnp_status ensure_default_plugins();
// All devices of all loaded plugins, in load order (caller holds the lock).
std::vector<nnp_device*> all_devices_locked(registry& r);

// ---------------------------------------------------------------------------- handles --
// The device of a handle, or INVALID_ARGUMENT (NULL, stale or foreign handle) with a message
// naming `func`/`arg`. The caller keeps the device alive: it is inside the call gate
// (gate_guard), holds a stream_lock, or holds the registry mutex.
nnp_status resolve_device(const char* func, const char* arg, const nnp_device* handle,
                          nnp_device** out);
// The plugin of a handle, or NULL (the caller is inside the call gate).
nnp_plugin* resolve_plugin(const nnp_plugin* handle);
// The handle of a device / plugin, made on first use (caller holds the registry mutex).
nnp_device* device_handle(nnp_device* device);
nnp_plugin* plugin_handle(nnp_plugin* plugin);
// nnp_shutdown: makes the handles of a plugin and of its devices stale.
void release_handles(nnp_plugin& plugin);

// Holds a stream for the length of one call: checks the handle and locks the stream's slot,
// so calls on one stream are serialised and the stream outlives the call (nnp_stream_destroy
// and nnp_shutdown take the same lock). Calls holding one never enter the call gate.
class stream_lock : public slot_lock<nnp_stream, handle_kind::stream> {
 public:
  // OK with the stream held, or INVALID_ARGUMENT (message set: NULL, stale, foreign).
  nnp_status lock(const char* func, const char* arg, const nnp_stream* handle) {
    return slot_lock::lock(get_registry().stream_handles, func, arg, handle);
  }
};

// nnp_shutdown (gate closed): destroys every live object of one kind (streams, graphs,
// communicators), each after the call in flight on it. `objects` is the set of live objects
// (guarded by `mutex`); each is held with a Lock (a slot_lock of its kind: `arg` names it in
// messages) while `destroy(held)` destroys it and returns its status; one destroyed meanwhile is
// skipped. Returns the first error, its message set again as the thread's last error.
template <typename Lock, typename Set, typename Destroy>
nnp_status destroy_all_of(std::mutex& mutex, const Set& objects, const char* arg,
                          Destroy&& destroy) {
  using object = std::remove_pointer_t<typename Set::value_type>;
  std::vector<uintptr_t> live;
  {
    std::lock_guard<std::mutex> lock(mutex);
    live.reserve(objects.size());
    for (const object* o : objects) live.push_back(o->self);
  }
  nnp_status first = NNP_STATUS_OK;
  std::string first_message;
  for (uintptr_t self : live) {
    Lock held;
    if (held.lock("nnp_shutdown", arg, reinterpret_cast<const object*>(self)) != NNP_STATUS_OK)
      continue;
    const nnp_status st = destroy(held);
    if (st != NNP_STATUS_OK && first == NNP_STATUS_OK) {
      first = st;
      first_message = nnp_last_error_message();
    }
  }
  if (first != NNP_STATUS_OK) return set_last_error(first, first_message);
  return NNP_STATUS_OK;
}

// Destroys a held stream (the plugin's stream, its handle, the object), waiting for its work;
// returns the plugin's status (and with `take_error`, else OK, the stream's pending error).
nnp_status destroy_stream(stream_lock& held, bool take_error);
// nnp_shutdown (gate closed): destroys every live stream, each after the call in flight on it.
// Returns the first error (message set).
nnp_status destroy_all_streams();

// ------------------------------------------------------------------------------ graphs --
// graphs.cpp (nnplug.h, "graphs"). Calls on a held stream.
inline bool is_capturing(const nnp_stream* s) {
  return s->capturing.load(std::memory_order_acquire) != nnp_stream::kNotCapturing;
}
// nnp_op_execute on a capturing stream, after validation (not a collective, some output has
// elements): a host capture records the call once the plugin says it supports it; a native
// capture passes it to the plugin's op_execute.
nnp_status capture_op(nnp_stream* stream, int32_t op_kind, const void* params, size_t n_inputs,
                      const DLTensor* const* inputs, size_t n_outputs,
                      const DLTensor* const* outputs);
// A device-to-device copy on a capturing stream (size_bytes > 0, pointers checked).
nnp_status capture_copy(nnp_stream* stream, void* dst, const void* src, size_t size_bytes);
// nnp_shutdown (gate closed, streams destroyed): releases every graph. Returns the first error.
nnp_status destroy_all_graphs();

// Waits for the work queued on every live stream of the given devices (NULL entries are
// skipped; capturing streams have none): the legacy-stream rule of nnp_memcpy and nnp_free
// (nnplug.h). An error of that
// work stays pending on its stream (reported by its next synchronize) and the first one is
// also returned, with the message set.
nnp_status wait_for_devices(const nnp_device* a, const nnp_device* b = nullptr);

// The folders searched for plugins, in order (loader.cpp): NNPLUG_PLUGIN_PATH's absolute
// entries, then <dir of libnnplug>/nnplug/plugins.
std::vector<std::filesystem::path> default_search_dirs();

// ------------------------------------------------------------------------ communicators --
// comm.cpp (nnplug.h, "communicators"; nnplug_comm_plugin.h).
// Whether op_kind is a collective (takes a communicator in its params).
bool is_collective(int32_t op_kind);
// Validation of a params field of type comm: "" when `handle` is a live communicator, else
// why not ("is NULL", "is a stale nnp_comm handle ...").
std::string comm_param_problem(const void* handle);
// The number of ranks of a live communicator, or -1 (shape rules: all_gather).
int32_t comm_size_of(const void* handle);
// Runs a validated collective on a held stream / asks whether it would run on a device.
nnp_status execute_collective(nnp_stream* stream, int32_t op_kind, const void* params,
                              size_t n_inputs, const DLTensor* const* inputs, size_t n_outputs,
                              const DLTensor* const* outputs);
nnp_status collective_supported(nnp_device* device, int32_t op_kind, const void* params,
                                size_t n_inputs, const DLTensor* const* inputs, size_t n_outputs,
                                const DLTensor* const* outputs);
// nnp_shutdown (gate closed): destroys every communicator, each after the call in flight on
// it, then shuts down and unloads the communication plugins. Returns the first error.
nnp_status destroy_all_comms();
void unload_comm_plugins();

}  // namespace nnp::host
