// test_mpi.cpp — the "mpi" transport (libnnplug-comm-mpi.so) through libnnplug's API.
//
//   nnplug-comm-mpi-test collectives      under mpiexec (CTest: 2 ranks): on every host device
//       (cpu:0, reference:0, sim:0), a communicator from MPI_COMM_WORLD and exact results of
//       all_reduce SUM/MEAN/MAX/MIN, broadcast from root 1 and all_gather, float32 and
//       float64, in place and not, for inputs that differ by rank; then the refused calls.
//       With NNPLUG_MPI_MAX_COUNT=N the same results through N-element MPI calls.
//   nnplug-comm-mpi-test uninitialised    one process, MPI never initialised
//   nnplug-comm-mpi-test single_thread    one process, MPI_Init (MPI_THREAD_SINGLE)
//   nnplug-comm-mpi-test finalised        one process, a communicator of 1 rank, then MPI
//                                         finalised under it
// Device memory goes through nnp_malloc / nnp_memcpy everywhere (sim's memory is not host
// memory). A failed check is printed with the rank and counted; the ranks keep issuing the
// same collectives, sum their failures at the end, and exit 1 when there is any.
#include <mpi.h>
#include <nnplug/nnplug.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int g_rank = 0;
int g_failures = 0;

void failed(const char* file, int line, const std::string& what) {
  ++g_failures;
  std::fprintf(stderr, "[rank %d] %s:%d: FAILED: %s\n", g_rank, file, line, what.c_str());
}

