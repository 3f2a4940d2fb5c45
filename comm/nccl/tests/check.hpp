// check.hpp — the checks of the nccl plugin's test programs (plain C++, no test framework: the
// programs also run on GPU machines from a prebuilt tree): CHECK counts failures and goes on;
// main returns report().
#pragma once

#include <nnplug/nnplug.h>

#include <cstdio>
#include <string>

namespace nccl_test {

inline int failures = 0;

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The config of a one-rank NCCL communicator whose unique id is *id.
inline nnp_comm_config one_rank_config(nnp_comm_unique_id* id) {
  nnp_comm_config cfg{};
  cfg.struct_size = sizeof cfg;
  cfg.transport = NNP_COMM_TRANSPORT_NCCL;
  cfg.rank = 0;
  cfg.size = 1;
  cfg.unique_id = id;
  return cfg;
}

// Prints PASS or FAIL; the exit status.
inline int report() {
  std::printf("%s\n", failures == 0 ? "PASS" : "FAIL");
  return failures == 0 ? 0 : 1;
}

}  // namespace nccl_test

#define CHECK(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++nccl_test::failures;                                                        \
    }                                                                               \
  } while (0)
