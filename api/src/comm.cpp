// Communicators of libnnplug (nnplug.h, "communicators"; nnplug_comm_plugin.h): the nnp_comm
// handles, the built-in "self" transport, the communication plugins (libnnplug-comm-<t>.so,
// loaded when a communicator of their transport is first created), and the dispatch of the
// collective ops that nnp_op_execute has validated.
//
// Locking: a collective runs holding its stream's slot mutex (stream_lock, ops.cpp) and then
// the communicator's slot mutex, so one communicator's collectives never run at once and
// nnp_comm_destroy (which takes the communicator's mutex) waits for the one in flight. The
// plugins list is guarded by its own mutex; creation holds it while it loads a plugin.
#include "internal.hpp"
#include "op_table.hpp"

#include <nnplug/nnplug_comm_plugin.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <unordered_set>

namespace fs = std::filesystem;

namespace nnp::host {
namespace {

// ------------------------------------------------------------------------------ objects --
struct comm_plugin {
  std::string transport;  // "mpi", "nccl"
  std::string name;       // "comm-mpi": the prefix of its messages
  std::string path;
  boost::dll::shared_library library;
  const nnp_comm_plugin_api* api = nullptr;
  size_t api_size = 0;
  nnp_host_api host{};
  bool initialized = false;
};

struct comm_object {
  uintptr_t self = 0;  // its handle
  nnp_device* device = nullptr;
  int32_t transport = NNP_COMM_TRANSPORT_UNDEFINED;
  int32_t rank = 0, size = 1;
  comm_plugin* plugin = nullptr;  // NULL for "self"
  void* state = nullptr;          // the plugin's
  bool check_calls = false;       // NNPLUG_COMM_CHECK=1 when the communicator was created
  std::string description;
};

struct comm_registry {
  std::mutex mutex;  // plugins and the set of live communicators
  std::vector<std::unique_ptr<comm_plugin>> plugins;
  std::unordered_set<comm_object*> comms;
  handle_table handles{handle_kind::comm};
};

comm_registry& comms() {
  static comm_registry* r = new comm_registry;  // never destroyed: see internal.hpp
  return *r;
}

// Holds a communicator for one call (as stream_lock holds a stream).
class comm_lock : public slot_lock<comm_object, handle_kind::comm> {
 public:
  nnp_status lock(const char* func, const char* arg, const void* handle) {
    return slot_lock::lock(comms().handles, func, arg, handle);
  }
};

const char* transport_name(int32_t t) {
  switch (t) {
    case NNP_COMM_TRANSPORT_SELF:
      return "self";
    case NNP_COMM_TRANSPORT_MPI:
      return "mpi";
    case NNP_COMM_TRANSPORT_NCCL:
      return "nccl";
    default:
      return nullptr;
  }
}

// What to install when a transport's plugin is missing.
const char* transport_hint(int32_t t) {
  return t == NNP_COMM_TRANSPORT_MPI
             ? "nnplug builds it when CMake finds MPI (Debian: libopenmpi-dev; option "
               "NNPLUG_WITH_MPI)"
             : "nnplug builds it with the cuda backend when CMake finds NCCL (option "
               "NNPLUG_WITH_NCCL)";
}

// ---------------------------------------------------------------- communication plugins --
// A transport that serves one device type (NCCL: cuda) asked for another device.
nnp_status check_device_type(const char* func, const char* transport, const comm_plugin& p,
                             const nnp_device& device) {
  const int32_t want = p.api->device_type;
  if (want == 0 || want == device.dl.device_type) return NNP_STATUS_OK;
  return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                         "%s: the %s transport serves %s devices; %s is not one", func, transport,
                         want == kDLCUDA ? "cuda" : "other", device.name.c_str());
}

// A native-stream transport on a device whose plugin gives no native streams.
nnp_status no_native_streams(const char* func, const char* transport, const nnp_plugin* p) {
  return set_last_errorf(NNP_STATUS_UNSUPPORTED,
                         "%s: the %s transport queues on native streams, which plugin '%s' does "
                         "not give (stream_get_native)",
                         func, transport, p->name.c_str());
}

template <typename Slot>
bool has_comm_slot(const comm_plugin& p, Slot nnp_comm_plugin_api::*member) {
  const auto* base = reinterpret_cast<const char*>(p.api);
  const auto* field = reinterpret_cast<const char*>(&(p.api->*member));
  return static_cast<size_t>(field - base) + sizeof(Slot) <= p.api_size && p.api->*member;
}

void discard(comm_plugin& p) noexcept {
  if (p.initialized && p.api != nullptr && p.api->shutdown != nullptr) {
    try {
      p.api->shutdown();
    } catch (...) {
    }
  }
  p.api = nullptr;
  p.library.unload();
}

// Opens and accepts libnnplug-comm-<t>.so (registry mutex held), or says why not.
nnp_status load_plugin_locked(comm_registry& r, int32_t transport, comm_plugin** out) {
  const std::string t = transport_name(transport);
  for (auto& p : r.plugins)
    if (p->transport == t) {
      *out = p.get();
      return NNP_STATUS_OK;
    }
  const std::string file = "libnnplug-comm-" + t + ".so";
  std::string searched, path;
  for (const fs::path& dir : default_search_dirs()) {
    searched += (searched.empty() ? "" : ", ") + dir.string();
    std::error_code ec;
    if (fs::exists(dir / file, ec)) {
      path = (dir / file).lexically_normal().string();
      break;
    }
  }
  if (path.empty())
    return set_last_errorf(NNP_STATUS_NOT_FOUND,
                           "the %s transport needs the communication plugin %s, which is not in "
                           "the plugin folders (%s): %s",
                           t.c_str(), file.c_str(), searched.c_str(), transport_hint(transport));
  std::string why = check_plugin_folder(fs::path(path).parent_path().string());
  if (why.empty()) why = check_plugin_file(path);
  if (!why.empty())
    return set_last_errorf(NNP_STATUS_LOAD_FAILED, "%s: refused before loading: %s", path.c_str(),
                           why.c_str());

  auto plugin = std::make_unique<comm_plugin>();
  comm_plugin& p = *plugin;
  p.transport = t;
  p.name = "comm-" + t;
  p.path = path;
  p.host = plugin_host_api(&p.name);
  namespace dll = boost::dll;
  std::error_code ec;
  dlerror();
  // RTLD_GLOBAL: MPI libraries open their own components, which look for MPI's symbols in the
  // global scope (Open MPI's MCA components).
  p.library.load(path, ec, dll::load_mode::rtld_now | dll::load_mode::rtld_global);
  if (ec || !p.library.is_loaded()) {
    const char* dl = dlerror();
    return set_last_errorf(NNP_STATUS_LOAD_FAILED, "%s: cannot open: %s (%s)", path.c_str(),
                           dl != nullptr ? dl : ec.message().c_str(), transport_hint(transport));
  }
  if (!p.library.has(NNP_COMM_PLUGIN_ENTRY_SYMBOL)) {
    discard(p);
    return set_last_errorf(NNP_STATUS_LOAD_FAILED, "%s: no entry symbol '%s'", path.c_str(),
                           NNP_COMM_PLUGIN_ENTRY_SYMBOL);
  }
  auto& entry = p.library.get<nnp_status(const nnp_host_api*, const nnp_comm_plugin_api**)>(
      NNP_COMM_PLUGIN_ENTRY_SYMBOL);
  const nnp_comm_plugin_api* api = nullptr;
  nnp_status st = call_named_slot(p.name.c_str(), NNP_COMM_PLUGIN_ENTRY_SYMBOL,
                                  [&] { return entry(&p.host, &api); });
  if (st == NNP_STATUS_OK && api == nullptr)
    st = set_last_errorf(NNP_STATUS_INTERNAL, "%s: the entry returned OK and no table",
                         path.c_str());
  if (st != NNP_STATUS_OK) {
    discard(p);
    return st;
  }
  p.api = api;
  if (api->abi_version_major != NNP_ABI_VERSION_MAJOR ||
      api->struct_size < NNP_COMM_PLUGIN_API_STRUCT_SIZE_1_3) {
    const int major = api->abi_version_major, minor = api->abi_version_minor;
    const size_t size = api->struct_size;
    discard(p);
    return set_last_errorf(NNP_STATUS_ABI_MISMATCH,
                           "%s: built for ABI %d.%d with a table of %zu bytes; this libnnplug "
                           "is ABI %d.%d and needs %zu",
                           path.c_str(), major, minor, size, NNP_ABI_VERSION_MAJOR,
                           NNP_ABI_VERSION_MINOR, NNP_COMM_PLUGIN_API_STRUCT_SIZE_1_3);
  }
  p.api_size = std::min(api->struct_size, sizeof(nnp_comm_plugin_api));
  const char* missing = api->transport == nullptr        ? "transport"
                        : api->version == nullptr        ? "version"
                        : api->comm_create == nullptr    ? "comm_create"
                        : api->comm_destroy == nullptr   ? "comm_destroy"
                        : api->comm_supported == nullptr ? "comm_supported"
                        : api->comm_execute == nullptr   ? "comm_execute"
                                                         : nullptr;
  if (missing == nullptr && t != api->transport) missing = "transport (it names another)";
  if (missing == nullptr && api->memory != NNP_COMM_MEMORY_HOST &&
      api->memory != NNP_COMM_MEMORY_DEVICE_STREAM)
    missing = "memory (an nnp_comm_memory)";
  if (missing != nullptr) {
    discard(p);
    return set_last_errorf(NNP_STATUS_ABI_MISMATCH, "%s: its table's %s is missing or wrong",
                           path.c_str(), missing);
  }
  if (api->initialize != nullptr) {
    st = call_named_slot(p.name.c_str(), "initialize", [&] { return api->initialize(); });
    if (st != NNP_STATUS_OK) {
      discard(p);
      return st;
    }
  }
  p.initialized = true;
  logf(NNP_LOG_INFO, "loaded %s (%s)", path.c_str(), api->version);
  *out = plugin.get();
  r.plugins.push_back(std::move(plugin));
  return NNP_STATUS_OK;
}

// -------------------------------------------------------------------------- collectives --
int64_t element_count(const DLTensor& t) {
  int64_t n = 1;
  for (int i = 0; i < t.ndim; ++i) n *= t.shape[i];
  return n;
}

size_t byte_count(const DLTensor& t) {
  return static_cast<size_t>(element_count(t)) * ((t.dtype.bits * t.dtype.lanes + 7u) / 8u);
}

void* first_byte(const DLTensor& t) {
  return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(t.data) + t.byte_offset);
}

