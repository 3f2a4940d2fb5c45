// test_conv.cpp — 2-D convolution (NCHW, OIHW): forward, backward-data, backward-filter,
// backward-bias numerics against the reference, and the three backward ops against finite
// differences of the forward op.
// Cases: cases/<list>/conv2d.txt, benchdnn style: "n2 c3 h7 w7 k4 r3 s3 stride2 pad1", with
// stride_h/stride_w, pad_t/pad_b/pad_l/pad_r, dil (dil_h/dil_w), g (groups), bias0 (no bias).
// Output sizes are counted here (out_size) and pinned by literals (the known-size test), never
// taken from the shape helpers that libnnplug's validator and the backends share.
#include <doctest/doctest.h>

#include "harness.hpp"

namespace {
using namespace conf;

// Output size along one dimension, by counting window positions, written out independently of
// the library (nnplug_ops.h: P = floor((H + pad_top + pad_bottom - dilation_h*(R-1) - 1) /
// stride_h) + 1): the window starting at row `start` of the padded input covers rows start ..
// start + dilation*(R-1), which must all lie inside it.
int64_t out_size(int64_t in, int64_t k, int64_t stride, int64_t pad_begin, int64_t pad_end,
                 int64_t dilation) {
  return count_windows(pad_begin + in + pad_end, dilation * (k - 1) + 1, stride);
}

struct ConvShape {
  int64_t n, c, h, w, k, r, s, p, q;
  nnp_conv2d_params prm;
  bool bias;
};

ConvShape conv_shape(const Case& cs) {
  ConvShape v{};
  v.n = cs.i("n", 1);
  v.c = cs.i("c", 1);
  v.h = cs.i("h", 5);
  v.w = cs.i("w", v.h);
  v.k = cs.i("k", 1);
  v.r = cs.i("r", 3);
  v.s = cs.i("s", v.r);
  auto& p = v.prm;
  p = make_params<nnp_conv2d_params>();
  const int32_t stride = static_cast<int32_t>(cs.i("stride", 1));
  p.stride_h = static_cast<int32_t>(cs.i("stride_h", stride));
  p.stride_w = static_cast<int32_t>(cs.i("stride_w", stride));
  const int32_t pad = static_cast<int32_t>(cs.i("pad", 0));
  p.pad_top = static_cast<int32_t>(cs.i("pad_t", pad));
  p.pad_bottom = static_cast<int32_t>(cs.i("pad_b", pad));
  p.pad_left = static_cast<int32_t>(cs.i("pad_l", pad));
  p.pad_right = static_cast<int32_t>(cs.i("pad_r", pad));
  const int32_t dil = static_cast<int32_t>(cs.i("dil", 1));
  p.dilation_h = static_cast<int32_t>(cs.i("dil_h", dil));
  p.dilation_w = static_cast<int32_t>(cs.i("dil_w", dil));
  p.groups = static_cast<int32_t>(cs.i("g", 1));
  v.bias = cs.i("bias", 1) != 0;
  v.p = out_size(v.h, v.r, p.stride_h, p.pad_top, p.pad_bottom, p.dilation_h);
  v.q = out_size(v.w, v.s, p.stride_w, p.pad_left, p.pad_right, p.dilation_w);
  return v;
}

std::vector<int64_t> xs(const ConvShape& v) { return {v.n, v.c, v.h, v.w}; }
std::vector<int64_t> ws(const ConvShape& v) { return {v.k, v.c / v.prm.groups, v.r, v.s}; }
std::vector<int64_t> ys(const ConvShape& v) { return {v.n, v.k, v.p, v.q}; }

OpCall conv_forward(const ConvShape& v, Rng& rng) {
  auto x = rng.uniform_vec(numel(xs(v)));
  auto w = rng.uniform_vec(numel(ws(v)));
  return op_call(NNP_OP_CONV2D_FORWARD, v.prm,
                 {tensor(xs(v), std::move(x)), tensor(ws(v), std::move(w)),
                  v.bias ? tensor({v.k}, rng.uniform_vec(v.k)) : absent_tensor()},
                 {tensor(ys(v))});
}
OpCall conv_backward_data(const ConvShape& v, const std::vector<double>& dy,
                          const std::vector<double>& w) {
  return op_call(NNP_OP_CONV2D_BACKWARD_DATA, v.prm, {tensor(ys(v), dy), tensor(ws(v), w)},
                 {tensor(xs(v))});
}
OpCall conv_backward_filter(const ConvShape& v, const std::vector<double>& x,
                            const std::vector<double>& dy) {
  return op_call(NNP_OP_CONV2D_BACKWARD_FILTER, v.prm, {tensor(xs(v), x), tensor(ys(v), dy)},
                 {tensor(ws(v))});
}
OpCall conv_backward_bias(const ConvShape& v, const std::vector<double>& dy) {
  return op_call(NNP_OP_CONV2D_BACKWARD_BIAS, {tensor(ys(v), dy)}, {tensor({v.k})});
}

const ConvShape kTemplate = conv_shape(parse_case("n2 c4 h6 w5 k6 r3 s2 stride2 pad1 g2"));
const RegisterTemplate reg_fwd("conv2d_forward", [] {
  Rng rng("template conv");
  return conv_forward(kTemplate, rng);
});
const RegisterTemplate reg_bwd_data("conv2d_backward_data", [] {
  Rng rng("template conv bd");
  return conv_backward_data(kTemplate, rng.uniform_vec(numel(ys(kTemplate))),
                            rng.uniform_vec(numel(ws(kTemplate))));
});
const RegisterTemplate reg_bwd_filter("conv2d_backward_filter", [] {
  Rng rng("template conv bf");
  return conv_backward_filter(kTemplate, rng.uniform_vec(numel(xs(kTemplate))),
                              rng.uniform_vec(numel(ys(kTemplate))));
});
const RegisterTemplate reg_bwd_bias("conv2d_backward_bias", [] {
  Rng rng("template conv bb");
  return conv_backward_bias(kTemplate, rng.uniform_vec(numel(ys(kTemplate))));
});

}  // namespace

