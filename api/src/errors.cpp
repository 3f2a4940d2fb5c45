// The thread-local last error (nnp_last_error_message) and logging (NNPLUG_LOG) of libnnplug.
#include "internal.hpp"

#include <nnplug/geometry/error.hpp>  // nnp::vformat

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace nnp::host {
namespace {

thread_local std::string t_last_error;
thread_local plugin_error t_plugin_error;

// NNPLUG_LOG: error|warning|info|debug (or 1..4); anything else keeps the default, warning.
int parse_log_level(const char* text) {
  if (text == nullptr || *text == '\0') return NNP_LOG_WARNING;
  if (std::strcmp(text, "error") == 0 || std::strcmp(text, "1") == 0) return NNP_LOG_ERROR;
  if (std::strcmp(text, "warning") == 0 || std::strcmp(text, "2") == 0) return NNP_LOG_WARNING;
  if (std::strcmp(text, "info") == 0 || std::strcmp(text, "3") == 0) return NNP_LOG_INFO;
  if (std::strcmp(text, "debug") == 0 || std::strcmp(text, "4") == 0) return NNP_LOG_DEBUG;
  if (std::strcmp(text, "off") == 0 || std::strcmp(text, "none") == 0 ||
      std::strcmp(text, "0") == 0)
    return 0;
  return NNP_LOG_WARNING;
}

const char* level_name(int level) {
  switch (level) {
    case NNP_LOG_ERROR:
      return "error";
    case NNP_LOG_WARNING:
      return "warning";
    case NNP_LOG_INFO:
      return "info";
    case NNP_LOG_DEBUG:
      return "debug";
    default:
      return "log";
  }
}

}  // namespace

nnp_status set_last_error(nnp_status status, const std::string& message) {
  try {
    t_last_error = message;
  } catch (...) {
    // Out of memory while storing the message: keep the status, lose the text.
  }
  return status;
}

nnp_status set_last_errorf(nnp_status status, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string message;
  try {
    message = nnp::vformat(fmt, args);
  } catch (...) {
  }
  va_end(args);
  return set_last_error(status, message);
}

plugin_error& thread_plugin_error() { return t_plugin_error; }

nnp_status slot_threw(const char* plugin, const char* slot, const char* what) noexcept {
  plugin_error& pe = t_plugin_error;
  try {
    pe.set = true;
    pe.thrown = true;
    pe.status = NNP_STATUS_INTERNAL;
    pe.message = std::string(slot) +
                 " threw an exception: " + (what != nullptr ? what : "(not a std::exception)");
    return set_last_error(NNP_STATUS_INTERNAL, std::string(plugin) + ": " + pe.message);
  } catch (...) {
    return set_last_errorf(NNP_STATUS_INTERNAL, "%s: %s threw an exception", plugin, slot);
  }
}

int log_level() {
  // Read once per process; the environment is read "at first use" (nnplug.h).
  static const int level = parse_log_level(env_value("NNPLUG_LOG"));
  return level;
}

void log(int level, const std::string& message) {
  if (level > log_level() || level <= 0) return;
  std::fprintf(stderr, "nnplug %s: %s\n", level_name(level), message.c_str());
}

void logf(int level, const char* fmt, ...) {
  if (level > log_level() || level <= 0) return;
  va_list args;
  va_start(args, fmt);
  try {
    log(level, nnp::vformat(fmt, args));
  } catch (...) {
  }
  va_end(args);
}

void report_plugin_error(const char* name, nnp_status status, const char* message) noexcept {
  plugin_error& pe = thread_plugin_error();
  try {
    pe.set = true;
    pe.status = status;
    pe.message = message != nullptr ? message : "(no message)";
    set_last_error(status, std::string(name) + ": " + pe.message);
  } catch (...) {
  }
}

nnp_host_api plugin_host_api(const std::string* name) {
  nnp_host_api host{};
  host.struct_size = sizeof(nnp_host_api);
  host.abi_version_major = NNP_ABI_VERSION_MAJOR;
  host.abi_version_minor = NNP_ABI_VERSION_MINOR;
  host.host_context = const_cast<std::string*>(name);
  host.set_error = [](void* ctx, nnp_status status, const char* message) {
    const auto* n = static_cast<const std::string*>(ctx);
    report_plugin_error(n != nullptr ? n->c_str() : "plugin", status, message);
  };
  host.log = [](void* ctx, int32_t level, const char* message) {
    const auto* n = static_cast<const std::string*>(ctx);
    report_plugin_log(n != nullptr ? n->c_str() : "plugin", level, message);
  };
  return host;
}

void report_plugin_log(const char* name, int32_t level, const char* message) noexcept {
  if (level > log_level()) return;
  try {
    log(level, std::string(name) + ": " + (message != nullptr ? message : ""));
  } catch (...) {
  }
}

}  // namespace nnp::host

extern "C" {

NNP_API const char* nnp_last_error_message(void) { return nnp::host::t_last_error.c_str(); }

}  // extern "C"
