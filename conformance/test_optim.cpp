// test_optim.cpp — optimiser updates, in place on parameter and state tensors: SGD (momentum,
// dampening, Nesterov, weight decay) and Adam / AdamW (bias-corrected, step >= 1), numerics
// against the reference; Adam's step and lr read from device tensors (ABI 1.4), counted on the
// stream, against the same updates with params step and lr, and the checks of those tensors.
// Cases: cases/<list>/sgd.txt "x100 lr=0.1 mom=0.9 damp=0 wd=0.01 nesterov1";
//        cases/<list>/adam.txt "x100 lr=1e-3 b1=0.9 b2=0.999 eps=1e-8 wd=0.01 step=3 adamw1".
#include <doctest/doctest.h>

#include "harness.hpp"

#include <algorithm>
#include <limits>
#include <memory>

namespace {
using namespace conf;

call_spec make_sgd(const case_line& c, value_rng& rng) {
  auto p = make_params<nnp_sgd_params>();
  p.lr = c.d("lr", 0.1);
  p.momentum = c.d("mom", 0);
  p.dampening = c.d("damp", 0);
  p.weight_decay = c.d("wd", 0);
  p.nesterov = static_cast<int32_t>(c.i("nesterov", 0));
  const auto x = c.dims("x", {100});
  auto grad = rng.uniform_vec(numel(x));
  return make_spec(NNP_OP_SGD_UPDATE, p, {tensor(x, std::move(grad))},
                   {tensor(x, rng.uniform_vec(numel(x))), p.momentum != 0 || c.i("buffer", 0)
                                                              ? tensor(x, rng.uniform_vec(numel(x)))
                                                              : absent_tensor()});
}

call_spec make_adam(const case_line& c, value_rng& rng) {
  auto p = make_params<nnp_adam_params>();
  p.lr = c.d("lr", 1e-3);
  p.beta1 = c.d("b1", 0.9);
  p.beta2 = c.d("b2", 0.999);
  p.epsilon = c.d("eps", 1e-8);
  p.weight_decay = c.d("wd", 0);
  p.step = c.i("step", 1);
  p.adamw = static_cast<int32_t>(c.i("adamw", 0));
  const auto x = c.dims("x", {100});
  auto grad = rng.uniform_vec(numel(x));
  const bool fresh = p.step == 1;  // first step: zero state, as a real optimiser starts
  return make_spec(NNP_OP_ADAM_UPDATE, p, {tensor(x, std::move(grad))},
                   {tensor(x, rng.uniform_vec(numel(x))),
                    tensor(x, fresh ? std::vector<double>(static_cast<size_t>(numel(x)), 0.0)
                                    : rng.uniform_vec(numel(x), -0.1, 0.1)),
                    tensor(x, fresh ? std::vector<double>(static_cast<size_t>(numel(x)), 0.0)
                                    : rng.uniform_vec(numel(x), 0, 0.01))});
}

const register_template reg_sgd("sgd_update", "sgd", "x20 lr=0.1 mom=0.9 wd=0.01", make_sgd);
const register_template reg_adam("adam_update", "adam", "x20 step=2 wd=0.01", make_adam);

}  // namespace

TEST_CASE("sgd_update") { check_numerics_cases("sgd_update", "sgd", "sgd", make_sgd); }

TEST_CASE("adam_update") { check_numerics_cases("adam_update", "adam", "adam", make_adam); }

