// API-level tests of libnnplug against the plugins built in this tree (the reference plugin at
// least): discovery, device lookup, memory and copies, streams, op dispatch through
// nnp_op_execute and the typed wrappers, validation messages, last error, shutdown.
#include <doctest/doctest.h>

#include <nnplug/nnplug.h>

#include "test_support.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using nnp_test::contains;
using nnp_test::reference_device;

DLTensor make_tensor(void* data, DLDataType dtype, int ndim, int64_t* shape) {
  return nnp_test::host_tensor(data, dtype, ndim, shape);
}
constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kF64{kDLFloat, 64, 1};

}  // namespace

TEST_CASE("api: version and status strings") {
  int32_t major = -1, minor = -1, patch = -1;
  nnp_get_version(&major, &minor, &patch);
  CHECK(major == NNP_VERSION_MAJOR);
  CHECK(minor == NNP_VERSION_MINOR);
  CHECK(patch == NNP_VERSION_PATCH);
  nnp_get_version(nullptr, nullptr, nullptr);
  CHECK(std::string(nnp_version_string()) == NNP_VERSION_STRING);
  CHECK(std::string(nnp_status_string(NNP_STATUS_OK)) == "ok");
  CHECK(std::string(nnp_status_string(NNP_STATUS_INVALID_ARGUMENT)) == "invalid argument");
  CHECK(std::string(nnp_status_string(static_cast<nnp_status>(12345))) == "unknown status");
  CHECK(std::string(nnp_op_kind_name(NNP_OP_CONV2D_FORWARD)) == "conv2d_forward");
  CHECK(std::string(nnp_op_kind_name(NNP_OP_ADAM_UPDATE)) == "adam_update");
  CHECK(nnp_op_kind_name(0) == nullptr);
  CHECK(nnp_op_kind_name(9999) == nullptr);
}

TEST_CASE("api: discovery finds the reference plugin next to libnnplug") {
  REQUIRE(nnp_load_default_plugins() == NNP_STATUS_OK);
  size_t n = 0;
  REQUIRE(nnp_get_load_records(nullptr, &n) == NNP_STATUS_OK);
  REQUIRE(n >= 1);
  std::vector<nnp_load_record> recs(n);
  for (auto& r : recs) r.struct_size = sizeof(nnp_load_record);
  REQUIRE(nnp_get_load_records(recs.data(), &n) == NNP_STATUS_OK);
  bool found = false;
  for (const auto& r : recs) {
    if (std::string(r.name) != "reference") continue;
    found = true;
    CHECK(r.state == NNP_LOAD_LOADED);
    CHECK(r.status == NNP_STATUS_OK);
    CHECK(r.abi_version_major == NNP_ABI_VERSION_MAJOR);
    CHECK(r.n_devices == 1);
    CHECK(contains(r.path, "nnplug/plugins/libnnplug-reference.so"));
  }
  CHECK(found);
  // Idempotent: a second call adds no records.
  REQUIRE(nnp_load_default_plugins() == NNP_STATUS_OK);
  size_t n2 = 0;
  REQUIRE(nnp_get_load_records(nullptr, &n2) == NNP_STATUS_OK);
  CHECK(n2 == n);
}

