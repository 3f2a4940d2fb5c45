// test_comm.cpp — communicators without MPI (nnplug.h, "communicators"): the built-in self
// transport on every device of this tree's backends (results, shapes, nnp_op_supported), and
// every refusal of nnp_comm_create and of the collective ops (bad configs, NULL, stale,
// foreign and other-kind handles, a communicator of another device, params out of range),
// and communicators released by nnp_shutdown. The MPI transport is tested under mpirun
// (comm/tests); these run in every build.
#include <doctest/doctest.h>

#include <nnplug/nnplug.h>

#include "test_support.hpp"

#include <cstring>
#include <string>
#include <vector>

namespace {

using nnp_test::contains;

constexpr DLDataType kF32{kDLFloat, 32, 1};

nnp_device* device_named(const char* name) {
  nnp_device* dev = nullptr;
  if (nnp_get_device(name, &dev) != NNP_STATUS_OK)
    FAIL("device " << name << " not found: " << nnp_last_error_message());
  return dev;
}

nnp_comm* self_comm(nnp_device* dev) {
  nnp_comm_config cfg{};
  cfg.struct_size = sizeof cfg;
  cfg.transport = NNP_COMM_TRANSPORT_SELF;
  nnp_comm* comm = nullptr;
  REQUIRE(nnp_comm_create(dev, &cfg, &comm) == NNP_STATUS_OK);
  REQUIRE(comm != nullptr);
  return comm;
}

// A float32 tensor in device memory, filled from `values`, freed with the object.
struct device_tensor {
  nnp_device* dev;
  std::vector<int64_t> shape;
  void* data = nullptr;
  DLTensor t{};
  device_tensor(nnp_device* d, std::vector<int64_t> s, const std::vector<float>& values)
      : dev(d), shape(std::move(s)) {
    size_t n = 1;
    for (int64_t e : shape) n *= static_cast<size_t>(e);
    REQUIRE(values.size() == n);
    REQUIRE(nnp_malloc(dev, n * sizeof(float), &data) == NNP_STATUS_OK);
    REQUIRE(nnp_memcpy(dev, data, nullptr, values.data(), n * sizeof(float)) == NNP_STATUS_OK);
    REQUIRE(nnp_device_get_dldevice(dev, &t.device) == NNP_STATUS_OK);
    t.data = data;
    t.ndim = static_cast<int32_t>(shape.size());
    t.dtype = kF32;
    t.shape = shape.data();
  }
  ~device_tensor() { CHECK(nnp_free(dev, data) == NNP_STATUS_OK); }
  std::vector<float> read() const {
    size_t n = 1;
    for (int64_t e : shape) n *= static_cast<size_t>(e);
    std::vector<float> out(n);
    REQUIRE(nnp_memcpy(nullptr, out.data(), dev, data, n * sizeof(float)) == NNP_STATUS_OK);
    return out;
  }
};

// A call refused with INVALID_ARGUMENT and a message containing `fragment`.
void check_invalid(nnp_status st, const char* fragment) {
  CAPTURE(fragment);
  CHECK(st == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(contains(nnp_last_error_message(), fragment));
}

nnp_all_reduce_params all_reduce_params(nnp_comm* comm, int32_t op) {
  nnp_all_reduce_params p{};
  p.struct_size = sizeof p;
  p.comm = comm;
  p.op = op;
  return p;
}

}  // namespace

TEST_CASE("self communicator: every collective is y = x, on every host-side device") {
  for (const char* name : {"reference:0", "cpu:0", "sim:0"}) {
    CAPTURE(name);
    nnp_device* dev = device_named(name);
    nnp_comm* comm = self_comm(dev);
    int32_t rank = -1, size = -1;
    CHECK(nnp_comm_get_rank(comm, &rank, &size) == NNP_STATUS_OK);
    CHECK(rank == 0);
    CHECK(size == 1);
    CHECK(nnp_comm_device(comm) == dev);
    CHECK(contains(nnp_comm_description(comm), "self"));
    nnp_stream* stream = nullptr;
    REQUIRE(nnp_stream_create(dev, &stream) == NNP_STATUS_OK);
    const std::vector<float> values = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -0.5f};
    device_tensor x(dev, {2, 3}, values), y(dev, {2, 3}, std::vector<float>(6, 42.0f));
    for (int32_t op : {NNP_REDUCE_SUM, NNP_REDUCE_MEAN, NNP_REDUCE_MAX, NNP_REDUCE_MIN}) {
      const nnp_all_reduce_params p = all_reduce_params(comm, op);
      CHECK(nnp_all_reduce(stream, &p, &x.t, &y.t) == NNP_STATUS_OK);  // out of place
      CHECK(nnp_all_reduce(stream, &p, &x.t, &x.t) == NNP_STATUS_OK);  // in place
      REQUIRE(nnp_stream_synchronize(stream) == NNP_STATUS_OK);
      CHECK(y.read() == values);
      CHECK(x.read() == values);
    }
    nnp_broadcast_params bp{};
    bp.struct_size = sizeof bp;
    bp.comm = comm;
    device_tensor yb(dev, {2, 3}, std::vector<float>(6, -1.0f));
    CHECK(nnp_broadcast(stream, &bp, &x.t, &yb.t) == NNP_STATUS_OK);
    nnp_all_gather_params gp{};
    gp.struct_size = sizeof gp;
    gp.comm = comm;
    device_tensor yg(dev, {2, 3}, std::vector<float>(6, -1.0f));
    CHECK(nnp_all_gather(stream, &gp, &x.t, &yg.t) == NNP_STATUS_OK);
    REQUIRE(nnp_stream_synchronize(stream) == NNP_STATUS_OK);
    CHECK(yb.read() == values);
    CHECK(yg.read() == values);
    // Shape inference of all_gather multiplies axis 0 by the number of ranks (1 here).
    const DLTensor* in[] = {&x.t};
    nnp_shape shape{};
    REQUIRE(nnp_op_infer_shapes(NNP_OP_ALL_GATHER, &gp, 1, in, 1, &shape) == NNP_STATUS_OK);
    CHECK(shape.ndim == 2);
    CHECK(shape.dims[0] == 2);
    CHECK(shape.dims[1] == 3);
    const DLTensor* out[] = {&y.t};
    const nnp_all_reduce_params p = all_reduce_params(comm, NNP_REDUCE_SUM);
    CHECK(nnp_op_supported(dev, NNP_OP_ALL_REDUCE, &p, 1, in, 1, out) == NNP_STATUS_OK);
    CHECK(nnp_stream_destroy(stream) == NNP_STATUS_OK);
    CHECK(nnp_comm_destroy(comm) == NNP_STATUS_OK);
  }
}

