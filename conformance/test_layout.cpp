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
  for (device_entry* d : backends_under_test()) {
    if (!d->available) continue;
    for (const op_template& t : op_templates()) {
      const call_spec plain = t.make();
      if (op_supported(*d, plain, dtype_id::f32, nullptr) != NNP_STATUS_OK) continue;
      call_spec strided = plain;
      for (auto& s : strided.inputs) s.strides = compact_strides(s.shape);
      for (auto& s : strided.outputs) s.strides = compact_strides(s.shape);
      const run_result a = run_op(*d, plain, dtype_id::f32);
      const run_result b = run_op(*d, strided, dtype_id::f32);
      std::string problem;
      if (a.status != NNP_STATUS_OK || b.status != NNP_STATUS_OK) {
        problem = std::string("NULL strides: ") + nnp_status_string(a.status) +
                  ", explicit strides: " + nnp_status_string(b.status) + " " + b.message;
      } else {
        for (size_t k = 0; k < a.outputs.size() && problem.empty(); ++k) {
          const comparison c =
              compare_nmse(b.outputs[k], a.outputs[k], tolerance(t.name, dtype_id::f32));
          if (!c.ok) problem = "output " + std::to_string(k) + ": " + c.detail;
        }
        for (const auto& p : b.problems) problem += (problem.empty() ? "" : "; ") + p;
      }
      const std::string name = t.name + " explicit compact strides f32";
      report({d->name, t.name, "*", name, problem.empty() ? case_outcome::pass : case_outcome::fail,
              0, 0, problem});
      CHECK_MESSAGE(problem.empty(), d->name << ": " << name << ": " << problem);
    }
  }
}

// A caller compiled against a newer header passes a larger params struct (struct_size grows,
// new fields at the end): a callee reads only what it knows, so results are unchanged.
TEST_CASE("layout: params with a larger struct_size (newer caller)") {
  for (device_entry* d : backends_under_test()) {
    if (!d->available) continue;
    for (const op_template& t : op_templates()) {
      const call_spec plain = t.make();
      if (plain.params.empty() || op_supported(*d, plain, dtype_id::f32, nullptr) != NNP_STATUS_OK)
        continue;
      call_spec bigger = plain;
      const size_t size = plain.params.size() + 32;
      bigger.params.resize(size, 0);
      std::memcpy(bigger.params.data(), &size, sizeof(size_t));
      const run_result a = run_op(*d, plain, dtype_id::f32);
      const run_result b = run_op(*d, bigger, dtype_id::f32);
      std::string problem;
      if (a.status != NNP_STATUS_OK || b.status != NNP_STATUS_OK) {
        problem = std::string("struct_size ") + std::to_string(plain.params.size()) + ": " +
                  nnp_status_string(a.status) + ", struct_size " + std::to_string(size) + ": " +
                  nnp_status_string(b.status) + " " + b.message;
      } else {
        for (size_t k = 0; k < a.outputs.size() && problem.empty(); ++k) {
          const comparison c =
              compare_nmse(b.outputs[k], a.outputs[k], tolerance(t.name, dtype_id::f32));
          if (!c.ok) problem = "output " + std::to_string(k) + ": " + c.detail;
        }
      }
      const std::string name = t.name + " larger params struct_size f32";
      report({d->name, t.name, "*", name, problem.empty() ? case_outcome::pass : case_outcome::fail,
              0, 0, problem});
      CHECK_MESSAGE(problem.empty(), d->name << ": " << name << ": " << problem);
    }
  }
}
