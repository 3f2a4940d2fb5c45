// host_oom.cpp — the host runs out of memory while it examines one plugin candidate: that
// candidate gets a FAILED record (OUT_OF_MEMORY) and default discovery goes on with the next
// folders, the built-in one included (the per-candidate guard of api/src/loader.cpp).
//
// A program of its own (api_host_oom), because it replaces the global operator new: the
// replacement fails the next N allocations of the calling thread once the fixture
// libnnplug-fx_host_oom.so asks for it (through nnplug_test_fail_next_allocations, found with
// dlsym and exported with ENABLE_EXPORTS), right after its get_device_count returned one
// device; the host's next allocation is then the device object it is building.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <nnplug/nnplug.h>

#include "test_support.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <new>
#include <string>
#include <vector>

namespace {
thread_local int t_fail_next = 0;

void* allocate(std::size_t n) {
  if (t_fail_next > 0) {
    --t_fail_next;
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(n != 0 ? n : 1)) return p;
  throw std::bad_alloc();
}
}  // namespace

extern "C" __attribute__((visibility("default"))) void nnplug_test_fail_next_allocations(int n) {
  t_fail_next = n;
}

// Every non-aligned form, so that new and delete always pair (malloc/free, also under ASan).
void* operator new(std::size_t n) { return allocate(n); }
void* operator new[](std::size_t n) { return allocate(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return allocate(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& tag) noexcept {
  return operator new(n, tag);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

namespace fs = std::filesystem;
using nnp_test::check_failed;
using nnp_test::check_loaded;
using nnp_test::find_name;
using nnp_test::rec;
using nnp_test::records;

}  // namespace

TEST_CASE("discovery: the host out of memory on one candidate fails that candidate only") {
  const fs::path fixtures = NNPLUG_FIXTURE_DIR;
  std::error_code ec;
  if (!fs::exists(fixtures / "libnnplug-fx_host_oom.so", ec)) {
    MESSAGE("fixture libnnplug-fx_host_oom.so not built; case skipped");
    return;
  }
  // Folder a: the plugin during whose enumeration the host runs out of memory; folder b: a
  // plugin that works. The built-in folder comes last.
  const nnp_test::scratch_dir scratch("oom");
  const fs::path tmp = scratch.dir;
  scratch.folder("a");
  scratch.folder("b");
  fs::copy_file(fixtures / "libnnplug-fx_host_oom.so", tmp / "a" / "libnnplug-fx_host_oom.so");
  fs::copy_file(fixtures / "libnnplug-fx_ok.so", tmp / "b" / "libnnplug-fx_ok.so");
  REQUIRE(setenv("NNPLUG_PLUGIN_PATH", ((tmp / "a").string() + ":" + (tmp / "b").string()).c_str(),
                 1) == 0);

  CHECK(nnp_load_default_plugins() == NNP_STATUS_OK);
  CAPTURE(nnp_last_error_message());
  const std::vector<rec> rs = records();
  check_failed(rs, "fx_host_oom", NNP_STATUS_OUT_OF_MEMORY, "out of host memory");
  // The next folder was still searched, and its plugin works.
  check_loaded(rs, "fx_ok");
  nnp_device* dev = nullptr;
  CHECK(nnp_get_device("fx_ok", &dev) == NNP_STATUS_OK);
  // The built-in folder too, when the reference plugin is built next to libnnplug.
  if (const rec* ref = find_name(rs, "reference")) CHECK(ref->state == NNP_LOAD_LOADED);

  CHECK(nnp_shutdown() == NNP_STATUS_OK);
  unsetenv("NNPLUG_PLUGIN_PATH");
}