// The device plugin's copy within the device, queued on the stream.
nnp_status copy_on_stream(nnp_stream* s, void* dst, const void* src, size_t bytes, int32_t kind) {
  if (bytes == 0 || dst == src) return NNP_STATUS_OK;
  const nnp_plugin* p = s->device->plugin;
  return call_slot(p, "memcpy_async",
                   [&] { return p->api->memcpy_async(s->handle, dst, src, bytes, kind); });
}

// "self": one rank, so every collective is y = x.
nnp_status run_self(nnp_stream* s, const DLTensor& x, const DLTensor& y) {
  return copy_on_stream(s, first_byte(y), first_byte(x), byte_count(x),
                        NNP_MEMCPY_DEVICE_TO_DEVICE);
}

// Waits for the work queued on the stream; an error stays pending on it (as nnp_memcpy does)
// and is returned.
nnp_status drain(nnp_stream* s, const char* op) {
  const nnp_plugin* p = s->device->plugin;
  const nnp_status st =
      call_slot(p, "stream_synchronize", [&] { return p->api->stream_synchronize(s->handle); });
  if (st == NNP_STATUS_OK) return st;
  const std::string message = nnp_last_error_message();
  {
    std::lock_guard<std::mutex> lock(s->pending_mutex);
    if (s->pending == NNP_STATUS_OK) {
      s->pending = st;
      s->pending_message = message;
    }
  }
  return set_last_errorf(st, "%s: earlier work on the stream failed: %s", op, message.c_str());
}

