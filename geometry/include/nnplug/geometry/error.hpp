// nnplug/geometry/error.hpp — the error type of nnplug's C++ code: an nnp::error carries an
// nnp_status and a message; nnp::fail / nnp::unsupported throw one; nnp::format and
// nnp::vformat are printf into std::string. The one definition for libnnplug (validation,
// its last-error and log messages) and for plugins (the kit re-exports it as
// <nnplug/kit/error.hpp>; a slot turns errors into statuses with nnp::guard,
// nnplug/kit/plugin.hpp). Header-only, no state.
#pragma once

#include <nnplug/nnplug_types.h>

#include <cstdarg>
#include <cstdio>
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

// printf-style formatting of a va_list into std::string (args is left for the caller to
// va_end).
inline std::string vformat(const char* fmt, va_list args) __attribute__((format(printf, 1, 0)));
inline std::string vformat(const char* fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string out(n > 0 ? static_cast<size_t>(n) : 0u, '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, fmt, args);
  return out;
}

// printf-style formatting into std::string.
inline std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string out;
  try {
    out = vformat(fmt, args);
  } catch (...) {
    va_end(args);
    throw;
  }
  va_end(args);
  return out;
}

[[noreturn]] inline void fail(nnp_status status, const std::string& message) {
  throw error(status, message);
}
[[noreturn]] inline void unsupported(const std::string& message) {
  throw error(NNP_STATUS_UNSUPPORTED, message);
}

}  // namespace nnp
