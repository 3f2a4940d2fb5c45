// plugin.cpp — registration file of the simulated accelerator (libnnplug-sim.so): devices
// sim:0 .. sim:N-1 whose memory the host cannot address (memory.cpp) and whose streams run
// every op and copy later on a worker thread (stream.cpp), computing with the reference
// kernels (the same kernel rows as the reference backend, rows.hpp). It is for tests and for
// plugin authors who want to see host code behave under accelerator rules: "auto" never picks
// it (auto_priority -1). docs/sim-backend.md describes it.
//
// A queued op owns deep copies of everything the caller may reuse as soon as op_execute
// returns (params, DLTensor structs, shapes, strides), with data pointers already translated
// to the device's private storage; the allocations it touches are pinned until it has run, so
// freeing memory that queued work still uses is an error rather than a silent corruption.
#include "sim.hpp"

#include "rows.hpp"

#include <nnplug/kit/host_device.hpp>
#include <nnplug/nnplug_version.h>

#include <array>
#include <deque>
#include <iterator>
#include <memory>
#include <vector>

namespace nnp::sim {
namespace {

using kit::op_call;

// ---- devices --------------------------------------------------------------------------------
struct device_state {
  std::string name;
  device_memory memory;
  device_state(int32_t index, uint64_t bytes)
      : name(format("sim:%d", index)), memory(index, bytes) {}
};

// Created by initialize, destroyed by shutdown (the host calls no other slot outside them).
std::vector<std::unique_ptr<device_state>>* g_devices = nullptr;

int32_t device_count() {
  return g_devices != nullptr ? static_cast<int32_t>(g_devices->size()) : 0;
}

void check_device(int32_t index) {
  if (index < 0 || index >= device_count())
    fail(NNP_STATUS_INVALID_ARGUMENT, format("device index %d out of range (the sim backend has "
                                             "%d devices; NNPLUG_SIM_DEVICES)",
                                             index, device_count()));
}

device_state& device_at(int32_t index) {
  check_device(index);
  return *(*g_devices)[static_cast<size_t>(index)];
}

// The kernel rows: the float16/bfloat16 rows of rows16.cpp first (the first row of a kind
// wins), then the reference's.
const auto kFamilies = [] {
  std::array<const kit::op_row_list*, std::size(ref::kFamilies) + 1> lists{};
  lists[0] = &kRows16;
  std::copy(std::begin(ref::kFamilies), std::end(ref::kFamilies), lists.begin() + 1);
  return lists;
}();
const kit::op_rows kOps{"sim", nullptr, 0, check_device, kFamilies.data(), kFamilies.size()};

stream& stream_of(void* s) {
  if (s == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "stream is NULL");
  return *static_cast<stream*>(s);
}

// ---- a queued op --------------------------------------------------------------------------
size_t element_bytes(const DLDataType& t) { return (size_t{t.bits} * t.lanes + 7) / 8; }

class queued_call {
 public:
  queued_call(const op_call& c, device_memory& memory) : kind_(c.kind), memory_(memory) {
    if (c.params != nullptr) {
      size_t size = 0;
      std::memcpy(&size, c.params, sizeof size);
      const auto* bytes = static_cast<const unsigned char*>(c.params);
      params_.assign(bytes, bytes + size);
    }
    tensors_.reserve(c.n_inputs + c.n_outputs);
    dims_.reserve(c.n_inputs + c.n_outputs);
    try {
      for (size_t i = 0; i < c.n_inputs; ++i) in_.push_back(copy(c.in(i), "inputs", i));
      for (size_t i = 0; i < c.n_outputs; ++i) out_.push_back(copy(c.out(i), "outputs", i));
    } catch (...) {
      unpin();
      throw;
    }
  }
  queued_call(const queued_call&) = delete;
  queued_call& operator=(const queued_call&) = delete;

  op_call call() const {
    return op_call{kind_,       params_.empty() ? nullptr : params_.data(),
                   in_.size(),  in_.data(),
                   out_.size(), out_.data(),
                   nullptr,     -1};
  }
  void unpin() {
    for (const void* h : pinned_) memory_.unpin(h);
    pinned_.clear();
  }

