// harness_gradients.cpp — gradient checks: a backward op against central finite differences
// of its forward op, both on the reference in float64, on a random sample of coordinates.
#include "harness.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

namespace conf {

// ---- gradients ------------------------------------------------------------------------------
report_entry evaluate_gradient(const gradient_check& g) {
  device_entry& ref = reference_device();
  const dtype_id dt = dtype_id::f64;
  const std::string op = g.name;
  const std::string cname = g.name + " " + g.case_text + " f64";
  report_entry e{ref.name + " (gradient)",  op, "float64", cname, case_outcome::pass, 0,
                 tolerance("gradient", dt), ""};
  std::string reason;
  if (op_supported(ref, g.forward, dt, &reason) != NNP_STATUS_OK) {
    e.outcome = case_outcome::unsupported;
    e.message = reason;
    return e;
  }
  const std::vector<int> loss_outputs =
      g.loss_outputs.empty() ? std::vector<int>{0} : g.loss_outputs;
  const run_result f0 = run_op(ref, g.forward, dt);
  if (f0.status != NNP_STATUS_OK || !f0.problems.empty()) {
    e.outcome = case_outcome::fail;
    e.message = std::string("forward failed: ") + f0.message + join(f0.problems, "; ");
    return e;
  }
  value_rng rng("gradient " + cname);
  std::vector<std::vector<double>> r(f0.outputs.size());
  for (int k : loss_outputs)
    r[static_cast<size_t>(k)] =
        rng.uniform_vec(static_cast<int64_t>(f0.outputs[static_cast<size_t>(k)].size()), -1, 1);
  const call_spec bwd = g.backward(g.forward, f0.outputs, r);
  const run_result b0 = run_op(ref, bwd, dt);
  if (b0.status != NNP_STATUS_OK || !b0.problems.empty()) {
    e.outcome = case_outcome::fail;
    e.message = std::string("backward failed: ") + b0.message + join(b0.problems, "; ");
    return e;
  }
  auto loss = [&](const call_spec& c, std::string* err) {
    const run_result f = run_op(ref, c, dt);
    double L = 0;
    if (f.status != NNP_STATUS_OK || f.outputs.size() != f0.outputs.size()) {
      *err = f.message.empty() ? "forward failed" : f.message;
      return L;
    }
    for (int k : loss_outputs) {
      const auto& y = f.outputs[static_cast<size_t>(k)];
      for (size_t i = 0; i < y.size(); ++i) L += y[i] * r[static_cast<size_t>(k)][i];
    }
    return L;
  };
  double num2 = 0, den2 = 0;
  std::string first_bad, err;
  for (const auto& [in_idx, out_idx] : g.wrt) {
    const auto& x = g.forward.inputs[static_cast<size_t>(in_idx)].data;
    std::vector<size_t> coords(x.size());
    std::iota(coords.begin(), coords.end(), 0);
    std::shuffle(coords.begin(), coords.end(), rng.engine());
    if (coords.size() > static_cast<size_t>(g.max_coords))
      coords.resize(static_cast<size_t>(g.max_coords));
    const auto& analytic = b0.outputs[static_cast<size_t>(out_idx)];
    if (analytic.size() != x.size()) {
      e.outcome = case_outcome::fail;
      e.message = "backward output " + std::to_string(out_idx) + " has " +
                  std::to_string(analytic.size()) + " elements, forward input " +
                  std::to_string(in_idx) + " has " + std::to_string(x.size());
      return e;
    }
    for (size_t i : coords) {
      call_spec plus = g.forward, minus = g.forward;
      plus.inputs[static_cast<size_t>(in_idx)].data[i] += g.step;
      minus.inputs[static_cast<size_t>(in_idx)].data[i] -= g.step;
      const double numeric = (loss(plus, &err) - loss(minus, &err)) / (2 * g.step);
      const double a = analytic[i];
      num2 += (a - numeric) * (a - numeric);
      den2 += std::max(a * a, numeric * numeric);
      if (first_bad.empty() && std::fabs(a - numeric) > 1e-4 * std::max(1.0, std::fabs(numeric))) {
        std::ostringstream os;
        os << "input " << in_idx << " element " << i << ": backward " << a << ", finite difference "
           << numeric;
        first_bad = os.str();
      }
    }
  }
  e.error = std::sqrt(num2 / std::max(den2, 1e-30));
  bool ok = err.empty() && e.error <= e.threshold;
  if (!ok) {
    e.outcome = case_outcome::fail;
    std::ostringstream os;
    os << "relative error " << e.error << " > " << e.threshold;
    if (!first_bad.empty()) os << "; " << first_bad;
    if (!err.empty()) os << "; forward failed: " << err;
    e.message = os.str();
  }
  return e;
}

void check_gradient(const gradient_check& g) {
  if (!case_selected(g.name + " " + g.case_text + " f64")) return;
  const report_entry e = evaluate_gradient(g);
  report(e);
  CHECK_MESSAGE(e.outcome != case_outcome::fail, e.case_name << ": " << e.message);
}

}  // namespace conf
