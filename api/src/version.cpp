// Version and status queries of libnnplug.
#include <nnplug/nnplug.h>

#include <cstdint>
#include <cstring>

extern "C" {

NNP_API void nnp_get_version(int32_t* major, int32_t* minor, int32_t* patch) {
  if (major != nullptr) *major = NNP_VERSION_MAJOR;
  if (minor != nullptr) *minor = NNP_VERSION_MINOR;
  if (patch != nullptr) *patch = NNP_VERSION_PATCH;
}

NNP_API const char* nnp_version_string(void) { return NNP_VERSION_STRING; }

NNP_API const char* nnp_status_string(nnp_status status) {
  // A C caller may pass any int: read it as one (an out-of-range value loaded as the enum type
  // is undefined behaviour in C++).
  int32_t code;
  static_assert(sizeof code == sizeof status, "nnp_status is an int-sized enum");
  std::memcpy(&code, &status, sizeof code);
  switch (code) {
    case NNP_STATUS_OK:
      return "ok";
    case NNP_STATUS_INVALID_ARGUMENT:
      return "invalid argument";
    case NNP_STATUS_UNSUPPORTED:
      return "unsupported";
    case NNP_STATUS_OUT_OF_MEMORY:
      return "out of memory";
    case NNP_STATUS_NOT_FOUND:
      return "not found";
    case NNP_STATUS_UNAVAILABLE:
      return "unavailable";
    case NNP_STATUS_ABI_MISMATCH:
      return "ABI mismatch";
    case NNP_STATUS_DEVICE_ERROR:
      return "device error";
    case NNP_STATUS_INTERNAL:
      return "internal error";
    case NNP_STATUS_LOAD_FAILED:
      return "load failed";
    default:
      return "unknown status";
  }
}

}  // extern "C"