TEST_CASE("conv2d_forward") {
  check_numerics_cases("conv2d_forward", "conv2d", "conv2d_fwd",
                       [](const Case& c, Rng& rng) { return conv_forward(conv_shape(c), rng); });
}

TEST_CASE("conv2d_backward_data") {
  check_numerics_cases("conv2d_backward_data", "conv2d", "conv2d_bwd_data",
                       [](const Case& c, Rng& rng) {
                         const ConvShape v = conv_shape(c);
                         const auto dy = rng.uniform_vec(numel(ys(v)));
                         return conv_backward_data(v, dy, rng.uniform_vec(numel(ws(v))));
                       });
}

TEST_CASE("conv2d_backward_filter") {
  check_numerics_cases("conv2d_backward_filter", "conv2d", "conv2d_bwd_filter",
                       [](const Case& c, Rng& rng) {
                         const ConvShape v = conv_shape(c);
                         const auto x = rng.uniform_vec(numel(xs(v)));
                         return conv_backward_filter(v, x, rng.uniform_vec(numel(ys(v))));
                       });
}

TEST_CASE("conv2d_backward_bias") {
  check_numerics_cases(
      "conv2d_backward_bias", "conv2d", "conv2d_bwd_bias", [](const Case& c, Rng& rng) {
        return conv_backward_bias(conv_shape(c), rng.uniform_vec(numel(ys(conv_shape(c)))));
      });
}

TEST_CASE("gradient conv2d") {
  for (const Case& c : load_cases("conv2d_grad")) {
    const ConvShape v = conv_shape(c);
    Rng rng("gradient conv2d " + c.text);
    GradientCheck g;
    g.case_text = c.text;
    g.forward = conv_forward(v, rng);
    g.name = "conv2d_backward_data";
    g.backward = [v](const OpCall& f, const auto&, const auto& r) {
      return conv_backward_data(v, r[0], f.inputs[1].data);
    };
    g.wrt = {{0, 0}};
    check_gradient(g);
    g.name = "conv2d_backward_filter";
    g.backward = [v](const OpCall& f, const auto&, const auto& r) {
      return conv_backward_filter(v, f.inputs[0].data, r[0]);
    };
    g.wrt = {{1, 0}};
    check_gradient(g);
    if (v.bias) {
      g.name = "conv2d_backward_bias";
      g.backward = [v](const OpCall&, const auto&, const auto& r) {
        return conv_backward_bias(v, r[0]);
      };
      g.wrt = {{2, 0}};
      check_gradient(g);
    }
  }
}