 private:
  // A copy of *t with its own shape and strides and its data in the device's storage.
  // `array` and `index` name the tensor in messages ("inputs[1]").
  const DLTensor* copy(const DLTensor* t, const char* array, size_t index) {
    if (t == nullptr) return nullptr;
    DLTensor d = *t;
    const size_t n = static_cast<size_t>(t->ndim);
    std::vector<int64_t>& dims = dims_.emplace_back(2 * n);
    std::copy(t->shape, t->shape + n, dims.begin());
    d.shape = dims.data();
    if (t->strides != nullptr) {
      std::copy(t->strides, t->strides + n, dims.begin() + static_cast<ptrdiff_t>(n));
      d.strides = dims.data() + n;
    }
    // The elements it may touch: [lo, hi] around the first, in elements. None without elements
    // (whose other extents' products may not fit int64: [0, 2, 2^62, 4] is a valid tensor).
    int64_t lo = 0, hi = 0, contiguous = 1;
    const bool empty = std::find(dims.begin(), dims.begin() + static_cast<ptrdiff_t>(n), 0) !=
                       dims.begin() + static_cast<ptrdiff_t>(n);
    for (size_t k = n; !empty && k-- > 0;) {
      const int64_t stride = d.strides != nullptr ? d.strides[k] : contiguous;
      if (dims[k] > 1) (stride < 0 ? lo : hi) += stride * (dims[k] - 1);
      contiguous *= dims[k];
    }
    if (d.data != nullptr) {
      // Addresses as integers until resolve() has checked them: data + byte_offset may lie
      // anywhere (2^63 past data is a valid request to refuse, not a pointer to form).
      const auto elem = static_cast<uintptr_t>(element_bytes(t->dtype));
      const auto data = reinterpret_cast<uintptr_t>(t->data);
      const uintptr_t first = data + static_cast<uintptr_t>(t->byte_offset);
      const uintptr_t begin = empty ? first : first + static_cast<uintptr_t>(lo) * elem;
      const size_t bytes = empty ? 0 : static_cast<size_t>(hi - lo + 1) * elem;
      const bool pin = bytes > 0;
      const auto* handle = reinterpret_cast<const char*>(begin);
      char* storage = memory_.resolve(handle, bytes, array, pin, static_cast<long>(index));
      if (pin) pinned_.push_back(handle);
      d.data = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(storage) - (begin - data));
    }
    tensors_.push_back(d);
    return &tensors_.back();
  }

  int32_t kind_;
  device_memory& memory_;
  std::vector<unsigned char> params_;
  std::vector<DLTensor> tensors_;           // reserved: pointers into it stay valid
  std::vector<std::vector<int64_t>> dims_;  // shape then strides of each tensor
  std::vector<const DLTensor*> in_, out_;
  std::vector<const void*> pinned_;
};

// ---- a recorded op (graphs) ----------------------------------------------------------------
// Deep copies of an op call as the host made it (data pointers are device handles, resolved
// when the graph is launched).
class recorded_call {
 public:
  explicit recorded_call(const op_call& c) : kind_(c.kind) {
    if (c.params != nullptr) {
      size_t size = 0;
      std::memcpy(&size, c.params, sizeof size);
      params_.resize((size + 7) / 8);
      std::memcpy(params_.data(), c.params, size);
    }
    tensors_.reserve(c.n_inputs + c.n_outputs);
    for (size_t i = 0; i < c.n_inputs; ++i) in_.push_back(copy(c.in(i)));
    for (size_t i = 0; i < c.n_outputs; ++i) out_.push_back(copy(c.out(i)));
  }
  recorded_call(const recorded_call&) = delete;
  recorded_call& operator=(const recorded_call&) = delete;

  op_call call(void* stream) const {
    return op_call{kind_,       params_.empty() ? nullptr : params_.data(),
                   in_.size(),  in_.data(),
                   out_.size(), out_.data(),
                   stream,      -1};
  }

 private:
  const DLTensor* copy(const DLTensor* t) {
    if (t == nullptr) return nullptr;
    DLTensor d = *t;
    const size_t n = static_cast<size_t>(t->ndim);
    std::vector<int64_t>& dims = dims_.emplace_back(t->shape, t->shape + n);
    d.shape = dims.data();
    if (t->strides != nullptr) {
      std::vector<int64_t>& strides = dims_.emplace_back(t->strides, t->strides + n);
      d.strides = strides.data();
    }
    tensors_.push_back(d);
    return &tensors_.back();
  }

