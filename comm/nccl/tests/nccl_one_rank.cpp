// nccl_one_rank.cpp — the nccl transport end to end on one GPU, through libnnplug: rank 0 of a
// communicator of size 1 on cuda:0 (nnp_comm_get_unique_id, nnp_comm_create), then on a stream
// of that device, for float32 and float16:
//   all_reduce SUM, MEAN, MAX, MIN (out of place), SUM in place (y is x), broadcast from root 0,
//   all_gather of a [n, 10] tensor into [n, 10];
// each output is first filled with a sentinel, and must equal x bit for bit (with one rank every
// collective is a copy). Prints the communicator's description and PASS. Run by
// scripts/gpu-check.sh (and by CTest, where it exits 77, "skipped", without a cuda device).
// Exit status: 0 pass, 1 fail, 77 no cuda device.
#include <nnplug/kit/half.hpp>
#include <nnplug/nnplug.h>

#include "check.hpp"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

int g_failures = 0;

#define CHECK_OK(call)                                                       \
  do {                                                                       \
    const nnp_status st_ = (call);                                           \
    if (st_ != NNP_STATUS_OK) {                                              \
      std::fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call, \
                   nnp_status_string(st_), nnp_last_error_message());        \
      ++g_failures;                                                          \
    }                                                                        \
  } while (0)

constexpr int64_t kRows = 100, kCols = 10;  // x: [100, 10]
constexpr size_t kCount = kRows * kCols;

// A device buffer of kCount elements of `dtype`, with a DLTensor of shape [kRows, kCols].
struct buffer {
  nnp_device* dev;
  DLDataType dtype;
  size_t bytes;
  int64_t shape[2] = {kRows, kCols};
  void* data = nullptr;
  DLTensor t{};
  buffer(nnp_device* d, DLDataType dt) : dev(d), dtype(dt), bytes(kCount * dt.bits / 8) {
    CHECK_OK(nnp_malloc(dev, bytes, &data));
    CHECK_OK(nnp_device_get_dldevice(dev, &t.device));
    t.data = data;
    t.ndim = 2;
    t.dtype = dtype;
    t.shape = shape;
  }
  ~buffer() { CHECK_OK(nnp_free(dev, data)); }
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  void write(const std::vector<unsigned char>& host) {
    CHECK_OK(nnp_memcpy(dev, data, nullptr, host.data(), bytes));
  }
  std::vector<unsigned char> read() const {
    std::vector<unsigned char> host(bytes);
    CHECK_OK(nnp_memcpy(nullptr, host.data(), dev, data, bytes));
    return host;
  }
};