// Known answers on every device (the reference included): PyTorch's SGD (weight decay,
// momentum with dampening 0, Nesterov) and Adam/AdamW first step (bias correction).
TEST_CASE("optimisers: known answers") {
  // float64 where supported: the thresholds can then be tight.
  auto run = [](const std::string& what, const call_spec& call,
                const std::vector<std::vector<double>>& want) {
    check_known_outputs("optimiser_known", what, call, want, {dtype_id::f64, dtype_id::f32},
                        [](dtype_id dt) { return dt == dtype_id::f64 ? 1e-24 : 1e-12; });
  };
  value_rng rng("known");
  for (int nesterov : {0, 1}) {
    call_spec sgd = make_sgd(parse_case("x1 lr=0.1 mom=0.9 wd=0.1"), rng);
    sgd.params_as<nnp_sgd_params>()->nesterov = nesterov;
    sgd.inputs[0].data = {0.5};
    sgd.outputs[0].data = {1.0};
    sgd.outputs[1].data = {0.2};
    // g = 0.5 + 0.1*1 = 0.6; buf = 0.9*0.2 + 0.6 = 0.78; step = nesterov ? 0.6 + 0.9*0.78 : 0.78
    const double step = nesterov ? 0.6 + 0.9 * 0.78 : 0.78;
    run(nesterov ? "sgd nesterov" : "sgd momentum", sgd, {{1 - 0.1 * step}, {0.78}});
  }
  for (int adamw : {0, 1}) {
    call_spec adam =
        make_adam(parse_case("x1 lr=0.01 b1=0.9 b2=0.999 eps=1e-8 wd=0.1 step=1"), rng);
    adam.params_as<nnp_adam_params>()->adamw = adamw;
    adam.inputs[0].data = {0.5};
    adam.outputs[0].data = {1.0};
    // Adam: g = 0.5 + 0.1 = 0.6. AdamW: param *= 1 - 0.01*0.1 first, g = 0.5.
    // Step 1: m_hat = g, v_hat = g^2, update = lr * g / (|g| + eps).
    const double g = adamw ? 0.5 : 0.6, p0 = adamw ? 1 - 0.01 * 0.1 : 1.0;
    run(adamw ? "adamw step1" : "adam step1", adam,
        {{p0 - 0.01 * g / (g + 1e-8)}, {0.1 * g}, {0.001 * g * g}});
  }
}

// ---- per-step values on the device (ABI 1.4) ---------------------------------------------------
namespace {
using namespace conf;

// Backends whose step-tensor results must equal the params results bit for bit: their kernels
// turn the value read from the tensor into the same double as the params field. Others (cuda:
// the bias corrections computed in the kernel) get a tight tolerance.
bool bitwise_backend(const device_entry& d) {
  return d.plugin == "reference" || d.plugin == "cpu" || d.plugin == "sim";
}

// The first message of a failed op call on d's stream, or "" when it and the stream's work ran.
std::string execute(device_entry& d, int32_t kind, const void* params,
                    std::vector<const DLTensor*> in, std::vector<const DLTensor*> out) {
  if (nnp_op_execute(d.stream, kind, params, in.size(), in.data(), out.size(), out.data()) !=
      NNP_STATUS_OK)
    return nnp_last_error_message();
  if (nnp_stream_synchronize(d.stream) != NNP_STATUS_OK)
    return std::string("nnp_stream_synchronize: ") + nnp_last_error_message();
  return {};
}

}  // namespace

