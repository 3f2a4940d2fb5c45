// nnplug/kit/error.hpp — the error type of nnplug's C++ code: an nnp::error carries an
// nnp_status and a message; nnp::fail / nnp::unsupported throw one; nnp::format is printf into
// std::string. Used by libnnplug's validation and by plugins (whose slots turn errors into
// statuses with nnp::guard, nnplug/kit/plugin.hpp). Header-only, no state.
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

}  // namespace nnp
