// test_pool.cpp — 2-D max and average pooling (NCHW): forward and backward numerics against
// the reference, and backward against finite differences of forward (max pooling inputs are
// distinct values, so no window has a tie).
// Cases: cases/<list>/pool2d.txt: "n2 c3 h7 w7 mode=max r3 s3 stride2 pad1 ceil1 cip1",
// window r x s, stride/stride_h/stride_w, pad/pad_t/pad_b/pad_l/pad_r, ceil1, cip1
// (count_include_pad), global1.
#include <doctest/doctest.h>

#include "harness.hpp"

#include <nnplug_common/tensor.hpp>

namespace {
using namespace conf;

struct PoolShape {
  int64_t n, c, h, w, p, q;
  nnp_pool2d_params prm;
};

PoolShape pool_shape(const Case& cs) {
  PoolShape v{};
  v.n = cs.i("n", 1);
  v.c = cs.i("c", 1);
  v.h = cs.i("h", 6);
  v.w = cs.i("w", v.h);
  auto& p = v.prm;
  p = make_params<nnp_pool2d_params>();
  p.mode = cs.s("mode", "max") == "max" ? NNP_POOL_MAX : NNP_POOL_AVERAGE;
  p.window_h = static_cast<int32_t>(cs.i("r", 2));
  p.window_w = static_cast<int32_t>(cs.i("s", p.window_h));
  const int32_t stride = static_cast<int32_t>(cs.i("stride", p.window_h));
  p.stride_h = static_cast<int32_t>(cs.i("stride_h", stride));
  p.stride_w = static_cast<int32_t>(cs.i("stride_w", stride));
  const int32_t pad = static_cast<int32_t>(cs.i("pad", 0));
  p.pad_top = static_cast<int32_t>(cs.i("pad_t", pad));
  p.pad_bottom = static_cast<int32_t>(cs.i("pad_b", pad));
  p.pad_left = static_cast<int32_t>(cs.i("pad_l", pad));
  p.pad_right = static_cast<int32_t>(cs.i("pad_r", pad));
  p.ceil_mode = static_cast<int32_t>(cs.i("ceil", 0));
  p.count_include_pad = static_cast<int32_t>(cs.i("cip", 0));
  p.global = static_cast<int32_t>(cs.i("global", 0));
  const nnp::pool_window pw = nnp::resolve_pool_window(p, v.h, v.w);
  v.p = nnp::pool_out_dim(v.h, pw.window_h, pw.stride_h, pw.pad_top, pw.pad_bottom, pw.ceil_mode);
  v.q = nnp::pool_out_dim(v.w, pw.window_w, pw.stride_w, pw.pad_left, pw.pad_right, pw.ceil_mode);
  return v;
}
std::vector<int64_t> xs(const PoolShape& v) { return {v.n, v.c, v.h, v.w}; }
std::vector<int64_t> ys(const PoolShape& v) { return {v.n, v.c, v.p, v.q}; }

OpCall pool_forward(const PoolShape& v, std::vector<double> x) {
  OpCall call;
  call.kind = NNP_OP_POOL2D_FORWARD;
  call.set_params(v.prm);
  call.inputs.push_back(tensor(xs(v), std::move(x)));
  call.outputs.push_back(tensor(ys(v)));
  return call;
}
OpCall pool_backward(const PoolShape& v, std::vector<double> x, std::vector<double> y,
                     std::vector<double> dy) {
  OpCall call;
  call.kind = NNP_OP_POOL2D_BACKWARD;
  call.set_params(v.prm);
  call.inputs.push_back(tensor(xs(v), std::move(x)));
  call.inputs.push_back(tensor(ys(v), std::move(y)));
  call.inputs.push_back(tensor(ys(v), std::move(dy)));
  call.outputs.push_back(tensor(xs(v)));
  return call;
}
// The forward output in dtype dt, computed by the reference (pool backward needs y).
std::vector<double> reference_forward(const PoolShape& v, const std::vector<double>& x, DT dt) {
  const auto out = reference_outputs(pool_forward(v, x), dt);
  return out.empty() ? std::vector<double>(static_cast<size_t>(numel(ys(v))), 0) : out[0];
}

const PoolShape kTemplate = pool_shape(parse_case("n2 c3 h7 w6 mode=max r3 s2 stride2 pad1"));
const RegisterTemplate reg_fwd("pool2d_forward", [] {
  Rng rng("template pool");
  return pool_forward(kTemplate, rng.uniform_vec(numel(xs(kTemplate))));
});
const RegisterTemplate reg_bwd("pool2d_backward", [] {
  Rng rng("template pool bwd");
  const auto x = rng.uniform_vec(numel(xs(kTemplate)));
  return pool_backward(kTemplate, x, rng.uniform_vec(numel(ys(kTemplate))),
                       rng.uniform_vec(numel(ys(kTemplate))));
});

}  // namespace

