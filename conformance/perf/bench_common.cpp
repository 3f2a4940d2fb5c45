// bench_common.cpp — nnplug-bench's shared pieces (bench.hpp).
#include "bench.hpp"

#include <dlfcn.h>

#include <ctime>
#include <cstdio>

namespace nnp_bench {

void check(nnp_status s, const char* what) {
  if (s != NNP_STATUS_OK)
    throw call_error(
        s, std::string(what) + ": " + nnp_status_string(s) + ": " + nnp_last_error_message());
}

double process_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

std::vector<row> g_rows;
std::vector<std::pair<std::string, std::string>> g_unsupported, g_failed;
int g_reps = 20, g_warmup = 3;
std::string g_filter;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

// Times under 10 us get three decimals, so that sub-microsecond costs (the dispatch row) do not
// print as 0.0.
static void print_us(double us) { std::printf(us < 10.0 ? " %12.3f" : " %12.1f", us); }

void print_row(const row& r) {
  std::printf("%-34s %-28s", r.name.c_str(), r.shape.c_str());
  print_us(r.median_us);
  print_us(r.min_us);
  print_us(r.cpu_us);
  if (!r.unit.empty()) std::printf(" %10.1f %s", r.rate, r.unit.c_str());
  std::printf("\n");
  std::fflush(stdout);
}

timings time_calls(int reps, const std::function<void()>& fn) {
  timings t;
  for (int i = 0; i < reps; ++i) {
    const double c0 = process_cpu_us();
    const auto t0 = clock_type::now();
    fn();
    t.wall_us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
    t.cpu_us.push_back(process_cpu_us() - c0);
  }
  return t;
}

void measure(const std::string& name, const std::string& shape, double flops, double bytes,
             const std::function<void()>& fn) {
  if (!g_filter.empty() && name.find(g_filter) == std::string::npos) return;
  timings t;
  try {
    for (int i = 0; i < g_warmup; ++i) fn();
    t = time_calls(g_reps, fn);
  } catch (const call_error& e) {
    const bool unsupported = e.status == NNP_STATUS_UNSUPPORTED;
    std::printf("%-34s %-28s %s: %s\n", name.c_str(), shape.c_str(),
                unsupported ? "unsupported" : "FAILED", e.what());
    std::fflush(stdout);
    (unsupported ? g_unsupported : g_failed).emplace_back(name, e.what());
    return;
  }
  const std::vector<double>& us = t.wall_us;
  row r{name, shape, median(us), *std::min_element(us.begin(), us.end()), 0, "", median(t.cpu_us)};
  if (flops > 0) {
    r.rate = flops / (r.median_us * 1e3);
    r.unit = "GFLOP/s";
  } else if (bytes > 0) {
    r.rate = bytes / (r.median_us * 1e3);
    r.unit = "GB/s";
  }
  print_row(r);
  g_rows.push_back(r);
}

std::string dims(std::initializer_list<int64_t> d) {
  std::string s;
  for (int64_t v : d) s += (s.empty() ? "" : "x") + std::to_string(v);
  return s;
}

openblas::openblas() {
  void* h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) h = dlopen("libopenblas.so.0", RTLD_NOW);
  if (h == nullptr) h = dlopen("libopenblas.so", RTLD_NOW);
  if (h == nullptr) return;
  sgemm = reinterpret_cast<sgemm_fn>(dlsym(h, "cblas_sgemm"));
  set_threads = reinterpret_cast<void (*)(int)>(dlsym(h, "openblas_set_num_threads"));
  get_threads = reinterpret_cast<int (*)()>(dlsym(h, "openblas_get_num_threads"));
  corename = reinterpret_cast<char* (*)()>(dlsym(h, "openblas_get_corename"));
}

}  // namespace nnp_bench
