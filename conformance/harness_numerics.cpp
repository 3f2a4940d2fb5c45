// harness_numerics.cpp — random inputs and the numerics driver: value_rng (deterministic per seed
// and case key), and check_numerics(), which runs a case on every backend under test and on
// the reference in every dtype, checks declared-unsupported calls, compares every output and
// records the outcome in the report (check_numerics_cases() over a case list);
// check_output_shape() for output shapes known as literals (check_output_shapes() over a table).
#include "harness.hpp"

#include <doctest/doctest.h>

#include <algorithm>

namespace conf {

// ---- random data ----------------------------------------------------------------------------
value_rng::value_rng(const std::string& key) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the key, mixed with the seed
  for (unsigned char ch : key) h = (h ^ ch) * 1099511628211ull;
  std::seed_seq seq{static_cast<uint32_t>(h), static_cast<uint32_t>(h >> 32),
                    static_cast<uint32_t>(options().seed),
                    static_cast<uint32_t>(options().seed >> 32)};
  eng_.seed(seq);
}
double value_rng::uniform(double lo, double hi) {
  return lo + (hi - lo) * (static_cast<double>(eng_() >> 11) * 0x1.0p-53);
}
int64_t value_rng::integer(int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(eng_() % static_cast<uint64_t>(hi - lo + 1));
}
std::vector<double> value_rng::uniform_vec(int64_t n, double lo, double hi) {
  std::vector<double> v(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (double& x : v) x = uniform(lo, hi);
  return v;
}
std::vector<double> value_rng::away_from_zero(int64_t n, double min_abs, double max_abs) {
  std::vector<double> v(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (double& x : v) x = uniform(min_abs, max_abs) * ((eng_() & 1) ? 1 : -1);
  return v;
}
std::vector<double> value_rng::distinct(int64_t n, double spacing) {
  std::vector<double> v(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = (static_cast<double>(i) - static_cast<double>(v.size()) / 2) * spacing;
  std::shuffle(v.begin(), v.end(), eng_);
  return v;
}

// ---- numerics -------------------------------------------------------------------------------
void check_numerics(const std::string& op, const std::string& case_text, const call_spec& call,
                    const numerics_options& opt) {
  check_numerics_fn(
      op, case_text, [&call](dtype_id) { return call; }, opt);
}

void check_numerics_cases(const std::string& op, const std::string& family,
                          const std::string& rng_key, const case_call_fn& make) {
  for (const case_line& c : load_cases(family)) {
    value_rng rng(rng_key + " " + c.text);
    check_numerics(op, c.text, make(c, rng));
  }
}
void check_numerics_cases(const std::string& op, const case_call_fn& make) {
  check_numerics_cases(op, op, op, make);
}

void check_numerics_fn(const std::string& op, const std::string& case_text,
                       const std::function<call_spec(dtype_id)>& make,
                       const numerics_options& opt) {
  device_entry& ref = reference_device();
  for (device_entry* b : backends_under_test()) {
    if (!b->available) continue;
    for (dtype_id dt : opt.dtypes) {
      const std::string cname = op + " " + case_text + " " + dt_short(dt);
      if (!case_selected(cname)) continue;
      report_entry e{b->name, op, dt_name(dt), cname, case_outcome::pass, 0, tolerance(op, dt), ""};
      const call_spec call = quantized(make(dt), dt);
      std::string reason;
      const nnp_status s = op_supported(*b, call, dt, &reason);
      if (s == NNP_STATUS_UNSUPPORTED) {
        // Executing it anyway must answer UNSUPPORTED too, with a message, touching nothing.
        const run_result u = run_op(*b, call, dt);
        if (u.status != NNP_STATUS_UNSUPPORTED || u.message.empty() || !u.outputs_untouched ||
            !u.problems.empty()) {
          e.outcome = case_outcome::fail;
          e.message =
              std::string("declared unsupported (") + reason + "), but nnp_op_execute " +
              (u.status != NNP_STATUS_UNSUPPORTED
                   ? std::string("returned ") + nnp_status_string(u.status)
               : u.message.empty() ? std::string("gave no message")
                                   : std::string("modified memory") +
                                         (u.problems.empty() ? "" : ": ") + join(u.problems, "; "));
          report(e);
          CHECK_MESSAGE(false, b->name << ": " << cname << ": " << e.message);
          continue;
        }
        e.outcome = case_outcome::unsupported;
        e.message = reason;
        report(e);
        continue;
      }
      if (s != NNP_STATUS_OK) {
        e.outcome = case_outcome::fail;
        e.message = std::string("nnp_op_supported: ") + nnp_status_string(s) + ": " + reason;
        report(e);
        CHECK_MESSAGE(false, b->name << ": " << cname << ": " << e.message);
        continue;
      }
      // The reference computes in dt, or in float32 from the same (rounded) values.
      dtype_id rdt = dt;
      std::string ref_reason;
      if (op_supported(ref, call, dt, &ref_reason) != NNP_STATUS_OK) {
        rdt = dtype_id::f32;
        std::string r2;
        if ((dt != dtype_id::f16 && dt != dtype_id::bf16) ||
            op_supported(ref, call, rdt, &r2) != NNP_STATUS_OK) {
          e.outcome = case_outcome::unsupported;
          e.message = "the reference cannot check this: " + ref_reason;
          report(e);
          continue;
        }
      }
      const run_result got = run_op(*b, call, dt);
      const run_result want = run_op(ref, call, rdt);
      std::vector<std::string> problems = got.problems;
      if (got.status == NNP_STATUS_UNSUPPORTED) {
        // Declared supported but refused at execution: that is a failure.
        problems.push_back("nnp_op_supported said OK but execution returned unsupported: " +
                           got.message);
      } else if (got.status != NNP_STATUS_OK) {
        problems.push_back(std::string("execution failed: ") + nnp_status_string(got.status) +
                           ": " + got.message);
      }
      if (want.status != NNP_STATUS_OK || !want.problems.empty()) {
        problems.push_back("reference failed: " + want.message + join(want.problems, "; "));
      }
      double worst = 0;
      if (got.status == NNP_STATUS_OK && want.status == NNP_STATUS_OK) {
        for (size_t k = 0; k < call.outputs.size(); ++k) {
          const tensor_spec& t = call.outputs[k];
          if (t.absent) continue;
          // A 16-bit output holds the exact result rounded to its dtype: the reference's value
          // (computed in a wider dtype) is rounded the same way, so an overflow is +-inf there
          // too (float16 tops out at 65504).
          std::vector<double> expect = want.outputs[k];
          const dtype_id odt = spec_dtype(t, dt);
          if (odt == dtype_id::f16 || odt == dtype_id::bf16)
            for (double& v : expect) v = quantize(v, odt);
          const comparison c = t.exact ? compare_exact(got.outputs[k], expect)
                                       : compare_nmse(got.outputs[k], expect, e.threshold);
          worst = std::max(worst, c.error);
          if (!c.ok) problems.push_back("output " + std::to_string(k) + ": " + c.detail);
        }
      }
      e.error = worst;
      if (!problems.empty()) {
        e.outcome = case_outcome::fail;
        e.message = join(problems, "; ");
      }
      report(e);
      const std::string rerun =
          std::string("nnplug-conformance ") +
          (b->label.find('/') != std::string::npos ? "--plugin " : "--backend ") + b->label +
          " --seed " + std::to_string(options().seed) + " --cases " + options().cases +
          " --filter '" + cname + "'";
      CHECK_MESSAGE(problems.empty(),
                    b->name << ": " << cname << ": " << e.message << "\n  re-run: " << rerun);
    }
  }
}

void check_output_shape(const std::string& op, const std::string& case_text,
                        const call_spec& call) {
  const std::string name = op + " " + case_text;
  const std::vector<int64_t>& shape = call.outputs.at(0).shape;
  for (device_entry* d : all_devices()) {
    if (!d->available) continue;
    std::string reason;
    const nnp_status s = op_supported(*d, call, dtype_id::f32, &reason);
    if (s == NNP_STATUS_UNSUPPORTED) continue;
    std::string problem;
    if (s != NNP_STATUS_OK) {
      problem =
          "refused the output " + shape_str(shape) + ": " + nnp_status_string(s) + ": " + reason;
    } else {
      const run_result r = run_op(*d, call, dtype_id::f32);
      if (r.status != NNP_STATUS_OK)
        problem =
            std::string("execution failed: ") + nnp_status_string(r.status) + ": " + r.message;
      else if (!r.problems.empty())
        problem = join(r.problems, "; ");
      for (size_t i = 0; i < shape.size() && problem.empty(); ++i) {
        for (int64_t delta : {int64_t{1}, int64_t{-1}}) {
          if (shape[i] + delta < 0 || !problem.empty()) continue;
          call_spec wrong = call;
          wrong.outputs[0].shape[i] += delta;
          if (op_supported(*d, wrong, dtype_id::f32, nullptr) == NNP_STATUS_OK)
            problem = "accepted the wrong output " + shape_str(wrong.outputs[0].shape) +
                      " (expected " + shape_str(shape) + ")";
        }
      }
    }
    report({d->name, op, "float32", name, problem.empty() ? case_outcome::pass : case_outcome::fail,
            0, 0, problem});
    CHECK_MESSAGE(problem.empty(), d->name << ": " << name << ": " << problem);
  }
}

void check_output_shapes(const std::string& op, const std::vector<known_shape>& known,
                         const case_call_fn& make) {
  for (const known_shape& k : known) {
    value_rng rng("known shape");
    call_spec call = make(parse_case(k.text), rng);
    call.outputs[0].shape = k.y;
    check_output_shape(op, k.text, call);
  }
}

}  // namespace conf
