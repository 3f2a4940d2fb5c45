// Device enumeration and lookup of libnnplug: nnp_get_devices, nnp_get_device ("<plugin>:<i>",
// "<plugin>", "auto" with NNPLUG_BACKEND), device props and DLPack devices; device and plugin
// handles (made when first handed out, released by nnp_shutdown).
#include "internal.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace nnp::host {

nnp_status resolve_device(const char* func, const char* arg, const nnp_device* handle,
                          nnp_device** out) {
  const handle_lookup h = get_registry().device_handles.find(handle_value(handle));
  if (h.state != handle_state::live)
    return refuse_handle(func, arg, handle_kind::device, h, handle_value(handle));
  *out = static_cast<nnp_device*>(handle_table::object_of(h));
  return NNP_STATUS_OK;
}

nnp_plugin* resolve_plugin(const nnp_plugin* handle) {
  const handle_lookup h = get_registry().plugin_handles.find(handle_value(handle));
  return h.state == handle_state::live ? static_cast<nnp_plugin*>(handle_table::object_of(h))
                                       : nullptr;
}

namespace {
// The handle of `object` (a device or a plugin): its `self`, added to `table` when first
// handed out.
template <typename T>
T* handle_of(handle_table& table, T* object) {
  uintptr_t self = object->self.load(std::memory_order_acquire);
  if (self == 0) {
    self = table.add(object);
    object->self.store(self, std::memory_order_release);
  }
  return reinterpret_cast<T*>(self);
}
}  // namespace

nnp_device* device_handle(nnp_device* device) {
  return handle_of(get_registry().device_handles, device);
}

nnp_plugin* plugin_handle(nnp_plugin* plugin) {
  return handle_of(get_registry().plugin_handles, plugin);
}

void release_handles(nnp_plugin& plugin) {
  registry& r = get_registry();
  for (auto& d : plugin.devices)
    if (const uintptr_t self = d->self.exchange(0)) r.device_handles.remove(self);
  if (const uintptr_t self = plugin.self.exchange(0)) r.plugin_handles.remove(self);
}

namespace {

// "cpu, reference" — the loaded plugins, for NOT_FOUND messages.
std::string available_plugins_locked(registry& r) {
  std::string out;
  for (auto& p : r.plugins) {
    if (!out.empty()) out += ", ";
    out += p->name;
    if (p->devices.empty()) out += " (0 devices)";
  }
  return out.empty() ? std::string("none") : out;
}

// The record of a plugin name that failed to load, if any ("cuda: cannot open: ...").
std::string failed_record_reason_locked(registry& r, const std::string& name) {
  for (auto it = r.records.rbegin(); it != r.records.rend(); ++it)
    if (it->name == name && (it->state == NNP_LOAD_FAILED || it->state == NNP_LOAD_REJECTED))
      return it->reason;
  return {};
}

nnp_status find_named_device_locked(registry& r, const std::string& name, const char* origin,
                                    nnp_device** out) {
  std::string plugin_name = name;
  int64_t index = 0;
  const size_t colon = name.find(':');
  if (colon != std::string::npos) {
    plugin_name = name.substr(0, colon);
    const std::string idx = name.substr(colon + 1);
    if (idx.empty() || idx.size() > 9 ||
        !std::all_of(idx.begin(), idx.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                             "nnp_get_device: %s '%s' is malformed: expected \"<plugin>:<index>\","
                             " \"<plugin>\" or \"auto\"",
                             origin, name.c_str());
    index = std::stoll(idx);
  }
  nnp_plugin* plugin = nullptr;
  for (auto& p : r.plugins)
    if (p->name == plugin_name) plugin = p.get();
  if (plugin == nullptr) {
    std::string msg = std::string("nnp_get_device: ") + origin + " '" + name +
                      "': no plugin named '" + plugin_name + "' is loaded";
    const std::string why = failed_record_reason_locked(r, plugin_name);
    if (!why.empty()) msg += " (its load failed: " + why + ")";
    msg += "; available plugins: " + available_plugins_locked(r);
    return set_last_error(NNP_STATUS_NOT_FOUND, msg);
  }
  if (plugin->devices.empty())
    return set_last_errorf(NNP_STATUS_UNAVAILABLE, "nnp_get_device: %s '%s': %s: %s", origin,
                           name.c_str(), plugin->name.c_str(), plugin->zero_devices_reason.c_str());
  if (index >= static_cast<int64_t>(plugin->devices.size()))
    return set_last_errorf(NNP_STATUS_UNAVAILABLE,
                           "nnp_get_device: %s '%s': plugin '%s' has %zu device(s) (%s:0..%s:%zu)",
                           origin, name.c_str(), plugin->name.c_str(), plugin->devices.size(),
                           plugin->name.c_str(), plugin->name.c_str(), plugin->devices.size() - 1);
  *out = plugin->devices[static_cast<size_t>(index)].get();
  return NNP_STATUS_OK;
}

// "auto": the highest auto_priority; the first in load order wins a tie. Devices with a
// negative auto_priority (test devices: sim, fixtures) are never chosen.
nnp_status find_auto_device_locked(registry& r, nnp_device** out) {
  nnp_device* best = nullptr;
  for (nnp_device* d : all_devices_locked(r))
    if (d->props.auto_priority >= 0 &&
        (best == nullptr || d->props.auto_priority > best->props.auto_priority))
      best = d;
  if (best == nullptr)
    return set_last_error(NNP_STATUS_NOT_FOUND,
                          "nnp_get_device: 'auto': no device is available; loaded plugins: " +
                              available_plugins_locked(r) +
                              " (NNPLUG_LOG=info lists the load records)");
  *out = best;
  return NNP_STATUS_OK;
}

// The body of nnp_get_devices and nnp_get_device (`func`): body(r) with the default plugins
// loaded and the registry r locked; out of host memory gives NNP_STATUS_OUT_OF_MEMORY, any other
// exception NNP_STATUS_INTERNAL, each with func's message.
template <typename F>
nnp_status with_devices_locked(const char* func, F&& body) {
  try {
    ensure_default_plugins();
    registry& r = get_registry();
    std::lock_guard<std::recursive_mutex> lock(r.mutex);
    return body(r);
  } catch (const std::bad_alloc&) {
    return set_last_errorf(NNP_STATUS_OUT_OF_MEMORY, "%s: out of host memory", func);
  } catch (const std::exception& e) {
    return set_last_errorf(NNP_STATUS_INTERNAL, "%s: %s", func, e.what());
  }
}

}  // namespace
}  // namespace nnp::host

