// Handles and the call gate of libnnplug (handles.hpp describes both).
#include "handles.hpp"

#include "internal.hpp"

#include <chrono>
#include <new>
#include <thread>

namespace nnp::host {

namespace {

constexpr unsigned kIndexBits = 20;
constexpr unsigned kGenerationBits = 38;
constexpr unsigned kKindShift = kIndexBits + kGenerationBits;  // 58
constexpr unsigned kKindBits = 3;
constexpr unsigned kMarkShift = kKindShift + kKindBits;  // 61
constexpr uintptr_t kMark = 0x5;  // 0b101: kinds 0..3 give a top nibble of 0xA, graphs 0xB
constexpr uint64_t kGenerationMask = (uint64_t{1} << kGenerationBits) - 1;
constexpr uintptr_t kIndexMask = (uintptr_t{1} << kIndexBits) - 1;

uintptr_t encode(handle_kind kind, uint64_t generation, uint32_t index) {
  return (kMark << kMarkShift) | (static_cast<uintptr_t>(kind) << kKindShift) |
         (static_cast<uintptr_t>(generation) << kIndexBits) | index;
}

}  // namespace

const char* handle_kind_name(handle_kind kind) {
  switch (kind) {
    case handle_kind::comm:
      return "nnp_comm";
    case handle_kind::plugin:
      return "nnp_plugin";
    case handle_kind::device:
      return "nnp_device";
    case handle_kind::stream:
      return "nnp_stream";
    case handle_kind::graph:
      return "nnp_graph";
  }
  return "handle";
}

handle_slot* handle_table::slot_at(uint32_t index) const {
  static_assert(kMaxChunks * kChunkSize == size_t{1} << kIndexBits, "index bits and table size");
  const size_t chunk = index >> kChunkBits;
  if (chunk >= kMaxChunks) return nullptr;
  handle_slot* base = chunks_[chunk].load(std::memory_order_acquire);
  return base != nullptr ? base + (index & (kChunkSize - 1)) : nullptr;
}

uintptr_t handle_table::add(void* object) {
  std::lock_guard<std::mutex> lock(mutex_);
  uint32_t index;
  if (free_.size() > kReuseAfter || (next_index_ >= kMaxChunks * kChunkSize && !free_.empty())) {
    index = free_.front();
    free_.pop_front();
  } else {
    if (next_index_ >= kMaxChunks * kChunkSize) throw std::bad_alloc();
    index = next_index_;
    const size_t chunk = index >> kChunkBits;
    if (chunks_[chunk].load(std::memory_order_relaxed) == nullptr)
      chunks_[chunk].store(new handle_slot[kChunkSize], std::memory_order_release);
    ++next_index_;
  }
  handle_slot& slot = *slot_at(index);
  const uint64_t generation =
      (slot.generation.load(std::memory_order_relaxed) + 1) & kGenerationMask;  // odd
  slot.object.store(object, std::memory_order_relaxed);
  slot.generation.store(generation, std::memory_order_release);
  return encode(kind_, generation, index);
}

void handle_table::remove(uintptr_t handle) {
  const handle_lookup h = find(handle);
  if (h.state != handle_state::live) return;
  std::lock_guard<std::mutex> lock(mutex_);
  h.slot->object.store(nullptr, std::memory_order_relaxed);
  h.slot->generation.store((h.generation + 1) & kGenerationMask,
                           std::memory_order_release);  // even: free
  try {
    free_.push_back(static_cast<uint32_t>(handle & kIndexMask));
  } catch (const std::bad_alloc&) {
    // Out of memory: the slot is not reused (it stays released).
  }
}

handle_lookup handle_table::find(uintptr_t handle) const {
  handle_lookup h;
  if (handle == 0) return h;
  h.state = handle_state::foreign;
  if (handle >> kMarkShift != kMark) return h;
  const uintptr_t kind = (handle >> kKindShift) & ((uintptr_t{1} << kKindBits) - 1);
  if (kind > static_cast<uintptr_t>(handle_kind::graph)) return h;  // no such kind
  h.kind = static_cast<handle_kind>(kind);
  h.generation = (handle >> kIndexBits) & kGenerationMask;
  if (h.generation % 2 == 0) return h;  // never made
  if (h.kind != kind_) {
    h.state = handle_state::other_kind;
    return h;
  }
  const auto index = static_cast<uint32_t>(handle & kIndexMask);
  handle_slot* slot = slot_at(index);
  if (slot == nullptr) return h;  // never made
  const uint64_t current = slot->generation.load(std::memory_order_acquire);
  if (h.generation > current) return h;  // never made (until the generation wraps)
  h.slot = slot;
  h.state = current == h.generation ? handle_state::live : handle_state::stale;
  return h;
}

nnp_status lock_handle(const handle_table& table, handle_kind kind, const char* func,
                       const char* arg, const void* handle, handle_slot** slot, void** object) {
  *slot = nullptr;
  *object = nullptr;
  const handle_lookup h = table.find(handle_value(handle));
  if (h.state != handle_state::live) return refuse_handle(func, arg, kind, h, handle_value(handle));
  h.slot->mutex.lock();
  // Released (and perhaps reused) while this call waited for the object.
  if (!handle_table::still_live(h)) {
    h.slot->mutex.unlock();
    handle_lookup stale = h;
    stale.state = handle_state::stale;
    return refuse_handle(func, arg, kind, stale, handle_value(handle));
  }
  *slot = h.slot;
  *object = handle_table::object_of(h);
  return NNP_STATUS_OK;
}

nnp_status refuse_handle(const char* func, const char* arg, handle_kind expected,
                         const handle_lookup& h, uintptr_t value) {
  const char* name = handle_kind_name(expected);
  switch (h.state) {
    case handle_state::null:
      return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT, "%s: %s is NULL", func, arg);
    case handle_state::other_kind:
      return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT, "%s: %s is an %s handle, not an %s", func,
                             arg, handle_kind_name(h.kind), name);
    case handle_state::stale:
      if (expected == handle_kind::stream)
        return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                               "%s: %s is a stale nnp_stream handle (the stream was destroyed, "
                               "or released by nnp_shutdown)",
                               func, arg);
      if (expected == handle_kind::graph)
        return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                               "%s: %s is a stale nnp_graph handle (the graph was destroyed, or "
                               "released by nnp_shutdown)",
                               func, arg);
      if (expected == handle_kind::comm)
        return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                               "%s: %s is a stale nnp_comm handle (the communicator was "
                               "destroyed, or released by nnp_shutdown)",
                               func, arg);
      return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT,
                             "%s: %s is a stale %s handle (released by nnp_shutdown; look it up "
                             "again)",
                             func, arg, name);
    case handle_state::foreign:
    case handle_state::live:
      break;
  }
  return set_last_errorf(NNP_STATUS_INVALID_ARGUMENT, "%s: %s (0x%llx) is not an %s handle", func,
                         arg, static_cast<unsigned long long>(value), name);
}

