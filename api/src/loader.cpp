// The plugin loader of libnnplug: discovery (explicit path, NNPLUG_PLUGIN_PATH,
// <dir of libnnplug>/nnplug/plugins), opening with Boost.DLL, version negotiation, the load
// records, the host services given to plugins, and nnp_shutdown().
//
// Every decision about a candidate is one function below (check_file_exists, check_file_name,
// check_folder, check_file, open_library, find_entry, call_entry, check_major_version,
// check_table_size, check_required_slots, check_plugin_name, initialize_plugin,
// enumerate_devices); each returns a `verdict` that becomes the candidate's load record.
// An exception escaping any of them (the host out of memory, say) becomes a FAILED record of
// that candidate, and discovery goes on with the next one. docs/abi.md describes the rules,
// docs/security.md what they protect against and what they cannot.
#include "internal.hpp"

#include <dlfcn.h>

#include <boost/dll/runtime_symbol_info.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>

namespace fs = std::filesystem;

namespace nnp::host {

namespace {
// Allocated when libnnplug is loaded (before any call can arrive) and never destroyed: nothing
// depends on static destructors at exit, and no lazy-initialisation guard sits on the hot path.
registry* const g_registry = new registry();
}  // namespace

registry& get_registry() { return *g_registry; }

namespace {

// ----------------------------------------------------------------------------- verdicts --
// The outcome of one decision: OK to go on, or the state/status/reason of the record.
struct verdict {
  int32_t state = NNP_LOAD_LOADED;
  nnp_status status = NNP_STATUS_OK;
  std::string reason;
  bool ok() const { return state == NNP_LOAD_LOADED && status == NNP_STATUS_OK; }
};
verdict accept() { return verdict{}; }
verdict failed(nnp_status status, std::string reason) {
  return verdict{NNP_LOAD_FAILED, status, std::move(reason)};
}
verdict rejected(nnp_status status, std::string reason) {
  return verdict{NNP_LOAD_REJECTED, status, std::move(reason)};
}

std::string abi_string(int32_t major, int32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

// The message a plugin reported through set_error during the last slot call, or `fallback`.
std::string plugin_message_or(const std::string& fallback) {
  const plugin_error& pe = thread_plugin_error();
  return pe.set ? pe.message : fallback;
}

// The reason of a failed slot call made while loading: "<what> failed: <plugin's message>",
// or "<slot> threw an exception: <what()>" when the slot threw (call_slot caught it).
std::string slot_failure(const std::string& what, nnp_status st) {
  const plugin_error& pe = thread_plugin_error();
  if (pe.set && pe.thrown) return pe.message;
  return what + " failed: " + plugin_message_or(nnp_status_string(st));
}

// ---------------------------------------------------------------------------- decisions --
// The plugin name from a file name libnnplug-<name>.so, <name> in [a-z0-9_]+.
std::optional<std::string> plugin_name_from_file(const fs::path& path) {
  static const std::string prefix = "libnnplug-", suffix = ".so";
  const std::string file = path.filename().string();
  if (file.size() <= prefix.size() + suffix.size()) return std::nullopt;
  if (file.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  if (file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0) return std::nullopt;
  const std::string name = file.substr(prefix.size(), file.size() - prefix.size() - suffix.size());
  for (char ch : name)
    if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_')) return std::nullopt;
  return name;
}

verdict check_file_exists(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return failed(NNP_STATUS_NOT_FOUND, "no such file");
  if (fs::is_directory(path, ec)) return failed(NNP_STATUS_NOT_FOUND, "is a directory");
  return accept();
}

verdict check_file_name(const fs::path& path) {
  if (!plugin_name_from_file(path))
    return failed(NNP_STATUS_LOAD_FAILED, "file name '" + path.filename().string() +
                                              "' is not libnnplug-<name>.so with <name> in "
                                              "[a-z0-9_]+");
  return accept();
}

// The folder the candidate is named in, and the folder of the file it resolves to (a
// symlink's target), must not be writable by others.
verdict check_folder(const fs::path& path) {
  std::string why = check_plugin_folder(path.parent_path().string());
  if (why.empty()) {
    std::error_code ec;
    const fs::path real = fs::canonical(path, ec);
    if (!ec && real.parent_path() != path.parent_path())
      why = check_plugin_folder(real.parent_path().string());
  }
  if (!why.empty()) return failed(NNP_STATUS_LOAD_FAILED, "refused: " + why);
  return accept();
}

// The file itself, before dlopen sees it (plugin_file.cpp): regular, not writable by others,
// an ELF shared object of this host, not truncated.
verdict check_file(const fs::path& path) {
  const std::string why = check_plugin_file(path.string());
  if (!why.empty()) return failed(NNP_STATUS_LOAD_FAILED, "refused before dlopen: " + why);
  return accept();
}

// dlopen with RTLD_NOW | RTLD_LOCAL. Boost.DLL's error_code overload reports only a generic
// errno; the dynamic loader's own text (which names a missing dependency) is read with
// dlerror() right after the failed call.
verdict open_library(nnp_plugin& plugin) {
  namespace dll = boost::dll;
  std::error_code ec;
  dlerror();  // clear any stale error
  plugin.library.load(plugin.path, ec, dll::load_mode::rtld_now | dll::load_mode::rtld_local);
  if (!ec && plugin.library.is_loaded()) return accept();
  const char* dl_message = dlerror();
  return failed(NNP_STATUS_LOAD_FAILED,
                std::string("cannot open: ") + (dl_message != nullptr ? dl_message : ec.message()));
}

verdict find_entry(const nnp_plugin& plugin, nnp_plugin_get_api_fn* entry) {
  if (!plugin.library.has(NNP_PLUGIN_ENTRY_SYMBOL))
    return failed(NNP_STATUS_LOAD_FAILED,
                  "no entry symbol '" NNP_PLUGIN_ENTRY_SYMBOL "' (not an nnplug plugin?)");
  *entry = &plugin.library.get<nnp_status(const nnp_host_api*, const nnp_plugin_api**)>(
      NNP_PLUGIN_ENTRY_SYMBOL);
  return accept();
}

// Calls nnp_plugin_get_api; an exception thrown by it is caught here (the plugin broke the
// "no exception crosses the boundary" rule) and rejects it.
verdict call_entry(nnp_plugin& plugin, nnp_plugin_get_api_fn entry) {
  const nnp_plugin_api* api = nullptr;
  thread_plugin_error() = plugin_error{};
  nnp_status st = NNP_STATUS_OK;
  try {
    st = entry(&plugin.host, &api);
  } catch (const std::exception& e) {
    return rejected(NNP_STATUS_INTERNAL,
                    std::string(NNP_PLUGIN_ENTRY_SYMBOL " threw an exception: ") + e.what());
  } catch (...) {
    return rejected(NNP_STATUS_INTERNAL, NNP_PLUGIN_ENTRY_SYMBOL " threw an exception");
  }
  if (st != NNP_STATUS_OK)
    return rejected(st, plugin_message_or(std::string(NNP_PLUGIN_ENTRY_SYMBOL " returned ") +
                                          nnp_status_string(st)));
  if (api == nullptr)
    return rejected(NNP_STATUS_ABI_MISMATCH,
                    NNP_PLUGIN_ENTRY_SYMBOL " returned OK but a NULL function table");
  plugin.api = api;
  return accept();
}

verdict check_table_size(nnp_plugin& plugin) {
  const size_t size = plugin.api->struct_size;
  if (size < NNP_PLUGIN_API_STRUCT_SIZE_1_0)
    return rejected(NNP_STATUS_ABI_MISMATCH, "function table struct_size " + std::to_string(size) +
                                                 " is smaller than the ABI 1.0 size " +
                                                 std::to_string(NNP_PLUGIN_API_STRUCT_SIZE_1_0));
  // A larger table comes from a newer minor: read only the fields this host knows.
  plugin.api_size = std::min(size, sizeof(nnp_plugin_api));
  return accept();
}

verdict check_major_version(const nnp_plugin& plugin) {
  const int32_t major = plugin.api->abi_version_major;
  const int32_t minor = plugin.api->abi_version_minor;
  if (major != NNP_ABI_VERSION_MAJOR)
    return rejected(NNP_STATUS_ABI_MISMATCH,
                    "plugin ABI " + abi_string(major, minor) + " is incompatible with host ABI " +
                        abi_string(NNP_ABI_VERSION_MAJOR, NNP_ABI_VERSION_MINOR) +
                        " (major versions differ)");
  return accept();
}

verdict check_required_slots(const nnp_plugin& plugin) {
  const nnp_plugin_api& a = *plugin.api;
  const struct {
    const char* name;
    bool present;
  } slots[] = {
      {"get_device_count", a.get_device_count != nullptr},
      {"get_device_props", a.get_device_props != nullptr},
      {"mem_alloc", a.mem_alloc != nullptr},
      {"mem_free", a.mem_free != nullptr},
      {"stream_create", a.stream_create != nullptr},
      {"stream_destroy", a.stream_destroy != nullptr},
      {"stream_synchronize", a.stream_synchronize != nullptr},
      {"memcpy_async", a.memcpy_async != nullptr},
      {"op_supported", a.op_supported != nullptr},
      {"op_execute", a.op_execute != nullptr},
  };
  for (const auto& slot : slots)
    if (!slot.present)
      return rejected(NNP_STATUS_ABI_MISMATCH,
                      std::string("required slot '") + slot.name + "' is NULL");
  if (a.version == nullptr)
    return rejected(NNP_STATUS_ABI_MISMATCH, "required field 'version' is NULL");
  return accept();
}

verdict check_plugin_name(const nnp_plugin& plugin) {
  const char* name = plugin.api->name;
  if (name == nullptr) return rejected(NNP_STATUS_ABI_MISMATCH, "required field 'name' is NULL");
  if (plugin.name != name)
    return rejected(NNP_STATUS_ABI_MISMATCH, "table name '" + std::string(name) +
                                                 "' does not match the file name's '" +
                                                 plugin.name + "'");
  return accept();
}

verdict initialize_plugin(nnp_plugin& plugin) {
  if (plugin.api->initialize == nullptr) return accept();
  const nnp_status st = call_slot(&plugin, "initialize", [&] { return plugin.api->initialize(); });
  if (st != NNP_STATUS_OK) return rejected(st, slot_failure("initialize", st));
  plugin.initialized = true;
  return accept();
}

verdict enumerate_devices(nnp_plugin& plugin) {
  int32_t n = 0;
  const char* reason = nullptr;
  nnp_status st = call_slot(&plugin, "get_device_count",
                            [&] { return plugin.api->get_device_count(&n, &reason); });
  if (st != NNP_STATUS_OK) return rejected(st, slot_failure("get_device_count", st));
  if (n < 0)
    return rejected(NNP_STATUS_INTERNAL,
                    "get_device_count returned a negative count " + std::to_string(n));
  if (n == 0)
    plugin.zero_devices_reason =
        std::string("0 devices: ") + (reason != nullptr ? reason : "(no reason given)");
  for (int32_t i = 0; i < n; ++i) {
    auto dev = std::make_unique<nnp_device>();
    dev->plugin = &plugin;
    dev->index = i;
    dev->name = plugin.name + ":" + std::to_string(i);
    nnp_device_props props{};
    props.struct_size = sizeof(nnp_device_props);
    st = call_slot(&plugin, "get_device_props",
                   [&] { return plugin.api->get_device_props(i, &props); });
    if (st != NNP_STATUS_OK)
      return rejected(st, slot_failure("get_device_props(" + std::to_string(i) + ")", st));
    dev->description = props.description != nullptr ? props.description : dev->name;
    dev->props = props;
    dev->props.struct_size = sizeof(nnp_device_props);
    dev->props.name = dev->name.c_str();
    dev->props.plugin_name = plugin.name.c_str();
    dev->props.description = dev->description.c_str();
    dev->dl.device_type = static_cast<DLDeviceType>(props.device_type);
    dev->dl.device_id = props.device_id;
    plugin.devices.push_back(std::move(dev));
  }
  return accept();
}

// --------------------------------------------------------------------------- records ---
std::string state_name(int32_t state) {
  switch (state) {
    case NNP_LOAD_LOADED:
      return "LOADED";
    case NNP_LOAD_REJECTED:
      return "REJECTED";
    case NNP_LOAD_FAILED:
      return "FAILED";
    case NNP_LOAD_DUPLICATE:
      return "DUPLICATE";
    default:
      return "UNDEFINED";
  }
}

// Appends a record and prints it: failures and shadowed plugins (DUPLICATE) at warning level
// for default discovery (so that release builds are not silent), at info level for explicit
// loads (the caller gets the status), and loaded plugins at info level.
void add_record(registry& r, load_record_data rec, bool explicit_load) {
  int level = NNP_LOG_INFO;
  if ((rec.state == NNP_LOAD_FAILED || rec.state == NNP_LOAD_REJECTED ||
       rec.state == NNP_LOAD_DUPLICATE) &&
      !explicit_load)
    level = NNP_LOG_WARNING;
  logf(level, "load %s: %s (%s)%s%s", rec.path.c_str(), state_name(rec.state).c_str(),
       nnp_status_string(static_cast<nnp_status>(rec.status)), rec.reason.empty() ? "" : ": ",
       rec.reason.c_str());
  r.records.push_back(std::move(rec));
}

nnp_plugin* find_plugin_locked(registry& r, const std::string& name) {
  for (auto& p : r.plugins)
    if (p->name == name) return p.get();
  return nullptr;
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  const bool eq = fs::equivalent(a, b, ec);
  return !ec && eq;
}

// Tears down a plugin that was opened but not accepted (or whose later decision failed).
void discard_plugin(std::unique_ptr<nnp_plugin> plugin) noexcept {
  if (plugin->initialized && plugin->api != nullptr && plugin->api->shutdown != nullptr) {
    try {
      plugin->api->shutdown();
    } catch (...) {
    }
  }
  plugin->devices.clear();
  plugin->api = nullptr;
  plugin->library.unload();
}

// Owns a plugin while its decisions run: discarded (shutdown if initialized, unloaded) unless
// released into the registry, also when an exception leaves the decisions.
struct pending_plugin {
  std::unique_ptr<nnp_plugin> plugin;
  ~pending_plugin() {
    if (plugin) discard_plugin(std::move(plugin));
  }
};

void set_record(load_record_data& rec, const verdict& v) {
  rec.state = v.state;
  rec.status = v.status;
  rec.reason = v.reason;
}

// Runs the decisions in order for one candidate (lock held). Returns the record's status and
// the loaded (or already loaded) plugin.
nnp_status examine_candidate_locked(registry& r, const fs::path& path, bool explicit_load,
                                    nnp_plugin** out) {
  load_record_data rec;
  rec.path = path.string();
  logf(NNP_LOG_DEBUG, "examining %s", rec.path.c_str());

  verdict v = check_file_exists(path);
  if (v.ok()) v = check_file_name(path);
  if (!v.ok()) {
    set_record(rec, v);
    add_record(r, std::move(rec), explicit_load);
    return v.status;
  }
  const std::string name = *plugin_name_from_file(path);
  rec.name = name;

  // The very file already loaded under this name: a no-op (it was checked when it loaded).
  nnp_plugin* existing = find_plugin_locked(r, name);
  if (existing != nullptr && same_file(existing->path, rec.path)) {
    if (out != nullptr) *out = existing;
    return NNP_STATUS_OK;
  }

  // The checks on the folder and the file come before anything opens it.
  v = check_folder(path);
  if (v.ok()) v = check_file(path);
  if (!v.ok()) {
    set_record(rec, v);
    add_record(r, std::move(rec), explicit_load);
    return v.status;
  }

  // Same name from another file: a duplicate, never opened. In default discovery the file
  // found first (an earlier folder of the search path) shadows this one: a warning.
  if (existing != nullptr) {
    if (out != nullptr) *out = existing;
    rec.state = NNP_LOAD_DUPLICATE;
    rec.status = NNP_STATUS_OK;
    rec.reason = "plugin '" + name + "' is already loaded from " + existing->path;
    if (!explicit_load)
      rec.reason = "shadowed: " + rec.reason +
                   " (found earlier on the search path); this file is not loaded";
    add_record(r, std::move(rec), explicit_load);
    return NNP_STATUS_OK;
  }

  pending_plugin pending{std::make_unique<nnp_plugin>()};
  nnp_plugin& plugin = *pending.plugin;
  plugin.name = name;
  plugin.path = rec.path;
  plugin.host = plugin_host_api(&plugin.name);

  nnp_plugin_get_api_fn entry = nullptr;
  v = open_library(plugin);
  if (v.ok()) v = find_entry(plugin, &entry);
  if (v.ok()) v = call_entry(plugin, entry);
  if (v.ok()) {
    rec.abi_major = plugin.api->abi_version_major;
    rec.abi_minor = plugin.api->abi_version_minor;
    v = check_major_version(plugin);
  }
  if (v.ok()) v = check_table_size(plugin);
  if (v.ok()) v = check_required_slots(plugin);
  if (v.ok()) {
    rec.plugin_version = plugin.api->version;
    v = check_plugin_name(plugin);
  }
  if (v.ok()) v = initialize_plugin(plugin);
  if (v.ok()) v = enumerate_devices(plugin);

  set_record(rec, v);
  if (!v.ok()) {
    discard_plugin(std::move(pending.plugin));
    add_record(r, std::move(rec), explicit_load);
    return v.status;
  }
  plugin.version = plugin.api->version;
  rec.n_devices = static_cast<int32_t>(plugin.devices.size());
  if (plugin.devices.empty()) rec.reason = plugin.zero_devices_reason;
  if (plugin.api->abi_version_minor != NNP_ABI_VERSION_MINOR)
    logf(NNP_LOG_DEBUG, "%s: plugin ABI %s, host ABI %s (minor differs; compatible)", name.c_str(),
         abi_string(rec.abi_major, rec.abi_minor).c_str(),
         abi_string(NNP_ABI_VERSION_MAJOR, NNP_ABI_VERSION_MINOR).c_str());
  r.plugins.reserve(r.plugins.size() + 1);  // the push_back below cannot throw
  add_record(r, std::move(rec), explicit_load);
  if (out != nullptr) *out = &plugin;
  r.plugins.push_back(std::move(pending.plugin));
  return NNP_STATUS_OK;
}

// examine_candidate_locked, with any exception that escapes it (the host out of memory while
// enumerating a plugin's devices, say) turned into a FAILED record of this candidate: one
// candidate never ends the examination of the others. A half-loaded plugin was discarded on
// the way out (pending_plugin).
nnp_status load_candidate_locked(registry& r, const fs::path& path, bool explicit_load,
                                 nnp_plugin** out) {
  nnp_status st = NNP_STATUS_INTERNAL;
  std::string reason;
  try {
    return examine_candidate_locked(r, path, explicit_load, out);
  } catch (const std::bad_alloc&) {
    st = NNP_STATUS_OUT_OF_MEMORY;
    reason = "out of host memory while examining this candidate";
  } catch (const std::exception& e) {
    reason = std::string("error while examining this candidate: ") + e.what();
  } catch (...) {
    reason = "unknown exception while examining this candidate";
  }
  try {
    load_record_data rec;
    rec.path = path.string();
    if (auto name = plugin_name_from_file(path)) rec.name = *name;
    rec.state = NNP_LOAD_FAILED;
    rec.status = st;
    rec.reason = std::move(reason);
    add_record(r, std::move(rec), explicit_load);
  } catch (...) {
    // Out of memory again: no record, but the next candidate is still examined.
  }
  return st;
}

// The message of a failed load for the caller of nnp_load_plugin.
nnp_status report_load_failure(registry& r, nnp_status st) {
  const load_record_data& rec = r.records.back();
  return set_last_errorf(st, "nnp_load_plugin: %s: %s", rec.path.c_str(), rec.reason.c_str());
}

// Candidates of one directory, sorted by file name so the order is reproducible.
std::vector<fs::path> candidates_in(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    logf(NNP_LOG_DEBUG, "plugin directory %s does not exist; skipped", dir.string().c_str());
    return out;
  }
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (plugin_name_from_file(it->path())) out.push_back(it->path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

// The default search path: NNPLUG_PLUGIN_PATH (absolute entries only: the current directory
// is never searched), then <dir of libnnplug>/nnplug/plugins.
std::vector<fs::path> default_search_dirs() {
  std::vector<fs::path> dirs;
  if (const char* env = env_value("NNPLUG_PLUGIN_PATH")) {
    std::stringstream ss(env);
    std::string item;
    while (std::getline(ss, item, ':')) {
      if (item.empty()) continue;
      if (!fs::path(item).is_absolute()) {
        logf(NNP_LOG_WARNING,
             "NNPLUG_PLUGIN_PATH entry '%s' is not absolute; skipped (the current directory is "
             "never searched)",
             item.c_str());
        continue;
      }
      dirs.emplace_back(item);
    }
  }
  std::error_code ec;
  const fs::path self = boost::dll::this_line_location(ec);
  if (!ec && !self.empty())
    dirs.push_back(self.parent_path() / NNPLUG_PLUGIN_SUBDIR);
  else
    logf(NNP_LOG_WARNING, "cannot locate libnnplug itself (%s); only NNPLUG_PLUGIN_PATH is used",
         ec.message().c_str());
  return dirs;
}

nnp_status ensure_default_plugins() {
  registry& r = get_registry();
  std::lock_guard<std::recursive_mutex> lock(r.mutex);
  if (r.defaults_loaded) return NNP_STATUS_OK;
  r.defaults_loaded = true;
  for (const fs::path& dir : default_search_dirs()) {
    logf(NNP_LOG_DEBUG, "searching %s", dir.string().c_str());
    for (const fs::path& candidate : candidates_in(dir)) {
      std::error_code ec;
      const fs::path abs = fs::absolute(candidate, ec);
      load_candidate_locked(r, (ec ? candidate : abs).lexically_normal(), false, nullptr);
    }
  }
  return NNP_STATUS_OK;
}

std::vector<nnp_device*> all_devices_locked(registry& r) {
  std::vector<nnp_device*> out;
  for (auto& p : r.plugins)
    for (auto& d : p->devices) out.push_back(d.get());
  return out;
}

}  // namespace nnp::host

using namespace nnp::host;

extern "C" {

NNP_API nnp_status nnp_load_plugin(const char* path, nnp_plugin** out) {
  if (path == nullptr || *path == '\0')
    return set_last_error(NNP_STATUS_INVALID_ARGUMENT, "nnp_load_plugin: path is NULL or empty");
  try {
    registry& r = get_registry();
    std::lock_guard<std::recursive_mutex> lock(r.mutex);
    std::error_code ec;
    const fs::path abs = fs::absolute(path, ec).lexically_normal();
    const size_t before = r.records.size();
    nnp_plugin* plugin = nullptr;
    const nnp_status st = load_candidate_locked(r, ec ? fs::path(path) : abs, true, &plugin);
    if (st != NNP_STATUS_OK) {
      if (r.records.size() > before) return report_load_failure(r, st);
      return set_last_errorf(st, "nnp_load_plugin: %s: load failed", path);
    }
    if (out != nullptr) *out = plugin_handle(plugin);
    return NNP_STATUS_OK;
  } catch (const std::bad_alloc&) {
    return set_last_error(NNP_STATUS_OUT_OF_MEMORY, "nnp_load_plugin: out of host memory");
  } catch (const std::exception& e) {
    return set_last_errorf(NNP_STATUS_INTERNAL, "nnp_load_plugin: %s", e.what());
  }
}

NNP_API nnp_status nnp_load_default_plugins(void) {
  try {
    return ensure_default_plugins();
  } catch (const std::exception& e) {
    return set_last_errorf(NNP_STATUS_INTERNAL, "nnp_load_default_plugins: %s", e.what());
  }
}

NNP_API nnp_status nnp_get_load_records(nnp_load_record* records, size_t* n_records) {
  if (n_records == nullptr)
    return set_last_error(NNP_STATUS_INVALID_ARGUMENT, "nnp_get_load_records: n_records is NULL");
  registry& r = get_registry();
  std::lock_guard<std::recursive_mutex> lock(r.mutex);
  const size_t total = r.records.size();
  if (records == nullptr) {
    *n_records = total;
    return NNP_STATUS_OK;
  }
  const size_t n = std::min(*n_records, total);
  for (size_t i = 0; i < n; ++i)
    if (records[i].struct_size < sizeof(size_t) + sizeof(const char*))
      return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                             "nnp_get_load_records: records[%zu].struct_size is %zu; set it to "
                             "sizeof(nnp_load_record) = %zu",
                             i, records[i].struct_size, sizeof(nnp_load_record));
  for (size_t i = 0; i < n; ++i) {
    const load_record_data& d = r.records[i];
    nnp_load_record full{};
    full.struct_size = records[i].struct_size;
    full.path = d.path.c_str();
    full.name = d.name.c_str();
    full.plugin_version = d.plugin_version.c_str();
    full.abi_version_major = d.abi_major;
    full.abi_version_minor = d.abi_minor;
    full.state = d.state;
    full.status = d.status;
    full.reason = d.reason.c_str();
    full.n_devices = d.n_devices;
    std::memcpy(&records[i], &full, std::min(records[i].struct_size, sizeof(full)));
  }
  *n_records = total;
  return NNP_STATUS_OK;
}

NNP_API const char* nnp_plugin_name(const nnp_plugin* handle) {
  gate_guard in_call(get_registry().gate);
  const nnp_plugin* plugin = resolve_plugin(handle);
  return plugin != nullptr ? plugin->name.c_str() : nullptr;
}

NNP_API nnp_status nnp_shutdown(void) {
  registry& r = get_registry();
  std::lock_guard<std::recursive_mutex> lock(r.mutex);
  gate_closed closed(r.gate);  // waits for the calls in flight; new ones wait until the end
  nnp_status first = NNP_STATUS_OK;
  std::string first_message;
  auto note = [&](nnp_status st) {
    if (st != NNP_STATUS_OK && first == NNP_STATUS_OK) {
      first = st;
      first_message = nnp_last_error_message();
    }
  };
  // 0. communicators (each after the collective in flight on it)
  note(destroy_all_comms());
  // 1. streams (user streams, each after the call in flight on it; then the copy streams)
  note(destroy_all_streams());
  for (auto& p : r.plugins)
    for (auto& d : p->devices)
      if (d->copy_stream != nullptr) {
        note(call_slot(p.get(), "stream_destroy",
                       [&] { return p->api->stream_destroy(d->copy_stream); }));
        d->copy_stream = nullptr;
      }
  // 1b. graphs (their streams have finished)
  note(destroy_all_graphs());
  // 2. allocations
  {
    std::lock_guard<std::mutex> al(r.allocations_mutex);
    for (auto& entry : r.allocations) {  // no structured binding: a lambda captures `a` (C++20)
      const auto& a = entry.second;
      const nnp_plugin* p = a.device->plugin;
      void* mem = const_cast<void*>(entry.first);
      note(call_slot(p, "mem_free", [&] { return p->api->mem_free(a.device->index, mem); }));
    }
    r.allocations.clear();
  }
  // 3. plugin shutdown, in reverse load order; 4. unload.
  for (auto it = r.plugins.rbegin(); it != r.plugins.rend(); ++it) {
    nnp_plugin& p = **it;
    if (p.initialized && p.api->shutdown != nullptr) {
      try {
        p.api->shutdown();
      } catch (...) {
        note(set_last_errorf(NNP_STATUS_INTERNAL, "%s: shutdown threw an exception",
                             p.name.c_str()));
      }
    }
    release_handles(p);
    p.devices.clear();
    p.api = nullptr;
    p.library.unload();
  }
  r.plugins.clear();
  // 5. communication plugins (shutdown and unload)
  unload_comm_plugins();
  r.records.clear();
  r.defaults_loaded = false;
  if (first != NNP_STATUS_OK) return set_last_error(first, "nnp_shutdown: " + first_message);
  return NNP_STATUS_OK;
}

}  // extern "C"
