// nnplug/kit/host_device.hpp — slot helpers for plugins whose devices compute in ordinary host
// memory (DLPack kDLCPU) and run ops synchronously inside op_execute: 64-byte aligned
// allocation with overflow checks, copies, and trivial in-order streams. The reference and cpu
// backends use them; a plugin for a discrete device writes its own.
//
// Contract kept (nnplug.h): an op or copy is complete when op_execute / memcpy_async returns,
// so stream_synchronize has nothing to wait for and host buffers may be reused at once.
// Thread-safe: no shared state.
#pragma once

#include <nnplug/kit/plugin.hpp>

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace nnp::kit {

constexpr size_t kHostAlignment = 64;

// Allocates size_bytes (0 gives a minimal block) aligned to 64 bytes; OUT_OF_MEMORY with the
// size when the rounded size overflows or the allocation fails.
inline void* host_alloc(size_t size_bytes, const char* backend) {
  if (size_bytes > SIZE_MAX - (kHostAlignment - 1))
    fail(NNP_STATUS_OUT_OF_MEMORY,
         format("%s: cannot allocate %zu bytes (larger than the address space)", backend,
                size_bytes));
  const size_t rounded = (size_bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  void* p = std::aligned_alloc(kHostAlignment, rounded == 0 ? kHostAlignment : rounded);
  if (p == nullptr)
    fail(NNP_STATUS_OUT_OF_MEMORY,
         format("%s: host allocation of %zu bytes failed", backend, size_bytes));
  return p;
}
inline void host_free(void* ptr) { std::free(ptr); }

// INVALID_ARGUMENT unless kind is one of nnp_memcpy_kind.
inline void check_memcpy_kind(int32_t kind) {
  if (kind != NNP_MEMCPY_HOST_TO_DEVICE && kind != NNP_MEMCPY_DEVICE_TO_HOST &&
      kind != NNP_MEMCPY_DEVICE_TO_DEVICE)
    fail(NNP_STATUS_INVALID_ARGUMENT, format("unknown memcpy kind %d", kind));
}

// A copy of host memory to host memory: memmove (overlap tolerated); 0 bytes is a no-op.
inline void host_memcpy(void* dst, const void* src, size_t size_bytes, int32_t kind) {
  check_memcpy_kind(kind);
  if (size_bytes == 0 || dst == src) return;
  if (dst == nullptr || src == nullptr)
    fail(NNP_STATUS_INVALID_ARGUMENT, "memcpy with a NULL pointer");
  std::memmove(dst, src, size_bytes);
}

// Total physical memory in bytes (0 if unknown), for nnp_device_props.memory_bytes.
inline uint64_t host_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

// The stream attributes of a device without TF32 (CPUs, simulators): ALLOW_TF32 takes 0 or 1
// and changes nothing (float32 math is always full precision, as nnplug.h allows); any other
// attribute is UNSUPPORTED.
inline void accept_stream_attribute(int32_t attribute, int64_t value, const char* backend) {
  if (attribute != NNP_STREAM_ATTR_ALLOW_TF32)
    unsupported(
        format("stream attribute %d is not implemented by the %s backend", attribute, backend));
  if (value != 0 && value != 1)
    fail(NNP_STATUS_INVALID_ARGUMENT,
         format("ALLOW_TF32 takes 0 or 1, got %lld", static_cast<long long>(value)));
}

}  // namespace nnp::kit