// adam_update as the step and lr inputs are meant to be used: a float32 step counter on the
// device, incremented by binary ADD (in place) before each update, and an lr tensor; params
// step and lr set to values that must not be read.
TEST_CASE("adam_update: step and lr tensors give the results of params step and lr") {
  const std::vector<int64_t> shape{37};
  const int64_t n = numel(shape);
  const double lr = static_cast<float>(0.01);  // exact in every dtype tried
  for (device_entry* d : all_devices()) {
    if (!d->available) continue;
    for (dtype_id dt : {dtype_id::f32, dtype_id::f64}) {
      for (int adamw : {0, 1}) {
        auto p = make_params<nnp_adam_params>();
        p.lr = lr;
        p.beta1 = 0.9;
        p.beta2 = 0.999;
        p.epsilon = 1e-8;
        p.weight_decay = 0.1;
        p.step = 1;
        p.adamw = adamw;
        const call_spec probe = make_spec(
            NNP_OP_ADAM_UPDATE, p, {tensor(shape), int_tensor(dtype_id::f32, {}), tensor({1})},
            {tensor(shape), tensor(shape), tensor(shape)});
        if (op_supported(*d, probe, dt, nullptr) != NNP_STATUS_OK) continue;
        value_rng rng("adam step tensors");
        std::vector<std::vector<double>> grads;
        for (int s = 0; s < 3; ++s) grads.push_back(rng.uniform_vec(n));
        const std::vector<double> param0 = rng.uniform_vec(n);
        std::vector<std::string> problems;
        // Path A: params step = s, lr = lr. Path B: the tensors, params step and lr ignored.
        device_tensor wa(*d, dt, shape, param0), ma(*d, dt, shape), va(*d, dt, shape);
        device_tensor wb(*d, dt, shape, param0), mb(*d, dt, shape), vb(*d, dt, shape);
        device_tensor step(*d, dtype_id::f32, {}, {0.0}), one(*d, dtype_id::f32, {}, {1.0});
        device_tensor lr_t(*d, dt, {1}, {lr});
        std::vector<std::unique_ptr<device_tensor>> g;
        for (const auto& v : grads) g.push_back(std::make_unique<device_tensor>(*d, dt, shape, v));
        for (const device_tensor* t : {&wa, &ma, &va, &wb, &mb, &vb, &step, &one, &lr_t})
          if (!t->error.empty()) problems.push_back(t->error);
        auto ignored = p;
        ignored.step = 1000;
        ignored.lr = 0.5;
        auto add = make_params<nnp_binary_params>();
        add.op = NNP_BINARY_ADD;
        for (int s = 1; s <= 3 && problems.empty(); ++s) {
          p.step = s;
          const DLTensor* gs = g[static_cast<size_t>(s - 1)]->dl();
          std::string e = execute(*d, NNP_OP_ADAM_UPDATE, &p, {gs}, {wa.dl(), ma.dl(), va.dl()});
          if (e.empty()) e = execute(*d, NNP_OP_BINARY, &add, {step.dl(), one.dl()}, {step.dl()});
          if (e.empty())
            e = execute(*d, NNP_OP_ADAM_UPDATE, &ignored, {gs, step.dl(), lr_t.dl()},
                        {wb.dl(), mb.dl(), vb.dl()});
          if (!e.empty()) problems.push_back("step " + std::to_string(s) + ": " + e);
        }
        if (problems.empty() && step.read() != std::vector<double>{3.0})
          problems.push_back("the step counter does not hold 3 after three additions");
        const char* names[] = {"param", "m", "v"};
        const device_tensor* a[] = {&wa, &ma, &va};
        const device_tensor* b[] = {&wb, &mb, &vb};
        double worst = 0;
        for (size_t k = 0; k < 3 && problems.empty(); ++k) {
          const std::vector<double> want = a[k]->read(), got = b[k]->read();
          const comparison c =
              bitwise_backend(*d) ? compare_exact(got, want) : compare_nmse(got, want, 1e-10);
          worst = std::max(worst, c.error);
          if (!c.ok) problems.push_back(std::string(names[k]) + ": " + c.detail);
        }
        const std::string name =
            std::string("adam_step_tensors x37 adamw") + std::to_string(adamw) + " " + dt_short(dt);
        report_problems(*d, "adam_step_tensors", dt_name(dt), name, problems, worst);
      }
    }
  }
}