#define CHECK(cond)                                              \
  do {                                                           \
    if (!(cond)) failed(__FILE__, __LINE__, "CHECK(" #cond ")"); \
  } while (0)

// An nnplug call that must succeed.
#define CHECK_OK(call)                                                                             \
  do {                                                                                             \
    const nnp_status st_ = (call);                                                                 \
    if (st_ != NNP_STATUS_OK)                                                                      \
      failed(                                                                                      \
          __FILE__, __LINE__,                                                                      \
          std::string(#call) + " -> " + nnp_status_string(st_) + ": " + nnp_last_error_message()); \
  } while (0)

// An nnplug call that must fail with `want` and a message containing `fragment`.
#define CHECK_REFUSED(call, want, fragment) \
  check_refused((call), (want), (fragment), #call, __FILE__, __LINE__)

void check_refused(nnp_status got, nnp_status want, const char* fragment, const char* what,
                   const char* file, int line) {
  const std::string message = nnp_last_error_message();
  if (got != want)
    failed(file, line,
           std::string(what) + ": expected " + nnp_status_string(want) + ", got " +
               nnp_status_string(got) + " (" + message + ")");
  else if (message.find(fragment) == std::string::npos)
    failed(file, line, std::string(what) + ": the message lacks '" + fragment + "': " + message);
}

// ------------------------------------------------------------------------- devices --
struct device {
  const char* name;
  nnp_device* handle;
  DLDevice dl;
};

// One device allocation with host-side upload and download (nnp_memcpy).
class buffer {
 public:
  buffer(nnp_device* dev, size_t bytes) : dev_(dev), bytes_(bytes) {
    CHECK_OK(nnp_malloc(dev_, bytes_ > 0 ? bytes_ : 64, &ptr_));
  }
  ~buffer() {
    if (ptr_ != nullptr) nnp_free(dev_, ptr_);
  }
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  void* get() const { return ptr_; }
  template <typename T>
  void upload(const std::vector<T>& host) {
    if (!host.empty()) CHECK_OK(nnp_memcpy(dev_, ptr_, nullptr, host.data(), bytes_));
  }
  template <typename T>
  std::vector<T> download() const {
    std::vector<T> host(bytes_ / sizeof(T));
    if (!host.empty()) CHECK_OK(nnp_memcpy(nullptr, host.data(), dev_, ptr_, bytes_));
    return host;
  }

 private:
  nnp_device* dev_;
  size_t bytes_;
  void* ptr_ = nullptr;
};

template <typename T>
DLDataType dtype_of() {
  return DLDataType{kDLFloat, static_cast<uint8_t>(8 * sizeof(T)), 1};
}

DLTensor tensor(void* data, DLDevice dev, DLDataType dtype, std::vector<int64_t>& shape) {
  DLTensor t{};
  t.data = data;
  t.device = dev;
  t.ndim = static_cast<int32_t>(shape.size());
  t.dtype = dtype;
  t.shape = shape.data();
  return t;
}

nnp_status run(nnp_stream* s, int32_t kind, const void* params, const DLTensor& x,
               const DLTensor& y) {
  const DLTensor* in[] = {&x};
  const DLTensor* out[] = {&y};
  const nnp_status st = nnp_op_execute(s, kind, params, 1, in, 1, out);
  if (st != NNP_STATUS_OK) return st;
  return nnp_stream_synchronize(s);
}

// Rank r's element i: multiples of 1/4 of small magnitude, so every sum, mean and comparison
// below is exact in float32 and float64; which rank holds the larger value varies with i.
double value(int r, int64_t i) {
  return static_cast<double>((7 * i + 3 * r) % 11) - 5.0 + 0.25 * r;
}

template <typename T>
std::vector<T> values(int r, int64_t n) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<T>(value(r, i));
  return v;
}

template <typename T>
T expected_reduce(int32_t op, int size, int64_t i) {
  double sum = 0, hi = value(0, i), lo = value(0, i);
  for (int r = 0; r < size; ++r) {
    sum += value(r, i);
    hi = std::max(hi, value(r, i));
    lo = std::min(lo, value(r, i));
  }
  switch (op) {
    case NNP_REDUCE_SUM:
      return static_cast<T>(sum);
    case NNP_REDUCE_MEAN:  // the transport's formula: the sum times 1/size in T
      return static_cast<T>(sum) * (T(1) / static_cast<T>(size));
    case NNP_REDUCE_MAX:
      return static_cast<T>(hi);
    default:
      return static_cast<T>(lo);
  }
}

// Counts the elements of `got` that differ from `want`, and reports the first.
template <typename T>
void check_equal(const std::vector<T>& got, const std::vector<T>& want, const std::string& what,
                 int line) {
  if (got.size() != want.size()) {
    failed(__FILE__, line,
           what + ": size " + std::to_string(got.size()) + ", expected " +
               std::to_string(want.size()));
    return;
  }
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(got[i] == want[i]) && bad++ == 0) first = i;
  if (bad > 0)
    failed(__FILE__, line,
           what + ": " + std::to_string(bad) + " of " + std::to_string(got.size()) +
               " elements wrong; first [" + std::to_string(first) +
               "] = " + std::to_string(static_cast<double>(got[first])) + ", expected " +
               std::to_string(static_cast<double>(want[first])));
}

const char* op_name(int32_t op) {
  return op == NNP_REDUCE_SUM    ? "SUM"
         : op == NNP_REDUCE_MEAN ? "MEAN"
         : op == NNP_REDUCE_MAX  ? "MAX"
                                 : "MIN";
}

// ---------------------------------------------------------------------- collectives --
template <typename T>
void test_all_reduce(const device& d, nnp_stream* s, nnp_comm* comm, int size, int64_t n) {
  const DLDataType dt = dtype_of<T>();
  const size_t bytes = static_cast<size_t>(n) * sizeof(T);
  std::vector<int64_t> shape = {n};
  for (int32_t op : {NNP_REDUCE_SUM, NNP_REDUCE_MEAN, NNP_REDUCE_MAX, NNP_REDUCE_MIN}) {
    std::vector<T> want(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(i)] = expected_reduce<T>(op, size, i);
    const std::string what = std::string(d.name) + " all_reduce " + op_name(op) + " float" +
                             std::to_string(8 * sizeof(T)) + " n=" + std::to_string(n);
    nnp_all_reduce_params p{};
    p.struct_size = sizeof p;
    p.comm = comm;
    p.op = op;
    {  // in place
      buffer xy(d.handle, bytes);
      xy.upload(values<T>(g_rank, n));
      const DLTensor t = tensor(xy.get(), d.dl, dt, shape);
      CHECK_OK(run(s, NNP_OP_ALL_REDUCE, &p, t, t));
      check_equal(xy.download<T>(), want, what + " in place", __LINE__);
    }
    {  // out of place: x stays as it was
      buffer x(d.handle, bytes), y(d.handle, bytes);
      x.upload(values<T>(g_rank, n));
      y.upload(std::vector<T>(static_cast<size_t>(n), T(-99)));
      CHECK_OK(run(s, NNP_OP_ALL_REDUCE, &p, tensor(x.get(), d.dl, dt, shape),
                   tensor(y.get(), d.dl, dt, shape)));
      check_equal(y.download<T>(), want, what + " out of place", __LINE__);
      check_equal(x.download<T>(), values<T>(g_rank, n), what + " out of place: x", __LINE__);
    }
    {  // each rank chooses for itself: odd ranks in place, even ranks not
      buffer x(d.handle, bytes), y(d.handle, bytes);
      x.upload(values<T>(g_rank, n));
      const DLTensor tx = tensor(x.get(), d.dl, dt, shape);
      const DLTensor ty = g_rank % 2 ? tx : tensor(y.get(), d.dl, dt, shape);
      CHECK_OK(run(s, NNP_OP_ALL_REDUCE, &p, tx, ty));
      check_equal((g_rank % 2 ? x : y).template download<T>(), want, what + " mixed", __LINE__);
    }
  }
}

template <typename T>
void test_broadcast(const device& d, nnp_stream* s, nnp_comm* comm, int size, int64_t n) {
  const DLDataType dt = dtype_of<T>();
  const size_t bytes = static_cast<size_t>(n) * sizeof(T);
  std::vector<int64_t> shape = {n};
  nnp_broadcast_params p{};
  p.struct_size = sizeof p;
  p.comm = comm;
  p.root = size > 1 ? 1 : 0;
  const std::vector<T> want = values<T>(p.root, n);
  const std::string what = std::string(d.name) + " broadcast from " + std::to_string(p.root) +
                           " float" + std::to_string(8 * sizeof(T)) + " n=" + std::to_string(n);
  {
    buffer xy(d.handle, bytes);
    xy.upload(values<T>(g_rank, n));
    const DLTensor t = tensor(xy.get(), d.dl, dt, shape);
    CHECK_OK(run(s, NNP_OP_BROADCAST, &p, t, t));
    check_equal(xy.download<T>(), want, what + " in place", __LINE__);
  }
  {
    buffer x(d.handle, bytes), y(d.handle, bytes);
    x.upload(values<T>(g_rank, n));
    y.upload(std::vector<T>(static_cast<size_t>(n), T(-99)));
    CHECK_OK(run(s, NNP_OP_BROADCAST, &p, tensor(x.get(), d.dl, dt, shape),
                 tensor(y.get(), d.dl, dt, shape)));
    check_equal(y.download<T>(), want, what + " out of place", __LINE__);
    check_equal(x.download<T>(), values<T>(g_rank, n), what + " out of place: x", __LINE__);
  }
}

template <typename T>
void test_all_gather(const device& d, nnp_stream* s, nnp_comm* comm, int size, int64_t rows) {
  const DLDataType dt = dtype_of<T>();
  const int64_t cols = 3, n = rows * cols;
  std::vector<int64_t> xshape = {rows, cols}, yshape = {size * rows, cols};
  buffer x(d.handle, static_cast<size_t>(n) * sizeof(T));
  buffer y(d.handle, static_cast<size_t>(size * n) * sizeof(T));
  x.upload(values<T>(g_rank, n));
  y.upload(std::vector<T>(static_cast<size_t>(size * n), T(-99)));
  nnp_all_gather_params p{};
  p.struct_size = sizeof p;
  p.comm = comm;
  CHECK_OK(run(s, NNP_OP_ALL_GATHER, &p, tensor(x.get(), d.dl, dt, xshape),
               tensor(y.get(), d.dl, dt, yshape)));
  std::vector<T> want;
  for (int r = 0; r < size; ++r) {
    const std::vector<T> part = values<T>(r, n);
    want.insert(want.end(), part.begin(), part.end());
  }
  check_equal(y.download<T>(), want,
              std::string(d.name) + " all_gather float" + std::to_string(8 * sizeof(T)) +
                  " rows=" + std::to_string(rows),
              __LINE__);
}

// The library's name as the plugin's description gives it: "Open MPI v4.1.4".
std::string mpi_library_name() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING + 1] = {};
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string s(text, static_cast<size_t>(length));
  s = s.substr(0, s.find_first_of("\r\n"));
  return s.substr(0, s.find(','));
}

