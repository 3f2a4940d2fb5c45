// memory.cpp — device memory of the simulated accelerator.
//
// Each device reserves two mappings of its memory size: `handles_`, PROT_NONE, whose addresses
// are what mem_alloc hands out (so any host load or store through them faults at once, as a
// device pointer would on a discrete GPU), and `storage_`, read/write, which holds the bytes
// and is reached only by the stream workers through resolve(). Both are MAP_NORESERVE: pages
// are committed on first touch and returned with MADV_DONTNEED when an allocation is freed.
#include "sim.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

namespace nnp::sim {

int64_t env_int(const char* name, int64_t fallback, int64_t lo, int64_t hi) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (*end != '\0' || v < lo || v > hi)
    fail(NNP_STATUS_INVALID_ARGUMENT,
         format("%s='%s': expected an integer in [%lld, %lld]", name, text,
                static_cast<long long>(lo), static_cast<long long>(hi)));
  return v;
}

namespace {

char* map_or_throw(uint64_t bytes, int prot, const char* what) {
  void* p = mmap(nullptr, bytes, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    fail(NNP_STATUS_OUT_OF_MEMORY, format("cannot reserve %llu bytes of address space for the %s",
                                          static_cast<unsigned long long>(bytes), what));
  return static_cast<char*>(p);
}

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

}  // namespace

device_memory::device_memory(int32_t device, uint64_t bytes) : device_(device), bytes_(bytes) {
  handles_ = map_or_throw(bytes, PROT_NONE, "device addresses");
  try {
    storage_ = map_or_throw(bytes, PROT_READ | PROT_WRITE, "device storage");
  } catch (...) {
    munmap(handles_, bytes_);
    throw;
  }
  free_.emplace(0, bytes_);
}

device_memory::~device_memory() {
  munmap(storage_, bytes_);
  munmap(handles_, bytes_);
}

void* device_memory::allocate(size_t size_bytes) {
  const uint64_t size = round_up(size_bytes, kAlign);
  if (size_bytes == 0 || size < size_bytes)
    fail(NNP_STATUS_INVALID_ARGUMENT, format("cannot allocate %zu bytes", size_bytes));
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < size) continue;
    const uint64_t offset = it->first, left = it->second - size;
    free_.erase(it);
    if (left > 0) free_.emplace(offset + size, left);
    used_.emplace(offset, block{size, 0});
    std::memset(storage_ + offset, 0xFF, size_bytes);
    return handles_ + offset;
  }
  fail(NNP_STATUS_OUT_OF_MEMORY,
       format("sim:%d: out of device memory: %zu bytes requested, device has %llu bytes "
              "(NNPLUG_SIM_MEMORY_MB)",
              device_, size_bytes, static_cast<unsigned long long>(bytes_)));
}

std::map<uint64_t, device_memory::block>::iterator device_memory::find_block(uint64_t offset) {
  auto it = used_.upper_bound(offset);
  if (it == used_.begin()) return used_.end();
  --it;
  return offset < it->first + it->second.size ? it : used_.end();
}

bool device_memory::owns(const void* p) const {
  const char* c = static_cast<const char*>(p);
  return c >= handles_ && c < handles_ + bytes_;
}

void device_memory::release(void* handle) {
  if (!owns(handle))
    fail(NNP_STATUS_INVALID_ARGUMENT,
         format("sim:%d: %p is not memory of this device", device_, handle));
  const uint64_t offset = static_cast<uint64_t>(static_cast<char*>(handle) - handles_);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = used_.find(offset);
  if (it == used_.end())
    fail(NNP_STATUS_INVALID_ARGUMENT,
         format("sim:%d: %p does not start an allocation", device_, handle));
  if (it->second.users > 0)
    fail(NNP_STATUS_INTERNAL,
         format("sim:%d: %p freed while %lld queued task(s) still use it (nnp_free must wait "
                "for queued work)",
                device_, handle, static_cast<long long>(it->second.users)));
  uint64_t start = offset, size = it->second.size;
  used_.erase(it);
  // Give whole pages back to the system; the bytes of a later allocation are set anyway.
  constexpr uint64_t kPage = 4096;
  const uint64_t page_lo = round_up(start, kPage), page_hi = (start + size) / kPage * kPage;
  if (page_hi > page_lo) madvise(storage_ + page_lo, page_hi - page_lo, MADV_DONTNEED);
  // Coalesce with the free neighbours.
  auto next = free_.lower_bound(start);
  if (next != free_.end() && next->first == start + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  free_.emplace(start, size);
}

char* device_memory::resolve(const void* handle, size_t size_bytes, const char* what, bool pin,
                             long index) {
  // The name is formatted on the error paths only: this runs for every tensor of every op.
  const auto name = [&] { return index >= 0 ? format("%s[%ld]", what, index) : std::string(what); };
  if (!owns(handle))
    fail(NNP_STATUS_INVALID_ARGUMENT,
         format("%s: %p is not memory of sim:%d", name().c_str(), handle, device_));
  const uint64_t offset = static_cast<uint64_t>(static_cast<const char*>(handle) - handles_);
  if (size_bytes == 0 && !pin) return storage_ + offset;  // an empty range touches nothing
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = find_block(offset);
  if (it == used_.end() || offset + size_bytes > it->first + it->second.size)
    fail(NNP_STATUS_INVALID_ARGUMENT,
         format("%s: [%p, +%zu bytes) is not inside one allocation of sim:%d", name().c_str(),
                handle, size_bytes, device_));
  if (pin) ++it->second.users;
  return storage_ + offset;
}

void device_memory::unpin(const void* handle) {
  const uint64_t offset = static_cast<uint64_t>(static_cast<const char*>(handle) - handles_);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = find_block(offset);
  if (it != used_.end()) --it->second.users;
}

}  // namespace nnp::sim
