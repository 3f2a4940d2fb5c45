// Handles and the call gate of libnnplug.
//
// HANDLES. An nnp_plugin*, nnp_device*, nnp_stream*, nnp_comm* or nnp_graph* given to the caller
// is not the address of the object: it is a number that names a slot of a handle table and the
// generation of that slot when the handle was made:
//
//   bits 63..61  0b101: any other value (every user-space address has 0 there) is "not an
//                nnplug handle"
//   bits 60..58  the kind: 0 communicator, 1 plugin, 2 device, 3 stream, 4 graph
//   bits 57..20  the slot's generation (38 bits; odd: live generations are odd, released even)
//   bits 19..0   the slot index (2^20 slots per kind)
//
// Slots live in chunks that are allocated on demand and never freed, so checking a handle never
// reads freed memory, whatever the caller passes. Releasing an object bumps its slot's
// generation: every handle made for it becomes stale at once and stays stale when the slot is
// reused. Handle values repeat only when a slot's generation wraps, after 2^37 uses of that
// slot; slots are reused oldest first and only once 64 others are free, so that takes more than
// 2^43 objects of one kind (a stream created and destroyed every microsecond for 100 days).
//
// THE CALL GATE. Calls that take a device or a plugin handle enter the gate for their duration
// (an in-flight count, striped over cache lines so that threads do not contend); nnp_shutdown
// closes it, waits for the count to reach zero, tears down, and opens it again. A call arriving
// while it is closed waits and then finds its handles stale. Calls on a stream do not enter the
// gate: they hold the stream's slot mutex instead (which also serialises the calls on one
// stream), and nnp_shutdown takes each stream's mutex before destroying it. So an object is
// never released while a call uses it.
#pragma once

#include <nnplug/nnplug.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

namespace nnp::host {

static_assert(sizeof(uintptr_t) == 8, "nnplug handles encode 64-bit values");

enum class handle_kind : uint32_t { comm = 0, plugin = 1, device = 2, stream = 3, graph = 4 };

// "nnp_comm", "nnp_plugin", "nnp_device", "nnp_stream", "nnp_graph".
const char* handle_kind_name(handle_kind kind);

// One slot of a handle table; never freed.
struct alignas(64) handle_slot {
  std::atomic<uint64_t> generation{0};  // odd while an object lives in the slot
  std::atomic<void*> object{nullptr};
  std::mutex mutex;  // stream, communicator and graph slots: held by each call on the object
};

// What checking a handle value found.
enum class handle_state { live, null, foreign, other_kind, stale };

struct handle_lookup {
  handle_state state = handle_state::null;
  handle_kind kind = handle_kind::plugin;  // the value's kind (other_kind: not the table's)
  uint64_t generation = 0;
  handle_slot* slot = nullptr;  // set for live and stale
};

class handle_table {
 public:
  explicit handle_table(handle_kind kind) : kind_(kind) {}
  handle_table(const handle_table&) = delete;
  handle_table& operator=(const handle_table&) = delete;

  // A new handle for `object` (never 0). Throws std::bad_alloc when out of memory or when
  // 2^20 objects of this kind are alive.
  uintptr_t add(void* object);
  // Makes `handle` (live, from add) stale. Stream slots: the caller holds the slot's mutex.
  void remove(uintptr_t handle);
  // Checks a handle value without touching anything it might point to. Lock-free.
  handle_lookup find(uintptr_t handle) const;
  // The object of a live handle (after find() said live; a concurrent remove() is excluded by
  // the gate or the stream's mutex).
  static void* object_of(const handle_lookup& h) {
    return h.slot->object.load(std::memory_order_acquire);
  }
  // True while `handle`'s slot still has the generation `handle` was made with.
  static bool still_live(const handle_lookup& h) {
    return h.slot->generation.load(std::memory_order_acquire) == h.generation;
  }