nnp_comm_config mpi_config(const MPI_Comm* comm) {
  nnp_comm_config c{};
  c.struct_size = sizeof c;
  c.transport = NNP_COMM_TRANSPORT_MPI;
  c.mpi_comm = comm;
  return c;
}

template <typename T>
void test_device_dtype(const device& d, nnp_stream* s, nnp_comm* comm, int size) {
  // Sizes: one element, a tail that is no multiple of 7 (NNPLUG_MPI_MAX_COUNT=7: 5 full
  // pieces and 2), an exact multiple of 7, and a larger tensor.
  for (int64_t n : {int64_t{1}, int64_t{37}, int64_t{35}, int64_t{1000}}) {
    test_all_reduce<T>(d, s, comm, size, n);
    test_broadcast<T>(d, s, comm, size, n);
  }
  // all_gather of [rows, 3]: 3, 12 (> 7, a remainder) and 21 (a multiple of 7) elements.
  for (int64_t rows : {int64_t{1}, int64_t{4}, int64_t{7}, int64_t{300}})
    test_all_gather<T>(d, s, comm, size, rows);
}

void test_device(const device& d, int world_size) {
  MPI_Comm world = MPI_COMM_WORLD;
  const nnp_comm_config config = mpi_config(&world);
  nnp_comm* comm = nullptr;
  CHECK_OK(nnp_comm_create(d.handle, &config, &comm));
  if (comm == nullptr) return;
  int32_t rank = -1, size = -1;
  CHECK_OK(nnp_comm_get_rank(comm, &rank, &size));
  CHECK(rank == g_rank);
  CHECK(size == world_size);
  CHECK(nnp_comm_device(comm) == d.handle);
  std::string want = "mpi (" + mpi_library_name() + ", " + std::to_string(world_size) +
                     (world_size == 1 ? " rank" : " ranks");
  if (const char* max_count = std::getenv("NNPLUG_MPI_MAX_COUNT"))
    want += std::string(", at most ") + max_count + " elements per MPI call";
  want += ")";
  const char* description = nnp_comm_description(comm);
  if (description == nullptr || want != description)
    failed(__FILE__, __LINE__,
           std::string("description '") + (description ? description : "(null)") + "', expected '" +
               want + "'");

  nnp_stream* s = nullptr;
  CHECK_OK(nnp_stream_create(d.handle, &s));
  test_device_dtype<float>(d, s, comm, world_size);
  test_device_dtype<double>(d, s, comm, world_size);

  {  // a tensor without elements: every rank takes part, nothing changes
    buffer x(d.handle, 0);
    std::vector<int64_t> shape = {0};
    const DLTensor t = tensor(x.get(), d.dl, dtype_of<float>(), shape);
    nnp_all_reduce_params p{};
    p.struct_size = sizeof p;
    p.comm = comm;
    p.op = NNP_REDUCE_MEAN;
    CHECK_OK(run(s, NNP_OP_ALL_REDUCE, &p, t, t));
  }

  {  // float16 and bfloat16: UNSUPPORTED, with the reason
    std::vector<int64_t> shape = {4};
    nnp_all_reduce_params p{};
    p.struct_size = sizeof p;
    p.comm = comm;
    p.op = NNP_REDUCE_SUM;
    DLTensor t = tensor(nullptr, d.dl, DLDataType{kDLFloat, 16, 1}, shape);
    const DLTensor* io[] = {&t};
    CHECK_REFUSED(nnp_op_supported(d.handle, NNP_OP_ALL_REDUCE, &p, 1, io, 1, io),
                  NNP_STATUS_UNSUPPORTED, "float16 over MPI");
    t.dtype = DLDataType{kDLBfloat, 16, 1};
    CHECK_REFUSED(nnp_op_supported(d.handle, NNP_OP_ALL_REDUCE, &p, 1, io, 1, io),
                  NNP_STATUS_UNSUPPORTED, "bfloat16 over MPI");
    nnp_all_gather_params g{};
    g.struct_size = sizeof g;
    g.comm = comm;
    std::vector<int64_t> yshape = {4 * world_size};
    DLTensor y = tensor(nullptr, d.dl, DLDataType{kDLFloat, 16, 1}, yshape);
    t.dtype = y.dtype;
    const DLTensor* in[] = {&t};
    const DLTensor* out[] = {&y};
    CHECK_REFUSED(nnp_op_supported(d.handle, NNP_OP_ALL_GATHER, &g, 1, in, 1, out),
                  NNP_STATUS_UNSUPPORTED, "float16 over MPI");
    t.dtype = dtype_of<float>();
    CHECK_OK(nnp_op_supported(d.handle, NNP_OP_ALL_REDUCE, &p, 1, io, 1, io));
    t.dtype = dtype_of<double>();
    CHECK_OK(nnp_op_supported(d.handle, NNP_OP_ALL_REDUCE, &p, 1, io, 1, io));
  }

  {  // all_gather with y of the wrong shape: refused before any rank communicates
    buffer x(d.handle, 4 * sizeof(float)), y(d.handle, 4 * (world_size + 1) * sizeof(float));
    std::vector<int64_t> xshape = {2, 2}, yshape = {2 * (world_size + 1), 2};
    nnp_all_gather_params p{};
    p.struct_size = sizeof p;
    p.comm = comm;
    CHECK_REFUSED(run(s, NNP_OP_ALL_GATHER, &p, tensor(x.get(), d.dl, dtype_of<float>(), xshape),
                      tensor(y.get(), d.dl, dtype_of<float>(), yshape)),
                  NNP_STATUS_INVALID_ARGUMENT, "expected shape");
  }

  {  // The default collective check (NNPLUG_COMM_CHECK unset when a communicator is created):
     // its agreeing calls run; x shapes that differ by rank are refused on every rank, never a
     // collective of different sizes inside MPI
    nnp_comm* checked = nullptr;
    unsetenv("NNPLUG_COMM_CHECK");
    CHECK_OK(nnp_comm_create(d.handle, &config, &checked));
    nnp_all_reduce_params p{};
    p.struct_size = sizeof p;
    p.comm = checked;
    p.op = NNP_REDUCE_SUM;
    buffer x(d.handle, 8 * sizeof(float));
    x.upload(values<float>(g_rank, 8));
    std::vector<int64_t> same = {8};
    const DLTensor t = tensor(x.get(), d.dl, dtype_of<float>(), same);
    CHECK_OK(run(s, NNP_OP_ALL_REDUCE, &p, t, t));
    std::vector<float> want(8);
    for (int64_t i = 0; i < 8; ++i)
      want[static_cast<size_t>(i)] = expected_reduce<float>(NNP_REDUCE_SUM, world_size, i);
    check_equal(x.download<float>(), want, std::string(d.name) + " checked all_reduce", __LINE__);
    if (world_size > 1) {
      std::vector<int64_t> mine = {g_rank == 0 ? 4 : 8};
      const DLTensor u = tensor(x.get(), d.dl, dtype_of<float>(), mine);
      CHECK_REFUSED(run(s, NNP_OP_ALL_REDUCE, &p, u, u), NNP_STATUS_INVALID_ARGUMENT, "disagree");
      // The next agreeing call runs: the check left no collective half-done.
      CHECK_OK(run(s, NNP_OP_ALL_REDUCE, &p, t, t));
    }
    CHECK_OK(nnp_comm_destroy(checked));
  }
  CHECK_OK(nnp_stream_destroy(s));

  // A destroyed communicator: stale everywhere.
  CHECK_OK(nnp_comm_destroy(comm));
  CHECK_REFUSED(nnp_comm_get_rank(comm, &rank, &size), NNP_STATUS_INVALID_ARGUMENT, "stale");
  CHECK(nnp_comm_description(comm) == nullptr);
  CHECK_OK(nnp_stream_create(d.handle, &s));
  {
    buffer x(d.handle, 4 * sizeof(float));
    std::vector<int64_t> shape = {4};
    const DLTensor t = tensor(x.get(), d.dl, dtype_of<float>(), shape);
    nnp_all_reduce_params p{};
    p.struct_size = sizeof p;
    p.comm = comm;
    p.op = NNP_REDUCE_SUM;
    CHECK_REFUSED(run(s, NNP_OP_ALL_REDUCE, &p, t, t), NNP_STATUS_INVALID_ARGUMENT, "stale");
  }
  CHECK_OK(nnp_stream_destroy(s));
}