// Unless NNPLUG_COMM_CHECK=0 (read by nnp_comm_create: the environment is not scanned per call,
// which would cost more than the rest of a small collective's dispatch): every rank contributes
// its call's signature and its negation to one all-reduce MAX in float64; the ranks agree when
// max(v) == -max(-v) everywhere. A HOST transport (MPI) would otherwise run collectives of
// different sizes, which MPI implementations answer by crashing.
nnp_status check_signature(comm_object& c, int32_t op_kind, const void* params, const DLTensor& x) {
  if (!c.check_calls) return NNP_STATUS_OK;
  if (c.plugin == nullptr || c.plugin->api->memory != NNP_COMM_MEMORY_HOST)
    return NNP_STATUS_OK;  // self: one rank; NCCL: docs/distributed.md
  int32_t extra = 0;       // the op's own field: all_reduce's op, broadcast's root
  if (op_kind == NNP_OP_ALL_REDUCE)
    extra = static_cast<const nnp_all_reduce_params*>(params)->op;
  else if (op_kind == NNP_OP_BROADCAST)
    extra = static_cast<const nnp_broadcast_params*>(params)->root;
  std::vector<double> sig = {static_cast<double>(op_kind), static_cast<double>(extra),
                             static_cast<double>(x.dtype.code), static_cast<double>(x.dtype.bits),
                             static_cast<double>(x.ndim)};
  for (int i = 0; i < x.ndim; ++i) sig.push_back(static_cast<double>(x.shape[i]));
  sig.resize(5 + NNP_MAX_DIMS, 0.0);
  const size_t n = sig.size();
  std::vector<double> buf(2 * n);
  for (size_t i = 0; i < n; ++i) {
    buf[i] = sig[i];
    buf[n + i] = -sig[i];
  }
  int64_t shape[1] = {static_cast<int64_t>(buf.size())};
  DLTensor t{};
  t.data = buf.data();
  t.device = {kDLCPU, 0};
  t.ndim = 1;
  t.dtype = {kDLFloat, 64, 1};
  t.shape = shape;
  nnp_all_reduce_params p{};
  p.struct_size = sizeof p;
  p.comm = reinterpret_cast<nnp_comm*>(c.self);
  p.op = NNP_REDUCE_MAX;
  const DLTensor* io[] = {&t};
  const nnp_comm_plugin_api* api = c.plugin->api;
  const nnp_status st = call_named_slot(c.plugin->name.c_str(), "comm_execute", [&] {
    return api->comm_execute(c.state, nullptr, NNP_OP_ALL_REDUCE, &p, 1, io, 1, io);
  });
  if (st != NNP_STATUS_OK) return st;
  static const char* const kWhat[5] = {"op kind", "op/root", "dtype code", "dtype bits", "rank"};
  for (size_t i = 0; i < n; ++i)
    if (buf[i] != -buf[n + i]) {
      const std::string what = i < 5 ? kWhat[i] : "x.shape[" + std::to_string(i - 5) + "]";
      return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                             "%s: the ranks disagree on the call (NNPLUG_COMM_CHECK): %s ranges "
                             "from %.0f to %.0f across the ranks",
                             nnp_op_kind_name(op_kind), what.c_str(), -buf[n + i], buf[i]);
    }
  return NNP_STATUS_OK;
}