TEST_CASE("nnp_comm_create refuses bad arguments with a message") {
  nnp_device* dev = device_named("cpu:0");
  nnp_comm* comm = reinterpret_cast<nnp_comm*>(0x1);
  nnp_comm_config cfg{};
  cfg.struct_size = sizeof cfg;
  cfg.transport = NNP_COMM_TRANSPORT_SELF;
  check_invalid(nnp_comm_create(nullptr, &cfg, &comm), "device is NULL");
  check_invalid(nnp_comm_create(dev, nullptr, &comm), "config is NULL");
  check_invalid(nnp_comm_create(dev, &cfg, nullptr), "out is NULL");

  nnp_comm_config small = cfg;
  small.struct_size = 16;
  check_invalid(nnp_comm_create(dev, &small, &comm), "struct_size");
  CHECK(comm == nullptr);  // *out is cleared on failure

  for (int32_t t : {0, 4, -1}) {
    nnp_comm_config bad = cfg;
    bad.transport = t;
    check_invalid(nnp_comm_create(dev, &bad, &comm), "config->transport");
  }
  nnp_comm_config reserved = cfg;
  reserved.reserved0 = 7;
  check_invalid(nnp_comm_create(dev, &reserved, &comm), "reserved0");

  nnp_comm_config mpi = cfg;
  mpi.transport = NNP_COMM_TRANSPORT_MPI;
  check_invalid(nnp_comm_create(dev, &mpi, &comm), "mpi_comm is NULL");

  nnp_comm_config nccl = cfg;
  nccl.transport = NNP_COMM_TRANSPORT_NCCL;
  check_invalid(nnp_comm_create(dev, &nccl, &comm), "unique_id is NULL");
  nnp_comm_unique_id id{};
  nccl.unique_id = &id;
  nccl.rank = 2;
  nccl.size = 2;
  check_invalid(nnp_comm_create(dev, &nccl, &comm), "rank 2 and size 2");
  // A valid NCCL config on a cpu device: refused by the plugin's device type when it is
  // installed, else NOT_FOUND naming the plugin.
  nccl.rank = 0;
  nccl.size = 1;
  const nnp_status st = nnp_comm_create(dev, &nccl, &comm);
  const std::string message = nnp_last_error_message();
  CAPTURE(message);
  CHECK((st == NNP_STATUS_NOT_FOUND || st == NNP_STATUS_INVALID_ARGUMENT));
  if (st == NNP_STATUS_NOT_FOUND) CHECK(contains(message, "libnnplug-comm-nccl.so"));
  if (st == NNP_STATUS_INVALID_ARGUMENT) CHECK(contains(message, "cuda"));

  CHECK(nnp_comm_get_unique_id(dev, NNP_COMM_TRANSPORT_SELF, &id) == NNP_STATUS_UNSUPPORTED);
  CHECK(nnp_comm_get_unique_id(dev, NNP_COMM_TRANSPORT_SELF, nullptr) ==
        NNP_STATUS_INVALID_ARGUMENT);
}

