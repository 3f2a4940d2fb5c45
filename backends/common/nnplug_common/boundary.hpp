// The C-to-C++ boundary shared by in-tree backends.
//
// Every extern "C" slot of a plugin is `return nnp::guard([&] { ...; });`: the body is C++ and
// may throw nnp::error (a status and a message), std::bad_alloc or anything else; guard turns
// each into a status and reports the message through the host's set_error callback. No
// exception crosses the boundary.
#pragma once

#include <nnplug/nnplug_plugin.h>

#include <cstdarg>
#include <cstdio>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>

namespace nnp {

// An error with its nnplug status.
class error : public std::runtime_error {
 public:
  error(nnp_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  nnp_status status() const noexcept { return status_; }

 private:
  nnp_status status_;
};

// printf-style formatting into std::string.
inline std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string out(n > 0 ? static_cast<size_t>(n) : 0u, '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, fmt, args);
  va_end(args);
  return out;
}

[[noreturn]] inline void fail(nnp_status status, const std::string& message) {
  throw error(status, message);
}
[[noreturn]] inline void unsupported(const std::string& message) {
  throw error(NNP_STATUS_UNSUPPORTED, message);
}

// The host services of this plugin, stored by nnp_plugin_get_api. One per plugin image
// (each plugin is its own shared object, so this inline variable is per plugin).
inline const nnp_host_api* g_host = nullptr;

inline void host_set_error(nnp_status status, const char* message) {
  if (g_host != nullptr && g_host->set_error != nullptr)
    g_host->set_error(g_host->host_context, status, message);
}
inline void host_log(nnp_log_level level, const std::string& message) {
  if (g_host != nullptr && g_host->log != nullptr)
    g_host->log(g_host->host_context, level, message.c_str());
}

// Runs body() and maps every exception to a status; body returns void or nnp_status.
template <typename F>
nnp_status guard(F&& body) noexcept {
  try {
    if constexpr (std::is_same_v<decltype(body()), void>) {
      body();
      return NNP_STATUS_OK;
    } else {
      return body();
    }
  } catch (const error& e) {
    host_set_error(e.status(), e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    host_set_error(NNP_STATUS_OUT_OF_MEMORY, "out of host memory");
    return NNP_STATUS_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    host_set_error(NNP_STATUS_INTERNAL, e.what());
    return NNP_STATUS_INTERNAL;
  } catch (...) {
    host_set_error(NNP_STATUS_INTERNAL, "unknown exception");
    return NNP_STATUS_INTERNAL;
  }
}

// Standard entry handshake: checks the host's major version and stores the host pointer.
// Returns the status for nnp_plugin_get_api.
inline nnp_status accept_host(const nnp_host_api* host, const nnp_plugin_api* table,
                              const nnp_plugin_api** out) {
  if (host == nullptr || out == nullptr) return NNP_STATUS_INVALID_ARGUMENT;
  if (host->struct_size < NNP_HOST_API_STRUCT_SIZE_1_0) return NNP_STATUS_ABI_MISMATCH;
  g_host = host;
  if (host->abi_version_major != NNP_ABI_VERSION_MAJOR) {
    host_set_error(NNP_STATUS_ABI_MISMATCH,
                   format("plugin '%s' built for ABI %d.%d, host has ABI %d.%d", table->name,
                          NNP_ABI_VERSION_MAJOR, NNP_ABI_VERSION_MINOR,
                          host->abi_version_major, host->abi_version_minor)
                       .c_str());
    g_host = nullptr;
    return NNP_STATUS_ABI_MISMATCH;
  }
  *out = table;
  return NNP_STATUS_OK;
}

}  // namespace nnp