// A HOST plugin on a device whose memory the host cannot address (sim): x is copied to host
// memory, the collective runs there, y is copied back.
nnp_status run_staged(comm_object& c, nnp_stream* s, int32_t op_kind, const void* params,
                      const DLTensor& x, const DLTensor& y) {
  const bool in_place = first_byte(x) == first_byte(y);
  std::vector<unsigned char> hx(byte_count(x)), hy(in_place ? 0 : byte_count(y));
  if (nnp_status st =
          copy_on_stream(s, hx.data(), first_byte(x), hx.size(), NNP_MEMCPY_DEVICE_TO_HOST))
    return st;
  if (nnp_status st = drain(s, nnp_op_kind_name(op_kind))) return st;
  DLTensor tx = x, ty = y;
  tx.data = hx.data();
  tx.byte_offset = 0;
  tx.device = {kDLCPU, 0};
  ty.data = in_place ? hx.data() : hy.data();
  ty.byte_offset = 0;
  ty.device = {kDLCPU, 0};
  const DLTensor* in[] = {&tx};
  const DLTensor* out[] = {&ty};
  const nnp_comm_plugin_api* api = c.plugin->api;
  nnp_status st = call_named_slot(c.plugin->name.c_str(), "comm_execute", [&] {
    return api->comm_execute(c.state, nullptr, op_kind, params, 1, in, 1, out);
  });
  if (st != NNP_STATUS_OK) return st;
  std::vector<unsigned char>& result = in_place ? hx : hy;
  st = copy_on_stream(s, first_byte(y), result.data(), result.size(), NNP_MEMCPY_HOST_TO_DEVICE);
  if (st != NNP_STATUS_OK) return st;
  return drain(s, nnp_op_kind_name(op_kind));  // the host buffers die here
}