TEST_CASE("api: device lookup by name, plugin, auto") {
  nnp_device* a = nullptr;
  nnp_device* b = nullptr;
  REQUIRE(nnp_get_device("reference:0", &a) == NNP_STATUS_OK);
  REQUIRE(nnp_get_device("reference", &b) == NNP_STATUS_OK);
  CHECK(a == b);
  nnp_device_props props{};
  props.struct_size = sizeof(props);
  REQUIRE(nnp_device_get_props(a, &props) == NNP_STATUS_OK);
  CHECK(std::string(props.name) == "reference:0");
  CHECK(std::string(props.plugin_name) == "reference");
  CHECK(props.device_type == kDLCPU);
  DLDevice dl{};
  REQUIRE(nnp_device_get_dldevice(a, &dl) == NNP_STATUS_OK);
  CHECK(dl.device_type == kDLCPU);
  CHECK(dl.device_id == 0);

  nnp_device* autodev = nullptr;
  REQUIRE(nnp_get_device("auto", &autodev) == NNP_STATUS_OK);
  nnp_device_props ap{};
  ap.struct_size = sizeof(ap);
  REQUIRE(nnp_device_get_props(autodev, &ap) == NNP_STATUS_OK);
  CHECK(ap.auto_priority >= props.auto_priority);

  nnp_device* none = nullptr;
  CHECK(nnp_get_device("nonexistent", &none) == NNP_STATUS_NOT_FOUND);
  CHECK(none == nullptr);
  CHECK(contains(nnp_last_error_message(), "nonexistent"));
  CHECK(contains(nnp_last_error_message(), "reference"));
  CHECK(nnp_get_device("reference:7", &none) == NNP_STATUS_UNAVAILABLE);
  CHECK(nnp_get_device("reference:x", &none) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(nnp_get_device(nullptr, &none) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(nnp_get_device("", &none) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(none == nullptr);

  props.struct_size = 0;
  CHECK(nnp_device_get_props(a, &props) == NNP_STATUS_INVALID_ARGUMENT);
}

TEST_CASE("api: struct_size: callees write only the fields that fit") {
  nnp_device* dev = reference_device();
  // An "older" caller's load record that ends before `state`.
  struct old_record {
    nnp_load_record head;
  } rec;
  std::memset(&rec, 0xAB, sizeof(rec));
  rec.head.struct_size = offsetof(nnp_load_record, state);
  size_t n = 1;
  REQUIRE(nnp_get_load_records(&rec.head, &n) == NNP_STATUS_OK);
  CHECK(rec.head.struct_size == offsetof(nnp_load_record, state));
  CHECK(rec.head.path != nullptr);
  CHECK(rec.head.abi_version_minor >= 0);
  int32_t untouched;
  std::memset(&untouched, 0xAB, sizeof(untouched));
  CHECK(rec.head.state == untouched);  // beyond the caller's struct_size: not written
  CHECK(rec.head.n_devices == untouched);

  // Device props of exactly the 1.0 size: the tail padding is not written.
  unsigned char buf[sizeof(nnp_device_props) + 16];
  std::memset(buf, 0xCD, sizeof(buf));
  nnp_device_props* props = reinterpret_cast<nnp_device_props*>(buf);
  props->struct_size = NNP_DEVICE_PROPS_STRUCT_SIZE_1_0;
  REQUIRE(nnp_device_get_props(dev, props) == NNP_STATUS_OK);
  CHECK(props->struct_size == NNP_DEVICE_PROPS_STRUCT_SIZE_1_0);
  CHECK(std::string(props->name) == "reference:0");
  for (size_t i = NNP_DEVICE_PROPS_STRUCT_SIZE_1_0; i < sizeof(buf); ++i) CHECK(buf[i] == 0xCD);
  props->struct_size = NNP_DEVICE_PROPS_STRUCT_SIZE_1_0 - 1;
  CHECK(nnp_device_get_props(dev, props) == NNP_STATUS_INVALID_ARGUMENT);
}

TEST_CASE("api: NNPLUG_BACKEND overrides auto") {
  setenv("NNPLUG_BACKEND", "reference:0", 1);
  nnp_device* d = nullptr;
  CHECK(nnp_get_device("auto", &d) == NNP_STATUS_OK);
  CHECK(d == reference_device());
  setenv("NNPLUG_BACKEND", "nosuchplugin", 1);
  CHECK(nnp_get_device("auto", &d) == NNP_STATUS_NOT_FOUND);
  CHECK(contains(nnp_last_error_message(), "NNPLUG_BACKEND"));
  setenv("NNPLUG_BACKEND", "auto", 1);
  CHECK(nnp_get_device("auto", &d) == NNP_STATUS_OK);
  unsetenv("NNPLUG_BACKEND");
}

TEST_CASE("api: memory, copies and foreign pointers") {
  nnp_device* dev = reference_device();
  void* p = nullptr;
  REQUIRE(nnp_malloc(dev, 256, &p) == NNP_STATUS_OK);
  REQUIRE(p != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(p) % 64 == 0);
  std::vector<float> src(64), dst(64, -1.0f);
  for (int i = 0; i < 64; ++i) src[static_cast<size_t>(i)] = static_cast<float>(i) * 0.5f;
  REQUIRE(nnp_memcpy(dev, p, nullptr, src.data(), 256) == NNP_STATUS_OK);
  REQUIRE(nnp_memcpy(nullptr, dst.data(), dev, p, 256) == NNP_STATUS_OK);
  CHECK(dst == src);

  nnp_stream* s = nullptr;
  REQUIRE(nnp_stream_create(dev, &s) == NNP_STATUS_OK);
  CHECK(nnp_stream_device(s) == dev);
  std::vector<float> dst2(64, 0.0f);
  REQUIRE(nnp_memcpy_async(s, nullptr, dst2.data(), dev, p, 256) == NNP_STATUS_OK);
  REQUIRE(nnp_stream_synchronize(s) == NNP_STATUS_OK);
  CHECK(dst2 == src);
  CHECK(nnp_memcpy(dev, nullptr, nullptr, src.data(), 4) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(nnp_memcpy(dev, nullptr, nullptr, nullptr, 0) == NNP_STATUS_OK);
  REQUIRE(nnp_stream_destroy(s) == NNP_STATUS_OK);

  int on_stack = 0;
  CHECK(nnp_free(dev, &on_stack) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(contains(nnp_last_error_message(), "not allocated by nnp_malloc"));
  CHECK(nnp_free(dev, nullptr) == NNP_STATUS_OK);
  CHECK(nnp_malloc(dev, 0, &p) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(nnp_free(dev, p) == NNP_STATUS_OK);
  CHECK(nnp_free(dev, p) == NNP_STATUS_INVALID_ARGUMENT);  // double free is caught
  CHECK(nnp_stream_destroy(nullptr) == NNP_STATUS_OK);
}

// Memory of a device the host cannot address, passed to nnp_memcpy as host memory (a NULL
// device): refused naming the device, for the allocation's first byte and an inner one; the
// host memory of reference allocations stays usable that way.
TEST_CASE("api: nnp_memcpy refuses device memory passed as host memory") {
  nnp_device* sim = nullptr;
  if (nnp_get_device("sim:0", &sim) != NNP_STATUS_OK) return;  // the sim plugin is optional
  void* p = nullptr;
  REQUIRE(nnp_malloc(sim, 64, &p) == NNP_STATUS_OK);
  std::vector<float> host(16, 1.0f);
  CHECK(nnp_memcpy(nullptr, host.data(), nullptr, p, 64) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(contains(nnp_last_error_message(), "is memory of sim:0"));
  CHECK(contains(nnp_last_error_message(), "src_device"));
  void* inner = static_cast<char*>(p) + 32;
  CHECK(nnp_memcpy(nullptr, inner, nullptr, host.data(), 32) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(contains(nnp_last_error_message(), "dst_device"));
  CHECK(host == std::vector<float>(16, 1.0f));
  CHECK(nnp_memcpy(sim, p, nullptr, host.data(), 64) == NNP_STATUS_OK);  // with its device
  CHECK(nnp_free(sim, p) == NNP_STATUS_OK);
  nnp_device* ref = reference_device();
  REQUIRE(nnp_malloc(ref, 64, &p) == NNP_STATUS_OK);
  CHECK(nnp_memcpy(nullptr, host.data(), nullptr, p, 64) == NNP_STATUS_OK);  // host memory
  CHECK(nnp_free(ref, p) == NNP_STATUS_OK);
}

TEST_CASE("api: ops run through nnp_op_execute and typed wrappers") {
  nnp_device* dev = reference_device();
  nnp_stream* s = nullptr;
  REQUIRE(nnp_stream_create(dev, &s) == NNP_STATUS_OK);

  // gemm 2x3 * 3x2
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1}, y[4] = {0, 0, 0, 0};
  int64_t sa[2] = {2, 3}, sb[2] = {3, 2}, sy[2] = {2, 2};
  DLTensor ta = make_tensor(a, kF32, 2, sa), tb = make_tensor(b, kF32, 2, sb),
           ty = make_tensor(y, kF32, 2, sy);
  nnp_gemm_params gp{};
  gp.struct_size = sizeof(gp);
  gp.alpha = 1.0;
  REQUIRE_MESSAGE(nnp_gemm(s, &gp, &ta, &tb, nullptr, &ty) == NNP_STATUS_OK,
                  nnp_last_error_message());
  REQUIRE(nnp_stream_synchronize(s) == NNP_STATUS_OK);
  // row 0: [1*1+2*0+3*1, 1*0+2*1+3*1] = [4, 5]; row 1: [4+0+6, 0+5+6] = [10, 11]
  CHECK(y[0] == doctest::Approx(4));
  CHECK(y[1] == doctest::Approx(5));
  CHECK(y[2] == doctest::Approx(10));
  CHECK(y[3] == doctest::Approx(11));

  // fill through the generic entry
  nnp_fill_params fp{};
  fp.struct_size = sizeof(fp);
  fp.value = 2.5;
  const DLTensor* outs[] = {&ty};
  REQUIRE(nnp_op_execute(s, NNP_OP_FILL, &fp, 0, nullptr, 1, outs) == NNP_STATUS_OK);
  REQUIRE(nnp_stream_synchronize(s) == NNP_STATUS_OK);
  for (float v : y) CHECK(v == 2.5f);

  // unknown kind -> UNSUPPORTED, output untouched
  CHECK(nnp_op_execute(s, 4242, &fp, 0, nullptr, 1, outs) == NNP_STATUS_UNSUPPORTED);
  CHECK(contains(nnp_last_error_message(), "4242"));
  for (float v : y) CHECK(v == 2.5f);

  // invalid: wrong K -> INVALID_ARGUMENT naming the operand, output untouched
  int64_t sb_bad[2] = {4, 2};
  DLTensor tb_bad = make_tensor(b, kF32, 2, sb_bad);
  CHECK(nnp_gemm(s, &gp, &ta, &tb_bad, nullptr, &ty) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(contains(nnp_last_error_message(), "gemm: inputs[1] (B)"));
  for (float v : y) CHECK(v == 2.5f);

  // op_supported: float64 on the reference is supported, data may be NULL
  double d[4];
  DLTensor td = make_tensor(nullptr, kF64, 2, sy);
  (void)d;
  const DLTensor* outs64[] = {&td};
  CHECK(nnp_op_supported(dev, NNP_OP_FILL, &fp, 0, nullptr, 1, outs64) == NNP_STATUS_OK);
  CHECK(nnp_op_execute(s, NNP_OP_FILL, &fp, 0, nullptr, 1, outs64) ==
        NNP_STATUS_INVALID_ARGUMENT);  // NULL data with 4 elements

  REQUIRE(nnp_stream_destroy(s) == NNP_STATUS_OK);
}

TEST_CASE("api: conv2d validation message names shape, groups and C") {
  nnp_device* dev = reference_device();
  int64_t sx[4] = {1, 6, 5, 5}, sw[4] = {4, 6, 3, 3}, sy[4] = {1, 4, 3, 3};
  DLTensor x = make_tensor(nullptr, kF32, 4, sx), w = make_tensor(nullptr, kF32, 4, sw),
           y = make_tensor(nullptr, kF32, 4, sy);
  nnp_conv2d_params p{};
  p.struct_size = sizeof(p);
  p.stride_h = p.stride_w = p.dilation_h = p.dilation_w = 1;
  p.groups = 2;
  const DLTensor* in[] = {&x, &w, nullptr};
  const DLTensor* out[] = {&y};
  CHECK(nnp_op_supported(dev, NNP_OP_CONV2D_FORWARD, &p, 3, in, 1, out) ==
        NNP_STATUS_INVALID_ARGUMENT);
  CHECK(std::string(nnp_last_error_message()) ==
        "conv2d_forward: inputs[1] (w): expected shape [K, C/groups=3, R, S] (C=6, groups=2), "
        "got [4, 6, 3, 3]");
  p.groups = 1;
  CHECK(nnp_op_supported(dev, NNP_OP_CONV2D_FORWARD, &p, 3, in, 1, out) == NNP_STATUS_OK);
  p.struct_size = 8;
  CHECK(nnp_op_supported(dev, NNP_OP_CONV2D_FORWARD, &p, 3, in, 1, out) ==
        NNP_STATUS_INVALID_ARGUMENT);
  CHECK(contains(nnp_last_error_message(), "struct_size"));
}

TEST_CASE("api: zeroed nnp_conv2d_params mean stride, dilation and groups 1") {
  nnp_device* dev = reference_device();
  nnp_stream* s = nullptr;
  REQUIRE(nnp_stream_create(dev, &s) == NNP_STATUS_OK);
  // x [1, 2, 5, 5], w [3, 2, 3, 3], y [1, 3, 3, 3]: stride 1, no padding, dilation 1, groups 1.
  int64_t sx[4] = {1, 2, 5, 5}, sw[4] = {3, 2, 3, 3}, sy[4] = {1, 3, 3, 3};
  std::vector<float> x(50), w(54), dy(27);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) - 3.0f;
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 5) * 0.5f - 1.0f;
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = static_cast<float>(i % 4) - 1.5f;
  DLTensor tx = make_tensor(x.data(), kF32, 4, sx), tw = make_tensor(w.data(), kF32, 4, sw),
           tdy = make_tensor(dy.data(), kF32, 4, sy);

  nnp_conv2d_params zero{};
  zero.struct_size = sizeof(zero);
  nnp_conv2d_params ones = zero;
  ones.stride_h = ones.stride_w = ones.dilation_h = ones.dilation_w = ones.groups = 1;

  // nnp_op_infer_shapes gives the stride-1 shape.
  const DLTensor* in[] = {&tx, &tw};
  nnp_shape shape{};
  REQUIRE_MESSAGE(
      nnp_op_infer_shapes(NNP_OP_CONV2D_FORWARD, &zero, 2, in, 1, &shape) == NNP_STATUS_OK,
      nnp_last_error_message());
  CHECK(shape.ndim == 4);
  CHECK(shape.dims[2] == 3);
  CHECK(shape.dims[3] == 3);

  // Forward, backward data and backward filter: the zeroed call equals the explicit one.
  std::vector<float> y0(27, -7.0f), y1(27, 7.0f), dx0(50, -7.0f), dx1(50, 7.0f), dw0(54, -7.0f),
      dw1(54, 7.0f);
  auto t = [](std::vector<float>& v, int64_t* shape) {
    return make_tensor(v.data(), kF32, 4, shape);
  };
  DLTensor ty0 = t(y0, sy), ty1 = t(y1, sy), tdx0 = t(dx0, sx), tdx1 = t(dx1, sx),
           tdw0 = t(dw0, sw), tdw1 = t(dw1, sw);
  REQUIRE_MESSAGE(nnp_conv2d_forward(s, &zero, &tx, &tw, nullptr, &ty0) == NNP_STATUS_OK,
                  nnp_last_error_message());
  REQUIRE(nnp_conv2d_forward(s, &ones, &tx, &tw, nullptr, &ty1) == NNP_STATUS_OK);
  REQUIRE_MESSAGE(nnp_conv2d_backward_data(s, &zero, &tdy, &tw, &tdx0) == NNP_STATUS_OK,
                  nnp_last_error_message());
  REQUIRE(nnp_conv2d_backward_data(s, &ones, &tdy, &tw, &tdx1) == NNP_STATUS_OK);
  REQUIRE_MESSAGE(nnp_conv2d_backward_filter(s, &zero, &tx, &tdy, &tdw0) == NNP_STATUS_OK,
                  nnp_last_error_message());
  REQUIRE(nnp_conv2d_backward_filter(s, &ones, &tx, &tdy, &tdw1) == NNP_STATUS_OK);
  REQUIRE(nnp_stream_synchronize(s) == NNP_STATUS_OK);
  CHECK(y0 == y1);
  CHECK(dx0 == dx1);
  CHECK(dw0 == dw1);
  // And the result is the stride-1 convolution: y[0, k, p, q] computed here.
  for (int k = 0; k < 3; ++k)
    for (int p = 0; p < 3; ++p)
      for (int q = 0; q < 3; ++q) {
        double acc = 0;
        for (int c = 0; c < 2; ++c)
          for (int r = 0; r < 3; ++r)
            for (int u = 0; u < 3; ++u)
              acc += double(x[static_cast<size_t>((c * 5 + p + r) * 5 + q + u)]) *
                     w[static_cast<size_t>(((k * 2 + c) * 3 + r) * 3 + u)];
        CHECK(y0[static_cast<size_t>((k * 3 + p) * 3 + q)] == doctest::Approx(acc));
      }
  REQUIRE(nnp_stream_destroy(s) == NNP_STATUS_OK);
}

TEST_CASE("api: the last error is per thread") {
  std::string seen_a, seen_b;
  std::thread a([&] {
    nnp_device* d = nullptr;
    nnp_get_device("no_such_plugin_a", &d);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    seen_a = nnp_last_error_message();
  });
  std::thread b([&] {
    nnp_load_plugin("/no/such/libnnplug-b.so", nullptr);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    seen_b = nnp_last_error_message();
  });
  a.join();
  b.join();
  CHECK(contains(seen_a, "no_such_plugin_a"));
  CHECK(!contains(seen_a, "libnnplug-b.so"));
  CHECK(contains(seen_b, "libnnplug-b.so"));
  CHECK(!contains(seen_b, "no_such_plugin_a"));
  std::string fresh;
  std::thread c([&] { fresh = nnp_last_error_message(); });
  c.join();
  CHECK(fresh.empty());  // a new thread starts with ""
}
