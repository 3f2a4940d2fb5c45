// env_probe.cpp — a helper program of the api_tests case "environment: a set-gid process
// ignores every NNPLUG_* variable" (test_secure_env.cpp). It runs default discovery and
// prints, one per line on stdout:
//   secure <0|1>               getauxval(AT_SECURE): 1 when started set-uid/set-gid
//   record <name> <state>      each load record
//   auto <status>              nnp_get_device("auto") (NNPLUG_BACKEND names the device)
// NNPLUG_LOG=debug lines, if libnnplug honours it, go to stderr.
#include <nnplug/nnplug.h>

#include <sys/auxv.h>

#include <cstdio>
#include <vector>

int main() {
  std::printf("secure %lu\n", getauxval(AT_SECURE));
  if (nnp_load_default_plugins() != NNP_STATUS_OK) {
    std::printf("error %s\n", nnp_last_error_message());
    return 1;
  }
  size_t n = 0;
  if (nnp_get_load_records(nullptr, &n) != NNP_STATUS_OK) return 1;
  std::vector<nnp_load_record> records(n);
  for (auto& r : records) r.struct_size = sizeof r;
  if (nnp_get_load_records(records.data(), &n) != NNP_STATUS_OK) return 1;
  for (const auto& r : records) std::printf("record %s %d\n", r.name, r.state);
  nnp_device* device = nullptr;
  std::printf("auto %d\n", static_cast<int>(nnp_get_device("auto", &device)));
  return nnp_shutdown() == NNP_STATUS_OK ? 0 : 1;
}