// Locks the communicator of a collective's params (every collective's struct has comm right
// after struct_size) and checks that it is bound to `device`.
nnp_status lock_comm_of(comm_lock& c, const char* name, const void* params,
                        const nnp_device* device) {
  nnp_comm* handle = nullptr;
  std::memcpy(&handle, static_cast<const char*>(params) + offsetof(nnp_all_gather_params, comm),
              sizeof handle);
  if (nnp_status st = c.lock(name, "params->comm", handle)) return st;
  if (c->device != device)
    return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                           "%s: params->comm is bound to device %s, the call runs on %s", name,
                           c->device->name.c_str(), device->name.c_str());
  return NNP_STATUS_OK;
}

// Destroys c's plugin communicator (comm_destroy), removes its handle and takes it out of r's
// set; the caller holds c's slot (comm_lock) and deletes c. Returns comm_destroy's status.
nnp_status release_comm(comm_registry& r, comm_object* c) {
  nnp_status st = NNP_STATUS_OK;
  if (c->plugin != nullptr) {
    const comm_plugin& p = *c->plugin;
    st = call_named_slot(p.name.c_str(), "comm_destroy",
                         [&] { return p.api->comm_destroy(c->state); });
  }
  r.handles.remove(c->self);
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.comms.erase(c);
  }
  return st;
}

}  // namespace

static_assert(offsetof(nnp_all_reduce_params, comm) == offsetof(nnp_all_gather_params, comm) &&
                  offsetof(nnp_broadcast_params, comm) == offsetof(nnp_all_gather_params, comm),
              "every collective's params hold comm at one offset");

bool is_collective(int32_t op_kind) {
  const op_desc* op = find_op(op_kind);  // the table's `collective`
  return op != nullptr && op->collective;
}

std::string comm_param_problem(const void* handle) {
  const handle_lookup h = comms().handles.find(handle_value(handle));
  switch (h.state) {
    case handle_state::live:
      return "";
    case handle_state::null:
      return "is NULL (create a communicator with nnp_comm_create)";
    case handle_state::stale:
      return "is a stale nnp_comm handle (the communicator was destroyed, or released by "
             "nnp_shutdown)";
    case handle_state::other_kind:
      return std::string("is an ") + handle_kind_name(h.kind) + " handle, not an nnp_comm";
    case handle_state::foreign:
      break;
  }
  return "is not an nnp_comm handle";
}

int32_t comm_size_of(const void* handle) {
  const handle_lookup h = comms().handles.find(handle_value(handle));
  if (h.state != handle_state::live) return -1;
  // The size never changes while the handle lives; a concurrent destroy is the caller's race
  // (the object itself is freed only under the slot's mutex, after the generation changed).
  std::lock_guard<std::mutex> lock(h.slot->mutex);
  if (!handle_table::still_live(h)) return -1;
  return static_cast<comm_object*>(handle_table::object_of(h))->size;
}

