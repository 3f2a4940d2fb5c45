// test_sim.cpp — the device-memory and stream contract of nnplug.h, one test per rule, on the
// simulated accelerator; and the simulator's own promises (device memory the host cannot
// read, work that runs late, errors at synchronize), so that it is known to catch the mistakes
// it exists to catch. Runs through the public API of libnnplug, with the sim plugin loaded by
// path (NNPLUG_SIM_PLUGIN). Each case sets the sim's environment (NNPLUG_SIM_DELAY_US,
// NNPLUG_SIM_FAIL_AFTER) before it creates its streams: the sim reads them per stream.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <nnplug/nnplug.h>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "sim.hpp"

namespace {

#define NNP_OK(call)                                 \
  do {                                               \
    const nnp_status st_ = (call);                   \
    INFO(#call << ": " << nnp_last_error_message()); \
    REQUIRE(st_ == NNP_STATUS_OK);                   \
  } while (0)

constexpr int64_t kN = 1024;
// A delay long enough that the host is always still ahead when it looks (tens of µs for the
// calls), short enough to keep the test fast.
constexpr const char* kSlow = "20000";

nnp_device* sim_device(const char* name = "sim:0") {
  REQUIRE(nnp_load_plugin(NNPLUG_SIM_PLUGIN, nullptr) == NNP_STATUS_OK);
  nnp_device* dev = nullptr;
  NNP_OK(nnp_get_device(name, &dev));
  return dev;
}

// A float32 vector of kN elements in device memory, freed by the destructor.
struct device_vector {
  nnp_device* dev;
  void* ptr = nullptr;
  int64_t shape[1] = {kN};
  explicit device_vector(nnp_device* d) : dev(d) {
    NNP_OK(nnp_malloc(dev, kN * sizeof(float), &ptr));
  }
  ~device_vector() { nnp_free(dev, ptr); }
  DLTensor tensor() {
    DLTensor t{};
    t.data = ptr;
    NNP_OK(nnp_device_get_dldevice(dev, &t.device));
    t.ndim = 1;
    t.dtype = DLDataType{kDLFloat, 32, 1};
    t.shape = shape;
    return t;
  }
};

nnp_status fill(nnp_stream* s, device_vector& v, double value) {
  nnp_fill_params p{};
  p.struct_size = sizeof p;
  p.value = value;
  const DLTensor t = v.tensor();
  return nnp_fill(s, &p, &t);
}

// Sets (or with nullptr unsets) an environment variable for the lifetime of the object.
struct scoped_env {
  const char* name;
  scoped_env(const char* n, const char* value) : name(n) {
    if (value != nullptr)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~scoped_env() { unsetenv(name); }
};

bool all_equal(const std::vector<float>& v, float x) {
  for (float e : v)
    if (e != x) return false;
  return true;
}

// A sim device and a stream on it (made after the case set the sim's environment); the
// destructor destroys the stream unless the case did (destroy()).
struct sim_stream {
  nnp_device* dev;
  nnp_stream* s = nullptr;
  explicit sim_stream(const char* name = "sim:0") : dev(sim_device(name)) {
    NNP_OK(nnp_stream_create(dev, &s));
  }
  ~sim_stream() { nnp_stream_destroy(s); }
  nnp_status destroy() { return nnp_stream_destroy(std::exchange(s, nullptr)); }
  // Synchronous copies of a whole vector (nnp_memcpy: no synchronize needed before them).
  std::vector<float> read(const device_vector& v) {
    std::vector<float> host(kN, -1.0f);
    NNP_OK(nnp_memcpy(nullptr, host.data(), v.dev, v.ptr, kN * sizeof(float)));
    return host;
  }
  nnp_status read_async(const device_vector& v, std::vector<float>& host) {
    return nnp_memcpy_async(s, nullptr, host.data(), v.dev, v.ptr, kN * sizeof(float));
  }
};

}  // namespace

TEST_CASE("sim: device memory is not host-addressable and has the accelerator's DLPack type") {
  nnp_device* dev = sim_device();
  DLDevice dl{};
  NNP_OK(nnp_device_get_dldevice(dev, &dl));
  CHECK(dl.device_type == kDLExtDev);
  CHECK(dl.device_id == 0);
  device_vector v(dev);
  // A host read of a device pointer must fault at once (in a child, so the test survives).
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    signal(SIGSEGV, SIG_DFL);  // the test framework's handler would report a crash
    signal(SIGBUS, SIG_DFL);
    volatile float x = *static_cast<volatile float*>(v.ptr);
    (void)x;
    _exit(0);  // reached only if the read did not fault
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK_FALSE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
}

TEST_CASE("sim: a stream runs its work in order; results are there after synchronize") {
  scoped_env delay("NNPLUG_SIM_DELAY_US", "200");
  sim_stream st;
  device_vector v(st.dev);
  NNP_OK(fill(st.s, v, 1.0));
  nnp_scale_params sp{};
  sp.struct_size = sizeof sp;
  sp.alpha = 3.0;
  const DLTensor t = v.tensor();
  NNP_OK(nnp_scale(st.s, &sp, &t, &t));
  NNP_OK(fill(st.s, v, 2.0));
  NNP_OK(nnp_scale(st.s, &sp, &t, &t));
  std::vector<float> host(kN, -1.0f);
  NNP_OK(st.read_async(v, host));
  NNP_OK(nnp_stream_synchronize(st.s));
  CHECK(all_equal(host, 6.0f));
}

TEST_CASE("sim: a missing synchronize reads stale data (the simulator bites)") {
  scoped_env delay("NNPLUG_SIM_DELAY_US", kSlow);
  sim_stream st;
  device_vector v(st.dev);
  NNP_OK(fill(st.s, v, 7.0));
  std::vector<float> host(kN, -1.0f);
  NNP_OK(st.read_async(v, host));
  CHECK(all_equal(host, -1.0f));  // not yet: the copy is queued behind the fill
  NNP_OK(nnp_stream_synchronize(st.s));
  CHECK(all_equal(host, 7.0f));
}

TEST_CASE("sim: a host buffer reused before synchronize is read late (the rule matters)") {
  scoped_env delay("NNPLUG_SIM_DELAY_US", kSlow);
  sim_stream st;
  device_vector v(st.dev);
  std::vector<float> host(kN, 1.0f);
  NNP_OK(nnp_memcpy_async(st.s, st.dev, v.ptr, nullptr, host.data(), kN * sizeof(float)));
  std::fill(host.begin(), host.end(), 2.0f);  // breaks the rule: the copy has not run yet
  NNP_OK(nnp_stream_synchronize(st.s));
  CHECK(all_equal(st.read(v), 2.0f));
}

TEST_CASE("sim: nnp_memcpy is ordered after the work queued on the device's streams") {
  scoped_env delay("NNPLUG_SIM_DELAY_US", kSlow);
  sim_stream s1, s2;
  device_vector a(s1.dev), b(s1.dev);
  NNP_OK(fill(s1.s, a, 4.0));
  NNP_OK(fill(s2.s, b, 5.0));
  CHECK(all_equal(s1.read(a), 4.0f));  // no synchronize
  CHECK(all_equal(s1.read(b), 5.0f));
  // Host to device too: the fill queued before it cannot overwrite the copy afterwards.
  NNP_OK(fill(s1.s, a, 8.0));
  std::vector<float> ones(kN, 1.0f);
  NNP_OK(nnp_memcpy(a.dev, a.ptr, nullptr, ones.data(), kN * sizeof(float)));
  NNP_OK(nnp_stream_synchronize(s1.s));
  CHECK(all_equal(s1.read(a), 1.0f));
}

TEST_CASE("sim: copies between two devices and a device mismatch") {
  scoped_env delay("NNPLUG_SIM_DELAY_US", "200");
  sim_stream s0("sim:0");
  device_vector a(s0.dev), b(sim_device("sim:1"));
  NNP_OK(fill(s0.s, a, 9.0));
  NNP_OK(nnp_memcpy(b.dev, b.ptr, a.dev, a.ptr, kN * sizeof(float)));
  CHECK(all_equal(s0.read(b), 9.0f));
  // A tensor of sim:1 given to an op on a sim:0 stream: refused before anything is queued.
  CHECK(fill(s0.s, b, 1.0) == NNP_STATUS_INVALID_ARGUMENT);
}

TEST_CASE("sim: memory errors name the tensor; a byte_offset of 2^63 is refused, not followed") {
  sim_stream st;
  device_vector x(st.dev), y(st.dev);
  nnp_scale_params p{};
  p.struct_size = sizeof p;
  p.alpha = 2.0;
  DLTensor tx = x.tensor(), ty = y.tensor();
  std::vector<float> host(kN, -1.0f);
  ty.data = host.data();  // host memory under the sim's device type
  CHECK(nnp_scale(st.s, &p, &tx, &ty) == NNP_STATUS_INVALID_ARGUMENT);
  std::string message = nnp_last_error_message();
  CHECK_MESSAGE(message.find("outputs[0]: ") != std::string::npos, message);
  CHECK_MESSAGE(message.find("is not memory of sim:0") != std::string::npos, message);
  CHECK(all_equal(host, -1.0f));
  ty = y.tensor();
  tx.byte_offset = uint64_t{1} << 63;  // below the top of the address space from the handle
  CHECK(nnp_scale(st.s, &p, &tx, &ty) == NNP_STATUS_INVALID_ARGUMENT);
  message = nnp_last_error_message();
  CHECK_MESSAGE(message.find("inputs[0]: ") != std::string::npos, message);
  NNP_OK(nnp_stream_synchronize(st.s));
}

TEST_CASE("sim: errors of queued work surface at the next synchronize, once") {
  scoped_env delay("NNPLUG_SIM_DELAY_US", "200");
  scoped_env fail_after("NNPLUG_SIM_FAIL_AFTER", "2");
  sim_stream st;
  device_vector v(st.dev);
  NNP_OK(fill(st.s, v, 1.0));
  CHECK(fill(st.s, v, 2.0) == NNP_STATUS_OK);  // fails later, on the worker
  CHECK(fill(st.s, v, 3.0) == NNP_STATUS_OK);  // queued behind the failure: never runs
  CHECK(nnp_stream_synchronize(st.s) == NNP_STATUS_DEVICE_ERROR);
  CHECK(std::string(nnp_last_error_message()).find("NNPLUG_SIM_FAIL_AFTER") != std::string::npos);
  NNP_OK(nnp_stream_synchronize(st.s));  // reported once
  CHECK(all_equal(st.read(v), 1.0f));    // only the first fill ran
}

TEST_CASE(
    "sim: nnp_memcpy that waits for failed work returns the error, and so does the "
    "stream's next synchronize") {
  scoped_env delay("NNPLUG_SIM_DELAY_US", "200");
  scoped_env fail_after("NNPLUG_SIM_FAIL_AFTER", "1");
  sim_stream st;
  device_vector v(st.dev);
  NNP_OK(fill(st.s, v, 1.0));
  std::vector<float> host(kN, -1.0f);
  CHECK(nnp_memcpy(nullptr, host.data(), v.dev, v.ptr, kN * sizeof(float)) ==
        NNP_STATUS_DEVICE_ERROR);
  CHECK(all_equal(host, -1.0f));  // a failed call leaves its output untouched
  CHECK(nnp_stream_synchronize(st.s) == NNP_STATUS_DEVICE_ERROR);
  NNP_OK(nnp_stream_synchronize(st.s));
}

TEST_CASE("sim: nnp_free waits for queued work that uses the memory") {
  scoped_env delay("NNPLUG_SIM_DELAY_US", kSlow);
  sim_stream st;
  void* ptr = nullptr;
  {
    device_vector v(st.dev);
    NNP_OK(fill(st.s, v, 1.0));
    ptr = std::exchange(v.ptr, nullptr);
  }
  // The sim refuses (INTERNAL) to free memory that a queued task still uses: OK here proves
  // that libnnplug waited.
  NNP_OK(nnp_free(st.dev, ptr));
  NNP_OK(nnp_stream_synchronize(st.s));
}

TEST_CASE("sim: the simulator refuses to free memory that queued work still uses") {
  nnp::sim::device_memory mem(0, 1 << 20);
  void* a = mem.allocate(1000);
  mem.resolve(a, 1000, "x", true);
  CHECK_THROWS_AS(mem.release(a), nnp::error);
  mem.unpin(a);
  mem.release(a);
  CHECK_THROWS_AS(mem.release(a), nnp::error);         // twice
  CHECK_THROWS_AS(mem.allocate(2 << 20), nnp::error);  // more than the device has
  // Freed blocks coalesce: the whole device can be allocated again.
  void* b = mem.allocate(512 << 10);
  void* c = mem.allocate(512 << 10);
  mem.release(b);
  mem.release(c);
  mem.release(mem.allocate(1 << 20));
}

TEST_CASE("sim: nnp_stream_destroy waits for the stream's work") {
  scoped_env delay("NNPLUG_SIM_DELAY_US", kSlow);
  sim_stream st;
  device_vector v(st.dev);
  NNP_OK(fill(st.s, v, 6.0));
  std::vector<float> host(kN, -1.0f);
  NNP_OK(st.read_async(v, host));
  NNP_OK(st.destroy());
  CHECK(all_equal(host, 6.0f));
}

TEST_CASE("sim: out of device memory, and auto never picks the simulator") {
  nnp_device* dev = sim_device();
  nnp_device_props props{};
  props.struct_size = sizeof props;
  NNP_OK(nnp_device_get_props(dev, &props));
  void* p = nullptr;
  CHECK(nnp_malloc(dev, props.memory_bytes + 1, &p) == NNP_STATUS_OUT_OF_MEMORY);
  CHECK(p == nullptr);
  CHECK(props.auto_priority < 0);
  nnp_device* chosen = nullptr;
  if (nnp_get_device("auto", &chosen) == NNP_STATUS_OK) {
    NNP_OK(nnp_device_get_props(chosen, &props));
    CHECK(std::string(props.plugin_name) != "sim");
  }
}

// Last: it shuts the library down.
TEST_CASE("sim: nnp_shutdown with work in flight, then the library is used again") {
  scoped_env delay("NNPLUG_SIM_DELAY_US", kSlow);
  {
    sim_stream st;
    device_vector v(st.dev);
    NNP_OK(fill(st.s, v, 1.0));
    NNP_OK(nnp_shutdown());  // waits for the fill, then frees its memory and the stream
    v.ptr = nullptr;         // both handles died with the library: nothing left to release
    st.s = nullptr;
  }
  sim_stream st;
  device_vector v(st.dev);
  std::vector<float> host(kN, 3.0f);
  NNP_OK(nnp_memcpy(v.dev, v.ptr, nullptr, host.data(), kN * sizeof(float)));
  CHECK(all_equal(st.read(v), 3.0f));
}
