// test_backends.cpp — the backends under test themselves: each was found and loaded (a plugin
// that loaded with zero devices is reported as "no device: <reason>", not a failure), its
// device properties are consistent, memory round-trips through nnp_malloc / nnp_memcpy, and
// every op kind answers nnp_op_supported with OK or UNSUPPORTED (never anything else).
#include <doctest/doctest.h>

#include "harness.hpp"

#include <set>
#include <vector>

TEST_CASE("backends: loaded, devices, memory") {
  using namespace conf;
  for (device_entry* d : backends_under_test()) {
    if (!d->available) {
      report({d->name, "*", "*", d->failed ? "load" : "no device",
              d->failed ? case_outcome::fail : case_outcome::no_device, 0, 0, d->reason});
      if (!d->failed) MESSAGE(d->label << ": no device: " << d->reason);
      CHECK_MESSAGE(!d->failed, d->label << ": " << d->reason);
      continue;
    }
    nnp_device_props props;
    std::memset(&props, 0, sizeof(props));
    props.struct_size = sizeof(props);
    REQUIRE(nnp_device_get_props(d->dev, &props) == NNP_STATUS_OK);
    REQUIRE(props.name != nullptr);
    CHECK(std::string(props.name) == d->name);
    CHECK(props.plugin_name != nullptr);
    CHECK(props.device_type == d->dl.device_type);
    CHECK(props.device_id == d->dl.device_id);

    // Memory round trip, host -> device -> device -> host.
    const size_t n = 4099;
    std::vector<unsigned char> src(n), dst(n, 0);
    for (size_t i = 0; i < n; ++i) src[i] = static_cast<unsigned char>(i * 31 + 7);
    void* a = nullptr;
    void* b = nullptr;
    REQUIRE(nnp_malloc(d->dev, n, &a) == NNP_STATUS_OK);
    REQUIRE(nnp_malloc(d->dev, n, &b) == NNP_STATUS_OK);
    CHECK(reinterpret_cast<uintptr_t>(a) % 64 == 0);
    CHECK(nnp_memcpy(d->dev, a, nullptr, src.data(), n) == NNP_STATUS_OK);
    CHECK(nnp_memcpy(d->dev, b, d->dev, a, n) == NNP_STATUS_OK);
    CHECK(nnp_memcpy(nullptr, dst.data(), d->dev, b, n) == NNP_STATUS_OK);
    CHECK(src == dst);
    CHECK(nnp_free(d->dev, a) == NNP_STATUS_OK);
    CHECK(nnp_free(d->dev, b) == NNP_STATUS_OK);
    CHECK(nnp_free(d->dev, nullptr) == NNP_STATUS_OK);

    // nnp_op_supported answers OK or UNSUPPORTED for every valid template, in every dtype.
    for (const op_template& t : op_templates()) {
      for (dtype_id dt : float_dtypes()) {
        std::string reason;
        const nnp_status s = op_supported(*d, t.make(), dt, &reason);
        CHECK_MESSAGE((s == NNP_STATUS_OK || s == NNP_STATUS_UNSUPPORTED),
                      d->name << ": nnp_op_supported(" << t.name << ", " << std::string(dt_name(dt))
                              << ") returned " << std::string(nnp_status_string(s)) << ": "
                              << reason);
        if (s == NNP_STATUS_UNSUPPORTED)
          CHECK_MESSAGE(!reason.empty(), t.name << " " << std::string(dt_name(dt)));
      }
    }
  }
}

// The oracle must cover what it is asked to check: float32 always, and float64 for the
// in-tree reference (the gradient checks run in float64).
TEST_CASE("backends: the reference supports every op") {
  using namespace conf;
  device_entry& ref = reference_device();
  REQUIRE(ref.available);
  std::vector<dtype_id> dtypes{dtype_id::f32};
  if (ref.plugin == "reference") dtypes.push_back(dtype_id::f64);
  for (const op_template& t : op_templates()) {
    for (dtype_id dt : dtypes) {
      std::string reason;
      CHECK_MESSAGE(
          op_supported(ref, t.make(), dt, &reason) == NNP_STATUS_OK,
          ref.name << ": " << t.name << " " << std::string(dt_name(dt)) << ": " << reason);
    }
  }
}

// Every op kind libnnplug knows is covered by a family file (its template drives the error and
// thread tests, and its name the numerics tests), and every template names its kind correctly.
// The collectives are not device-plugin ops: libnnplug runs them through a communicator's
// transport, and api/tests/test_comm.cpp and comm/tests cover them.
TEST_CASE("coverage: every op kind has a conformance template") {
  using namespace conf;
  std::set<std::string> templates;
  for (const op_template& t : op_templates()) {
    templates.insert(t.name);
    const char* name = nnp_op_kind_name(t.make().kind);
    CHECK_MESSAGE((name != nullptr && t.name == name),
                  "template " << t.name << " has kind " << t.make().kind);
  }
  int kinds = 0;
  for (int32_t kind = 1; kind < 0x20000; ++kind) {  // beyond every kind ever defined
    const char* name = nnp_op_kind_name(kind);
    if (name == nullptr || kind == NNP_OP_ALL_REDUCE || kind == NNP_OP_BROADCAST ||
        kind == NNP_OP_ALL_GATHER)
      continue;
    ++kinds;
    CHECK_MESSAGE(templates.count(name) == 1,
                  "op kind " << kind << " (" << name << ") has no conformance template");
  }
  CHECK(kinds == static_cast<int>(templates.size()));
}