nnp_status collective_supported(nnp_device* device, int32_t op_kind, const void* params,
                                size_t n_inputs, const DLTensor* const* inputs, size_t n_outputs,
                                const DLTensor* const* outputs) {
  const char* name = nnp_op_kind_name(op_kind);
  comm_lock c;
  if (nnp_status st = lock_comm_of(c, name, params, device)) return st;
  if (c->plugin == nullptr) return NNP_STATUS_OK;  // self: copies, any dtype
  const comm_plugin& p = *c->plugin;
  if (p.api->memory == NNP_COMM_MEMORY_DEVICE_STREAM &&
      !has_slot(device->plugin, &nnp_plugin_api::stream_get_native))
    return no_native_streams(name, p.transport.c_str(), device->plugin);
  void* state = c->state;
  return call_named_slot(p.name.c_str(), "comm_supported", [&] {
    return p.api->comm_supported(state, op_kind, params, n_inputs, inputs, n_outputs, outputs);
  });
}

nnp_status execute_collective(nnp_stream* s, int32_t op_kind, const void* params, size_t n_inputs,
                              const DLTensor* const* inputs, size_t n_outputs,
                              const DLTensor* const* outputs) {
  const char* name = nnp_op_kind_name(op_kind);
  nnp_device* device = s->device;
  comm_lock c;
  if (nnp_status st = lock_comm_of(c, name, params, device)) return st;
  const DLTensor& x = *inputs[0];
  const DLTensor& y = *outputs[0];
  if (c->plugin == nullptr) return run_self(s, x, y);
  comm_plugin& p = *c->plugin;
  void* state = c->state;
  if (p.api->memory == NNP_COMM_MEMORY_DEVICE_STREAM) {
    if (!has_slot(device->plugin, &nnp_plugin_api::stream_get_native))
      return no_native_streams(name, p.transport.c_str(), device->plugin);
    void* native = nullptr;
    const nnp_plugin* dp = device->plugin;
    if (nnp_status st = call_slot(dp, "stream_get_native",
                                  [&] { return dp->api->stream_get_native(s->handle, &native); }))
      return st;
    if (nnp_status st = check_signature(*c.get(), op_kind, params, x)) return st;
    return call_named_slot(p.name.c_str(), "comm_execute", [&] {
      return p.api->comm_execute(state, native, op_kind, params, n_inputs, inputs, n_outputs,
                                 outputs);
    });
  }
  // HOST: stream order by waiting for the stream's queued work first.
  if (nnp_status st = drain(s, name)) return st;
  if (nnp_status st = check_signature(*c.get(), op_kind, params, x)) return st;
  if (device->dl.device_type != kDLCPU) return run_staged(*c.get(), s, op_kind, params, x, y);
  return call_named_slot(p.name.c_str(), "comm_execute", [&] {
    return p.api->comm_execute(state, nullptr, op_kind, params, n_inputs, inputs, n_outputs,
                               outputs);
  });
}

nnp_status destroy_all_comms() {
  comm_registry& r = comms();
  return destroy_all_of<comm_lock>(r.mutex, r.comms, "comm", [&r](comm_lock& held) {
    comm_object* c = held.get();
    const nnp_status st = release_comm(r, c);
    held.unlock();
    delete c;
    return st;
  });
}

void unload_comm_plugins() {
  comm_registry& r = comms();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (auto it = r.plugins.rbegin(); it != r.plugins.rend(); ++it) discard(**it);
  r.plugins.clear();
}

}  // namespace nnp::host

using namespace nnp::host;

