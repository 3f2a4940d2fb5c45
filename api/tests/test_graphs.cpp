// test_graphs.cpp — graph capture (nnplug.h, "graphs"): what a capturing stream refuses, the
// handle rules of nnp_graph, launches on the wrong stream, discarding a capture, and shutdown.
// Run on the reference backend (libnnplug records the calls) and on sim (the plugin records them
// through the ABI 1.4 graph slots); the conformance suite checks the results of replays.
#include "test_support.hpp"

#include <cstring>
#include <string>
#include <vector>

using nnp_test::contains;

namespace {

// A device by name, or NULL when its plugin is not available here.
nnp_device* device_named(const char* name) {
  nnp_device* dev = nullptr;
  return nnp_get_device(name, &dev) == NNP_STATUS_OK ? dev : nullptr;
}

DLTensor vec(void* data, nnp_device* dev, int64_t* shape) {
  DLTensor t{};
  t.data = data;
  nnp_device_props props{};
  props.struct_size = sizeof props;
  REQUIRE(nnp_device_get_props(dev, &props) == NNP_STATUS_OK);
  t.device = DLDevice{static_cast<DLDeviceType>(props.device_type), props.device_id};
  t.ndim = 1;
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = shape;
  return t;
}

// Float32 vectors *dx and *dy of n elements on dev, *dx holding `value` everywhere.
void allocate_pair(nnp_device* dev, int64_t n, float value, void** dx, void** dy) {
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  REQUIRE(nnp_malloc(dev, bytes, dx) == NNP_STATUS_OK);
  REQUIRE(nnp_malloc(dev, bytes, dy) == NNP_STATUS_OK);
  const std::vector<float> host(static_cast<size_t>(n), value);
  REQUIRE(nnp_memcpy(dev, *dx, nullptr, host.data(), bytes) == NNP_STATUS_OK);
}

// Float32 vectors x (`value` everywhere) and y of n elements on dev, and a stream of dev; the
// stream is destroyed and the vectors are freed (checked) with the object.
struct vector_pair {
  nnp_device* dev;
  int64_t shape[1];
  void *dx = nullptr, *dy = nullptr;
  DLTensor x{}, y{};
  nnp_stream* s = nullptr;
  vector_pair(nnp_device* d, int64_t n, float value) : dev(d), shape{n} {
    allocate_pair(dev, n, value, &dx, &dy);
    x = vec(dx, dev, shape);
    y = vec(dy, dev, shape);
    REQUIRE(nnp_stream_create(dev, &s) == NNP_STATUS_OK);
  }
  ~vector_pair() {
    CHECK(nnp_stream_destroy(s) == NNP_STATUS_OK);
    CHECK(nnp_free(dev, dx) == NNP_STATUS_OK);
    CHECK(nnp_free(dev, dy) == NNP_STATUS_OK);
  }
  vector_pair(const vector_pair&) = delete;
  vector_pair& operator=(const vector_pair&) = delete;
};

// y = alpha * x, queued on s.
nnp_status scale(nnp_stream* s, DLTensor* x, DLTensor* y, double alpha) {
  nnp_scale_params p{};
  p.struct_size = sizeof p;
  p.alpha = alpha;
  return nnp_scale(s, &p, x, y);
}

}  // namespace

