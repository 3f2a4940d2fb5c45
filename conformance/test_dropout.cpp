// test_dropout.cpp — dropout forward (y and the uint8 mask, which must be bit-identical to the
// reference) and backward (mask regenerated from seed/offset), in place included; the mask of
// every backend is also checked against the Philox4x32-10 rule of nnplug_ops.h computed on the
// host (nnplug/kit/philox.hpp), also for backwards after other calls on the stream (a
// backend's mask cache); backward against finite differences of forward; the step counter read
// from a device tensor (ABI 1.4) against the offset advanced by hand, counted on the stream, and
// its checks.
// Cases: cases/<list>/dropout.txt: "x1000 ratio=0.3 seed=42 offset=7 mask1 inplace1".
#include <doctest/doctest.h>

#include "harness.hpp"

#include <nnplug/kit/philox.hpp>

#include <limits>

namespace {
using namespace conf;

nnp_dropout_params dr_params(const case_line& c) {
  auto p = make_params<nnp_dropout_params>();
  p.ratio = c.d("ratio", 0.5);
  p.seed = static_cast<uint64_t>(c.i("seed", 1234));
  p.offset = static_cast<uint64_t>(c.i("offset", 0));
  return p;
}
call_spec dr_forward(const nnp_dropout_params& p, const std::vector<int64_t>& shape,
                     std::vector<double> x, bool mask, bool inplace) {
  call_spec call =
      make_spec(NNP_OP_DROPOUT_FORWARD, p, {tensor(shape, std::move(x))},
                {tensor(shape), mask ? int_tensor(dtype_id::u8, shape) : absent_tensor()});
  if (inplace) call.outputs[0].alias_of = 0;
  return call;
}
call_spec dr_backward(const nnp_dropout_params& p, const std::vector<int64_t>& shape,
                      std::vector<double> dy, bool inplace) {
  return same_shape_spec(NNP_OP_DROPOUT_BACKWARD, p, shape, {std::move(dy)}, inplace ? 0 : -1);
}

const register_template reg_fwd("dropout_forward", [] {
  value_rng rng("template dropout");
  return dr_forward(dr_params(parse_case("ratio=0.25")), {4, 9}, rng.uniform_vec(36), true, false);
});
const register_template reg_bwd("dropout_backward", [] {
  value_rng rng("template dropout bwd");
  return dr_backward(dr_params(parse_case("ratio=0.25")), {4, 9}, rng.uniform_vec(36), false);
});

}  // namespace

TEST_CASE("dropout_forward") {
  check_numerics_cases("dropout_forward", "dropout", "dropout_fwd",
                       [](const case_line& c, value_rng& rng) {
                         const auto shape = c.dims("x", {100});
                         return dr_forward(dr_params(c), shape, rng.uniform_vec(numel(shape)),
                                           c.i("mask", 1) != 0, c.i("inplace", 0) != 0);
                       });
}

TEST_CASE("dropout_backward") {
  check_numerics_cases("dropout_backward", "dropout", "dropout_bwd",
                       [](const case_line& c, value_rng& rng) {
                         const auto shape = c.dims("x", {100});
                         return dr_backward(dr_params(c), shape, rng.uniform_vec(numel(shape)),
                                            c.i("inplace", 0) != 0);
                       });
}

