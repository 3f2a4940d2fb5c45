// harness_known.cpp — known-answer checks: hand-computed outputs that every device, the
// reference included, must give (check_known_answer() for output 0 in float32,
// check_known_outputs() for several outputs in the widest dtype a device supports).
#include "harness.hpp"

#include <doctest/doctest.h>

namespace conf {

void check_known_answer(const std::string& family, const std::string& case_text,
                        const call_spec& call, const std::vector<double>& want, double threshold,
                        const std::function<void(device_entry&)>& then) {
  const std::string op = family + "_known";
  for (device_entry* d : all_devices()) {
    if (!d->available || op_supported(*d, call, dtype_id::f32, nullptr) != NNP_STATUS_OK) continue;
    const run_result r = run_op(*d, call, dtype_id::f32);
    REQUIRE_MESSAGE(r.status == NNP_STATUS_OK, d->name << ": " << case_text << ": " << r.message);
    const comparison c = threshold == 0 ? compare_exact(r.outputs[0], want)
                                        : compare_nmse(r.outputs[0], want, threshold);
    report({d->name, op, "float32", op + " " + case_text,
            c.ok ? case_outcome::pass : case_outcome::fail, c.error, threshold, c.detail});
    CHECK_MESSAGE(c.ok, d->name << ": " << family << " " << case_text << ": " << c.detail);
    if (then) then(*d);
  }
}

void check_known_outputs(const std::string& op, const std::string& case_text, const call_spec& call,
                         const std::vector<std::vector<double>>& want,
                         const std::vector<dtype_id>& dtypes,
                         const std::function<double(dtype_id)>& threshold) {
  for (device_entry* d : all_devices()) {
    if (!d->available) continue;
    const dtype_id* dt = nullptr;
    for (const dtype_id& t : dtypes) {
      if (op_supported(*d, call, t, nullptr) == NNP_STATUS_OK) {
        dt = &t;
        break;
      }
    }
    if (dt == nullptr) continue;
    const run_result r = run_op(*d, call, *dt);
    REQUIRE_MESSAGE(r.status == NNP_STATUS_OK, d->name << ": " << case_text << ": " << r.message);
    std::string problem;
    for (size_t k = 0; k < want.size(); ++k) {
      const comparison c = compare_nmse(r.outputs[k], want[k], threshold(*dt));
      if (!c.ok) problem += "output " + std::to_string(k) + ": " + c.detail + "; ";
    }
    report({d->name, op, dt_name(*dt), op + " " + case_text,
            problem.empty() ? case_outcome::pass : case_outcome::fail, 0, 0, problem});
    CHECK_MESSAGE(problem.empty(), d->name << ": " << case_text << ": " << problem);
  }
}

void report_problems(const device_entry& d, const std::string& op, const std::string& dtype,
                     const std::string& case_name, const std::vector<std::string>& problems,
                     double error) {
  const std::string all = join(problems, "; ");
  report({d.name, op, dtype, case_name, problems.empty() ? case_outcome::pass : case_outcome::fail,
          error >= 0 ? error : static_cast<double>(problems.size()), 0, all});
  CHECK_MESSAGE(problems.empty(), d.name << ": " << case_name << ": " << all);
}

void check_host_scalar_refused(device_entry& d, const call_spec& call, size_t index,
                               const std::string& name) {
  if (d.dl.device_type == kDLCPU) return;
  float host_value = 1.0f;
  const run_result r = run_op(d, call, dtype_id::f32, nullptr, [&](raw_call& raw) {
    raw.in[index].data = &host_value;
    raw.in[index].byte_offset = 0;
    raw.in[index].device = DLDevice{kDLCPU, 0};
  });
  CHECK_MESSAGE(r.status == NNP_STATUS_INVALID_ARGUMENT, d.name << ": " << r.message);
  const std::string expected =
      "inputs[" + std::to_string(index) + "] (" + name + "): expected DLDevice";
  CHECK_MESSAGE(r.message.find(expected) != std::string::npos, r.message);
  CHECK(r.outputs_untouched);
}

}  // namespace conf