TEST_CASE("graphs: a capturing stream refuses what it cannot record, and recovers") {
  for (const char* name : {"reference", "sim:0"}) {
    nnp_device* dev = device_named(name);
    if (dev == nullptr) continue;
    CAPTURE(name);
    constexpr int64_t n = 16;
    vector_pair v(dev, n, 1.0f);
    std::vector<float> host(n, 1.0f), back(n, 0.0f);

    nnp_graph* g = nullptr;
    CHECK(nnp_stream_end_capture(v.s, &g) == NNP_STATUS_INVALID_ARGUMENT);
    CHECK(contains(nnp_last_error_message(), "not capturing"));
    REQUIRE(nnp_stream_begin_capture(v.s) == NNP_STATUS_OK);
    CHECK(nnp_stream_begin_capture(v.s) == NNP_STATUS_INVALID_ARGUMENT);
    CHECK(contains(nnp_last_error_message(), "already capturing"));
    CHECK(scale(v.s, &v.x, &v.y, 3.0) == NNP_STATUS_OK);  // recorded
    CHECK(nnp_stream_synchronize(v.s) == NNP_STATUS_INVALID_ARGUMENT);
    CHECK(contains(nnp_last_error_message(), "capturing"));
    CHECK(nnp_memcpy_async(v.s, dev, v.dx, nullptr, host.data(), n * sizeof(float)) ==
          NNP_STATUS_INVALID_ARGUMENT);
    CHECK(contains(nnp_last_error_message(), "host to"));
    CHECK(nnp_memcpy_async(v.s, nullptr, back.data(), dev, v.dy, n * sizeof(float)) ==
          NNP_STATUS_INVALID_ARGUMENT);
    CHECK(nnp_stream_set_attribute(v.s, NNP_STREAM_ATTR_ALLOW_TF32, 1) ==
          NNP_STATUS_INVALID_ARGUMENT);
    // nnp_memcpy and nnp_free do not wait for (or disturb) the capture.
    void* other = nullptr;
    REQUIRE(nnp_malloc(dev, 64, &other) == NNP_STATUS_OK);
    CHECK(nnp_memcpy(nullptr, back.data(), dev, v.dy, n * sizeof(float)) == NNP_STATUS_OK);
    CHECK(nnp_free(dev, other) == NNP_STATUS_OK);
    CHECK(nnp_stream_end_capture(v.s, nullptr) == NNP_STATUS_INVALID_ARGUMENT);  // goes on
    REQUIRE(nnp_stream_end_capture(v.s, &g) == NNP_STATUS_OK);
    REQUIRE(g != nullptr);

    // Nothing ran; a launch runs the recorded scale.
    std::vector<float> got(n, -1.0f);
    REQUIRE(nnp_stream_synchronize(v.s) == NNP_STATUS_OK);
    REQUIRE(nnp_memcpy(nullptr, got.data(), dev, v.dx, n * sizeof(float)) == NNP_STATUS_OK);
    CHECK(got == host);
    REQUIRE(nnp_graph_launch(g, v.s) == NNP_STATUS_OK);
    REQUIRE(nnp_graph_launch(g, v.s) == NNP_STATUS_OK);
    REQUIRE(nnp_stream_synchronize(v.s) == NNP_STATUS_OK);
    REQUIRE(nnp_memcpy(nullptr, got.data(), dev, v.dy, n * sizeof(float)) == NNP_STATUS_OK);
    CHECK(got == std::vector<float>(n, 3.0f));

    // Handles: a graph is not a stream and vice versa; NULL destroy is a no-op.
    CHECK(nnp_stream_synchronize(reinterpret_cast<nnp_stream*>(g)) == NNP_STATUS_INVALID_ARGUMENT);
    CHECK(contains(nnp_last_error_message(), "is an nnp_graph handle, not an nnp_stream"));
    CHECK(nnp_graph_launch(reinterpret_cast<nnp_graph*>(v.s), v.s) == NNP_STATUS_INVALID_ARGUMENT);
    CHECK(contains(nnp_last_error_message(), "is an nnp_stream handle, not an nnp_graph"));
    CHECK(nnp_graph_launch(nullptr, v.s) == NNP_STATUS_INVALID_ARGUMENT);
    CHECK(nnp_graph_destroy(nullptr) == NNP_STATUS_OK);

    // A graph cannot be launched into a capture.
    nnp_stream* s2 = nullptr;
    REQUIRE(nnp_stream_create(dev, &s2) == NNP_STATUS_OK);
    REQUIRE(nnp_stream_begin_capture(s2) == NNP_STATUS_OK);
    CHECK(nnp_graph_launch(g, s2) == NNP_STATUS_INVALID_ARGUMENT);
    CHECK(contains(nnp_last_error_message(), "capturing"));
    // Destroying a capturing stream discards the capture.
    CHECK(nnp_stream_destroy(s2) == NNP_STATUS_OK);

    CHECK(nnp_graph_destroy(g) == NNP_STATUS_OK);
    CHECK(nnp_graph_destroy(g) == NNP_STATUS_INVALID_ARGUMENT);
    CHECK(contains(nnp_last_error_message(), "stale nnp_graph handle"));
  }
}

// A params struct_size past the struct (4096, 2^63, SIZE_MAX) is recorded as the struct
// libnnplug knows: the recording copies the host's bounded copy, never struct_size bytes of the
// caller's (docs/security.md, "Params structs"), and the launches compute the same.
TEST_CASE("graphs: a capture copies params by the validated size, not by struct_size") {
  for (const char* name : {"reference", "cpu", "sim:0"}) {
    nnp_device* dev = device_named(name);
    if (dev == nullptr) continue;
    CAPTURE(name);
    constexpr int64_t n = 8;
    vector_pair v(dev, n, 2.0f);
    for (size_t size : {size_t{4096}, size_t{1} << 63, ~size_t{0}}) {
      CAPTURE(size);
      nnp_scale_params p{};
      p.struct_size = size;
      p.alpha = 1.5;
      REQUIRE(nnp_stream_begin_capture(v.s) == NNP_STATUS_OK);
      CHECK(nnp_scale(v.s, &p, &v.x, &v.y) == NNP_STATUS_OK);
      nnp_graph* g = nullptr;
      REQUIRE(nnp_stream_end_capture(v.s, &g) == NNP_STATUS_OK);
      p.alpha = -7.0;  // the graph holds its own copy
      REQUIRE(nnp_graph_launch(g, v.s) == NNP_STATUS_OK);
      REQUIRE(nnp_stream_synchronize(v.s) == NNP_STATUS_OK);
      std::vector<float> got(n, 0.0f);
      REQUIRE(nnp_memcpy(nullptr, got.data(), dev, v.dy, n * sizeof(float)) == NNP_STATUS_OK);
      CHECK(got == std::vector<float>(n, 3.0f));
      CHECK(nnp_graph_destroy(g) == NNP_STATUS_OK);
    }
  }
}