// ---------------------------------------------------------------------------- the gate --
namespace {

size_t thread_stripe(size_t n) {
  static std::atomic<size_t> next{0};
  thread_local const size_t stripe = next.fetch_add(1, std::memory_order_relaxed);
  return stripe % n;
}

}  // namespace

size_t call_gate::enter() {
  const size_t i = thread_stripe(kStripes);
  for (;;) {
    // Dekker with close(): the count is published before closed_ is read (both seq_cst), so
    // either close() sees this call or this call sees closed_.
    stripes_[i].in_flight.fetch_add(1, std::memory_order_seq_cst);
    if (!closed_.load(std::memory_order_seq_cst)) return i;
    stripes_[i].in_flight.fetch_sub(1, std::memory_order_seq_cst);
    std::unique_lock<std::mutex> lock(wait_mutex_);
    opened_.wait(lock, [this] { return !closed_.load(std::memory_order_seq_cst); });
  }
}

void call_gate::close() {
  {
    std::lock_guard<std::mutex> lock(wait_mutex_);
    closed_.store(true, std::memory_order_seq_cst);
  }
  for (int spins = 0;; ++spins) {
    long in_flight = 0;
    for (const stripe& s : stripes_) in_flight += s.in_flight.load(std::memory_order_seq_cst);
    if (in_flight == 0) return;
    if (spins < 64)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void call_gate::open() {
  {
    std::lock_guard<std::mutex> lock(wait_mutex_);
    closed_.store(false, std::memory_order_seq_cst);
  }
  opened_.notify_all();
}

}  // namespace nnp::host
