// harness_devices.cpp — backend and device selection: loads the plugins named by --plugin,
// looks up the devices named by --backend (or every default plugin), opens the reference,
// creates and destroys each device's main-thread stream, and reads the plugins' load records.
#include "harness.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>

namespace conf {

// ---- devices --------------------------------------------------------------------------------
namespace {
std::vector<std::unique_ptr<device_entry>>& device_list() {
  static std::vector<std::unique_ptr<device_entry>> list;
  return list;
}
device_entry& ref_dev() {
  static device_entry d;
  return d;
}

std::vector<nnp_load_record> load_records() {
  size_t n = 0;
  std::vector<nnp_load_record> out;
  if (nnp_get_load_records(nullptr, &n) != NNP_STATUS_OK) return out;
  out.resize(n);
  for (auto& r : out) {
    std::memset(&r, 0, sizeof(r));
    r.struct_size = sizeof(r);
  }
  if (nnp_get_load_records(out.data(), &n) != NNP_STATUS_OK) out.clear();
  out.resize(std::min(n, out.size()));
  return out;
}

// Looks up "name" or "name:i" and fills d.
void open_device(device_entry& d, const std::string& name) {
  std::string dev_name = name.find(':') == std::string::npos ? name + ":0" : name;
  d.name = dev_name;
  d.plugin = name.substr(0, name.find(':'));
  nnp_device* dev = nullptr;
  const nnp_status s = nnp_get_device(dev_name.c_str(), &dev);
  if (s == NNP_STATUS_UNAVAILABLE) {
    d.reason = nnp_last_error_message();
    return;
  }
  if (s != NNP_STATUS_OK) {
    d.failed = true;
    d.reason = std::string(nnp_status_string(s)) + ": " + nnp_last_error_message();
    for (const auto& r : load_records()) {
      if (r.name && d.plugin == r.name && r.state != NNP_LOAD_LOADED && r.reason)
        d.reason +=
            std::string(" (load record: ") + (r.path ? r.path : "?") + ": " + r.reason + ")";
    }
    return;
  }
  d.dev = dev;
  for (const auto& r : load_records()) {
    if (r.state == NNP_LOAD_LOADED && r.name && d.plugin == r.name) {
      d.plugin_version = r.plugin_version ? r.plugin_version : "";
      d.plugin_path = r.path ? r.path : "";
    }
  }
  if (nnp_device_get_dldevice(dev, &d.dl) != NNP_STATUS_OK) {
    d.failed = true;
    d.reason = std::string("nnp_device_get_dldevice failed: ") + nnp_last_error_message();
    return;
  }
  if (nnp_stream_create(dev, &d.stream) != NNP_STATUS_OK) {
    d.failed = true;
    d.reason = std::string("nnp_stream_create failed: ") + nnp_last_error_message();
    return;
  }
  d.available = true;
}
}  // namespace

device_entry& reference_device() { return ref_dev(); }

std::vector<device_entry*> backends_under_test() {
  std::vector<device_entry*> out;
  for (auto& d : device_list()) out.push_back(d.get());
  return out;
}

std::vector<device_entry*> all_devices() {
  std::vector<device_entry*> all = backends_under_test();
  all.push_back(&ref_dev());
  return all;
}

void release_devices() {
  for (device_entry* d : all_devices()) {
    if (d->stream) nnp_stream_destroy(d->stream);
    d->stream = nullptr;
    d->available = false;
  }
}

bool setup_devices() {
  runner_options& o = options();
  std::vector<std::pair<std::string, std::string>> wanted;  // (label, device name)
  for (const auto& path : o.plugins) {
    nnp_plugin* p = nullptr;
    const nnp_status s = nnp_load_plugin(path.c_str(), &p);
    if (s != NNP_STATUS_OK) {
      auto d = std::make_unique<device_entry>();
      d->label = path;
      d->name = path;
      d->plugin = path;
      d->failed = true;
      d->reason =
          std::string("nnp_load_plugin: ") + nnp_status_string(s) + ": " + nnp_last_error_message();
      device_list().push_back(std::move(d));
      continue;
    }
    wanted.emplace_back(path, nnp_plugin_name(p));
  }
  for (const auto& b : o.backends) wanted.emplace_back(b, b);
  if (o.plugins.empty() && o.backends.empty()) {
    nnp_load_default_plugins();
    for (const auto& r : load_records()) {
      if (r.state != NNP_LOAD_LOADED || !r.name || o.reference == r.name) continue;
      wanted.emplace_back(r.name, r.name);
    }
  }
  for (const auto& [label, name] : wanted) {
    auto d = std::make_unique<device_entry>();
    d->label = label;
    open_device(*d, name);
    device_list().push_back(std::move(d));
  }
  device_entry& ref = ref_dev();
  ref.label = o.reference;
  open_device(ref, o.reference);
  if (!ref.available) {
    std::fprintf(stderr, "nnplug-conformance: the reference '%s' is not usable: %s\n",
                 o.reference.c_str(), ref.reason.c_str());
    return false;
  }
  return true;
}

}  // namespace conf
