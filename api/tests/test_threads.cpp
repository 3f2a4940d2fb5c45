// test_threads.cpp — libnnplug's thread rules (nnplug.h, "Threads"): nnp_shutdown() waits for
// the calls other threads have in flight, and their calls after it are refused as stale instead
// of reaching an unloaded plugin; calls on one stream from several threads are serialised, so a
// stream shared by threads gives the results one thread would. These cases call nnp_shutdown(),
// so they live in the api_tests binary only. The long-running variant with many threads,
// devices and discovery is nnplug_stress (stress_threads.cpp), run under ThreadSanitizer.
#include <doctest/doctest.h>

#include <nnplug/nnplug.h>

#include "test_support.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

namespace {

using nnp_test::contains;

constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kU8{kDLUInt, 8, 1};

DLTensor tensor(void* data, DLDataType dtype, int ndim, int64_t* shape) {
  return nnp_test::host_tensor(data, dtype, ndim, shape);
}

// The cpu device when the cpu plugin is built (its ops run on oneTBB workers), else reference.
nnp_device* host_device() {
  nnp_device* dev = nullptr;
  if (nnp_get_device("cpu", &dev) == NNP_STATUS_OK) return dev;
  REQUIRE(nnp_get_device("reference", &dev) == NNP_STATUS_OK);
  return dev;
}

struct shutdown_guard {
  ~shutdown_guard() { nnp_shutdown(); }
};

}  // namespace

TEST_CASE("threads: nnp_shutdown waits for calls in flight; later calls are refused as stale") {
  shutdown_guard guard;
  constexpr int kThreads = 4;
  constexpr int64_t kN = 96;
  std::atomic<bool> shut{false};
  std::atomic<int> started{0};
  std::vector<std::string> problems(kThreads + 1);
  std::vector<long> ok_calls(kThreads + 1, 0), refused_after(kThreads + 1, 0);

  // Op threads: each has its own stream and runs GEMMs until its calls are refused.
  auto op_thread = [&](int id) {
    std::string& problem = problems[static_cast<size_t>(id)];
    nnp_device* dev = host_device();
    nnp_stream* s = nullptr;
    if (nnp_stream_create(dev, &s) != NNP_STATUS_OK) {
      problem = std::string("stream_create: ") + nnp_last_error_message();
      started.fetch_add(1);
      return;
    }
    std::vector<float> a(kN * kN, 1.0f), b(kN * kN, 0.5f), y(kN * kN, 0.0f);
    int64_t shape[2] = {kN, kN};
    DLTensor ta = tensor(a.data(), kF32, 2, shape), tb = tensor(b.data(), kF32, 2, shape),
             ty = tensor(y.data(), kF32, 2, shape);
    nnp_gemm_params gp{};
    gp.struct_size = sizeof(gp);
    gp.alpha = 1.0;
    started.fetch_add(1);
    for (;;) {
      const bool after = shut.load();
      const nnp_status st = nnp_gemm(s, &gp, &ta, &tb, nullptr, &ty);
      if (st == NNP_STATUS_OK) {
        if (after) problem = "a call that started after nnp_shutdown returned OK";
        if (y[0] != 0.5f * kN) problem = "wrong GEMM result " + std::to_string(y[0]);
        ++ok_calls[static_cast<size_t>(id)];
        continue;
      }
      if (st != NNP_STATUS_INVALID_ARGUMENT || !contains(nnp_last_error_message(), "stale"))
        problem = std::string("unexpected refusal: ") + nnp_last_error_message();
      if (after) ++refused_after[static_cast<size_t>(id)];
      if (after && refused_after[static_cast<size_t>(id)] >= 3) break;
    }
    if (nnp_stream_destroy(s) != NNP_STATUS_INVALID_ARGUMENT)
      problem = "nnp_stream_destroy of a stream released by nnp_shutdown was not refused";
  };
  // A memory thread: allocations and synchronous copies (device calls, no stream).
  auto memory_thread = [&] {
    std::string& problem = problems[kThreads];
    nnp_device* dev = host_device();
    std::vector<float> host(4096, 2.0f), back(4096, 0.0f);
    started.fetch_add(1);
    for (;;) {
      const bool after = shut.load();
      void* p = nullptr;
      nnp_status st = nnp_malloc(dev, host.size() * sizeof(float), &p);
      if (st == NNP_STATUS_OK) st = nnp_memcpy(dev, p, nullptr, host.data(), 4096 * 4);
      if (st == NNP_STATUS_OK) st = nnp_memcpy(nullptr, back.data(), dev, p, 4096 * 4);
      if (st == NNP_STATUS_OK && back != host) problem = "wrong copy";
      if (p != nullptr) {
        const nnp_status fst = nnp_free(dev, p);
        // nnp_shutdown freed the memory if it ran between malloc and free.
        if (fst != NNP_STATUS_OK && fst != NNP_STATUS_INVALID_ARGUMENT)
          problem = std::string("nnp_free: ") + nnp_last_error_message();
      }
      if (st == NNP_STATUS_OK) {
        if (after) problem = "a memory call that started after nnp_shutdown returned OK";
        ++ok_calls[kThreads];
        continue;
      }
      if (st != NNP_STATUS_INVALID_ARGUMENT || !contains(nnp_last_error_message(), "stale"))
        problem = std::string("unexpected memory refusal: ") + nnp_last_error_message();
      if (after && ++refused_after[kThreads] >= 3) break;
    }
  };

  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(op_thread, i);
  threads.emplace_back(memory_thread);
  while (started.load() < kThreads + 1) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(nnp_shutdown() == NNP_STATUS_OK);
  shut.store(true);
  for (auto& t : threads) t.join();
  for (int i = 0; i <= kThreads; ++i) {
    CHECK_MESSAGE(problems[static_cast<size_t>(i)].empty(), problems[static_cast<size_t>(i)]);
    CHECK(refused_after[static_cast<size_t>(i)] >= 3);
  }
  long total = 0;
  for (long n : ok_calls) total += n;
  CHECK(total > 0);
  // The library starts again.
  nnp_device* dev = host_device();
  nnp_stream* s = nullptr;
  CHECK(nnp_stream_create(dev, &s) == NNP_STATUS_OK);
  CHECK(nnp_stream_destroy(s) == NNP_STATUS_OK);
}

