// test_discovery.cpp — default discovery and lifetime of libnnplug: NNPLUG_PLUGIN_PATH is
// searched before <dir of libnnplug>/nnplug/plugins, the current directory never is, relative
// NNPLUG_PLUGIN_PATH entries are skipped, duplicates across folders are recorded, a plugin
// that throws while loading is rejected naming the exception without stopping discovery, and
// nnp_shutdown() releases everything and lets the library start again.
// These cases call nnp_shutdown(), so they live in the api_tests binary only.
#include <doctest/doctest.h>

#include <nnplug/nnplug.h>

#include "test_support.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using nnp_test::check_loaded;
using nnp_test::find_name;
using nnp_test::rec;
using nnp_test::records;

std::string fixture_dir() {
#ifdef NNPLUG_FIXTURE_DIR
  std::error_code ec;
  if (fs::exists(fs::path(NNPLUG_FIXTURE_DIR) / "libnnplug-fx_ok.so", ec))
    return NNPLUG_FIXTURE_DIR;
#endif
  return "";
}

// Restores the environment and the library state after each case.
struct env_guard {
  ~env_guard() {
    unsetenv("NNPLUG_PLUGIN_PATH");
    nnp_shutdown();
  }
};

}  // namespace

TEST_CASE("discovery: NNPLUG_PLUGIN_PATH first, then the folder next to libnnplug") {
  const std::string dir = fixture_dir();
  if (dir.empty()) {
    MESSAGE("fixtures not available; case skipped");
    return;
  }
  env_guard guard;
  REQUIRE(nnp_shutdown() == NNP_STATUS_OK);
  setenv("NNPLUG_PLUGIN_PATH", ("relative/dir::" + dir).c_str(), 1);
  REQUIRE(nnp_load_default_plugins() == NNP_STATUS_OK);
  const std::vector<rec> rs = records();
  REQUIRE(!rs.empty());
  // Every fixture of the folder was examined, in sorted order, before the built-in folder.
  check_loaded(rs, "fx_ok");
  const rec* dep = find_name(rs, "fx_missing_dep");
  REQUIRE(dep != nullptr);
  CHECK(dep->state == NNP_LOAD_FAILED);
  CHECK(dep->reason.find("libnnplug_fixture_dep.so") != std::string::npos);
  const rec* thrower = find_name(rs, "fx_throws");
  REQUIRE(thrower != nullptr);
  CHECK(thrower->state == NNP_LOAD_REJECTED);
  CHECK(rs.front().path.rfind(dir, 0) == 0);
  for (size_t i = 1; i < rs.size(); ++i)
    if (rs[i].path.rfind(dir, 0) == 0 && rs[i - 1].path.rfind(dir, 0) == 0)
      CHECK(rs[i - 1].path < rs[i].path);
  // The built-in folder comes after (the reference plugin is built next to libnnplug).
  const rec* ref = find_name(rs, "reference");
  if (ref != nullptr) {
    CHECK(ref->path.find("/nnplug/plugins/") != std::string::npos);
    CHECK(ref->state == NNP_LOAD_LOADED);
  }
  // The fixture device is found; a broken fixture's name is NOT_FOUND with its failure.
  nnp_device* d = nullptr;
  CHECK(nnp_get_device("fx_ok", &d) == NNP_STATUS_OK);
  CHECK(nnp_get_device("fx_missing_dep", &d) == NNP_STATUS_NOT_FOUND);
  CHECK(std::string(nnp_last_error_message()).find("libnnplug_fixture_dep.so") !=
        std::string::npos);
}

TEST_CASE("discovery: the same plugin in two folders is a DUPLICATE") {
  const std::string dir = fixture_dir();
  if (dir.empty()) return;
  env_guard guard;
  REQUIRE(nnp_shutdown() == NNP_STATUS_OK);
  const nnp_test::scratch_dir scratch("disc");
  const fs::path& tmp = scratch.dir;
  fs::copy_file(fs::path(dir) / "libnnplug-fx_ok.so", tmp / "libnnplug-fx_ok.so",
                fs::copy_options::overwrite_existing);
  setenv("NNPLUG_PLUGIN_PATH", (tmp.string() + ":" + dir).c_str(), 1);
  REQUIRE(nnp_load_default_plugins() == NNP_STATUS_OK);
  int loaded = 0, duplicate = 0;
  for (const rec& r : records()) {
    if (r.name != "fx_ok") continue;
    if (r.state == NNP_LOAD_LOADED) {
      ++loaded;
      CHECK(r.path.rfind(tmp.string(), 0) == 0);  // the first folder wins
    }
    if (r.state == NNP_LOAD_DUPLICATE) ++duplicate;
  }
  CHECK(loaded == 1);
  CHECK(duplicate == 1);
}