// Values i % 23 - 11 (exact in float16), as the bytes of `dtype`.
std::vector<unsigned char> pattern(DLDataType dtype, float offset) {
  std::vector<unsigned char> out(kCount * dtype.bits / 8);
  for (size_t i = 0; i < kCount; ++i) {
    const float v = static_cast<float>(static_cast<int>(i % 23) - 11) + offset;
    if (dtype.bits == 32) {
      std::memcpy(out.data() + 4 * i, &v, 4);
    } else {
      const uint16_t h = nnp::float_to_half(v);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

void expect_equal(const char* what, const char* dtype, const std::vector<unsigned char>& got,
                  const std::vector<unsigned char>& want) {
  if (got == want) {
    std::printf("  %-28s %-8s exact\n", what, dtype);
    return;
  }
  size_t i = 0;
  while (i < got.size() && got[i] == want[i]) ++i;
  std::fprintf(stderr, "%s (%s): differs from x at byte %zu\n", what, dtype, i);
  ++g_failures;
}

void run_dtype(nnp_stream* stream, nnp_device* dev, nnp_comm* comm, DLDataType dtype,
               const char* name) {
  const std::vector<unsigned char> xs = pattern(dtype, 0.0f), sentinel = pattern(dtype, 100.0f);
  buffer x(dev, dtype), y(dev, dtype);
  x.write(xs);

  struct reduce_case {
    int32_t op;
    const char* what;
  };
  for (const reduce_case& c : {reduce_case{NNP_REDUCE_SUM, "all_reduce SUM"},
                               reduce_case{NNP_REDUCE_MEAN, "all_reduce MEAN"},
                               reduce_case{NNP_REDUCE_MAX, "all_reduce MAX"},
                               reduce_case{NNP_REDUCE_MIN, "all_reduce MIN"}}) {
    y.write(sentinel);
    nnp_all_reduce_params p{};
    p.struct_size = sizeof p;
    p.comm = comm;
    p.op = c.op;
    CHECK_OK(nnp_all_reduce(stream, &p, &x.t, &y.t));
    CHECK_OK(nnp_stream_synchronize(stream));
    expect_equal(c.what, name, y.read(), xs);
  }
  {
    y.write(xs);
    nnp_all_reduce_params p{};
    p.struct_size = sizeof p;
    p.comm = comm;
    p.op = NNP_REDUCE_SUM;
    CHECK_OK(nnp_all_reduce(stream, &p, &y.t, &y.t));
    CHECK_OK(nnp_stream_synchronize(stream));
    expect_equal("all_reduce SUM in place", name, y.read(), xs);
  }
  {
    y.write(sentinel);
    nnp_broadcast_params p{};
    p.struct_size = sizeof p;
    p.comm = comm;
    p.root = 0;
    CHECK_OK(nnp_broadcast(stream, &p, &x.t, &y.t));
    CHECK_OK(nnp_stream_synchronize(stream));
    expect_equal("broadcast root 0", name, y.read(), xs);
  }
  {
    y.write(sentinel);
    nnp_all_gather_params p{};
    p.struct_size = sizeof p;
    p.comm = comm;
    CHECK_OK(nnp_all_gather(stream, &p, &x.t, &y.t));  // [1 * 100, 10]
    CHECK_OK(nnp_stream_synchronize(stream));
    expect_equal("all_gather", name, y.read(), xs);
  }
}

}  // namespace

int main() {
  nnp_device* dev = nullptr;
  if (nnp_get_device("cuda:0", &dev) != NNP_STATUS_OK) {
    std::printf("SKIP: no cuda device: %s\n", nnp_last_error_message());
    nnp_shutdown();
    return 77;
  }
  nnp_comm_unique_id id{};
  CHECK_OK(nnp_comm_get_unique_id(dev, NNP_COMM_TRANSPORT_NCCL, &id));
  const nnp_comm_config cfg = nccl_test::one_rank_config(&id);
  nnp_comm* comm = nullptr;
  CHECK_OK(nnp_comm_create(dev, &cfg, &comm));
  if (comm == nullptr) {
    std::printf("FAIL\n");
    nnp_shutdown();
    return 1;
  }
  std::printf("communicator: %s\n", nnp_comm_description(comm));
  int32_t rank = -1, size = -1;
  CHECK_OK(nnp_comm_get_rank(comm, &rank, &size));
  if (rank != 0 || size != 1) {
    std::fprintf(stderr, "rank %d size %d, expected 0 and 1\n", rank, size);
    ++g_failures;
  }
  nnp_stream* stream = nullptr;
  CHECK_OK(nnp_stream_create(dev, &stream));
  if (stream != nullptr) {
    run_dtype(stream, dev, comm, DLDataType{kDLFloat, 32, 1}, "float32");
    run_dtype(stream, dev, comm, DLDataType{kDLFloat, 16, 1}, "float16");
    CHECK_OK(nnp_stream_synchronize(stream));
    CHECK_OK(nnp_stream_destroy(stream));
  }
  CHECK_OK(nnp_comm_destroy(comm));
  CHECK_OK(nnp_shutdown());
  std::printf("%s\n", g_failures == 0 ? "PASS" : "FAIL");
  return g_failures == 0 ? 0 : 1;
}
