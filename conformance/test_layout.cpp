// test_layout.cpp — call descriptions that must not change results: explicit
// compact strides (nnplug_ops.h: "strides NULL or equal to the compact strides") give the same
// outputs as NULL strides, and a params struct larger than this header's (a newer caller)
// gives the same outputs, for every op kind on every backend.
#include <doctest/doctest.h>

#include "harness.hpp"

namespace {
using namespace conf;

std::vector<int64_t> compact_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t step = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = step;
    step *= shape[i];
  }
  return s;
}

}  // namespace

TEST_CASE("layout: explicit compact strides equal NULL strides") {
  for (Device* d : backends_under_test()) {
    if (!d->available) continue;
    for (const OpTemplate& t : op_templates()) {
      const OpCall plain = t.make();
      if (op_supported(*d, plain, DT::f32, nullptr) != NNP_STATUS_OK) continue;
      OpCall strided = plain;
      for (auto& s : strided.inputs) s.strides = compact_strides(s.shape);
      for (auto& s : strided.outputs) s.strides = compact_strides(s.shape);
      const RunResult a = run_op(*d, plain, DT::f32);
      const RunResult b = run_op(*d, strided, DT::f32);
      std::string problem;
      if (a.status != NNP_STATUS_OK || b.status != NNP_STATUS_OK) {
        problem = std::string("NULL strides: ") + nnp_status_string(a.status) +
                  ", explicit strides: " + nnp_status_string(b.status) + " " + b.message;
      } else {
        for (size_t k = 0; k < a.outputs.size() && problem.empty(); ++k) {
          const Comparison c = compare_nmse(b.outputs[k], a.outputs[k], tolerance(t.name, DT::f32));
          if (!c.ok) problem = "output " + std::to_string(k) + ": " + c.detail;
        }
        for (const auto& p : b.problems) problem += (problem.empty() ? "" : "; ") + p;
      }
      const std::string name = t.name + " explicit compact strides f32";
      report({d->name, t.name, "*", name, problem.empty() ? Outcome::pass : Outcome::fail, 0, 0,
              problem});
      CHECK_MESSAGE(problem.empty(), d->name << ": " << name << ": " << problem);
    }
  }
}

// A caller compiled against a newer header passes a larger params struct (struct_size grows,
// new fields at the end): a callee reads only what it knows, so results are unchanged.
TEST_CASE("layout: params with a larger struct_size (newer caller)") {
  for (Device* d : backends_under_test()) {
    if (!d->available) continue;
    for (const OpTemplate& t : op_templates()) {
      const OpCall plain = t.make();
      if (plain.params.empty() || op_supported(*d, plain, DT::f32, nullptr) != NNP_STATUS_OK)
        continue;
      OpCall bigger = plain;
      const size_t size = plain.params.size() + 32;
      bigger.params.resize(size, 0);
      std::memcpy(bigger.params.data(), &size, sizeof(size_t));
      const RunResult a = run_op(*d, plain, DT::f32);
      const RunResult b = run_op(*d, bigger, DT::f32);
      std::string problem;
      if (a.status != NNP_STATUS_OK || b.status != NNP_STATUS_OK) {
        problem = std::string("struct_size ") + std::to_string(plain.params.size()) + ": " +
                  nnp_status_string(a.status) + ", struct_size " + std::to_string(size) + ": " +
                  nnp_status_string(b.status) + " " + b.message;
      } else {
        for (size_t k = 0; k < a.outputs.size() && problem.empty(); ++k) {
          const Comparison c = compare_nmse(b.outputs[k], a.outputs[k], tolerance(t.name, DT::f32));
          if (!c.ok) problem = "output " + std::to_string(k) + ": " + c.detail;
        }
      }
      const std::string name = t.name + " larger params struct_size f32";
      report({d->name, t.name, "*", name, problem.empty() ? Outcome::pass : Outcome::fail, 0, 0,
              problem});
      CHECK_MESSAGE(problem.empty(), d->name << ": " << name << ": " << problem);
    }
  }
}