using namespace nnp::host;

extern "C" {

NNP_API nnp_status nnp_get_devices(nnp_device** devices, size_t* n_devices) {
  if (n_devices == nullptr)
    return set_last_error(NNP_STATUS_INVALID_ARGUMENT, "nnp_get_devices: n_devices is NULL");
  return with_devices_locked("nnp_get_devices", [&](registry& r) {
    const std::vector<nnp_device*> all = all_devices_locked(r);
    if (devices != nullptr) {
      const size_t n = std::min(*n_devices, all.size());
      for (size_t i = 0; i < n; ++i) devices[i] = device_handle(all[i]);
    }
    *n_devices = all.size();
    return NNP_STATUS_OK;
  });
}

NNP_API nnp_status nnp_get_device(const char* name, nnp_device** out) {
  if (name == nullptr || *name == '\0')
    return set_last_error(NNP_STATUS_INVALID_ARGUMENT, "nnp_get_device: name is NULL or empty");
  if (out == nullptr)
    return set_last_error(NNP_STATUS_INVALID_ARGUMENT, "nnp_get_device: out is NULL");
  return with_devices_locked("nnp_get_device", [&](registry& r) {
    nnp_device* found = nullptr;
    nnp_status st;
    if (std::strcmp(name, "auto") == 0) {
      const char* env = env_value("NNPLUG_BACKEND");
      if (env != nullptr && *env != '\0' && std::strcmp(env, "auto") != 0)
        st = find_named_device_locked(r, env, "NNPLUG_BACKEND", &found);
      else
        st = find_auto_device_locked(r, &found);
    } else {
      st = find_named_device_locked(r, name, "name", &found);
    }
    if (st == NNP_STATUS_OK) *out = device_handle(found);
    return st;
  });
}

NNP_API nnp_status nnp_device_get_props(const nnp_device* handle, nnp_device_props* props) {
  gate_guard in_call(get_registry().gate);
  nnp_device* device = nullptr;
  if (nnp_status st = resolve_device("nnp_device_get_props", "device", handle, &device)) return st;
  if (props == nullptr)
    return set_last_error(NNP_STATUS_INVALID_ARGUMENT, "nnp_device_get_props: props is NULL");
  if (props->struct_size < NNP_DEVICE_PROPS_STRUCT_SIZE_1_0)
    return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                           "nnp_device_get_props: props->struct_size: expected >= %zu "
                           "(sizeof(nnp_device_props)), got %zu",
                           static_cast<size_t>(NNP_DEVICE_PROPS_STRUCT_SIZE_1_0),
                           props->struct_size);
  const size_t caller_size = props->struct_size;
  std::memcpy(props, &device->props, std::min(caller_size, sizeof(nnp_device_props)));
  props->struct_size = caller_size;
  return NNP_STATUS_OK;
}

NNP_API nnp_status nnp_device_get_dldevice(const nnp_device* handle, DLDevice* out) {
  gate_guard in_call(get_registry().gate);
  nnp_device* device = nullptr;
  if (nnp_status st = resolve_device("nnp_device_get_dldevice", "device", handle, &device))
    return st;
  if (out == nullptr)
    return set_last_error(NNP_STATUS_INVALID_ARGUMENT, "nnp_device_get_dldevice: out is NULL");
  *out = device->dl;
  return NNP_STATUS_OK;
}

}  // extern "C"
