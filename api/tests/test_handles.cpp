// test_handles.cpp — stale and foreign handles: a destroyed stream, and devices, streams and
// plugins from before nnp_shutdown(), are refused with INVALID_ARGUMENT by every function that
// takes them, also after their memory was reused by new objects; values that are no handle at
// all are refused too (nnplug.h, "Handles"). Some cases call nnp_shutdown(), so they live in the
// api_tests binary only.
#include <doctest/doctest.h>

#include <nnplug/nnplug.h>

#include "test_support.hpp"

#include <cstring>
#include <string>
#include <vector>

namespace {

using nnp_test::contains;
using nnp_test::reference_device;

constexpr DLDataType kF32{kDLFloat, 32, 1};

std::string reference_path() {
  size_t n = 0;
  REQUIRE(nnp_get_load_records(nullptr, &n) == NNP_STATUS_OK);
  std::vector<nnp_load_record> recs(n);
  for (auto& r : recs) r.struct_size = sizeof(r);
  REQUIRE(nnp_get_load_records(recs.data(), &n) == NNP_STATUS_OK);
  for (const auto& r : recs)
    if (std::string(r.name) == "reference" && r.state == NNP_LOAD_LOADED) return r.path;
  FAIL("no load record of the reference plugin");
  return {};
}

// A float32 [4] tensor over host memory (the reference device is host memory).
struct host_tensor {
  float data[4] = {0, 0, 0, 0};
  int64_t shape[1] = {4};
  DLTensor t{};
  host_tensor() {
    t.data = data;
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = 1;
    t.dtype = kF32;
    t.shape = shape;
  }
};

// Every function that takes a stream refuses `s` with INVALID_ARGUMENT and a message with
// `why`; the host buffers and tensors are left untouched.
void check_stream_refused(nnp_stream* s, nnp_device* dev, const std::string& why) {
  host_tensor y;
  nnp_fill_params fp{};
  fp.struct_size = sizeof(fp);
  fp.value = 7.0;
  const DLTensor* outs[] = {&y.t};
  float host[4] = {1, 2, 3, 4}, back[4] = {9, 9, 9, 9};

  CHECK(nnp_stream_synchronize(s) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE(contains(nnp_last_error_message(), why), std::string(nnp_last_error_message()));
  CHECK(contains(nnp_last_error_message(), "nnp_stream_synchronize"));
  CHECK(nnp_stream_set_attribute(s, NNP_STREAM_ATTR_ALLOW_TF32, 1) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(contains(nnp_last_error_message(), why));
  CHECK(nnp_op_execute(s, NNP_OP_FILL, &fp, 0, nullptr, 1, outs) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(contains(nnp_last_error_message(), why));
  CHECK(nnp_fill(s, &fp, &y.t) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(contains(nnp_last_error_message(), why));
  CHECK(nnp_memcpy_async(s, nullptr, back, nullptr, host, sizeof(host)) ==
        NNP_STATUS_INVALID_ARGUMENT);
  CHECK(contains(nnp_last_error_message(), why));
  if (dev != nullptr)
    CHECK(nnp_memcpy_async(s, dev, back, nullptr, host, sizeof(host)) ==
          NNP_STATUS_INVALID_ARGUMENT);
  void* native = &back;
  CHECK(nnp_stream_get_native(s, &native) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(contains(nnp_last_error_message(), why));
  CHECK(native == static_cast<void*>(&back));
  CHECK(nnp_stream_device(s) == nullptr);
  CHECK(nnp_stream_destroy(s) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(contains(nnp_last_error_message(), why));
  for (float v : y.data) CHECK(v == 0.0f);
  for (float v : back) CHECK(v == 9.0f);
}

// Every function that takes a device refuses `d` with INVALID_ARGUMENT and a message with `why`.
void check_device_refused(nnp_device* d, const std::string& why) {
  nnp_device_props props{};
  props.struct_size = sizeof(props);
  CHECK(nnp_device_get_props(d, &props) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE(contains(nnp_last_error_message(), why), std::string(nnp_last_error_message()));
  DLDevice dl{kDLExtDev, 99};
  CHECK(nnp_device_get_dldevice(d, &dl) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(contains(nnp_last_error_message(), why));
  CHECK(dl.device_type == kDLExtDev);
  void* p = nullptr;
  CHECK(nnp_malloc(d, 64, &p) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(contains(nnp_last_error_message(), why));
  CHECK(p == nullptr);
  int on_stack = 0;
  CHECK(nnp_free(d, &on_stack) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(contains(nnp_last_error_message(), why));
  nnp_stream* s = nullptr;
  CHECK(nnp_stream_create(d, &s) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(contains(nnp_last_error_message(), why));
  CHECK(s == nullptr);
  float host[4] = {1, 2, 3, 4}, back[4] = {9, 9, 9, 9};
  CHECK(nnp_memcpy(d, back, nullptr, host, sizeof(host)) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(contains(nnp_last_error_message(), why));
  CHECK(nnp_memcpy(nullptr, back, d, host, sizeof(host)) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(contains(nnp_last_error_message(), why));
  for (float v : back) CHECK(v == 9.0f);
  host_tensor y;
  nnp_fill_params fp{};
  fp.struct_size = sizeof(fp);
  const DLTensor* outs[] = {&y.t};
  CHECK(nnp_op_supported(d, NNP_OP_FILL, &fp, 0, nullptr, 1, outs) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(contains(nnp_last_error_message(), why));
}

}  // namespace

TEST_CASE("handles: every stream function refuses a destroyed stream") {
  nnp_device* dev = reference_device();
  nnp_stream* s = nullptr;
  REQUIRE(nnp_stream_create(dev, &s) == NNP_STATUS_OK);
  REQUIRE(nnp_stream_destroy(s) == NNP_STATUS_OK);
  check_stream_refused(s, dev, "stale");
}

TEST_CASE("handles: a destroyed stream stays refused when new streams reuse its memory") {
  nnp_device* dev = reference_device();
  nnp_stream* old = nullptr;
  REQUIRE(nnp_stream_create(dev, &old) == NNP_STATUS_OK);
  REQUIRE(nnp_stream_destroy(old) == NNP_STATUS_OK);
  // New streams are allocated where the old one lived (the allocator reuses the freed block);
  // the old handle must not drive any of them.
  std::vector<nnp_stream*> fresh;
  for (int i = 0; i < 64; ++i) {
    nnp_stream* s = nullptr;
    REQUIRE(nnp_stream_create(dev, &s) == NNP_STATUS_OK);
    fresh.push_back(s);
    CHECK(s != old);
    CHECK(nnp_stream_synchronize(old) == NNP_STATUS_INVALID_ARGUMENT);
    CHECK(nnp_stream_device(old) == nullptr);
  }
  CHECK(nnp_stream_destroy(old) == NNP_STATUS_INVALID_ARGUMENT);
  // Destroy-and-create in a loop: every handle seen is refused once destroyed.
  std::vector<nnp_stream*> dead;
  for (int i = 0; i < 64; ++i) {
    nnp_stream* s = nullptr;
    REQUIRE(nnp_stream_create(dev, &s) == NNP_STATUS_OK);
    for (nnp_stream* d : dead) CHECK(s != d);
    REQUIRE(nnp_stream_destroy(s) == NNP_STATUS_OK);
    dead.push_back(s);
    CHECK(nnp_stream_synchronize(dead.front()) == NNP_STATUS_INVALID_ARGUMENT);
  }
  // The live ones still work.
  for (nnp_stream* s : fresh) {
    CHECK(nnp_stream_synchronize(s) == NNP_STATUS_OK);
    CHECK(nnp_stream_device(s) == dev);
    CHECK(nnp_stream_destroy(s) == NNP_STATUS_OK);
  }
}

TEST_CASE("handles: devices, streams and plugins from before nnp_shutdown are refused") {
  nnp_device* dev = reference_device();
  nnp_plugin* plugin = nullptr;
  REQUIRE(nnp_load_plugin(reference_path().c_str(), &plugin) == NNP_STATUS_OK);
  REQUIRE(std::string(nnp_plugin_name(plugin)) == "reference");
  nnp_stream* s = nullptr;
  REQUIRE(nnp_stream_create(dev, &s) == NNP_STATUS_OK);
  void* mem = nullptr;
  REQUIRE(nnp_malloc(dev, 1024, &mem) == NNP_STATUS_OK);
  REQUIRE(nnp_shutdown() == NNP_STATUS_OK);

  // Before the library is used again...
  check_device_refused(dev, "stale");
  check_stream_refused(s, nullptr, "stale");
  CHECK(nnp_plugin_name(plugin) == nullptr);

  // ... and after: the new objects may sit where the old ones were; the old handles still
  // name nothing.
  for (int round = 0; round < 3; ++round) {
    nnp_device* again = reference_device();
    CHECK(again != dev);
    nnp_stream* s2 = nullptr;
    REQUIRE(nnp_stream_create(again, &s2) == NNP_STATUS_OK);
    CHECK(s2 != s);
    void* mem2 = nullptr;
    REQUIRE(nnp_malloc(again, 1024, &mem2) == NNP_STATUS_OK);
    nnp_plugin* plugin2 = nullptr;
    REQUIRE(nnp_load_plugin(reference_path().c_str(), &plugin2) == NNP_STATUS_OK);
    CHECK(plugin2 != plugin);

    check_device_refused(dev, "stale");
    check_stream_refused(s, again, "stale");
    CHECK(nnp_plugin_name(plugin) == nullptr);
    // A pointer from before nnp_shutdown was freed by it. (A pointer value carries no
    // generation: if the new allocation got the same address, it is that allocation's.)
    if (mem2 != mem) CHECK(nnp_free(again, mem) == NNP_STATUS_INVALID_ARGUMENT);

    // The new handles work.
    CHECK(std::string(nnp_plugin_name(plugin2)) == "reference");
    CHECK(nnp_stream_device(s2) == again);
    CHECK(nnp_stream_synchronize(s2) == NNP_STATUS_OK);
    CHECK(nnp_free(again, mem2) == NNP_STATUS_OK);
    CHECK(nnp_stream_destroy(s2) == NNP_STATUS_OK);
    REQUIRE(nnp_shutdown() == NNP_STATUS_OK);
  }
}

TEST_CASE("handles: values that are no handle of the expected kind are refused") {
  nnp_device* dev = reference_device();
  nnp_stream* s = nullptr;
  REQUIRE(nnp_stream_create(dev, &s) == NNP_STATUS_OK);

  // A device where a stream is expected, and a stream where a device is expected.
  CHECK(nnp_stream_synchronize(reinterpret_cast<nnp_stream*>(dev)) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE(contains(nnp_last_error_message(), "nnp_device"),
                std::string(nnp_last_error_message()));
  CHECK(nnp_stream_device(reinterpret_cast<nnp_stream*>(dev)) == nullptr);
  nnp_device_props props{};
  props.struct_size = sizeof(props);
  CHECK(nnp_device_get_props(reinterpret_cast<nnp_device*>(s), &props) ==
        NNP_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE(contains(nnp_last_error_message(), "nnp_stream"),
                std::string(nnp_last_error_message()));
  CHECK(nnp_plugin_name(reinterpret_cast<nnp_plugin*>(dev)) == nullptr);

  // Pointers to memory that is no nnplug object, even when it looks like one.
  alignas(64) unsigned char junk[256];
  std::memset(junk, 0, sizeof(junk));
  CHECK(nnp_stream_synchronize(reinterpret_cast<nnp_stream*>(junk)) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(nnp_device_get_props(reinterpret_cast<nnp_device*>(junk), &props) ==
        NNP_STATUS_INVALID_ARGUMENT);
  std::memcpy(junk, &s, sizeof(s));  // a copy of the handle's bytes is not the handle
  CHECK(nnp_stream_destroy(reinterpret_cast<nnp_stream*>(junk)) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(nnp_stream_device(reinterpret_cast<nnp_stream*>(junk)) == nullptr);
  CHECK(nnp_plugin_name(reinterpret_cast<nnp_plugin*>(junk)) == nullptr);
  for (uintptr_t v : {uintptr_t{1}, uintptr_t{0x1000}, ~uintptr_t{0}, ~uintptr_t{0} << 32}) {
    CHECK(nnp_stream_synchronize(reinterpret_cast<nnp_stream*>(v)) == NNP_STATUS_INVALID_ARGUMENT);
    CHECK(nnp_device_get_props(reinterpret_cast<nnp_device*>(v), &props) ==
          NNP_STATUS_INVALID_ARGUMENT);
  }
  CHECK(nnp_stream_destroy(s) == NNP_STATUS_OK);
}
