// nccl_host_test.cpp — the nccl plugin as libnnplug loads it (nnp_comm_create of the NCCL
// transport finds libnnplug-comm-nccl.so in the plugin folder, accepts its table and calls
// initialize), twice, with nnp_shutdown (which unloads communication plugins) in between:
//  - default: the plugin loads, and a NCCL communicator on reference:0 is refused with
//    INVALID_ARGUMENT naming cuda devices (nothing of NCCL runs; no GPU needed);
//  - --expect-load-failed TEXT: NCCL cannot be opened; nnp_comm_create returns LOAD_FAILED and
//    the message contains TEXT (repeatable).
// Usage: nnplug-nccl-host-test [--expect-load-failed TEXT]...
#include <nnplug/nnplug.h>

#include "check.hpp"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using nccl_test::contains;

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> expected;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--expect-load-failed") == 0 && i + 1 < argc) {
      expected.push_back(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--expect-load-failed TEXT]...\n", argv[0]);
      return 2;
    }
  }
  for (int round = 0; round < 2; ++round) {
    nnp_device* dev = nullptr;
    CHECK(nnp_get_device("reference:0", &dev) == NNP_STATUS_OK);
    if (dev == nullptr) return 1;
    nnp_comm_unique_id id{};
    const nnp_comm_config cfg = nccl_test::one_rank_config(&id);
    nnp_comm* comm = nullptr;
    const nnp_status st = nnp_comm_create(dev, &cfg, &comm);
    const std::string message = nnp_last_error_message();
    std::printf("round %d: %s: %s\n", round, nnp_status_string(st), message.c_str());
    CHECK(comm == nullptr);
    if (expected.empty()) {
      CHECK(st == NNP_STATUS_INVALID_ARGUMENT);
      CHECK(contains(message, "serves cuda devices"));
    } else {
      CHECK(st == NNP_STATUS_LOAD_FAILED);
      for (const std::string& text : expected) {
        CHECK(contains(message, text));
        if (!contains(message, text))
          std::fprintf(stderr, "expected the message to contain '%s'\n", text.c_str());
      }
    }
    CHECK(nnp_shutdown() == NNP_STATUS_OK);
  }
  return nccl_test::report();
}
