// test_pool.cpp — 2-D max and average pooling (NCHW): forward and backward numerics against
// the reference, and backward against finite differences of forward (max pooling inputs are
// distinct values, so no window has a tie).
// Cases: cases/<list>/pool2d.txt: "n2 c3 h7 w7 mode=max r3 s3 stride2 pad1 ceil1 cip1",
// window r x s, stride/stride_h/stride_w, pad/pad_t/pad_b/pad_l/pad_r, ceil1, cip1
// (count_include_pad), global1.
// Output sizes are counted here (out_size) and pinned by literals (the known-size test), never
// taken from the shape helpers that libnnplug's validator and the backends share.
#include <doctest/doctest.h>

#include "harness.hpp"

namespace {
using namespace conf;

// Output size along one dimension, by counting window positions, written out independently of
// the library (nnplug_ops.h, NNP_OP_POOL2D_FORWARD). Windows start at 0, stride, 2*stride, ...
// in the padded input. Floor mode counts the windows that fit in it. Ceil mode (PyTorch's rule)
// adds one partial window when the full ones leave the end of the padded input uncovered, unless
// that window would start in the bottom (right) padding.
int64_t out_size(int64_t in, int64_t window, int64_t stride, int64_t pad_begin, int64_t pad_end,
                 bool ceil_mode) {
  const int64_t padded = pad_begin + in + pad_end;
  int64_t n = count_windows(padded, window, stride);
  // `next` is where the next window would begin; the last full one ends before
  // next - stride + window.
  const int64_t next = n * stride;
  const bool uncovered = n > 0 && next - stride + window < padded;
  if (ceil_mode && uncovered && next < pad_begin + in) ++n;
  return n;
}

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
  if (p.global) {  // one window covering the whole input
    v.p = 1;
    v.q = 1;
  } else {
    v.p = out_size(v.h, p.window_h, p.stride_h, p.pad_top, p.pad_bottom, p.ceil_mode != 0);
    v.q = out_size(v.w, p.window_w, p.stride_w, p.pad_left, p.pad_right, p.ceil_mode != 0);
  }
  return v;
}
std::vector<int64_t> xs(const PoolShape& v) { return {v.n, v.c, v.h, v.w}; }
std::vector<int64_t> ys(const PoolShape& v) { return {v.n, v.c, v.p, v.q}; }

OpCall pool_forward(const PoolShape& v, std::vector<double> x) {
  return op_call(NNP_OP_POOL2D_FORWARD, v.prm, {tensor(xs(v), std::move(x))}, {tensor(ys(v))});
}
OpCall pool_backward(const PoolShape& v, std::vector<double> x, std::vector<double> y,
                     std::vector<double> dy) {
  return op_call(
      NNP_OP_POOL2D_BACKWARD, v.prm,
      {tensor(xs(v), std::move(x)), tensor(ys(v), std::move(y)), tensor(ys(v), std::move(dy))},
      {tensor(xs(v))});
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
  check_numerics_cases("pool2d_forward", "pool2d", "pool2d_fwd", [](const Case& c, Rng& rng) {
    const PoolShape v = pool_shape(c);
    return pool_forward(v, rng.uniform_vec(numel(xs(v))));
  });
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

// Known answers on every device (the reference included): outputs with ceil_mode (PyTorch's
// rule), average divisors with and without count_include_pad, max ignores padding.
TEST_CASE("pool2d_forward: known answers") {
  const std::vector<double> ones(9, 1.0), x9{1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<double> x25(25);  // 5x5: 1 .. 25
  for (size_t i = 0; i < x25.size(); ++i) x25[i] = static_cast<double>(i + 1);
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
      // 5x5, 2x2 windows, stride 2, padding 1, ceil_mode: 3x3, over rows (and columns) {0},
      // {1,2}, {3,4}; a 4th window would start in the bottom (right) padding, so there is none
      {"n1 c1 h5 w5 mode=max r2 s2 stride2 pad1 ceil1", x25, {1, 3, 5, 11, 13, 15, 21, 23, 25}},
      {"n1 c1 h5 w5 mode=avg r2 s2 stride2 pad1 ceil1",
       x25,
       {1, 2.5, 4.5, 8.5, 10, 12, 18.5, 20, 22}},
  };
  for (const Known& k : known) {
    check_known_answer("pool2d", k.text, pool_forward(pool_shape(parse_case(k.text)), k.x), k.y);
  }
}

// Output sizes as literals, on every device (the reference included): the call with the literal
// output shape must be accepted and an output one larger or smaller in any dimension refused, so
// libnnplug's validator and every backend agree with these numbers. out_size is checked against
// them too.
TEST_CASE("pool2d_forward: output sizes (known answers)") {
  struct Known {
    const char* text;
    int64_t p, q;
  };
  const std::vector<Known> known{
      {"n1 c1 h8 w8 mode=max r2 s2", 4, 4},
      {"n1 c1 h7 w6 mode=max r3 s3 stride2", 3, 2},
      // ceil_mode: one more, partial window where the full ones leave the end uncovered
      {"n1 c1 h7 w6 mode=max r3 s3 stride2 ceil1", 3, 3},
      {"n1 c1 h10 w11 mode=max r3 s3 stride3 ceil1", 4, 4},
      {"n1 c1 h7 w7 mode=avg r3 s3 stride2 pad1 ceil1", 4, 4},
      // ceil_mode, PyTorch's rule: the extra window would start in the bottom/right padding
      // (ceil((5+2-2)/2)+1 = 4 and ceil((11+2-3)/3)+1 = 5 without it)
      {"n1 c1 h5 w5 mode=max r2 s2 stride2 pad1 ceil1", 3, 3},
      {"n1 c1 h11 w8 mode=avg r3 s3 stride3 pad1 ceil1", 4, 3},
      {"n1 c1 h6 w9 mode=avg r2 s3 stride_h1 stride_w2 pad_t1 pad_b0 pad_l0 pad_r2 ceil1", 6, 5},
      {"n1 c1 h11 w10 mode=avg r3 s3 stride2 pad_t1 pad_b2 pad_l1 pad_r2", 6, 6},
      {"n1 c1 h5 w6 mode=avg global1", 1, 1},
      {"n1 c1 h5 w6 mode=max r2 s2 stride1 global1", 1, 1},  // window fields ignored
  };
  for (const Known& k : known) {
    const PoolShape v = pool_shape(parse_case(k.text));
    CHECK_MESSAGE(v.p == k.p, std::string(k.text) << ": counted " << v.p << " rows");
    CHECK_MESSAGE(v.q == k.q, std::string(k.text) << ": counted " << v.q << " columns");
    OpCall call = pool_forward(v, std::vector<double>(static_cast<size_t>(numel(xs(v))), 1.0));
    call.outputs[0].shape = {1, 1, k.p, k.q};
    check_output_shape("pool2d_out_size", k.text, call);
  }
}