  int32_t kind_;
  std::vector<uint64_t> params_;
  std::vector<DLTensor> tensors_;          // reserved: pointers into it stay valid
  std::deque<std::vector<int64_t>> dims_;  // shapes and strides (stable addresses)
  std::vector<const DLTensor*> in_, out_;
};

// Queues a validated op on a stream: resolves its memory now and runs it on the worker.
void queue_op(stream& st, const op_call& c, const kit::op_row& row) {
  auto job = std::make_shared<queued_call>(c, device_at(st.device()).memory);
  const bool inject = st.next_op_fails();
  st.enqueue(
      [job, &row, inject] {
        if (inject)
          fail(NNP_STATUS_DEVICE_ERROR,
               format("op kind %d failed: injected by NNPLUG_SIM_FAIL_AFTER", job->call().kind));
        row.kernel(job->call());
      },
      [job] { job->unpin(); });
}

// Queues a copy; memory is resolved now, host memory read or written when the copy runs.
void queue_copy(stream& st, void* dst, const void* src, size_t size_bytes, int32_t kind) {
  device_memory& mem = device_at(st.device()).memory;
  const bool dst_dev = kind != NNP_MEMCPY_DEVICE_TO_HOST;
  const bool src_dev = kind != NNP_MEMCPY_HOST_TO_DEVICE;
  char* d = dst_dev ? mem.resolve(dst, size_bytes, "memcpy dst", true) : static_cast<char*>(dst);
  const char* from = static_cast<const char*>(src);
  try {
    if (src_dev) from = mem.resolve(src, size_bytes, "memcpy src", true);
  } catch (...) {
    if (dst_dev) mem.unpin(dst);
    throw;
  }
  // Host memory is read or written when the copy runs, not now: a host buffer reused before
  // the stream is synchronised shows up here as wrong data.
  st.enqueue([d, from, size_bytes] { std::memmove(d, from, size_bytes); },
             [&mem, dst, src, dst_dev, src_dev] {
               if (dst_dev) mem.unpin(dst);
               if (src_dev) mem.unpin(src);
             });
}

// ---- slots ---------------------------------------------------------------------------------
nnp_status initialize() {
  return guard([] {
    const int64_t n = env_int("NNPLUG_SIM_DEVICES", 2, 1, 16);
    const int64_t mb = env_int("NNPLUG_SIM_MEMORY_MB", 1024, 1, int64_t{1} << 24);
    auto devices = std::make_unique<std::vector<std::unique_ptr<device_state>>>();
    for (int32_t i = 0; i < n; ++i)
      devices->push_back(std::make_unique<device_state>(i, static_cast<uint64_t>(mb) << 20));
    g_devices = devices.release();
  });
}

void shutdown() {
  delete g_devices;
  g_devices = nullptr;
}

nnp_status get_device_count(int32_t* n_devices, const char** reason) {
  return guard([&] {
    if (n_devices == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "n_devices is NULL");
    *n_devices = device_count();
    if (reason != nullptr) *reason = nullptr;
  });
}

nnp_status get_device_props(int32_t index, nnp_device_props* props) {
  return guard([&] {
    const device_state& d = device_at(index);
    if (props == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "props is NULL");
    NNP_KIT_SET_PROP(props, name, d.name.c_str());
    NNP_KIT_SET_PROP(props, plugin_name, "sim");
    NNP_KIT_SET_PROP(props, description,
                     "nnplug simulated accelerator (reference kernels, 16-bit on float64 copies; "
                     "asynchronous streams; memory the host cannot address)");
    NNP_KIT_SET_PROP(props, device_type, static_cast<int32_t>(kDLExtDev));
    NNP_KIT_SET_PROP(props, device_id, index);
    NNP_KIT_SET_PROP(props, memory_bytes, d.memory.bytes());
    NNP_KIT_SET_PROP(props, auto_priority, -1);  // never chosen by "auto"
    NNP_KIT_SET_PROP(props, num_threads, 1);
  });
}

nnp_status mem_alloc(int32_t index, size_t size_bytes, void** ptr) {
  return guard([&] {
    device_state& d = device_at(index);
    if (ptr == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "ptr is NULL");
    *ptr = d.memory.allocate(size_bytes);
  });
}

nnp_status mem_free(int32_t index, void* ptr) {
  return guard([&] { device_at(index).memory.release(ptr); });
}

nnp_status stream_create(int32_t index, void** out) {
  return guard([&] {
    check_device(index);
    if (out == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "stream is NULL");
    *out = new stream(index);
  });
}

// Waits for the queued work, destroys the stream, and returns the error of that work if any.
nnp_status stream_destroy(void* s) {
  return guard([&] {
    std::unique_ptr<stream> owned(&stream_of(s));
    owned->synchronize();
  });
}

nnp_status stream_synchronize(void* s) {
  return guard([&] { stream_of(s).synchronize(); });
}

nnp_status memcpy_async(void* s, void* dst, const void* src, size_t size_bytes, int32_t kind) {
  return guard([&] {
    stream& st = stream_of(s);
    kit::check_memcpy_kind(kind);
    if (size_bytes == 0) return;
    if (dst == nullptr || src == nullptr)
      fail(NNP_STATUS_INVALID_ARGUMENT, "memcpy with a NULL pointer");
    if (st.capture) {
      if (kind != NNP_MEMCPY_DEVICE_TO_DEVICE)
        fail(NNP_STATUS_INVALID_ARGUMENT, "a capture records device-to-device copies only");
      device_memory& mem = device_at(st.device()).memory;
      (void)mem.resolve(dst, size_bytes, "memcpy dst", false);  // refuse bad memory now
      (void)mem.resolve(src, size_bytes, "memcpy src", false);
      st.capture->issue.push_back([dst, src, size_bytes](stream& on) {
        queue_copy(on, dst, src, size_bytes, NNP_MEMCPY_DEVICE_TO_DEVICE);
      });
      return;
    }
    queue_copy(st, dst, src, size_bytes, kind);
  });
}

nnp_status op_supported(int32_t index, int32_t kind, const void* params, size_t n_inputs,
                        const DLTensor* const* inputs, size_t n_outputs,
                        const DLTensor* const* outputs) {
  return kit::op_supported_slot<kOps>(index, kind, params, n_inputs, inputs, n_outputs, outputs);
}

nnp_status op_execute(void* s, int32_t kind, const void* params, size_t n_inputs,
                      const DLTensor* const* inputs, size_t n_outputs,
                      const DLTensor* const* outputs) {
  return guard([&] {
    stream& st = stream_of(s);
    const op_call c{kind, params, n_inputs, inputs, n_outputs, outputs, s, -1};
    const kit::op_row& row = kOps.find(c);  // UNSUPPORTED is answered now, not at synchronize
    if (st.capture) {
      // Refuse memory outside the device now, as queueing would (nothing stays pinned).
      queued_call(c, device_at(st.device()).memory).unpin();
      auto rec = std::make_shared<const recorded_call>(c);
      st.capture->issue.push_back([rec, &row](stream& on) { queue_op(on, rec->call(&on), row); });
      return;
    }
    queue_op(st, c, row);
  });
}

// Graphs: the calls of a capture are recorded (stream::capture) and re-queued at each launch.
nnp_status stream_begin_capture(void* s) {
  return guard([&] {
    stream& st = stream_of(s);
    if (st.capture) fail(NNP_STATUS_INVALID_ARGUMENT, "the stream is already capturing");
    st.capture = std::make_unique<graph>();
    st.capture->device = st.device();
  });
}

nnp_status stream_end_capture(void* s, void** out) {
  return guard([&] {
    stream& st = stream_of(s);
    std::unique_ptr<graph> g = std::move(st.capture);  // ends the capture whatever happens
    if (!g) fail(NNP_STATUS_INVALID_ARGUMENT, "the stream is not capturing");
    if (out == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "graph is NULL");
    *out = g.release();
  });
}

nnp_status graph_launch(void* g, void* s) {
  return guard([&] {
    stream& st = stream_of(s);
    if (g == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "graph is NULL");
    const graph& gr = *static_cast<const graph*>(g);
    if (gr.device != st.device())
      fail(NNP_STATUS_INVALID_ARGUMENT,
           format("graph of sim:%d launched on a stream of sim:%d", gr.device, st.device()));
    for (const auto& issue : gr.issue) issue(st);
  });
}

nnp_status graph_destroy(void* g) {
  return guard([&] { delete static_cast<graph*>(g); });
}

nnp_status stream_set_attribute(void* s, int32_t attribute, int64_t value) {
  return guard([&] {
    stream_of(s);
    // The reference kernels compute in double: TF32 is accepted and has no effect.
    kit::accept_stream_attribute(attribute, value, "sim");
  });
}

nnp_plugin_api make_table() {
  nnp_plugin_api t = kit::table("sim", NNP_VERSION_STRING);
  t.initialize = initialize;
  t.shutdown = shutdown;
  t.get_device_count = get_device_count;
  t.get_device_props = get_device_props;
  kit::set_memory_slots(t, mem_alloc, mem_free, stream_create, stream_destroy, stream_synchronize,
                        memcpy_async);
  t.op_supported = op_supported;
  t.op_execute = op_execute;
  t.stream_set_attribute = stream_set_attribute;
  kit::set_graph_slots(t, stream_begin_capture, stream_end_capture, graph_launch, graph_destroy);
  return t;
}

const nnp_plugin_api kTable = make_table();

}  // namespace
}  // namespace nnp::sim

NNP_KIT_PLUGIN_ENTRY(nnp::sim::kTable)
