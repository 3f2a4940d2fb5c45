// test_threads.cpp — concurrency: several threads, each with its own stream on the same
// device, run every registered op template repeatedly at the same time; each result must equal
// (within the op's float32 tolerance) the result of the same call run alone on one thread.
#include <doctest/doctest.h>

#include "harness.hpp"

#include <thread>

namespace {
using namespace conf;
constexpr int kThreads = 4;
constexpr int kRounds = 3;
}  // namespace

TEST_CASE("threads: concurrent streams on one device") {
  for (device_entry* d : backends_under_test()) {
    if (!d->available) continue;
    // Single-thread results of every supported template.
    std::vector<call_spec> calls;
    std::vector<std::string> names;
    std::vector<std::vector<std::vector<double>>> expected;
    for (const op_template& t : op_templates()) {
      call_spec c = t.make();
      if (op_supported(*d, c, dtype_id::f32, nullptr) != NNP_STATUS_OK) continue;
      const run_result r = run_op(*d, c, dtype_id::f32);
      if (r.status != NNP_STATUS_OK) continue;  // reported by the numerics tests
      calls.push_back(std::move(c));
      names.push_back(t.name);
      expected.push_back(r.outputs);
    }
    REQUIRE_MESSAGE(!calls.empty(), d->name << ": no op runs in float32");
    std::vector<std::vector<std::string>> problems(kThreads);
    std::vector<std::thread> threads;
    for (int ti = 0; ti < kThreads; ++ti) {
      threads.emplace_back([&, ti] {
        nnp_stream* s = nullptr;
        if (nnp_stream_create(d->dev, &s) != NNP_STATUS_OK) {
          problems[static_cast<size_t>(ti)].push_back(std::string("nnp_stream_create: ") +
                                                      nnp_last_error_message());
          return;
        }
        for (int round = 0; round < kRounds; ++round) {
          // Each thread walks the ops in a different order so that different kinds overlap.
          for (size_t k = 0; k < calls.size(); ++k) {
            const size_t i = (k + static_cast<size_t>(ti) * 3) % calls.size();
            const run_result r = run_op(*d, calls[i], dtype_id::f32, s);
            auto& out = problems[static_cast<size_t>(ti)];
            if (r.status != NNP_STATUS_OK) {
              out.push_back(names[i] + ": " + nnp_status_string(r.status) + ": " + r.message);
              continue;
            }
            for (const auto& p : r.problems) out.push_back(names[i] + ": " + p);
            for (size_t o = 0; o < r.outputs.size(); ++o) {
              const comparison c = calls[i].outputs[o].exact
                                       ? compare_exact(r.outputs[o], expected[i][o])
                                       : compare_nmse(r.outputs[o], expected[i][o],
                                                      tolerance(names[i], dtype_id::f32));
              if (!c.ok) out.push_back(names[i] + " output " + std::to_string(o) + ": " + c.detail);
            }
          }
        }
        if (nnp_stream_destroy(s) != NNP_STATUS_OK)
          problems[static_cast<size_t>(ti)].push_back(std::string("nnp_stream_destroy: ") +
                                                      nnp_last_error_message());
      });
    }
    for (auto& t : threads) t.join();
    std::vector<std::string> all;
    for (const auto& p : problems) all.insert(all.end(), p.begin(), p.end());
    report({d->name, "threads", "*",
            "threads " + std::to_string(kThreads) + "x" + std::to_string(kRounds) + " over " +
                std::to_string(calls.size()) + " ops",
            all.empty() ? case_outcome::pass : case_outcome::fail, static_cast<double>(all.size()),
            0, join(all, "; ")});
    CHECK_MESSAGE(all.empty(), d->name << ": " << all.size()
                                       << " problems; first: " << (all.empty() ? "" : all.front()));
  }
}