// Calls refused whatever the device: a communicator used on another device's stream, NULL
// and MPI_COMM_NULL communicators.
void test_refusals(const device& a, const device& b) {
  MPI_Comm world = MPI_COMM_WORLD;
  nnp_comm_config config = mpi_config(&world);
  nnp_comm* comm = nullptr;
  CHECK_OK(nnp_comm_create(a.handle, &config, &comm));
  nnp_stream* s = nullptr;
  CHECK_OK(nnp_stream_create(b.handle, &s));
  {
    buffer x(b.handle, 4 * sizeof(float));
    std::vector<int64_t> shape = {4};
    const DLTensor t = tensor(x.get(), b.dl, dtype_of<float>(), shape);
    nnp_all_reduce_params p{};
    p.struct_size = sizeof p;
    p.comm = comm;
    p.op = NNP_REDUCE_SUM;
    CHECK_REFUSED(run(s, NNP_OP_ALL_REDUCE, &p, t, t), NNP_STATUS_INVALID_ARGUMENT,
                  (std::string("bound to device ") + a.name).c_str());
  }
  CHECK_OK(nnp_stream_destroy(s));
  CHECK_OK(nnp_comm_destroy(comm));

  config.mpi_comm = nullptr;
  comm = nullptr;
  CHECK_REFUSED(nnp_comm_create(a.handle, &config, &comm), NNP_STATUS_INVALID_ARGUMENT,
                "mpi_comm is NULL");
  CHECK(comm == nullptr);
  MPI_Comm none = MPI_COMM_NULL;
  config.mpi_comm = &none;
  CHECK_REFUSED(nnp_comm_create(a.handle, &config, &comm), NNP_STATUS_INVALID_ARGUMENT,
                "MPI_COMM_NULL");
  CHECK(comm == nullptr);
}