TEST_CASE("graphs: a graph runs only on streams of its device") {
  nnp_device* ref = device_named("reference");
  nnp_device* sim0 = device_named("sim:0");
  nnp_device* sim1 = device_named("sim:1");
  if (ref == nullptr || sim0 == nullptr || sim1 == nullptr) return;
  for (nnp_device* dev : {ref, sim0}) {
    nnp_stream *s = nullptr, *other = nullptr;
    REQUIRE(nnp_stream_create(dev, &s) == NNP_STATUS_OK);
    REQUIRE(nnp_stream_create(dev == ref ? sim1 : ref, &other) == NNP_STATUS_OK);
    REQUIRE(nnp_stream_begin_capture(s) == NNP_STATUS_OK);
    nnp_graph* g = nullptr;
    REQUIRE(nnp_stream_end_capture(s, &g) == NNP_STATUS_OK);
    CHECK(nnp_graph_launch(g, other) == NNP_STATUS_INVALID_ARGUMENT);
    CHECK(contains(nnp_last_error_message(), "but the graph was captured on"));
    CHECK(nnp_graph_launch(g, s) == NNP_STATUS_OK);  // an empty graph does nothing
    CHECK(nnp_graph_destroy(g) == NNP_STATUS_OK);
    CHECK(nnp_stream_destroy(other) == NNP_STATUS_OK);
    CHECK(nnp_stream_destroy(s) == NNP_STATUS_OK);
  }
}

TEST_CASE("graphs: sim resolves a graph's memory at launch, so freed memory is an error") {
  nnp_device* dev = device_named("sim:0");
  if (dev == nullptr) return;
  constexpr int64_t n = 8;
  int64_t shape[1] = {n};
  void *dx = nullptr, *dy = nullptr;
  REQUIRE(nnp_malloc(dev, n * sizeof(float), &dx) == NNP_STATUS_OK);
  REQUIRE(nnp_malloc(dev, n * sizeof(float), &dy) == NNP_STATUS_OK);
  DLTensor x = vec(dx, dev, shape), y = vec(dy, dev, shape);
  nnp_stream* s = nullptr;
  REQUIRE(nnp_stream_create(dev, &s) == NNP_STATUS_OK);
  REQUIRE(nnp_stream_begin_capture(s) == NNP_STATUS_OK);
  REQUIRE(scale(s, &x, &y, 2.0) == NNP_STATUS_OK);
  nnp_graph* g = nullptr;
  REQUIRE(nnp_stream_end_capture(s, &g) == NNP_STATUS_OK);
  REQUIRE(nnp_free(dev, dy) == NNP_STATUS_OK);
  CHECK(nnp_graph_launch(g, s) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(contains(nnp_last_error_message(), "sim"));
  CHECK(nnp_graph_destroy(g) == NNP_STATUS_OK);
  CHECK(nnp_stream_destroy(s) == NNP_STATUS_OK);
  CHECK(nnp_free(dev, dx) == NNP_STATUS_OK);
}

TEST_CASE("graphs: nnp_shutdown releases graphs and captures; their handles become stale") {
  nnp_device* dev = device_named("sim:0");
  if (dev == nullptr) dev = device_named("reference");
  REQUIRE(dev != nullptr);
  nnp_stream *s = nullptr, *capturing = nullptr;
  REQUIRE(nnp_stream_create(dev, &s) == NNP_STATUS_OK);
  REQUIRE(nnp_stream_create(dev, &capturing) == NNP_STATUS_OK);
  REQUIRE(nnp_stream_begin_capture(s) == NNP_STATUS_OK);
  nnp_graph* g = nullptr;
  REQUIRE(nnp_stream_end_capture(s, &g) == NNP_STATUS_OK);
  REQUIRE(nnp_stream_begin_capture(capturing) == NNP_STATUS_OK);
  REQUIRE(nnp_shutdown() == NNP_STATUS_OK);
  CHECK(nnp_graph_destroy(g) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(contains(nnp_last_error_message(), "stale nnp_graph handle"));
  CHECK(nnp_stream_end_capture(capturing, &g) == NNP_STATUS_INVALID_ARGUMENT);
}