extern "C" {

NNP_API nnp_status nnp_comm_create(nnp_device* device_handle, const nnp_comm_config* config,
                                   nnp_comm** out) {
  static const char* const kFunc = "nnp_comm_create";
  gate_guard in_call(get_registry().gate);
  nnp_device* device = nullptr;
  if (nnp_status st = resolve_device(kFunc, "device", device_handle, &device)) return st;
  if (config == nullptr || out == nullptr)
    return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT, "%s: %s is NULL", kFunc,
                           config == nullptr ? "config" : "out");
  *out = nullptr;
  if (config->struct_size < NNP_COMM_CONFIG_STRUCT_SIZE_1_3)
    return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                           "%s: config->struct_size: expected >= %zu (sizeof(nnp_comm_config)), "
                           "got %zu",
                           kFunc, NNP_COMM_CONFIG_STRUCT_SIZE_1_3, config->struct_size);
  nnp_comm_config cfg{};
  std::memcpy(&cfg, config, std::min(config->struct_size, sizeof cfg));
  const char* tname = transport_name(cfg.transport);
  if (tname == nullptr)
    return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                           "%s: config->transport: expected an nnp_comm_transport (SELF 1, MPI 2, "
                           "NCCL 3), got %d",
                           kFunc, static_cast<int>(cfg.transport));
  if (cfg.reserved0 != 0)
    return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                           "%s: config->reserved0: reserved, expected 0, got %d", kFunc,
                           static_cast<int>(cfg.reserved0));
  if (cfg.transport == NNP_COMM_TRANSPORT_MPI && cfg.mpi_comm == nullptr)
    return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                           "%s: config->mpi_comm is NULL (the address of an MPI_Comm)", kFunc);
  if (cfg.transport == NNP_COMM_TRANSPORT_NCCL) {
    if (cfg.unique_id == nullptr)
      return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                             "%s: config->unique_id is NULL (from nnp_comm_get_unique_id)", kFunc);
    if (cfg.size < 1 || cfg.rank < 0 || cfg.rank >= cfg.size)
      return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                             "%s: config->rank %d and size %d: expected 0 <= rank < size", kFunc,
                             static_cast<int>(cfg.rank), static_cast<int>(cfg.size));
  }
  comm_registry& r = comms();
  auto c = std::make_unique<comm_object>();
  c->device = device;
  c->transport = cfg.transport;
  // On unless NNPLUG_COMM_CHECK=0: ranks whose calls disagree must get an error, not a crash
  // inside MPI (docs/distributed.md).
  const char* check = env_value("NNPLUG_COMM_CHECK");
  c->check_calls = check == nullptr || std::strcmp(check, "0") != 0;
  if (cfg.transport == NNP_COMM_TRANSPORT_SELF) {
    c->description = "self (one rank, built into libnnplug)";
  } else {
    comm_plugin* plugin = nullptr;
    {
      std::lock_guard<std::mutex> lock(r.mutex);
      if (nnp_status st = load_plugin_locked(r, cfg.transport, &plugin))
        return set_last_errorf(st, "%s: %s", kFunc, nnp_last_error_message());
    }
    const nnp_comm_plugin_api* api = plugin->api;
    if (nnp_status st = check_device_type(kFunc, tname, *plugin, *device)) return st;
    // A native-stream transport (NCCL) creates its communicator on the calling thread's current
    // device: the device plugin's stream_get_native makes the device current (cuda), through
    // a stream made for the purpose.
    if (api->memory == NNP_COMM_MEMORY_DEVICE_STREAM) {
      const nnp_plugin* dp = device->plugin;
      if (!has_slot(dp, &nnp_plugin_api::stream_get_native))
        return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                               "%s: the %s transport queues on native streams, which plugin '%s' "
                               "does not give (stream_get_native)",
                               kFunc, tname, dp->name.c_str());
      void* tmp = nullptr;
      if (nnp_status st = call_slot(dp, "stream_create",
                                    [&] { return dp->api->stream_create(device->index, &tmp); }))
        return st;
      void* native = nullptr;
      nnp_status st = call_slot(dp, "stream_get_native",
                                [&] { return dp->api->stream_get_native(tmp, &native); });
      const nnp_status destroyed =
          call_slot(dp, "stream_destroy", [&] { return dp->api->stream_destroy(tmp); });
      if (st == NNP_STATUS_OK) st = destroyed;
      if (st != NNP_STATUS_OK) return st;
    }
    nnp_comm_plugin_create_args args{};
    args.struct_size = sizeof args;
    args.config = &cfg;
    args.device = device->dl;
    args.device_name = device->name.c_str();
    args.device_plugin_name = device->plugin->name.c_str();
    const char* description = nullptr;
    if (nnp_status st = call_named_slot(plugin->name.c_str(), "comm_create", [&] {
          return api->comm_create(&args, &c->state, &c->rank, &c->size, &description);
        }))
      return st;
    c->plugin = plugin;
    c->description = std::string(tname) + " (" + (description != nullptr ? description : "") + ")";
  }
  try {
    comm_object* obj = c.get();
    obj->self = r.handles.add(obj);
    std::lock_guard<std::mutex> lock(r.mutex);
    r.comms.insert(obj);
    c.release();
    *out = reinterpret_cast<nnp_comm*>(obj->self);
  } catch (const std::bad_alloc&) {
    if (c->plugin != nullptr) c->plugin->api->comm_destroy(c->state);
    if (c->self != 0) r.handles.remove(c->self);
    return set_last_errorf(NNP_STATUS_OUT_OF_MEMORY, "%s: out of host memory", kFunc);
  }
  return NNP_STATUS_OK;
}