int collectives(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "MPI_Init_thread failed\n");
    return 1;
  }
  int world_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (provided < MPI_THREAD_SERIALIZED) {
    std::fprintf(stderr, "this MPI provides no MPI_THREAD_SERIALIZED\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  std::vector<device> devices;
  for (const char* name : {"cpu:0", "reference:0", "sim:0"}) {
    device d{name, nullptr, {}};
    if (nnp_get_device(name, &d.handle) != NNP_STATUS_OK) {
      // The test depends on the reference and sim plugins (always built); cpu is optional.
      if (std::strcmp(name, "cpu:0") == 0) {
        if (g_rank == 0) std::printf("cpu:0 not found; skipped: %s\n", nnp_last_error_message());
      } else {
        failed(__FILE__, __LINE__, std::string(name) + " not found: " + nnp_last_error_message());
      }
      continue;
    }
    CHECK_OK(nnp_device_get_dldevice(d.handle, &d.dl));
    devices.push_back(d);
  }
  for (const device& d : devices) {
    test_device(d, world_size);
    if (g_rank == 0) std::printf("%s: collectives checked\n", d.name);
  }
  if (devices.size() >= 2) test_refusals(devices[0], devices[1]);
  CHECK_OK(nnp_shutdown());  // frees the remaining MPI communicators while MPI lives

  int total = 0;
  MPI_Allreduce(&g_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("%d ranks, %zu devices: %d failed checks\n", world_size, devices.size(), total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}

// ------------------------------------------------------------------ one process --
nnp_device* host_device() {
  nnp_device* d = nullptr;
  if (nnp_get_device("cpu:0", &d) == NNP_STATUS_OK) return d;
  CHECK_OK(nnp_get_device("reference:0", &d));
  return d;
}

int uninitialised() {
  MPI_Comm world = MPI_COMM_WORLD;
  const nnp_comm_config config = mpi_config(&world);
  nnp_comm* comm = nullptr;
  for (int attempt = 0; attempt < 2; ++attempt) {  // the plugin stays loaded and says it again
    CHECK_REFUSED(nnp_comm_create(host_device(), &config, &comm), NNP_STATUS_INVALID_ARGUMENT,
                  "MPI is not initialised: the application must call MPI_Init_thread");
    CHECK(comm == nullptr);
  }
  CHECK_OK(nnp_shutdown());
  return g_failures == 0 ? 0 : 1;
}

int single_thread(int argc, char** argv) {
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 1;
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  if (provided >= MPI_THREAD_SERIALIZED) {
    std::printf("MPI_Init provides MPI_THREAD_SERIALIZED or more here; nothing to check\n");
  } else {
    MPI_Comm world = MPI_COMM_WORLD;
    const nnp_comm_config config = mpi_config(&world);
    nnp_comm* comm = nullptr;
    CHECK_REFUSED(nnp_comm_create(host_device(), &config, &comm), NNP_STATUS_INVALID_ARGUMENT,
                  "needs MPI_THREAD_SERIALIZED at least: initialise MPI with MPI_Init_thread");
    CHECK(comm == nullptr);
  }
  CHECK_OK(nnp_shutdown());
  MPI_Finalize();
  return g_failures == 0 ? 0 : 1;
}

// A communicator of one rank works; after MPI_Finalize, collectives and creation are refused
// and destruction frees nothing.
void run_after_finalize(nnp_device* dev, DLDevice dl, nnp_comm* first, nnp_comm* second,
                        const nnp_comm_config& config) {
  int32_t rank = -1, size = -1;
  CHECK_OK(nnp_comm_get_rank(first, &rank, &size));
  CHECK(rank == 0 && size == 1);
  nnp_stream* s = nullptr;
  CHECK_OK(nnp_stream_create(dev, &s));
  buffer x(dev, 5 * sizeof(float));
  x.upload(values<float>(0, 5));
  std::vector<int64_t> shape = {5};
  const DLTensor t = tensor(x.get(), dl, dtype_of<float>(), shape);
  nnp_all_reduce_params p{};
  p.struct_size = sizeof p;
  p.comm = first;
  p.op = NNP_REDUCE_MEAN;  // one rank: y = x
  CHECK_OK(run(s, NNP_OP_ALL_REDUCE, &p, t, t));
  check_equal(x.download<float>(), values<float>(0, 5), "one rank's all_reduce MEAN", __LINE__);
  CHECK_OK(nnp_comm_destroy(first));

  MPI_Finalize();
  p.comm = second;
  CHECK_REFUSED(run(s, NNP_OP_ALL_REDUCE, &p, t, t), NNP_STATUS_INVALID_ARGUMENT, "finalised");
  nnp_comm* third = nullptr;
  CHECK_REFUSED(nnp_comm_create(dev, &config, &third), NNP_STATUS_INVALID_ARGUMENT,
                "MPI is finalised");
  CHECK(third == nullptr);
  CHECK_OK(nnp_comm_destroy(second));  // MPI released it; nothing is called
  CHECK_OK(nnp_stream_destroy(s));
}

int finalised(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) return 1;
  nnp_device* dev = host_device();
  DLDevice dl{};
  CHECK_OK(nnp_device_get_dldevice(dev, &dl));
  MPI_Comm self = MPI_COMM_SELF;
  const nnp_comm_config config = mpi_config(&self);
  nnp_comm *first = nullptr, *second = nullptr;
  CHECK_OK(nnp_comm_create(dev, &config, &first));
  CHECK_OK(nnp_comm_create(dev, &config, &second));
  run_after_finalize(dev, dl, first, second, config);
  CHECK_OK(nnp_shutdown());
  return g_failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  int rc = 2;
  if (mode == "collectives")
    rc = collectives(argc, argv);
  else if (mode == "uninitialised")
    rc = uninitialised();
  else if (mode == "single_thread")
    rc = single_thread(argc, argv);
  else if (mode == "finalised")
    rc = finalised(argc, argv);
  else
    std::fprintf(stderr, "usage: %s collectives|uninitialised|single_thread|finalised\n", argv[0]);
  if (mode != "collectives" && rc != 2)
    std::printf("%s: %d failed checks\n", mode.c_str(), g_failures);
  return rc;
}