TEST_CASE("collectives refuse NULL, foreign, stale and misplaced communicators") {
  nnp_device* cpu = device_named("cpu:0");
  nnp_device* ref = device_named("reference:0");
  nnp_stream *cpu_stream = nullptr, *ref_stream = nullptr;
  REQUIRE(nnp_stream_create(cpu, &cpu_stream) == NNP_STATUS_OK);
  REQUIRE(nnp_stream_create(ref, &ref_stream) == NNP_STATUS_OK);
  device_tensor x(cpu, {4}, {1, 2, 3, 4}), y(cpu, {4}, {0, 0, 0, 0});
  const std::vector<float> before = y.read();

  auto expect_refused = [&](nnp_comm* comm, const char* fragment) {
    CAPTURE(fragment);
    const nnp_all_reduce_params p = all_reduce_params(comm, NNP_REDUCE_SUM);
    CHECK(nnp_all_reduce(cpu_stream, &p, &x.t, &y.t) == NNP_STATUS_INVALID_ARGUMENT);
    const std::string message = nnp_last_error_message();
    CAPTURE(message);
    CHECK(contains(message, "params->comm"));
    CHECK(contains(message, fragment));
    const DLTensor* in[] = {&x.t};
    const DLTensor* out[] = {&y.t};
    CHECK(nnp_op_supported(cpu, NNP_OP_ALL_REDUCE, &p, 1, in, 1, out) ==
          NNP_STATUS_INVALID_ARGUMENT);
  };
  expect_refused(nullptr, "is NULL");
  expect_refused(reinterpret_cast<nnp_comm*>(&x), "not an nnp_comm");
  expect_refused(reinterpret_cast<nnp_comm*>(cpu_stream), "nnp_stream handle");
  nnp_comm* destroyed = self_comm(cpu);
  REQUIRE(nnp_comm_destroy(destroyed) == NNP_STATUS_OK);
  expect_refused(destroyed, "stale");
  CHECK(nnp_comm_destroy(destroyed) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(nnp_comm_get_rank(destroyed, nullptr, nullptr) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(nnp_comm_device(destroyed) == nullptr);
  CHECK(nnp_comm_description(destroyed) == nullptr);

  // A communicator of cpu:0 on a reference:0 stream (tensors on the host, so only the
  // communicator's device is wrong).
  nnp_comm* comm = self_comm(cpu);
  device_tensor rx(ref, {4}, {1, 2, 3, 4}), ry(ref, {4}, {0, 0, 0, 0});
  nnp_all_reduce_params p = all_reduce_params(comm, NNP_REDUCE_SUM);
  check_invalid(nnp_all_reduce(ref_stream, &p, &rx.t, &ry.t), "bound to device cpu:0");
  CHECK(ry.read() == std::vector<float>{0, 0, 0, 0});

  // Params out of range.
  p.op = NNP_REDUCE_L2;
  check_invalid(nnp_all_reduce(cpu_stream, &p, &x.t, &y.t), "params->op");
  p.op = NNP_REDUCE_SUM;
  p.reserved0 = 1;
  check_invalid(nnp_all_reduce(cpu_stream, &p, &x.t, &y.t), "reserved0");
  nnp_broadcast_params bp{};
  bp.struct_size = sizeof bp;
  bp.comm = comm;
  bp.root = 1;
  check_invalid(nnp_broadcast(cpu_stream, &bp, &x.t, &y.t),
                "params->root: expected a rank in [0, 1)");
  nnp_all_gather_params gp{};
  gp.struct_size = sizeof gp;
  gp.comm = comm;
  device_tensor wrong(cpu, {5}, {0, 0, 0, 0, 0});
  check_invalid(nnp_all_gather(cpu_stream, &gp, &x.t, &wrong.t), "[size * n, ...]");
  CHECK(y.read() == before);  // nothing refused wrote anything

  CHECK(nnp_stream_destroy(cpu_stream) == NNP_STATUS_OK);
  CHECK(nnp_stream_destroy(ref_stream) == NNP_STATUS_OK);
  CHECK(nnp_comm_destroy(comm) == NNP_STATUS_OK);
}

TEST_CASE("nnp_shutdown releases communicators; their handles become stale") {
  nnp_comm* comm = self_comm(device_named("reference:0"));
  REQUIRE(nnp_shutdown() == NNP_STATUS_OK);
  int32_t rank = -1;
  check_invalid(nnp_comm_get_rank(comm, &rank, nullptr), "stale");
  CHECK(rank == -1);
  CHECK(nnp_comm_destroy(comm) == NNP_STATUS_INVALID_ARGUMENT);
  // The library works again afterwards.
  nnp_comm* again = self_comm(device_named("reference:0"));
  CHECK(nnp_comm_destroy(again) == NNP_STATUS_OK);
}
