// Internal declarations of the simulated accelerator (libnnplug-sim.so).
//
// The sim backend behaves as a discrete accelerator would, and computes with the reference
// kernels (the static library nnplug_reference_kernels):
//  - device memory is not host-addressable: mem_alloc hands out addresses in a range reserved
//    with PROT_NONE, so a host dereference faults at once; the bytes live in a second, private
//    mapping that only the stream workers use (memory.cpp);
//  - every op and copy is queued and run later by one worker thread per stream, after a delay
//    (stream.cpp), so a missing synchronize reads stale data;
//  - errors of queued work are returned by the next stream_synchronize, as on a GPU.
// Environment (read when a device or stream is created; docs/sim-backend.md):
//   NNPLUG_SIM_DELAY_US   delay before each queued task runs, in µs (default 50)
//   NNPLUG_SIM_DEVICES    number of devices sim:0 .. sim:N-1 (default 2, 1..16)
//   NNPLUG_SIM_MEMORY_MB  memory of each device in MiB (default 1024); OUT_OF_MEMORY past it
//   NNPLUG_SIM_FAIL_AFTER test hook: on each stream created while it is set to N > 0, the
//                         N-th queued op fails with DEVICE_ERROR at execution time
#pragma once

#include <nnplug/kit/plugin.hpp>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace nnp::sim {

// Integer environment variable `name` within [lo, hi], or `fallback` when unset; a value that
// is not an integer in range is an INVALID_ARGUMENT naming the variable.
int64_t env_int(const char* name, int64_t fallback, int64_t lo, int64_t hi);

// The float16/bfloat16 rows (rows16.cpp): every float32+float64 reference kernel on float64
// copies of a 16-bit call's tensors, rounded once; CAST between any two float dtypes.
extern const kit::op_row_list kRows16;

// ---- device memory (memory.cpp) ------------------------------------------------------------
// One device's memory: `bytes` of addresses that fault on host access (the handles users get)
// and a private mapping of the same size holding the data. Allocations are first-fit, aligned
// to kAlign; each counts the queued tasks that use it, so freeing memory that queued work
// still uses is caught. Thread-safe.
class device_memory {
 public:
  static constexpr uint64_t kAlign = 256;

  device_memory(int32_t device, uint64_t bytes);
  ~device_memory();
  device_memory(const device_memory&) = delete;
  device_memory& operator=(const device_memory&) = delete;

  uint64_t bytes() const { return bytes_; }
  // A new allocation (its bytes are 0xFF, a NaN pattern: device memory is not zeroed).
  void* allocate(size_t size_bytes);
  // Frees an allocation; INVALID_ARGUMENT for an address that does not start one, INTERNAL
  // when queued work still uses it (libnnplug waits for that work before freeing).
  void release(void* handle);
  // The private address of [handle, handle + size_bytes), which must lie in one allocation
  // (INVALID_ARGUMENT naming `what`, or `what[index]` with an index >= 0, otherwise; an empty
  // range only needs its address in the device). With `pin` (size_bytes > 0), the
  // allocation's use count goes up until unpin.
  char* resolve(const void* handle, size_t size_bytes, const char* what, bool pin, long index = -1);
  void unpin(const void* handle);
  bool owns(const void* p) const;

 private:
  struct block {
    uint64_t size;
    int64_t users;  // queued tasks that use it
  };
  // The allocation containing offset, or end().
  std::map<uint64_t, block>::iterator find_block(uint64_t offset);

  int32_t device_;
  uint64_t bytes_;
  char* handles_ = nullptr;  // PROT_NONE
  char* storage_ = nullptr;  // read/write
  std::mutex mutex_;
  std::map<uint64_t, uint64_t> free_;  // offset -> size, coalesced
  std::map<uint64_t, block> used_;     // offset -> allocation
};

// ---- graphs (plugin.cpp) -------------------------------------------------------------------
// The work a capture recorded: each entry queues one op or copy on a stream, resolving and
// pinning its memory at that time, exactly as op_execute / memcpy_async would (so memory freed
// after the capture is an error at launch, not a silent corruption).
class stream;
struct graph {
  int32_t device = 0;
  std::vector<std::function<void(stream&)>> issue;
};

// ---- streams (stream.cpp) ------------------------------------------------------------------
// An in-order queue with one worker thread. Tasks run after the configured delay; the first
// task that throws stores its status and message, later tasks of the stream are skipped, and
// synchronize() returns that error once (then the stream works again).
class stream {
 public:
  explicit stream(int32_t device);
  ~stream();  // waits for the queued work, then stops the worker
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  int32_t device() const { return device_; }
  // The graph being captured (stream_begin_capture .. stream_end_capture), or NULL. Used by the
  // stream's one calling thread only.
  std::unique_ptr<graph> capture;
  // Queues `task`; `done` runs after it on the worker even when it is skipped or throws.
  void enqueue(std::function<void()> task, std::function<void()> done = {});
  // Counts a queued op for the NNPLUG_SIM_FAIL_AFTER hook: true when this one must fail.
  bool next_op_fails();
  // Waits until every queued task has run; throws the first error since the last call.
  void synchronize();

 private:
  struct item {
    std::function<void()> task, done;
  };
  void run();
  void wait_idle(std::unique_lock<std::mutex>& lock);

  int32_t device_;
  int64_t delay_us_;
  int64_t fail_after_;
  int64_t ops_queued_ = 0;
  std::mutex mutex_;
  std::condition_variable work_cv_, idle_cv_;
  std::deque<item> queue_;
  bool busy_ = false, stopping_ = false;
  nnp_status error_ = NNP_STATUS_OK;
  std::string message_;
  std::thread worker_;
};

}  // namespace nnp::sim