 private:
  static constexpr unsigned kChunkBits = 8;  // 256 slots (16 KiB) per chunk
  static constexpr size_t kChunkSize = size_t{1} << kChunkBits;
  static constexpr size_t kMaxChunks = 4096;  // 2^20 slots
  static constexpr size_t kReuseAfter = 64;   // a freed slot waits for this many others

  handle_slot* slot_at(uint32_t index) const;

  const handle_kind kind_;
  std::mutex mutex_;  // add/remove
  uint32_t next_index_ = 0;
  std::deque<uint32_t> free_;  // oldest first
  std::atomic<handle_slot*> chunks_[kMaxChunks] = {};
};

inline uintptr_t handle_value(const void* handle) { return reinterpret_cast<uintptr_t>(handle); }

// Sets the last error for a handle that is not live (null, foreign, other kind, stale) and
// returns INVALID_ARGUMENT. `arg` names the argument ("stream", "dst_device").
nnp_status refuse_handle(const char* func, const char* arg, handle_kind expected,
                         const handle_lookup& h, uintptr_t value);

// Locks the slot of a live handle of `table` (streams, communicators: calls on one object are
// serialised by its slot's mutex) and gives its object; the object stays alive until the
// caller unlocks *slot. Else INVALID_ARGUMENT with the message of refuse_handle, nothing locked
// (also when the object was released while this call waited for the mutex).
nnp_status lock_handle(const handle_table& table, handle_kind kind, const char* func,
                       const char* arg, const void* handle, handle_slot** slot, void** object);

// Holds one object of a slot-locked kind for the length of a call (stream_lock, comm_lock).
template <typename T, handle_kind Kind>
class slot_lock {
 public:
  slot_lock() = default;
  ~slot_lock() { unlock(); }
  slot_lock(const slot_lock&) = delete;
  slot_lock& operator=(const slot_lock&) = delete;
  nnp_status lock(const handle_table& table, const char* func, const char* arg,
                  const void* handle) {
    unlock();
    void* object = nullptr;
    const nnp_status st = lock_handle(table, Kind, func, arg, handle, &slot_, &object);
    object_ = static_cast<T*>(object);
    return st;
  }
  T* get() const { return object_; }
  T* operator->() const { return object_; }
  void unlock() {
    if (slot_ != nullptr) slot_->mutex.unlock();
    slot_ = nullptr;
    object_ = nullptr;
  }

 private:
  handle_slot* slot_ = nullptr;
  T* object_ = nullptr;
};

// ---------------------------------------------------------------------------- the gate --
class call_gate {
 public:
  // Counts the calling thread's call in; waits while nnp_shutdown runs. Returns the stripe to
  // give to leave().
  size_t enter();
  void leave(size_t stripe) { stripes_[stripe].in_flight.fetch_sub(1, std::memory_order_release); }
  // nnp_shutdown: new calls wait in enter(); returns when no call is in flight.
  void close();
  void open();

 private:
  static constexpr size_t kStripes = 32;
  struct alignas(64) stripe {
    std::atomic<long> in_flight{0};
  };
  stripe stripes_[kStripes];
  std::atomic<bool> closed_{false};
  std::mutex wait_mutex_;
  std::condition_variable opened_;
};

class gate_guard {
 public:
  explicit gate_guard(call_gate& gate) : gate_(gate), stripe_(gate.enter()) {}
  ~gate_guard() { gate_.leave(stripe_); }
  gate_guard(const gate_guard&) = delete;
  gate_guard& operator=(const gate_guard&) = delete;

 private:
  call_gate& gate_;
  size_t stripe_;
};

// nnp_shutdown: the gate stays closed for the life of this object.
class gate_closed {
 public:
  explicit gate_closed(call_gate& gate) : gate_(gate) { gate_.close(); }
  ~gate_closed() { gate_.open(); }
  gate_closed(const gate_closed&) = delete;
  gate_closed& operator=(const gate_closed&) = delete;

 private:
  call_gate& gate_;
};

}  // namespace nnp::host
