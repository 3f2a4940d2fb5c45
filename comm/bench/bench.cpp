// nnplug-comm-bench — nnplug's all_reduce against a direct MPI_Allreduce, under mpiexec:
//
//   mpiexec -n 2 bin/nnplug-comm-bench [--device cpu:0] [--min-bytes 1024]
//                                      [--max-bytes 67108864] [--reps N]
//
// For float32 tensors of 1 KiB, 4 KiB, ... up to --max-bytes, one buffer per size on a device
// whose memory is host memory (cpu:0 by default) is all-reduced (SUM, in place) alternately by
// nnp_op_execute + nnp_stream_synchronize through an MPI communicator of libnnplug, and by
// MPI_Allreduce(MPI_IN_PLACE) on MPI_COMM_WORLD; which of the two goes first alternates too.
// Every timed call follows an MPI_Barrier. A repetition's time is the slowest rank's; the
// table gives the medians, their ratio and nnplug's algorithm bandwidth (bytes / time).
// Repetitions scale with the size (2000 at small sizes, 20 at the largest) unless --reps.
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

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "[rank %d] nnplug-comm-bench: %s\n", g_rank, what.c_str());
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

void ok(nnp_status st, const char* what) {
  if (st != NNP_STATUS_OK)
    die(std::string(what) + ": " + nnp_status_string(st) + ": " + nnp_last_error_message());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Each repetition's time on the slowest rank, on every rank.
std::vector<double> slowest(const std::vector<double>& mine) {
  std::vector<double> out(mine.size());
  MPI_Allreduce(mine.data(), out.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX,
                MPI_COMM_WORLD);
  return out;
}

std::string size_text(size_t bytes) {
  if (bytes >= (1u << 20)) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= (1u << 10)) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

}  // namespace

int main(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) return 1;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  std::string device_name = "cpu:0";
  size_t min_bytes = 1024, max_bytes = size_t{64} << 20;
  int fixed_reps = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) die("usage: [--device NAME] [--min-bytes B] [--max-bytes B] [--reps N]");
    if (a == "--device")
      device_name = argv[++i];
    else if (a == "--min-bytes")
      min_bytes = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--max-bytes")
      max_bytes = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--reps")
      fixed_reps = std::atoi(argv[++i]);
    else
      die("unknown argument " + a);
  }
  if (min_bytes < 4) min_bytes = 4;

  nnp_device* dev = nullptr;
  ok(nnp_get_device(device_name.c_str(), &dev), "nnp_get_device");
  DLDevice dl{};
  ok(nnp_device_get_dldevice(dev, &dl), "nnp_device_get_dldevice");
  if (dl.device_type != kDLCPU)
    die(device_name + ": the direct MPI_Allreduce needs a device whose memory is host memory");
  MPI_Comm world = MPI_COMM_WORLD;
  nnp_comm_config config{};
  config.struct_size = sizeof config;
  config.transport = NNP_COMM_TRANSPORT_MPI;
  config.mpi_comm = &world;
  nnp_comm* comm = nullptr;
  ok(nnp_comm_create(dev, &config, &comm), "nnp_comm_create");
  nnp_stream* stream = nullptr;
  ok(nnp_stream_create(dev, &stream), "nnp_stream_create");

  if (g_rank == 0) {
    std::printf("nnplug %s, %s on %s, float32 all_reduce SUM in place, medians\n",
                nnp_version_string(), nnp_comm_description(comm), device_name.c_str());
    std::printf("%10s %9s %7s %12s %12s %7s %9s\n", "bytes", "", "reps", "nnplug us", "MPI us",
                "ratio", "GB/s");
  }
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    const size_t n = bytes / sizeof(float);
    void* data = nullptr;
    ok(nnp_malloc(dev, n * sizeof(float), &data), "nnp_malloc");
    // Zeros: repeated in-place sums stay zero (no overflow to inf, no denormals).
    std::memset(data, 0, n * sizeof(float));
    int64_t shape[1] = {static_cast<int64_t>(n)};
    DLTensor t{};
    t.data = data;
    t.device = dl;
    t.ndim = 1;
    t.dtype = DLDataType{kDLFloat, 32, 1};
    t.shape = shape;
    const DLTensor* io[] = {&t};
    nnp_all_reduce_params p{};
    p.struct_size = sizeof p;
    p.comm = comm;
    p.op = NNP_REDUCE_SUM;
    auto run_nnplug = [&] {
      ok(nnp_op_execute(stream, NNP_OP_ALL_REDUCE, &p, 1, io, 1, io), "nnp_op_execute");
      ok(nnp_stream_synchronize(stream), "nnp_stream_synchronize");
    };
    auto run_mpi = [&] {
      if (MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                        MPI_COMM_WORLD) != MPI_SUCCESS)
        die("MPI_Allreduce failed");
    };
    const int reps = fixed_reps > 0 ? fixed_reps
                                    : static_cast<int>(std::clamp<size_t>(
                                          (size_t{256} << 20) / bytes, size_t{20}, size_t{2000}));
    for (int w = 0; w < std::max(3, reps / 20); ++w) {
      run_nnplug();
      run_mpi();
    }
    std::vector<double> t_nnplug(static_cast<size_t>(reps)), t_mpi(static_cast<size_t>(reps));
    for (int r = 0; r < reps; ++r)
      for (int k = 0; k < 2; ++k) {
        const bool nnplug_turn = (k == 0) == (r % 2 == 0);
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        if (nnplug_turn)
          run_nnplug();
        else
          run_mpi();
        const double dt = MPI_Wtime() - t0;
        (nnplug_turn ? t_nnplug : t_mpi)[static_cast<size_t>(r)] = dt;
      }
    const double a = median(slowest(t_nnplug)), b = median(slowest(t_mpi));
    if (g_rank == 0)
      std::printf("%10zu %9s %7d %12.2f %12.2f %7.3f %9.3f\n", bytes, size_text(bytes).c_str(),
                  reps, a * 1e6, b * 1e6, a / b, static_cast<double>(bytes) / a * 1e-9);
    std::fflush(stdout);
    ok(nnp_free(dev, data), "nnp_free");
  }
  ok(nnp_stream_destroy(stream), "nnp_stream_destroy");
  ok(nnp_comm_destroy(comm), "nnp_comm_destroy");
  ok(nnp_shutdown(), "nnp_shutdown");
  MPI_Finalize();
  return 0;
}