// libnnplug's checks of the new inputs, on every device: dtypes (step float32 whatever the
// call's dtype, lr the call's), one element, the call's device. Then the values: backends that
// refuse at execution (reference, sim, cpu) refuse a step that is not a whole number >= 1.
TEST_CASE("adam_update: step and lr tensors are checked") {
  const std::vector<int64_t> shape{6};
  auto p = make_params<nnp_adam_params>();
  p.lr = 1e-3;
  p.beta1 = 0.9;
  p.beta2 = 0.999;
  p.step = 1;
  auto call = [&](tensor_spec step, tensor_spec lr) {
    return make_spec(
        NNP_OP_ADAM_UPDATE, p, {tensor(shape, std::vector<double>(6, 0.5)), step, lr},
        {tensor(shape, std::vector<double>(6, 1.0)), tensor(shape, std::vector<double>(6, 0.0)),
         tensor(shape, std::vector<double>(6, 0.0))});
  };
  struct bad_case {
    const char* what;
    call_spec call;
    const char* message;
  };
  const bad_case cases[] = {
      {"step float64", call(int_tensor(dtype_id::f64, {1}, {1}), absent_tensor()),
       "inputs[1] (step): expected dtype float32"},
      {"step float16", call(int_tensor(dtype_id::f16, {1}, {1}), absent_tensor()),
       "inputs[1] (step): expected dtype float32"},
      {"step of 2 elements", call(int_tensor(dtype_id::f32, {2}, {1, 1}), absent_tensor()),
       "inputs[1] (step): expected 1 element"},
      {"step [1, 1]", call(int_tensor(dtype_id::f32, {1, 1}, {1}), absent_tensor()),
       "inputs[1] (step): expected 1 element"},
      {"lr float64", call(absent_tensor(), int_tensor(dtype_id::f64, {1}, {1e-3})),
       "inputs[2] (lr): expected dtype float32"},
      {"lr of 2 elements", call(absent_tensor(), tensor({2}, {1e-3, 1e-3})),
       "inputs[2] (lr): expected 1 element"},
  };
  for (device_entry* d : all_devices()) {
    if (!d->available) continue;
    for (const bad_case& c : cases) {
      CAPTURE(d->name);
      CAPTURE(c.what);
      std::string reason;
      CHECK(op_supported(*d, c.call, dtype_id::f32, &reason) == NNP_STATUS_INVALID_ARGUMENT);
      CHECK_MESSAGE(reason.find(c.message) != std::string::npos, reason);
      const run_result r = run_op(*d, c.call, dtype_id::f32);
      CHECK(r.status == NNP_STATUS_INVALID_ARGUMENT);
      CHECK(r.outputs_untouched);
      report({d->name, "adam_step_tensors", "float32", std::string("adam_step_checks ") + c.what,
              r.status == NNP_STATUS_INVALID_ARGUMENT ? case_outcome::pass : case_outcome::fail, 0,
              0, r.message});
    }
    // A step in host memory for a device whose memory is not the host's (sim, cuda).
    check_host_scalar_refused(*d, call(int_tensor(dtype_id::f32, {1}, {1}), absent_tensor()), 1,
                              "step");
    // Invalid values held in the step tensor: refused when the op runs (cuda: by the kernel,
    // reported at the stream's synchronize), with param, m and v untouched; on every device that
    // runs the op with a step tensor.
    if (op_supported(*d, call(int_tensor(dtype_id::f32, {1}, {1}), absent_tensor()), dtype_id::f32,
                     nullptr) == NNP_STATUS_UNSUPPORTED)
      continue;
    for (double bad : {0.0, -1.0, 1.5, std::numeric_limits<double>::quiet_NaN(),
                       std::numeric_limits<double>::infinity(), 18446744073709551616.0,
                       static_cast<double>(std::numeric_limits<float>::denorm_min())}) {
      CAPTURE(d->name);
      CAPTURE(bad);
      const run_result r =
          run_op(*d, call(int_tensor(dtype_id::f32, {1}, {bad}), absent_tensor()), dtype_id::f32);
      CHECK(r.status == NNP_STATUS_INVALID_ARGUMENT);
      CHECK(r.outputs_untouched);
      CHECK_MESSAGE(r.message.find("expected a whole number >= 1") != std::string::npos, r.message);
    }
  }
}
