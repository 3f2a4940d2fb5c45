// load_cycles.cpp — nnplug_load_cycles <plugin-dir> [cycles]: every device plugin of the
// folder (libnnplug-*.so; not the communication plugins libnnplug-comm-*.so) is loaded alone
// by nnp_load_plugin() and torn down by nnp_shutdown(), `cycles` times (default 100); then all
// plugins together by default discovery (libnnplug's own plugin folder and
// NNPLUG_PLUGIN_PATH), each device used (a stream, an allocation, copies both ways, some left
// for nnp_shutdown to release), as often. (Any device lookup loads the default plugins, so only
// the second series uses devices.) Each series must leave the heap
// where it found it: after kWarmup cycles (which fill allocator caches and libnnplug's handle
// tables, whose slots are reused only after 64 others), the bytes in use after `cycles` more
// may exceed those before by at most kSlackBytes, a few hundred bytes per cycle at most: far
// below one plugin's state.
// Under AddressSanitizer the heap is ASan's count and LeakSanitizer checks for unreachable
// blocks after every series (and at exit: detect_leaks=1). Exit status 0 when every series is
// flat and leak-free.
#include <nnplug/nnplug.h>

#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define NNPLUG_HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NNPLUG_HAVE_ASAN 1
#endif
#endif
#ifdef NNPLUG_HAVE_ASAN
#include <sanitizer/lsan_interface.h>
// From <sanitizer/allocator_interface.h>, which GCC does not install.
extern "C" size_t __sanitizer_get_current_allocated_bytes(void);
#endif

namespace {

namespace fs = std::filesystem;

constexpr long kSlackBytes = 32 * 1024;
constexpr int kWarmup = 20;

long heap_in_use() {
#ifdef NNPLUG_HAVE_ASAN
  return static_cast<long>(__sanitizer_get_current_allocated_bytes());
#else
  const struct mallinfo2 mi = mallinfo2();
  return static_cast<long>(mi.uordblks + mi.hblkhd);
#endif
}

bool leak_check() {
#ifdef NNPLUG_HAVE_ASAN
  return __lsan_do_recoverable_leak_check() == 0;
#else
  return true;
#endif
}

std::string g_problem;

bool check(nnp_status st, const char* what) {
  if (st == NNP_STATUS_OK) return true;
  if (g_problem.empty())
    g_problem = std::string(what) + ": " + nnp_status_string(st) + ": " + nnp_last_error_message();
  return false;
}

// Uses the device: a stream, an allocation, a copy in and out (checked), then releases all.
void exercise(nnp_device* dev) {
  std::vector<float> host(256), back(256, -1.0f);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i);
  nnp_stream* s = nullptr;
  void* p = nullptr;
  if (!check(nnp_stream_create(dev, &s), "nnp_stream_create")) return;
  if (check(nnp_malloc(dev, 1024, &p), "nnp_malloc")) {
    check(nnp_memcpy_async(s, dev, p, nullptr, host.data(), 1024), "nnp_memcpy_async");
    check(nnp_memcpy_async(s, nullptr, back.data(), dev, p, 1024), "nnp_memcpy_async");
    check(nnp_stream_synchronize(s), "nnp_stream_synchronize");
    if (back != host && g_problem.empty()) g_problem = "copies gave wrong data";
    // Every other cycle the allocation and the stream are left to nnp_shutdown.
    static int n = 0;
    if (++n % 2 == 0) {
      check(nnp_free(dev, p), "nnp_free");
      check(nnp_stream_destroy(s), "nnp_stream_destroy");
    }
  }
}

// One cycle: load one plugin and shut down; or, when path is empty, load the default plugins,
// use every device and shut down.
void cycle(const std::string& path) {
  if (!path.empty()) {
    nnp_plugin* plugin = nullptr;
    if (check(nnp_load_plugin(path.c_str(), &plugin), "nnp_load_plugin") &&
        nnp_plugin_name(plugin) == nullptr && g_problem.empty())
      g_problem = "nnp_plugin_name of a loaded plugin is NULL";
    check(nnp_shutdown(), "nnp_shutdown");
    return;
  }
  size_t n = 0;
  if (!check(nnp_get_devices(nullptr, &n), "nnp_get_devices")) return;
  std::vector<nnp_device*> devices(n);
  check(nnp_get_devices(devices.data(), &n), "nnp_get_devices");
  for (nnp_device* d : devices) exercise(d);
  check(nnp_shutdown(), "nnp_shutdown");
}

// Runs a series; returns true when it is flat and leak-free.
bool series(const std::string& label, const std::string& path, int cycles) {
  g_problem.clear();
  for (int i = 0; i < kWarmup; ++i) cycle(path);
  const long before = heap_in_use();
  for (int i = 0; i < cycles; ++i) cycle(path);
  const long after = heap_in_use();
  const bool flat = after - before <= kSlackBytes;
  const bool no_leaks = leak_check();
  std::printf("%-12s %d cycles: heap %+ld bytes (%+.1f per cycle)%s%s%s%s\n", label.c_str(), cycles,
              after - before, static_cast<double>(after - before) / cycles, flat ? "" : " GROWS",
              no_leaks ? "" : " LEAKS (LeakSanitizer report above)", g_problem.empty() ? "" : "; ",
              g_problem.c_str());
  return flat && no_leaks && g_problem.empty();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <plugin-dir> [cycles]\n", argv[0]);
    return 2;
  }
  const fs::path dir = argv[1];
  const int cycles = argc > 2 ? std::max(1, std::atoi(argv[2])) : 100;
  std::vector<fs::path> plugins;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string f = it->path().filename().string();
    // Communication plugins (libnnplug-comm-<t>.so) share the folder; they are no device
    // plugins and open only with a communicator (comm/tests).
    if (f.rfind("libnnplug-comm-", 0) == 0) continue;
    if (f.rfind("libnnplug-", 0) == 0 && f.size() > 13 && f.compare(f.size() - 3, 3, ".so") == 0)
      plugins.push_back(fs::absolute(it->path()));
  }
  std::sort(plugins.begin(), plugins.end());
  if (plugins.empty()) {
    std::fprintf(stderr, "no plugins in %s\n", dir.c_str());
    return 1;
  }
  bool ok = true;
  for (const fs::path& p : plugins) {
    const std::string f = p.filename().string();
    ok = series(f.substr(10, f.size() - 13), p.string(), cycles) && ok;
  }
  ok = series("(defaults)", "", cycles) && ok;
  std::printf("%s\n", ok ? "load cycles: flat and leak-free" : "load cycles: FAILED");
  return ok ? 0 : 1;
}