TEST_CASE("discovery: a plugin that throws while loading is REJECTED and discovery goes on") {
  const std::string dir = fixture_dir();
  if (dir.empty()) return;
  env_guard guard;
  REQUIRE(nnp_shutdown() == NNP_STATUS_OK);
  // Folder a: plugins that throw past the boundary while loading; folder b: one that works.
  const nnp_test::scratch_dir scratch("throw");
  const fs::path tmp = scratch.dir;
  scratch.folder("a");
  scratch.folder("b");
  fs::copy_file(fs::path(dir) / "libnnplug-fx_count_throws.so",
                tmp / "a" / "libnnplug-fx_count_throws.so");
  fs::copy_file(fs::path(dir) / "libnnplug-fx_init_throws.so",
                tmp / "a" / "libnnplug-fx_init_throws.so");
  fs::copy_file(fs::path(dir) / "libnnplug-fx_ok.so", tmp / "b" / "libnnplug-fx_ok.so");
  setenv("NNPLUG_PLUGIN_PATH", ((tmp / "a").string() + ":" + (tmp / "b").string()).c_str(), 1);
  CHECK(nnp_load_default_plugins() == NNP_STATUS_OK);
  const std::vector<rec> rs = records();

  const rec* count = find_name(rs, "fx_count_throws");
  REQUIRE(count != nullptr);
  CHECK(count->state == NNP_LOAD_REJECTED);
  CHECK(count->status == NNP_STATUS_INTERNAL);
  CHECK(count->reason == "get_device_count threw an exception: std::bad_alloc");
  const rec* init = find_name(rs, "fx_init_throws");
  REQUIRE(init != nullptr);
  CHECK(init->state == NNP_LOAD_REJECTED);
  CHECK(init->reason == "initialize threw an exception: fixture initialize throws");
  // The next folder and the built-in one are still searched.
  check_loaded(rs, "fx_ok");
  if (const rec* ref = find_name(rs, "reference")) CHECK(ref->state == NNP_LOAD_LOADED);
  // The culprit is named when its device is asked for.
  nnp_device* d = nullptr;
  CHECK(nnp_get_device("fx_count_throws", &d) == NNP_STATUS_NOT_FOUND);
  CHECK(std::string(nnp_last_error_message()).find("std::bad_alloc") != std::string::npos);
}

TEST_CASE("discovery: the current directory is never searched") {
  const std::string dir = fixture_dir();
  if (dir.empty()) return;
  env_guard guard;
  REQUIRE(nnp_shutdown() == NNP_STATUS_OK);
  unsetenv("NNPLUG_PLUGIN_PATH");
  const fs::path old = fs::current_path();
  fs::current_path(dir);
  REQUIRE(nnp_load_default_plugins() == NNP_STATUS_OK);
  const std::vector<rec> rs = records();
  fs::current_path(old);
  for (const rec& r : rs) CHECK(r.name.rfind("fx_", 0) != 0);
}

TEST_CASE("lifetime: nnp_shutdown releases everything and the library starts again") {
  env_guard guard;
  nnp_device* dev = nullptr;
  if (nnp_get_device("reference", &dev) != NNP_STATUS_OK) {
    MESSAGE("reference plugin not available; case skipped");
    return;
  }
  void* mem = nullptr;
  REQUIRE(nnp_malloc(dev, 1024, &mem) == NNP_STATUS_OK);
  nnp_stream* s = nullptr;
  REQUIRE(nnp_stream_create(dev, &s) == NNP_STATUS_OK);
  // Leave both alive: shutdown destroys the stream and frees the memory.
  CHECK(nnp_shutdown() == NNP_STATUS_OK);
  size_t n = 99;
  REQUIRE(nnp_get_load_records(nullptr, &n) == NNP_STATUS_OK);
  CHECK(n == 0);                           // records cleared
  CHECK(nnp_shutdown() == NNP_STATUS_OK);  // twice is fine

  nnp_device* again = nullptr;
  REQUIRE(nnp_get_device("reference", &again) == NNP_STATUS_OK);  // reloads
  REQUIRE(nnp_get_load_records(nullptr, &n) == NNP_STATUS_OK);
  CHECK(n >= 1);
  void* mem2 = nullptr;
  REQUIRE(nnp_malloc(again, 64, &mem2) == NNP_STATUS_OK);
  CHECK(nnp_free(again, mem2) == NNP_STATUS_OK);
}
