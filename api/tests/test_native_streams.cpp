// test_native_streams.cpp — nnp_stream_get_native (ABI 1.6): UNSUPPORTED on the backends whose
// plugins have no stream_get_native slot (cpu, reference, sim), INVALID_ARGUMENT for a NULL
// `native` or a NULL, stale or foreign stream (*native untouched), and on cuda (when a cuda
// device is present) OK with a non-NULL cudaStream_t, the same for every call on one stream and
// another one for another stream.
#include "test_support.hpp"

#include <string>

using nnp_test::contains;

namespace {

// A device by name, or NULL when its plugin or device is not available here.
nnp_device* device_named(const char* name) {
  nnp_device* dev = nullptr;
  return nnp_get_device(name, &dev) == NNP_STATUS_OK ? dev : nullptr;
}

int marker = 0;  // *native is set to &marker before each call: "untouched" means still &marker

}  // namespace

TEST_CASE("native streams: UNSUPPORTED on the backends without native streams") {
  int checked = 0;
  for (const char* name : {"cpu", "reference", "sim:0"}) {
    nnp_device* dev = device_named(name);
    if (dev == nullptr) {
      MESSAGE("no device '" << name << "' here: skipped");
      continue;
    }
    CAPTURE(std::string(name));
    nnp_stream* s = nullptr;
    REQUIRE(nnp_stream_create(dev, &s) == NNP_STATUS_OK);
    void* native = &marker;
    CHECK(nnp_stream_get_native(s, &native) == NNP_STATUS_UNSUPPORTED);
    CHECK_MESSAGE(contains(nnp_last_error_message(), "nnp_stream_get_native"),
                  std::string(nnp_last_error_message()));
    CHECK(contains(nnp_last_error_message(), "has no native streams"));
    CHECK(native == static_cast<void*>(&marker));
    // A NULL `native` is INVALID_ARGUMENT whatever the plugin.
    CHECK(nnp_stream_get_native(s, nullptr) == NNP_STATUS_INVALID_ARGUMENT);
    CHECK(contains(nnp_last_error_message(), "native is NULL"));
    // The stream still works.
    CHECK(nnp_stream_synchronize(s) == NNP_STATUS_OK);
    CHECK(nnp_stream_destroy(s) == NNP_STATUS_OK);
    ++checked;
  }
  CHECK(checked >= 1);  // the reference backend is always built
}

TEST_CASE("native streams: NULL, stale and foreign stream handles are INVALID_ARGUMENT") {
  nnp_device* dev = nnp_test::reference_device();
  void* native = &marker;
  CHECK(nnp_stream_get_native(nullptr, &native) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(contains(nnp_last_error_message(), "nnp_stream_get_native"));
  CHECK(native == static_cast<void*>(&marker));
  CHECK(nnp_stream_get_native(reinterpret_cast<nnp_stream*>(dev), &native) ==
        NNP_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE(contains(nnp_last_error_message(), "nnp_device"),
                std::string(nnp_last_error_message()));
  CHECK(native == static_cast<void*>(&marker));
  nnp_stream* s = nullptr;
  REQUIRE(nnp_stream_create(dev, &s) == NNP_STATUS_OK);
  REQUIRE(nnp_stream_destroy(s) == NNP_STATUS_OK);
  CHECK(nnp_stream_get_native(s, &native) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(contains(nnp_last_error_message(), "stale"));
  CHECK(native == static_cast<void*>(&marker));
}

TEST_CASE("native streams: cuda gives each stream's cudaStream_t") {
  nnp_device* dev = device_named("cuda:0");
  if (dev == nullptr) {
    MESSAGE("no cuda device here: skipped");
    return;
  }
  nnp_stream* a = nullptr;
  nnp_stream* b = nullptr;
  REQUIRE(nnp_stream_create(dev, &a) == NNP_STATUS_OK);
  REQUIRE(nnp_stream_create(dev, &b) == NNP_STATUS_OK);
  void* na = nullptr;
  void* na_again = nullptr;
  void* nb = nullptr;
  CHECK(nnp_stream_get_native(a, &na) == NNP_STATUS_OK);
  CHECK(na != nullptr);  // a stream of its own, never the legacy default stream (0)
  CHECK(nnp_stream_get_native(a, &na_again) == NNP_STATUS_OK);
  CHECK(na_again == na);
  CHECK(nnp_stream_get_native(b, &nb) == NNP_STATUS_OK);
  CHECK(nb != nullptr);
  CHECK(nb != na);
  CHECK(nnp_stream_get_native(a, nullptr) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(nnp_stream_synchronize(a) == NNP_STATUS_OK);
  CHECK(nnp_stream_destroy(a) == NNP_STATUS_OK);
  CHECK(nnp_stream_destroy(b) == NNP_STATUS_OK);
}
