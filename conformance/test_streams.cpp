// test_streams.cpp — stream order and copies: asynchronous host->device copy, an op and a
// device->host copy queued on one stream complete in order at one nnp_stream_synchronize;
// copies between the device under test and the reference device (another plugin) arrive intact.
#include <doctest/doctest.h>

#include "harness.hpp"

#include <vector>

TEST_CASE("streams: async copy, op, copy back in stream order") {
  using namespace conf;
  for (device_entry* d : backends_under_test()) {
    if (!d->available) continue;
    const int64_t n = 4099;
    std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n), -1.0f);
    for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i % 97) - 48;
    void* dx = nullptr;
    void* dy = nullptr;
    REQUIRE(nnp_malloc(d->dev, n * sizeof(float), &dx) == NNP_STATUS_OK);
    REQUIRE(nnp_malloc(d->dev, n * sizeof(float), &dy) == NNP_STATUS_OK);
    nnp_stream* s = nullptr;
    REQUIRE(nnp_stream_create(d->dev, &s) == NNP_STATUS_OK);
    int64_t shape[1] = {n};
    DLTensor tx{}, ty{};
    tx.data = dx;
    tx.device = d->dl;
    tx.ndim = 1;
    tx.dtype = DLDataType{kDLFloat, 32, 1};
    tx.shape = shape;
    ty = tx;
    ty.data = dy;
    auto p = make_params<nnp_scale_params>();
    p.alpha = -2;
    CHECK(nnp_memcpy_async(s, d->dev, dx, nullptr, x.data(), n * sizeof(float)) == NNP_STATUS_OK);
    const nnp_status st = nnp_scale(s, &p, &tx, &ty);
    CHECK_MESSAGE((st == NNP_STATUS_OK || st == NNP_STATUS_UNSUPPORTED),
                  std::string(nnp_last_error_message()));
    if (st == NNP_STATUS_OK) {
      CHECK(nnp_memcpy_async(s, nullptr, y.data(), d->dev, dy, n * sizeof(float)) == NNP_STATUS_OK);
      CHECK(nnp_stream_synchronize(s) == NNP_STATUS_OK);
      bool same = true;
      for (int64_t i = 0; i < n; ++i)
        same = same && y[static_cast<size_t>(i)] == -2 * x[static_cast<size_t>(i)];
      CHECK_MESSAGE(same, d->name << ": the op or the copy back did not run in stream order");
      report({d->name, "stream_order", "*", "stream_order scale n4099",
              same ? case_outcome::pass : case_outcome::fail, 0, 0, ""});
    }
    CHECK(nnp_stream_synchronize(s) == NNP_STATUS_OK);
    CHECK(nnp_stream_destroy(s) == NNP_STATUS_OK);

    // Device of the backend -> reference device (another plugin) -> host.
    device_entry& ref = reference_device();
    void* r = nullptr;
    REQUIRE(nnp_malloc(ref.dev, n * sizeof(float), &r) == NNP_STATUS_OK);
    CHECK(nnp_memcpy(d->dev, dx, nullptr, x.data(), n * sizeof(float)) == NNP_STATUS_OK);
    CHECK(nnp_memcpy(ref.dev, r, d->dev, dx, n * sizeof(float)) == NNP_STATUS_OK);
    std::vector<float> back(static_cast<size_t>(n), 0);
    CHECK(nnp_memcpy(nullptr, back.data(), ref.dev, r, n * sizeof(float)) == NNP_STATUS_OK);
    CHECK_MESSAGE(back == x, d->name << " -> " << ref.name << " copy changed the data");
    CHECK(nnp_free(ref.dev, r) == NNP_STATUS_OK);
    CHECK(nnp_free(d->dev, dx) == NNP_STATUS_OK);
    CHECK(nnp_free(d->dev, dy) == NNP_STATUS_OK);
  }
}
