// test_secure_env.cpp — libnnplug reads NNPLUG_PLUGIN_PATH, NNPLUG_BACKEND and NNPLUG_LOG with
// secure_getenv (api/src/env.cpp): a process the kernel starts with AT_SECURE (set-uid,
// set-gid, file capabilities) ignores all three. The case runs env_probe (env_probe.cpp)
// twice, plainly and with AT_SECURE; the second needs root (to change the real group before
// exec) and is skipped with a message otherwise. api_secure_getenv (check_secure_getenv.cmake)
// checks, without root, that libnnplug imports secure_getenv and never getenv.
#include <doctest/doctest.h>

#include <nnplug/nnplug.h>

#include "test_support.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#ifdef NNPLUG_ENV_PROBE
namespace {

namespace fs = std::filesystem;

using nnp_test::contains;

std::vector<char> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

namespace {

struct probe_result {
  int exit_code = -1;
  std::string out, err;
};

// Runs env_probe with NNPLUG_* set; with `secure`, as root with the real group changed
// first (setregid), so that the kernel starts it with AT_SECURE, as for a set-gid program.
probe_result run_probe(const fs::path& dir, bool secure, gid_t other_gid) {
  const std::string probe = NNPLUG_ENV_PROBE;
  const fs::path out = dir / (secure ? "secure.out" : "plain.out");
  const fs::path err = dir / (secure ? "secure.err" : "plain.err");
  const std::string path_var = std::string("NNPLUG_PLUGIN_PATH=") + NNPLUG_FIXTURE_DIR;
  std::vector<std::string> env_strings = {path_var, "NNPLUG_BACKEND=fx_no_such_plugin",
                                          "NNPLUG_LOG=debug"};
  for (const char* keep : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"})
    if (const char* v = std::getenv(keep)) env_strings.push_back(std::string(keep) + "=" + v);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char> arg0(probe.begin(), probe.end());
  arg0.push_back('\0');
  char* argv[] = {arg0.data(), nullptr};

  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int fo = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int fe = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0) _exit(120);
    if (secure && setregid(other_gid, getegid()) != 0) _exit(121);
    execve(probe.c_str(), argv, envp.data());
    _exit(122);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  probe_result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  const std::vector<char> o = read_bytes(out), e = read_bytes(err);
  r.out.assign(o.begin(), o.end());
  r.err.assign(e.begin(), e.end());
  return r;
}

}  // namespace

TEST_CASE("environment: a set-gid process ignores every NNPLUG_* variable") {
  // What this proves: env_probe, started with AT_SECURE (real and effective group differ, as
  // for a set-gid program), neither searches NNPLUG_PLUGIN_PATH, nor resolves "auto" through
  // NNPLUG_BACKEND, nor prints NNPLUG_LOG=debug lines, while the same program started plainly
  // does all three. Changing the real group needs root; elsewhere the case is skipped, and
  // api_secure_getenv (libnnplug imports secure_getenv, never getenv) still holds.
  std::error_code ec;
  if (!fs::exists(fs::path(NNPLUG_FIXTURE_DIR) / "libnnplug-fx_ok.so", ec)) {
    MESSAGE("fixture plugins not found; case skipped");
    return;
  }
  if (geteuid() != 0) {
    MESSAGE("not run as root: cannot start a process with AT_SECURE; case skipped");
    return;
  }
  const fs::path dir = fs::temp_directory_path() / ("nnplug_env_" + std::to_string(getpid()));
  fs::remove_all(dir, ec);
  fs::create_directories(dir);
  const gid_t other_gid = getegid() == 65534 ? 65533 : 65534;

  const probe_result plain = run_probe(dir, false, other_gid);
  CAPTURE(plain.out);
  CAPTURE(plain.err);
  REQUIRE(plain.exit_code == 0);
  CHECK(contains(plain.out, "secure 0\n"));
  CHECK(contains(plain.out, "record fx_ok 1\n"));  // NNPLUG_PLUGIN_PATH searched, LOADED
  CHECK(contains(plain.out, "auto " + std::to_string(NNP_STATUS_NOT_FOUND) + "\n"));
  CHECK(contains(plain.err, "nnplug debug:"));  // NNPLUG_LOG honoured

  const probe_result secure = run_probe(dir, true, other_gid);
  CAPTURE(secure.out);
  CAPTURE(secure.err);
  if (secure.exit_code == 121) {
    MESSAGE("setregid(" << other_gid << ") failed; case skipped");
    fs::remove_all(dir, ec);
    return;
  }
  REQUIRE(secure.exit_code == 0);
  REQUIRE(contains(secure.out, "secure 1\n"));         // the kernel did start it with AT_SECURE
  CHECK_FALSE(contains(secure.out, "record fx_"));     // NNPLUG_PLUGIN_PATH ignored
  CHECK_FALSE(contains(secure.err, "nnplug debug:"));  // NNPLUG_LOG ignored
  // NNPLUG_BACKEND ignored: "auto" picks the reference device instead of failing to find
  // fx_no_such_plugin (checked when the reference plugin is built next to libnnplug).
  if (contains(secure.out, "record reference 1\n"))
    CHECK(contains(secure.out, "auto " + std::to_string(NNP_STATUS_OK) + "\n"));
  else
    MESSAGE("reference plugin not built: NNPLUG_BACKEND's part not checked");
  fs::remove_all(dir, ec);
}
#else
TEST_CASE("environment: a set-gid process ignores every NNPLUG_* variable") {
  MESSAGE("NNPLUG_ENV_PROBE not defined; case skipped");
}
#endif