TEST_CASE("threads: calls on one stream from several threads are serialised (dropout masks)") {
  // The cpu backend keeps dropout masks per stream for the backward pass; unserialised calls
  // from two threads would mix up one thread's mask with the other's.
  nnp_device* dev = host_device();
  nnp_stream* shared = nullptr;
  REQUIRE(nnp_stream_create(dev, &shared) == NNP_STATUS_OK);
  constexpr int kThreads = 4;
  constexpr int kIters = 60;
  constexpr int64_t kN = 1 << 15;
  std::vector<std::string> problems(kThreads);
  auto body = [&](int id) {
    std::string& problem = problems[static_cast<size_t>(id)];
    std::vector<float> x(kN, 1.0f), y(kN), dy(kN, 2.0f), dx(kN);
    std::vector<uint8_t> mask(kN);
    int64_t shape[1] = {kN};
    DLTensor tx = tensor(x.data(), kF32, 1, shape), ty = tensor(y.data(), kF32, 1, shape),
             tm = tensor(mask.data(), kU8, 1, shape), tdy = tensor(dy.data(), kF32, 1, shape),
             tdx = tensor(dx.data(), kF32, 1, shape);
    nnp_dropout_params p{};
    p.struct_size = sizeof(p);
    p.ratio = 0.5;
    for (int it = 0; it < kIters && problem.empty(); ++it) {
      p.seed = static_cast<uint64_t>(1000 * id + it);
      p.offset = static_cast<uint64_t>(it % 3);
      if (nnp_dropout_forward(shared, &p, &tx, &ty, &tm) != NNP_STATUS_OK ||
          nnp_dropout_backward(shared, &p, &tdy, &tdx) != NNP_STATUS_OK ||
          nnp_stream_synchronize(shared) != NNP_STATUS_OK) {
        problem = nnp_last_error_message();
        break;
      }
      for (int64_t i = 0; i < kN; ++i) {
        const float want_y = mask[static_cast<size_t>(i)] ? 2.0f : 0.0f;
        const float want_dx = mask[static_cast<size_t>(i)] ? 4.0f : 0.0f;
        if (y[static_cast<size_t>(i)] != want_y || dx[static_cast<size_t>(i)] != want_dx) {
          problem = "thread " + std::to_string(id) + " iteration " + std::to_string(it) +
                    ": element " + std::to_string(i) +
                    " y=" + std::to_string(y[static_cast<size_t>(i)]) +
                    " dx=" + std::to_string(dx[static_cast<size_t>(i)]) +
                    " mask=" + std::to_string(mask[static_cast<size_t>(i)]);
          break;
        }
      }
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(body, i);
  for (auto& t : threads) t.join();
  for (const auto& problem : problems) CHECK_MESSAGE(problem.empty(), problem);
  CHECK(nnp_stream_destroy(shared) == NNP_STATUS_OK);
}

TEST_CASE("threads: a stream destroyed while another thread uses it") {
  // nnp_stream_destroy waits for the call in flight on the stream; that thread's next call is
  // refused as stale.
  nnp_device* dev = host_device();
  nnp_stream* s = nullptr;
  REQUIRE(nnp_stream_create(dev, &s) == NNP_STATUS_OK);
  constexpr int64_t kN = 1 << 16;
  std::atomic<bool> running{false};
  std::string problem;
  std::thread user([&] {
    std::vector<float> y(kN);
    int64_t shape[1] = {kN};
    DLTensor ty = tensor(y.data(), kF32, 1, shape);
    nnp_fill_params fp{};
    fp.struct_size = sizeof(fp);
    fp.value = 3.0;
    for (long i = 0;; ++i) {
      const nnp_status st = nnp_fill(s, &fp, &ty);
      if (i == 0) running.store(true);
      if (st == NNP_STATUS_OK) continue;
      if (st != NNP_STATUS_INVALID_ARGUMENT || !contains(nnp_last_error_message(), "stale"))
        problem = nnp_last_error_message();
      break;
    }
  });
  while (!running.load()) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(nnp_stream_destroy(s) == NNP_STATUS_OK);
  user.join();
  CHECK_MESSAGE(problem.empty(), problem);
}

TEST_CASE("threads: a thread that ran cpu ops exits after nnp_shutdown") {
  // The thread loads the plugins itself (so oneTBB sets up its per-thread state on it) and runs
  // a parallel GEMM; it exits after nnp_shutdown, when the thread-specific data of oneTBB is
  // destroyed: that code must still be mapped.
  REQUIRE(nnp_shutdown() == NNP_STATUS_OK);
  std::atomic<int> phase{0};
  std::string problem;
  std::thread user([&] {
    nnp_device* dev = nullptr;
    if (nnp_get_device("cpu", &dev) == NNP_STATUS_OK) {
      constexpr int64_t kN = 256;
      std::vector<float> a(kN * kN, 1.0f), y(kN * kN);
      int64_t shape[2] = {kN, kN};
      DLTensor ta = tensor(a.data(), kF32, 2, shape), ty = tensor(y.data(), kF32, 2, shape);
      nnp_gemm_params gp{};
      gp.struct_size = sizeof(gp);
      gp.alpha = 1.0;
      nnp_stream* s = nullptr;
      if (nnp_stream_create(dev, &s) != NNP_STATUS_OK ||
          nnp_gemm(s, &gp, &ta, &ta, nullptr, &ty) != NNP_STATUS_OK || y[0] != kN)
        problem = nnp_last_error_message();
    }
    phase.store(1);
    while (phase.load() != 2) std::this_thread::yield();
  });
  while (phase.load() != 1) std::this_thread::yield();
  CHECK(nnp_shutdown() == NNP_STATUS_OK);  // unloads the plugins
  phase.store(2);
  user.join();  // the thread's exit runs oneTBB's thread-specific-data destructor
  CHECK_MESSAGE(problem.empty(), problem);
}