NNP_API nnp_status nnp_comm_get_unique_id(nnp_device* device_handle, int32_t transport,
                                          nnp_comm_unique_id* id) {
  static const char* const kFunc = "nnp_comm_get_unique_id";
  gate_guard in_call(get_registry().gate);
  nnp_device* device = nullptr;
  if (nnp_status st = resolve_device(kFunc, "device", device_handle, &device)) return st;
  if (id == nullptr) return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT, "%s: id is NULL", kFunc);
  const char* tname = transport_name(transport);
  if (tname == nullptr)
    return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                           "%s: transport: expected an nnp_comm_transport, got %d", kFunc,
                           static_cast<int>(transport));
  if (transport == NNP_COMM_TRANSPORT_SELF)
    return set_last_errorf(NNP_STATUS_UNSUPPORTED, "%s: the self transport has no unique ids",
                           kFunc);
  comm_plugin* plugin = nullptr;
  {
    comm_registry& r = comms();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (nnp_status st = load_plugin_locked(r, transport, &plugin))
      return set_last_errorf(st, "%s: %s", kFunc, nnp_last_error_message());
  }
  if (nnp_status st = check_device_type(kFunc, tname, *plugin, *device)) return st;
  if (!has_comm_slot(*plugin, &nnp_comm_plugin_api::get_unique_id))
    return set_last_errorf(NNP_STATUS_UNSUPPORTED,
                           "%s: the %s transport has no unique ids (MPI: pass an MPI_Comm)", kFunc,
                           tname);
  return call_named_slot(plugin->name.c_str(), "get_unique_id",
                         [&] { return plugin->api->get_unique_id(id); });
}

NNP_API nnp_status nnp_comm_destroy(nnp_comm* handle) {
  comm_lock c;
  if (nnp_status st = c.lock("nnp_comm_destroy", "comm", handle)) return st;
  comm_object* obj = c.get();
  const nnp_status st = release_comm(comms(), obj);
  delete obj;
  return st;
}

NNP_API nnp_status nnp_comm_get_rank(const nnp_comm* handle, int32_t* rank, int32_t* size) {
  comm_lock c;
  if (nnp_status st = c.lock("nnp_comm_get_rank", "comm", handle)) return st;
  if (rank == nullptr && size == nullptr)
    return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                           "nnp_comm_get_rank: rank and size are both NULL");
  if (rank != nullptr) *rank = c->rank;
  if (size != nullptr) *size = c->size;
  return NNP_STATUS_OK;
}

NNP_API nnp_device* nnp_comm_device(const nnp_comm* handle) {
  comm_lock c;
  if (c.lock("nnp_comm_device", "comm", handle) != NNP_STATUS_OK) return nullptr;
  return device_handle(c->device);
}

NNP_API const char* nnp_comm_description(const nnp_comm* handle) {
  comm_lock c;
  if (c.lock("nnp_comm_description", "comm", handle) != NNP_STATUS_OK) return nullptr;
  return c->description.c_str();
}

}  // extern "C"