// The mask follows the rule of nnplug_ops.h exactly (checked on every backend, reference too).
TEST_CASE("dropout mask rule") {
  for (const case_line& c : load_cases("dropout")) {
    const auto shape = c.dims("x", {100});
    const auto p = dr_params(c);
    const int64_t n = numel(shape);
    const uint32_t threshold = nnp::dropout_threshold(p.ratio);
    std::vector<double> expected(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      expected[static_cast<size_t>(i)] =
          nnp::dropout_keep(p.seed, p.offset, static_cast<uint64_t>(i), threshold) ? 1 : 0;
    const call_spec call =
        dr_forward(p, shape, std::vector<double>(static_cast<size_t>(n), 1.0), true, false);
    for (device_entry* d : all_devices()) {
      if (!d->available) continue;
      std::string reason;
      if (op_supported(*d, call, dtype_id::f32, &reason) != NNP_STATUS_OK) continue;
      const run_result r = run_op(*d, call, dtype_id::f32);
      REQUIRE_MESSAGE(r.status == NNP_STATUS_OK, d->name << ": " << r.message);
      comparison cmp = compare_exact(r.outputs[1], expected);
      if (cmp.ok) {  // y = keep ? x * (float)(1 / (1 - ratio)) : 0, with x = 1
        std::vector<double> y(expected.size());
        const double scale = static_cast<float>(1.0 / (1.0 - p.ratio));
        for (size_t i = 0; i < y.size(); ++i) y[i] = expected[i] * scale;
        cmp = compare_exact(r.outputs[0], y);
      }
      const std::string name = "dropout_mask_rule " + c.text + " f32";
      report({d->name, "dropout_mask_rule", "float32", name,
              cmp.ok ? case_outcome::pass : case_outcome::fail, cmp.error, 0, cmp.detail});
      CHECK_MESSAGE(cmp.ok, d->name << ": " << name << ": " << cmp.detail);
    }
  }
}

// Backward regenerates the forward's mask from (seed, offset, ratio) whatever ran before on the
// stream, on every backend (reference too): a backward with no forward, backwards after more
// forwards than a backend may cache (the cpu keeps 4 masks per stream), and a backward with
// another ratio on the same counter. Known answers from the mask rule, dy = 1.
TEST_CASE("dropout_backward after other calls on the stream") {
  const int64_t n = 40003;  // more than one 32k-element block, with a tail
  const std::vector<int64_t> shape{n};
  const std::vector<double> ones(static_cast<size_t>(n), 1.0);
  auto params = [](double ratio, uint64_t seed, uint64_t offset) {
    auto p = make_params<nnp_dropout_params>();
    p.ratio = ratio;
    p.seed = seed;
    p.offset = offset;
    return p;
  };
  auto expected = [&](const nnp_dropout_params& p) {  // keep ? 1 * (float)(1 / (1 - ratio)) : 0
    const uint32_t threshold = nnp::dropout_threshold(p.ratio);
    const double scale = static_cast<float>(1.0 / (1.0 - p.ratio));
    std::vector<double> dx(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      dx[static_cast<size_t>(i)] =
          nnp::dropout_keep(p.seed, p.offset, static_cast<uint64_t>(i), threshold) ? scale : 0;
    return dx;
  };
  for (device_entry* d : all_devices()) {
    if (!d->available) continue;
    const call_spec probe = dr_backward(params(0.5, 7, 0), shape, ones, false);
    if (op_supported(*d, probe, dtype_id::f32, nullptr) != NNP_STATUS_OK ||
        op_supported(*d, dr_forward(params(0.5, 7, 0), shape, ones, true, false), dtype_id::f32,
                     nullptr) != NNP_STATUS_OK)
      continue;
    std::vector<std::string> problems;
    auto backward = [&](const nnp_dropout_params& p, const std::string& what) {
      const run_result r = run_op(*d, dr_backward(p, shape, ones, false), dtype_id::f32);
      const comparison c = r.status == NNP_STATUS_OK ? compare_exact(r.outputs[0], expected(p))
                                                     : comparison{false, 0, r.message};
      if (!c.ok) problems.push_back(what + ": " + c.detail);
    };
    backward(params(0.5, 99, 12345), "backward without a forward");
    for (uint64_t off = 0; off < 6; ++off) {
      const run_result r = run_op(
          *d, dr_forward(params(0.5, 7, off * 250), shape, ones, true, false), dtype_id::f32);
      if (r.status != NNP_STATUS_OK) problems.push_back("forward failed: " + r.message);
    }
    for (uint64_t off = 0; off < 6; ++off) {
      const std::string at = " (seed 7, offset " + std::to_string(off * 250) + ")";
      backward(params(0.5, 7, off * 250), "backward after 6 forwards" + at);
      backward(params(0.25, 7, off * 250), "backward with another ratio" + at);
    }
    const std::string name = "dropout_backward_sequence x" + std::to_string(n) + " f32";
    report_problems(*d, "dropout_backward_sequence", "float32", name, problems);
  }
}

TEST_CASE("gradient dropout") {
  for (const case_line& c : load_cases("dropout")) {
    const auto shape = c.dims("x", {100});
    if (numel(shape) > 4096) continue;
    const auto p = dr_params(c);
    value_rng rng("gradient dropout " + c.text);
    gradient_check g;
    g.name = "dropout_backward";
    g.case_text = c.text;
    g.forward = dr_forward(p, shape, rng.uniform_vec(numel(shape)), false, false);
    g.backward = [p, shape](const call_spec&, const auto&, const auto& r) {
      return dr_backward(p, shape, r[0], false);
    };
    g.wrt = {{0, 0}};
    check_gradient(g);
  }
}

// ---- the step counter on the device (ABI 1.4) ---------------------------------------------------
namespace {

// The call with the optional step input appended (inputs[1], float32, shape [1]).
call_spec with_step(call_spec call, double step) {
  call.inputs.push_back(int_tensor(dtype_id::f32, {1}, {step}));
  return call;
}

}  // namespace

// On every backend (reference too), in every dtype it runs: a step tensor holding s with offset
// o and offset_per_step k gives, bit for bit, the outputs of the call without it at offset
// o + s * k (forward y and mask, backward dx); step 3 draws another mask than step 0; without a
// step tensor offset_per_step is not used.
TEST_CASE("dropout: a step tensor gives the masks of the offset advanced by hand") {
  const std::vector<int64_t> shape{1003};
  const int64_t n = numel(shape);
  const uint64_t offset = 17, per_step = static_cast<uint64_t>((n + 3) / 4);
  value_rng rng("dropout step tensor");
  const std::vector<double> x = rng.uniform_vec(n);
  auto p = make_params<nnp_dropout_params>();
  p.ratio = 0.3;
  p.seed = 0xABCDEF12345;
  p.offset = offset;
  p.offset_per_step = per_step;
  auto at = [&](uint64_t off, uint64_t per) {
    auto q = p;
    q.offset = off;
    q.offset_per_step = per;
    return q;
  };
  auto call = [&](const nnp_dropout_params& q, bool forward) {
    return forward ? dr_forward(q, shape, x, true, false) : dr_backward(q, shape, x, false);
  };
  for (device_entry* d : all_devices()) {
    if (!d->available) continue;
    for (dtype_id dt : float_dtypes()) {
      if (op_supported(*d, with_step(call(p, true), 0), dt, nullptr) != NNP_STATUS_OK ||
          op_supported(*d, with_step(call(p, false), 0), dt, nullptr) != NNP_STATUS_OK)
        continue;
      std::vector<std::string> problems;
      auto run = [&](const call_spec& c, const std::string& what) {
        run_result r = run_op(*d, c, dt);
        if (r.status != NNP_STATUS_OK) problems.push_back(what + ": " + r.message);
        for (const std::string& q : r.problems) problems.push_back(what + ": " + q);
        return r;
      };
      auto same = [&](const run_result& a, const run_result& b, const std::string& what) {
        if (a.status != NNP_STATUS_OK || b.status != NNP_STATUS_OK) return;
        for (size_t k = 0; k < a.outputs.size(); ++k) {
          const comparison c = compare_exact(a.outputs[k], b.outputs[k]);
          if (!c.ok) problems.push_back(what + ", output " + std::to_string(k) + ": " + c.detail);
        }
      };
      for (double s : {0.0, 3.0, 16777216.0}) {  // 2^24: the last count float32 holds exactly
        for (bool forward : {true, false}) {
          const std::string what = std::string(forward ? "forward" : "backward") + " step " +
                                   std::to_string(static_cast<uint64_t>(s));
          const uint64_t si = static_cast<uint64_t>(s);
          same(run(with_step(call(p, forward), s), what + " (tensor)"),
               run(call(at(offset + si * per_step, 0), forward), what + " (by hand)"), what);
        }
      }
      const run_result m0 = run(with_step(call(p, true), 0), "step 0");
      const run_result m3 = run(with_step(call(p, true), 3), "step 3");
      if (m0.status == NNP_STATUS_OK && m3.status == NNP_STATUS_OK &&
          m0.outputs[1] == m3.outputs[1])
        problems.push_back("step 3 draws the mask of step 0");
      same(run(call(p, true), "no step tensor, offset_per_step set"),
           run(call(at(offset, 0), true), "no step tensor"),
           "without a step tensor offset_per_step is not used");
      const std::string name = std::string("dropout_step_tensor x1003 ") + dt_short(dt);
      report_problems(*d, "dropout_step_tensor", dt_name(dt), name, problems);
    }
  }
}

// One float32 counter on the device advanced by binary ADD (in place) before each forward and
// backward pair, as a replayed training step advances it: each pair draws the mask of
// offset + step * offset_per_step (the rule computed on the host), the backward the forward's.
TEST_CASE("dropout: a step counter advanced on the stream") {
  const int64_t n = 40003;  // more than one 32k-element block (the cpu's tasks and mask cache)
  const std::vector<int64_t> shape{n};
  const uint64_t offset = 5, per_step = static_cast<uint64_t>((n + 3) / 4);
  auto p = make_params<nnp_dropout_params>();
  p.ratio = 0.5;
  p.seed = 7;
  p.offset = offset;
  p.offset_per_step = per_step;
  auto add = make_params<nnp_binary_params>();
  add.op = NNP_BINARY_ADD;
  const std::vector<double> ones(static_cast<size_t>(n), 1.0);
  const uint32_t threshold = nnp::dropout_threshold(p.ratio);
  const double scale = static_cast<float>(1.0 / (1.0 - p.ratio));
  for (device_entry* d : all_devices()) {
    if (!d->available) continue;
    if (op_supported(*d, with_step(dr_forward(p, shape, ones, true, false), 0), dtype_id::f32,
                     nullptr) != NNP_STATUS_OK)
      continue;
    std::vector<std::string> problems;
    device_tensor step(*d, dtype_id::f32, {1}, {0.0}), one(*d, dtype_id::f32, {1}, {1.0});
    device_tensor x(*d, dtype_id::f32, shape, ones), y(*d, dtype_id::f32, shape),
        dx(*d, dtype_id::f32, shape);
    device_tensor mask(*d, dtype_id::u8, shape);
    for (const device_tensor* t : {&step, &one, &x, &y, &dx, &mask})
      if (!t->error.empty()) problems.push_back(t->error);
    for (uint64_t s = 1; s <= 3 && problems.empty(); ++s) {
      const std::string at = "step " + std::to_string(s);
      const DLTensor* add_in[] = {step.dl(), one.dl()};
      const DLTensor* add_out[] = {step.dl()};
      const DLTensor* fwd_in[] = {x.dl(), step.dl()};
      const DLTensor* fwd_out[] = {y.dl(), mask.dl()};
      const DLTensor* bwd_in[] = {x.dl(), step.dl()};
      const DLTensor* bwd_out[] = {dx.dl()};
      if (nnp_op_execute(d->stream, NNP_OP_BINARY, &add, 2, add_in, 1, add_out) != NNP_STATUS_OK ||
          nnp_op_execute(d->stream, NNP_OP_DROPOUT_FORWARD, &p, 2, fwd_in, 2, fwd_out) !=
              NNP_STATUS_OK ||
          nnp_op_execute(d->stream, NNP_OP_DROPOUT_BACKWARD, &p, 2, bwd_in, 1, bwd_out) !=
              NNP_STATUS_OK ||
          nnp_stream_synchronize(d->stream) != NNP_STATUS_OK) {
        problems.push_back(at + ": " + nnp_last_error_message());
        break;
      }
      std::vector<double> keep(static_cast<size_t>(n)), grad(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        const bool k =
            nnp::dropout_keep(p.seed, offset + s * per_step, static_cast<uint64_t>(i), threshold);
        keep[static_cast<size_t>(i)] = k ? 1 : 0;
        grad[static_cast<size_t>(i)] = k ? scale : 0;
      }
      const comparison cm = compare_exact(mask.read(), keep);
      if (!cm.ok) problems.push_back(at + ", forward mask: " + cm.detail);
      const comparison cd = compare_exact(dx.read(), grad);
      if (!cd.ok) problems.push_back(at + ", backward dx: " + cd.detail);
    }
    const std::string name = "dropout_step_counter x" + std::to_string(n) + " f32";
    report_problems(*d, "dropout_step_tensor", "float32", name, problems);
  }
}

// libnnplug's checks of the step input on every device (float32 whatever the call's dtype, one
// element, the call's device), and the values the refusing backends (reference, sim, cpu)
// refuse when the op runs: anything but a whole number >= 0.
TEST_CASE("dropout: the step tensor is checked") {
  const std::vector<int64_t> shape{3, 8};
  const nnp_dropout_params p = dr_params(parse_case("ratio=0.25 seed=3 offset=1"));
  const std::vector<double> x(24, 1.0);
  struct bad_case {
    const char* what;
    tensor_spec step;
    const char* message;
  };
  const bad_case cases[] = {
      {"step float64", int_tensor(dtype_id::f64, {1}, {1}),
       "inputs[1] (step): expected dtype float32"},
      {"step float16", int_tensor(dtype_id::f16, {1}, {1}),
       "inputs[1] (step): expected dtype float32"},
      {"step of 2 elements", int_tensor(dtype_id::f32, {2}, {1, 1}),
       "inputs[1] (step): expected 1 element"},
  };
  for (device_entry* d : all_devices()) {
    if (!d->available) continue;
    for (bool forward : {true, false}) {
      const call_spec base =
          forward ? dr_forward(p, shape, x, true, false) : dr_backward(p, shape, x, false);
      for (const bad_case& c : cases) {
        CAPTURE(d->name);
        CAPTURE(forward);
        CAPTURE(c.what);
        call_spec bad = base;
        bad.inputs.push_back(c.step);
        std::string reason;
        CHECK(op_supported(*d, bad, dtype_id::f32, &reason) == NNP_STATUS_INVALID_ARGUMENT);
        CHECK_MESSAGE(reason.find(c.message) != std::string::npos, reason);
        const run_result r = run_op(*d, bad, dtype_id::f32);
        CHECK(r.status == NNP_STATUS_INVALID_ARGUMENT);
        CHECK(r.outputs_untouched);
      }
      // A step in host memory for a device whose memory is not the host's (sim, cuda).
      check_host_scalar_refused(*d, with_step(base, 1), 1, "step");
      // Refused when the op runs (cuda: by the kernel, reported at synchronize), y untouched; on
      // every device that runs the op with a step tensor.
      if (op_supported(*d, with_step(base, 1), dtype_id::f32, nullptr) == NNP_STATUS_UNSUPPORTED)
        continue;
      for (double v : {-1.0, 0.5, std::numeric_limits<double>::infinity(),
                       std::numeric_limits<double>::quiet_NaN(), 18446744073709551616.0}) {
        CAPTURE(d->name);
        CAPTURE(v);
        const run_result r = run_op(*d, with_step(base, v), dtype_id::f32);
        CHECK(r.status == NNP_STATUS_INVALID_ARGUMENT);
        CHECK(r.outputs_untouched);
        CHECK_MESSAGE(r.message.find("expected a whole number >= 0") != std::string::npos,
                      r.message);
      }
    }
  }
}