TEST_CASE("pool2d_forward") {
  for (const Case& c : load_cases("pool2d")) {
    Rng rng("pool2d_fwd " + c.text);
    const PoolShape v = pool_shape(c);
    check_numerics("pool2d_forward", c.text, pool_forward(v, rng.uniform_vec(numel(xs(v)))));
  }
}

TEST_CASE("pool2d_backward") {
  for (const Case& c : load_cases("pool2d")) {
    Rng rng("pool2d_bwd " + c.text);
    const PoolShape v = pool_shape(c);
    const auto x = rng.distinct(numel(xs(v)), 1.0 / 64);
    const auto dy = rng.uniform_vec(numel(ys(v)));
    check_numerics_fn("pool2d_backward", c.text, [&](DT dt) {
      std::vector<double> xq = x;
      for (double& e : xq) e = quantize(e, dt);
      return pool_backward(v, xq, reference_forward(v, xq, dt), dy);
    });
  }
}

TEST_CASE("gradient pool2d") {
  for (const Case& c : load_cases("pool2d_grad")) {
    const PoolShape v = pool_shape(c);
    Rng rng("gradient pool2d " + c.text);
    GradientCheck g;
    g.name = "pool2d_backward";
    g.case_text = c.text;
    g.forward = pool_forward(v, rng.distinct(numel(xs(v)), 0.01));
    g.backward = [v](const OpCall& f, const std::vector<std::vector<double>>& out,
                     const std::vector<std::vector<double>>& r) {
      return pool_backward(v, f.inputs[0].data, out[0], r[0]);
    };
    g.wrt = {{0, 0}};
    check_gradient(g);
  }
}

// Known answers on every device (the reference included): output sizes with ceil_mode
// (PyTorch's rule), average divisors with and without count_include_pad, max ignores padding.
TEST_CASE("pool2d_forward: known answers") {
  CHECK(nnp::pool_out_dim(7, 3, 2, 0, 0, false) == 3);
  CHECK(nnp::pool_out_dim(6, 3, 2, 0, 0, true) == 3);  // ceil((6-3)/2)+1
  CHECK(nnp::pool_out_dim(5, 2, 2, 1, 1, true) == 3);  // the 4th window starts in the padding
  CHECK(nnp::pool_out_dim(7, 3, 2, 1, 1, true) == 4);
  std::vector<Device*> devices = backends_under_test();
  devices.push_back(&reference_device());
  const std::vector<double> ones(9, 1.0), x9{1, 2, 3, 4, 5, 6, 7, 8, 9};
  struct Known {
    const char* text;
    std::vector<double> x, y;
  };
  const std::vector<Known> known{
      {"n1 c1 h3 w3 mode=avg r3 s3 stride1 pad1", ones, std::vector<double>(9, 1.0)},
      {"n1 c1 h3 w3 mode=avg r3 s3 stride1 pad1 cip1",
       ones,
       {4. / 9, 6. / 9, 4. / 9, 6. / 9, 1, 6. / 9, 4. / 9, 6. / 9, 4. / 9}},
      {"n1 c1 h3 w3 mode=max r2 s2 stride2 pad1",
       {-1, -2, -3, -4, -5, -6, -7, -8, -9},
       {-1, -2, -4, -5}},
      {"n1 c1 h3 w3 mode=max r2 s2 stride2 ceil1", x9, {5, 6, 8, 9}},
      {"n1 c1 h3 w3 mode=avg r2 s2 stride2 ceil1", x9, {3, 4.5, 7.5, 9}},
  };
  for (const Known& k : known) {
    const PoolShape v = pool_shape(parse_case(k.text));
    const OpCall call = pool_forward(v, k.x);
    for (Device* d : devices) {
      if (!d->available || op_supported(*d, call, DT::f32, nullptr) != NNP_STATUS_OK) continue;
      const RunResult r = run_op(*d, call, DT::f32);
      REQUIRE_MESSAGE(r.status == NNP_STATUS_OK,
                      d->name << ": " << std::string(k.text) << ": " << r.message);
      const Comparison c = compare_nmse(r.outputs[0], k.y, 1e-12);
      report({d->name, "pool2d_known", "float32", std::string("pool2d_known ") + k.text,
              c.ok ? Outcome::pass : Outcome::fail, c.error, 1e-12, c.detail});
      CHECK_MESSAGE(c.ok, d->name << ": pool2d " << std::string(k.text) << ": " << c.detail);
    }
  }
}