// Known answers on every device (the reference included): cross-correlation without filter
// flip, zero padding, stride, dilation and groups, computed by hand.
TEST_CASE("conv2d_forward: known answers") {
  const std::vector<double> x9{1, 2, 3, 4, 5, 6, 7, 8, 9};  // 3x3
  std::vector<double> x25(25);                              // 5x5: 1 .. 25
  for (size_t i = 0; i < x25.size(); ++i) x25[i] = static_cast<double>(i + 1);
  struct Known {
    const char* text;
    std::vector<double> x, w, y;
  };
  const std::vector<Known> known{
      // y[p,q] = x[p,q] + 2 x[p,q+1] + 3 x[p+1,q] + 4 x[p+1,q+1] (a flip would give 23 first)
      {"n1 c1 h3 w3 k1 r2 s2 bias0", x9, {1, 2, 3, 4}, {37, 47, 67, 77}},
      // padding 1, stride 2, 1x1 window at the corners of the padded input
      {"n1 c1 h3 w3 k1 r1 s1 stride2 bias0", x9, {2}, {2, 6, 14, 18}},
      {"n1 c1 h3 w3 k1 r2 s2 pad1 stride2 bias0", x9, {1, 1, 1, 1}, {1, 5, 11, 28}},
      // dilation 2: the four corners
      {"n1 c1 h3 w3 k1 r2 s2 dil2 bias0", x9, {1, 1, 1, 1}, {1 + 3 + 7 + 9}},
      // groups 2: channel 0 -> k0 (w 1), channel 1 -> k1 (w 10)
      {"n1 c2 h1 w2 k2 r1 s1 g2 bias0", {1, 2, 3, 4}, {1, 10}, {1, 2, 30, 40}},
      // 5x5, 3x3 box filter, stride 2, padding 1: a 3x3 output; windows over rows (and
      // columns) {0,1}, {1,2,3}, {3,4}
      {"n1 c1 h5 w5 k1 r3 s3 stride2 pad1 bias0",
       x25,
       std::vector<double>(9, 1.0),
       {16, 33, 28, 69, 117, 87, 76, 123, 88}},
  };
  for (const Known& k : known) {
    const ConvShape v = conv_shape(parse_case(k.text));
    Rng rng("known");
    OpCall call = conv_forward(v, rng);
    call.inputs[0].data = k.x;
    call.inputs[1].data = k.w;
    check_known_answer("conv2d", k.text, call, k.y);
  }
}

// Output sizes as literals, on every device (the reference included): the call with the literal
// output shape must be accepted and an output one larger or smaller in any dimension refused, so
// libnnplug's validator and every backend agree with these numbers. out_size is checked against
// them too.
TEST_CASE("conv2d_forward: output sizes (known answers)") {
  struct Known {
    const char* text;
    int64_t p, q;
  };
  const std::vector<Known> known{
      {"n1 c1 h5 w5 k1 r3 s3", 3, 3},
      {"n1 c1 h5 w5 k1 r3 s3 stride2 pad1", 3, 3},
      {"n1 c1 h7 w7 k1 r3 s3 stride2", 3, 3},
      {"n1 c1 h6 w5 k1 r3 s2 stride2 pad1", 3, 3},
      {"n1 c1 h3 w3 k1 r2 s2 dil2", 1, 1},
      {"n1 c1 h9 w8 k1 r3 s3 dil2 pad_t1 pad_b0 pad_l2 pad_r1", 6, 7},
      {"n1 c1 h8 w6 k1 r2 s3 stride_h2 stride_w1 pad_t0 pad_b1", 4, 4},
      {"n1 c1 h11 w13 k1 r5 s5 stride3 pad2", 4, 5},
      {"n1 c1 h17 w15 k1 r3 s3 stride2 dil2 pad3", 10, 9},
      {"n1 c1 h2 w2 k1 r3 s3 stride2 pad1", 1, 1},
      {"n1 c1 h6 w7 k1 r1 s1 stride4", 2, 2},
      {"n1 c1 h5 w5 k1 r3 s3 pad3", 9, 9},
  };
  for (const Known& k : known) {
    const ConvShape v = conv_shape(parse_case(k.text));
    CHECK_MESSAGE(v.p == k.p, std::string(k.text) << ": counted " << v.p << " rows");
    CHECK_MESSAGE(v.q == k.q, std::string(k.text) << ": counted " << v.q << " columns");
    Rng rng("known size");
    OpCall call = conv_forward(v, rng);
    call.outputs[0].shape = {1, 1, k.p, k.q};
    check_output_shape("conv2d_out_size", k.text, call);
  }
}
