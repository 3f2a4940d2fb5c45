// test_conv.cpp — convolutions: the 2-D convolution of ABI 1.0 (NCHW, OIHW; NNP_OP_CONV2D_*),
// N-D convolution (ONNX Conv, NNP_OP_CONV_*) and transposed convolution (ONNX ConvTranspose,
// NNP_OP_CONV_TRANSPOSE_*), 1 to 3 spatial dimensions: every op against the reference, every
// backward op against finite differences of its forward op, known answers (ONNX's own test
// vectors where they exist), output sizes and argument errors.
// Cases, conv2d: cases/<list>/conv2d.txt, benchdnn style: "n2 c3 h7 w7 k4 r3 s3 stride2 pad1",
// with stride_h/stride_w, pad_t/pad_b/pad_l/pad_r, dil (dil_h/dil_w), g (groups), bias0 (no
// bias).
// Cases, N-D: cases/<list>/conv_nd.txt and conv_transpose.txt (numerics), conv_nd_grad.txt and
// conv_transpose_grad.txt (gradients). A case line:
//   n2 c4 x5x6x7 k6 r3x3x3 strides1,2,1 pads1,0,1,0,1,1 dil1,1,2 g2
// x = spatial input dims (k = how many), r = kernel dims, k = output channels (Conv) or
// K (ConvTranspose: w is [C, K/g, R..]), strides / pads (begins then ends) / dil lists of k
// (2k) entries (missing: zeroed params, ONNX's defaults), g = group (0 = zeroed), bias0 = no
// bias, auto=upper|lower|valid, ks1 = kernel_shape given; ConvTranspose also opad (output_padding)
// and oshape (output_shape).
// Output sizes are counted here (out_size, and ONNX's formulas for the N-D ops) and pinned by
// literals (the known-size tests), never taken from the shape helpers that libnnplug's validator
// and the backends share (nnplug/kit/conv_nd.hpp).
#include <doctest/doctest.h>

#include "harness.hpp"

#include <algorithm>
#include <limits>

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

struct conv_geometry {
  int64_t n, c, h, w, k, r, s, p, q;
  nnp_conv2d_params prm;
  bool bias;
};

conv_geometry conv_shape(const case_line& cs) {
  conv_geometry v{};
  v.n = cs.i("n", 1);
  v.c = cs.i("c", 1);
  v.h = cs.i("h", 5);
  v.w = cs.i("w", v.h);
  v.k = cs.i("k", 1);
  v.r = cs.i("r", 3);
  v.s = cs.i("s", v.r);
  auto& p = v.prm;
  p = make_params<nnp_conv2d_params>();
  read_strides_pads_2d(cs, p, 1);
  const int32_t dil = static_cast<int32_t>(cs.i("dil", 1));
  p.dilation_h = static_cast<int32_t>(cs.i("dil_h", dil));
  p.dilation_w = static_cast<int32_t>(cs.i("dil_w", dil));
  p.groups = static_cast<int32_t>(cs.i("g", 1));
  v.bias = cs.i("bias", 1) != 0;
  v.p = out_size(v.h, v.r, p.stride_h, p.pad_top, p.pad_bottom, p.dilation_h);
  v.q = out_size(v.w, v.s, p.stride_w, p.pad_left, p.pad_right, p.dilation_w);
  return v;
}

std::vector<int64_t> xs(const conv_geometry& v) { return {v.n, v.c, v.h, v.w}; }
std::vector<int64_t> ws(const conv_geometry& v) { return {v.k, v.c / v.prm.groups, v.r, v.s}; }
std::vector<int64_t> ys(const conv_geometry& v) { return {v.n, v.k, v.p, v.q}; }

call_spec conv_forward(const conv_geometry& v, value_rng& rng) {
  auto x = rng.uniform_vec(numel(xs(v)));
  auto w = rng.uniform_vec(numel(ws(v)));
  return make_spec(NNP_OP_CONV2D_FORWARD, v.prm,
                   {tensor(xs(v), std::move(x)), tensor(ws(v), std::move(w)),
                    v.bias ? tensor({v.k}, rng.uniform_vec(v.k)) : absent_tensor()},
                   {tensor(ys(v))});
}
call_spec conv_backward_data(const conv_geometry& v, const std::vector<double>& dy,
                             const std::vector<double>& w) {
  return make_spec(NNP_OP_CONV2D_BACKWARD_DATA, v.prm, {tensor(ys(v), dy), tensor(ws(v), w)},
                   {tensor(xs(v))});
}
call_spec conv_backward_filter(const conv_geometry& v, const std::vector<double>& x,
                               const std::vector<double>& dy) {
  return make_spec(NNP_OP_CONV2D_BACKWARD_FILTER, v.prm, {tensor(xs(v), x), tensor(ys(v), dy)},
                   {tensor(ws(v))});
}
call_spec conv_backward_bias(const conv_geometry& v, const std::vector<double>& dy) {
  return make_spec(NNP_OP_CONV2D_BACKWARD_BIAS, {tensor(ys(v), dy)}, {tensor({v.k})});
}

const conv_geometry kTemplate = conv_shape(parse_case("n2 c4 h6 w5 k6 r3 s2 stride2 pad1 g2"));
const register_template reg_fwd("conv2d_forward", [] {
  value_rng rng("template conv");
  return conv_forward(kTemplate, rng);
});
const register_template reg_bwd_data("conv2d_backward_data", [] {
  value_rng rng("template conv bd");
  return conv_backward_data(kTemplate, rng.uniform_vec(numel(ys(kTemplate))),
                            rng.uniform_vec(numel(ws(kTemplate))));
});
const register_template reg_bwd_filter("conv2d_backward_filter", [] {
  value_rng rng("template conv bf");
  return conv_backward_filter(kTemplate, rng.uniform_vec(numel(xs(kTemplate))),
                              rng.uniform_vec(numel(ys(kTemplate))));
});
const register_template reg_bwd_bias("conv2d_backward_bias", [] {
  value_rng rng("template conv bb");
  return conv_backward_bias(kTemplate, rng.uniform_vec(numel(ys(kTemplate))));
});

}  // namespace

TEST_CASE("conv2d_forward") {
  check_numerics_cases(
      "conv2d_forward", "conv2d", "conv2d_fwd",
      [](const case_line& c, value_rng& rng) { return conv_forward(conv_shape(c), rng); });
}

TEST_CASE("conv2d_backward_data") {
  check_numerics_cases("conv2d_backward_data", "conv2d", "conv2d_bwd_data",
                       [](const case_line& c, value_rng& rng) {
                         const conv_geometry v = conv_shape(c);
                         const auto dy = rng.uniform_vec(numel(ys(v)));
                         return conv_backward_data(v, dy, rng.uniform_vec(numel(ws(v))));
                       });
}

TEST_CASE("conv2d_backward_filter") {
  check_numerics_cases("conv2d_backward_filter", "conv2d", "conv2d_bwd_filter",
                       [](const case_line& c, value_rng& rng) {
                         const conv_geometry v = conv_shape(c);
                         const auto x = rng.uniform_vec(numel(xs(v)));
                         return conv_backward_filter(v, x, rng.uniform_vec(numel(ys(v))));
                       });
}

TEST_CASE("conv2d_backward_bias") {
  check_numerics_cases(
      "conv2d_backward_bias", "conv2d", "conv2d_bwd_bias", [](const case_line& c, value_rng& rng) {
        return conv_backward_bias(conv_shape(c), rng.uniform_vec(numel(ys(conv_shape(c)))));
      });
}

TEST_CASE("gradient conv2d") {
  for (const case_line& c : load_cases("conv2d_grad")) {
    const conv_geometry v = conv_shape(c);
    value_rng rng("gradient conv2d " + c.text);
    gradient_check g;
    g.case_text = c.text;
    g.forward = conv_forward(v, rng);
    g.name = "conv2d_backward_data";
    g.backward = [v](const call_spec& f, const auto&, const auto& r) {
      return conv_backward_data(v, r[0], f.inputs[1].data);
    };
    g.wrt = {{0, 0}};
    check_gradient(g);
    g.name = "conv2d_backward_filter";
    g.backward = [v](const call_spec& f, const auto&, const auto& r) {
      return conv_backward_filter(v, f.inputs[0].data, r[0]);
    };
    g.wrt = {{1, 0}};
    check_gradient(g);
    if (v.bias) {
      g.name = "conv2d_backward_bias";
      g.backward = [v](const call_spec&, const auto&, const auto& r) {
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
  struct known_case {
    const char* text;
    std::vector<double> x, w, y;
  };
  const std::vector<known_case> known{
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
  for (const known_case& k : known) {
    const conv_geometry v = conv_shape(parse_case(k.text));
    value_rng rng("known");
    call_spec call = conv_forward(v, rng);
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
  const std::vector<known_size> known{
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
  for (const known_size& k : known) {
    const conv_geometry v = conv_shape(parse_case(k.text));
    CHECK_MESSAGE(v.p == k.p, std::string(k.text) << ": counted " << v.p << " rows");
    CHECK_MESSAGE(v.q == k.q, std::string(k.text) << ": counted " << v.q << " columns");
    value_rng rng("known size");
    call_spec call = conv_forward(v, rng);
    call.outputs[0].shape = {1, 1, k.p, k.q};
    check_output_shape("conv2d_out_size", k.text, call);
  }
}

namespace {
using namespace conf;

struct conv_nd_setup {
  bool transpose = false;
  int64_t n = 1, c = 1, k = 1;   // k: output channels
  std::vector<int64_t> x, r, y;  // spatial dims
  int64_t group = 1;             // effective group
  bool bias = true;
  int64_t pool = 1;  // the forward's fused max pooling (ABI 1.8): y's spatial dims / pool
  nnp_conv_params conv{};
  nnp_conv_transpose_params convt{};
};

int64_t one_if_zero(int64_t v) { return v == 0 ? 1 : v; }

// Fills the attributes both structs share from the case; returns k.
template <typename P>
void fill_common(const case_line& cs, P& p, size_t k) {
  const auto copy = [&](const char* key, int32_t* dst, size_t n) {
    const std::vector<int64_t> v = cs.list(key);
    REQUIRE_MESSAGE((v.empty() || v.size() == n), cs.text << ": " << key << " needs " << n);
    for (size_t i = 0; i < v.size(); ++i) dst[i] = static_cast<int32_t>(v[i]);
  };
  copy("strides", p.strides, k);
  copy("pads", p.pads, 2 * k);
  copy("dil", p.dilations, k);
  p.group = static_cast<int32_t>(cs.i("g", 1));
  const std::string a = cs.s("auto", "");
  p.auto_pad = a == "upper"   ? NNP_AUTO_PAD_SAME_UPPER
               : a == "lower" ? NNP_AUTO_PAD_SAME_LOWER
               : a == "valid" ? NNP_AUTO_PAD_VALID
                              : NNP_AUTO_PAD_NOTSET;
}

conv_nd_setup conv_nd(const case_line& cs, bool transpose) {
  conv_nd_setup v;
  v.transpose = transpose;
  v.n = cs.i("n", 1);
  v.c = cs.i("c", 1);
  v.k = cs.i("k", 1);
  v.x = cs.dims("x", {5});
  v.r = cs.dims("r", std::vector<int64_t>(v.x.size(), 3));
  v.bias = cs.i("bias", 1) != 0;
  const size_t k = v.x.size();
  if (!transpose) {
    v.conv = make_params<nnp_conv_params>();
    nnp_conv_params& p = v.conv;
    fill_common(cs, p, k);
    if (cs.i("ks", 0)) {
      for (size_t i = 0; i < k; ++i) p.kernel_shape[i] = static_cast<int32_t>(v.r[i]);
    }
    // the forward's fused clamp (ABI 1.7): clip_min=a, clip_max=b (the backward calls clear it)
    if (cs.has("clip_min")) {
      p.has_clip_min = 1;
      p.clip_min = cs.d("clip_min", 0.0);
    }
    if (cs.has("clip_max")) {
      p.has_clip_max = 1;
      p.clip_max = cs.d("clip_max", 0.0);
    }
    // the forward's fused max pooling (ABI 1.8): pool=p (the backward calls clear it)
    p.max_pool = static_cast<int32_t>(cs.i("pool", 0));
    v.pool = std::max<int64_t>(1, p.max_pool);
    v.group = one_if_zero(p.group);
    for (size_t i = 0; i < k; ++i) {
      const int64_t s = one_if_zero(p.strides[i]), d = one_if_zero(p.dilations[i]);
      const int64_t span = d * (v.r[i] - 1) + 1;
      int64_t pb = p.pads[i], pe = p.pads[k + i];
      if (p.auto_pad == NNP_AUTO_PAD_VALID) pb = pe = 0;
      if (p.auto_pad == NNP_AUTO_PAD_SAME_UPPER || p.auto_pad == NNP_AUTO_PAD_SAME_LOWER) {
        // ONNX: output = ceil(in / stride); the odd pad goes to the end (UPPER) or the start
        const int64_t out = (v.x[i] + s - 1) / s;
        const int64_t total = std::max<int64_t>(0, (out - 1) * s + span - v.x[i]);
        pb = p.auto_pad == NNP_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
        pe = total - pb;
      }
      v.y.push_back(count_windows(pb + v.x[i] + pe, span, s));
    }
  } else {
    v.convt = make_params<nnp_conv_transpose_params>();
    nnp_conv_transpose_params& p = v.convt;
    fill_common(cs, p, k);
    if (cs.i("ks", 0)) {
      for (size_t i = 0; i < k; ++i) p.kernel_shape[i] = static_cast<int32_t>(v.r[i]);
    }
    const std::vector<int64_t> opad = cs.list("opad"), oshape = cs.list("oshape");
    for (size_t i = 0; i < opad.size() && i < k; ++i)
      p.output_padding[i] = static_cast<int32_t>(opad[i]);
    for (size_t i = 0; i < oshape.size() && i < k; ++i)
      p.output_shape[i] = static_cast<int32_t>(oshape[i]);
    v.group = one_if_zero(p.group);
    for (size_t i = 0; i < k; ++i) {
      const int64_t s = one_if_zero(p.strides[i]), d = one_if_zero(p.dilations[i]);
      // ONNX: stride*(in-1) + output_padding + (kernel-1)*dilation + 1 - pads
      const int64_t full = s * (v.x[i] - 1) + p.output_padding[i] + (v.r[i] - 1) * d + 1;
      if (!oshape.empty()) {
        v.y.push_back(oshape[i]);
      } else if (p.auto_pad == NNP_AUTO_PAD_SAME_UPPER || p.auto_pad == NNP_AUTO_PAD_SAME_LOWER) {
        v.y.push_back(v.x[i] * s);
      } else if (p.auto_pad == NNP_AUTO_PAD_VALID) {
        v.y.push_back(full);
      } else {
        v.y.push_back(full - p.pads[i] - p.pads[k + i]);
      }
    }
  }
  return v;
}

std::vector<int64_t> cat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
std::vector<int64_t> xs(const conv_nd_setup& v) { return cat({v.n, v.c}, v.x); }
std::vector<int64_t> ys(const conv_nd_setup& v) { return cat({v.n, v.k}, v.y); }
// The forward's output: ys, or with the fused max pooling [N, K, floor(O/pool)..].
std::vector<int64_t> ys_forward(const conv_nd_setup& v) {
  std::vector<int64_t> y = ys(v);
  for (size_t i = 2; i < y.size(); ++i) y[i] /= v.pool;
  return y;
}
std::vector<int64_t> ws(const conv_nd_setup& v) {
  return v.transpose ? cat({v.c, v.k / v.group}, v.r) : cat({v.k, v.c / v.group}, v.r);
}

// The case's params for op `kind`; the fused clamp and max pooling go to the forward only (the
// backward kinds refuse them).
call_spec with_params(const conv_nd_setup& v, int32_t kind, std::vector<tensor_spec> in,
                      std::vector<tensor_spec> out) {
  if (v.transpose) return make_spec(kind, v.convt, std::move(in), std::move(out));
  nnp_conv_params p = v.conv;
  if (kind != NNP_OP_CONV_FORWARD) p.has_clip_min = p.has_clip_max = p.max_pool = 0;
  return make_spec(kind, p, std::move(in), std::move(out));
}

call_spec fwd(const conv_nd_setup& v, value_rng& rng) {
  auto x = rng.uniform_vec(numel(xs(v)));
  auto w = rng.uniform_vec(numel(ws(v)));
  return with_params(v, v.transpose ? NNP_OP_CONV_TRANSPOSE_FORWARD : NNP_OP_CONV_FORWARD,
                     {tensor(xs(v), std::move(x)), tensor(ws(v), std::move(w)),
                      v.bias ? tensor({v.k}, rng.uniform_vec(v.k)) : absent_tensor()},
                     {tensor(ys_forward(v))});
}
call_spec bwd_data(const conv_nd_setup& v, const std::vector<double>& dy,
                   const std::vector<double>& w) {
  return with_params(v,
                     v.transpose ? NNP_OP_CONV_TRANSPOSE_BACKWARD_DATA : NNP_OP_CONV_BACKWARD_DATA,
                     {tensor(ys(v), dy), tensor(ws(v), w)}, {tensor(xs(v))});
}
call_spec bwd_filter(const conv_nd_setup& v, const std::vector<double>& x,
                     const std::vector<double>& dy) {
  return with_params(
      v, v.transpose ? NNP_OP_CONV_TRANSPOSE_BACKWARD_FILTER : NNP_OP_CONV_BACKWARD_FILTER,
      {tensor(xs(v), x), tensor(ys(v), dy)}, {tensor(ws(v))});
}
// Both families' bias gradient (params NULL).
call_spec bwd_bias(const conv_nd_setup& v, const std::vector<double>& dy) {
  return make_spec(NNP_OP_CONV_BACKWARD_BIAS, {tensor(ys(v), dy)}, {tensor({v.k})});
}

const conv_nd_setup& conv_template() {
  static const conv_nd_setup v =
      conv_nd(parse_case("n2 c4 x4x5x6 k6 r3x2x3 strides1,2,1 pads1,0,1,0,1,1 dil1,1,2 g2"), false);
  return v;
}
const conv_nd_setup& convt_template() {
  static const conv_nd_setup v =
      conv_nd(parse_case("n2 c4 x3x4 k6 r3x2 strides2,1 pads1,0,0,1 opad1,0 g2"), true);
  return v;
}
const register_template reg_nd_fwd("conv_forward", [] {
  value_rng rng("template conv_nd");
  return fwd(conv_template(), rng);
});
const register_template reg_bd("conv_backward_data", [] {
  value_rng rng("template conv_nd bd");
  const conv_nd_setup& v = conv_template();
  return bwd_data(v, rng.uniform_vec(numel(ys(v))), rng.uniform_vec(numel(ws(v))));
});
const register_template reg_bf("conv_backward_filter", [] {
  value_rng rng("template conv_nd bf");
  const conv_nd_setup& v = conv_template();
  return bwd_filter(v, rng.uniform_vec(numel(xs(v))), rng.uniform_vec(numel(ys(v))));
});
const register_template reg_bb("conv_backward_bias", [] {
  value_rng rng("template conv_nd bb");
  const conv_nd_setup& v = conv_template();
  return bwd_bias(v, rng.uniform_vec(numel(ys(v))));
});
const register_template reg_tfwd("conv_transpose_forward", [] {
  value_rng rng("template conv_transpose");
  return fwd(convt_template(), rng);
});
const register_template reg_tbd("conv_transpose_backward_data", [] {
  value_rng rng("template conv_transpose bd");
  const conv_nd_setup& v = convt_template();
  return bwd_data(v, rng.uniform_vec(numel(ys(v))), rng.uniform_vec(numel(ws(v))));
});
const register_template reg_tbf("conv_transpose_backward_filter", [] {
  value_rng rng("template conv_transpose bf");
  const conv_nd_setup& v = convt_template();
  return bwd_filter(v, rng.uniform_vec(numel(xs(v))), rng.uniform_vec(numel(ys(v))));
});

// The numerics of one family's four ops over its case list.
void family_numerics(bool transpose) {
  const std::string fam = transpose ? "conv_transpose" : "conv_nd";
  const std::string pre = transpose ? "conv_transpose_" : "conv_";
  check_numerics_cases(pre + "forward", fam, fam + " fwd", [=](const case_line& c, value_rng& rng) {
    return fwd(conv_nd(c, transpose), rng);
  });
  check_numerics_cases(pre + "backward_data", fam, fam + " bwd_data",
                       [=](const case_line& c, value_rng& rng) {
                         const conv_nd_setup v = conv_nd(c, transpose);
                         const auto dy = rng.uniform_vec(numel(ys(v)));
                         return bwd_data(v, dy, rng.uniform_vec(numel(ws(v))));
                       });
  check_numerics_cases(pre + "backward_filter", fam, fam + " bwd_filter",
                       [=](const case_line& c, value_rng& rng) {
                         const conv_nd_setup v = conv_nd(c, transpose);
                         const auto x = rng.uniform_vec(numel(xs(v)));
                         return bwd_filter(v, x, rng.uniform_vec(numel(ys(v))));
                       });
  check_numerics_cases("conv_backward_bias", fam, fam + " bwd_bias",
                       [=](const case_line& c, value_rng& rng) {
                         const conv_nd_setup v = conv_nd(c, transpose);
                         return bwd_bias(v, rng.uniform_vec(numel(ys(v))));
                       });
}

void family_gradients(bool transpose) {
  const std::string fam = transpose ? "conv_transpose" : "conv_nd";
  const std::string pre = transpose ? "conv_transpose_" : "conv_";
  for (const case_line& c : load_cases(fam + "_grad")) {
    const conv_nd_setup v = conv_nd(c, transpose);
    value_rng rng("gradient " + fam + " " + c.text);
    gradient_check g;
    g.case_text = c.text;
    g.forward = fwd(v, rng);
    g.name = pre + "backward_data";
    g.backward = [v](const call_spec& f, const auto&, const auto& r) {
      return bwd_data(v, r[0], f.inputs[1].data);
    };
    g.wrt = {{0, 0}};
    check_gradient(g);
    g.name = pre + "backward_filter";
    g.backward = [v](const call_spec& f, const auto&, const auto& r) {
      return bwd_filter(v, f.inputs[0].data, r[0]);
    };
    g.wrt = {{1, 0}};
    check_gradient(g);
    if (v.bias) {
      g.name = "conv_backward_bias";
      g.backward = [v](const call_spec&, const auto&, const auto& r) { return bwd_bias(v, r[0]); };
      g.wrt = {{2, 0}};
      check_gradient(g);
    }
  }
}

}  // namespace

TEST_CASE("conv_nd") { family_numerics(false); }
TEST_CASE("conv_transpose") { family_numerics(true); }
TEST_CASE("gradient conv_nd") { family_gradients(false); }
TEST_CASE("gradient conv_transpose") { family_gradients(true); }

// Known answers on every device (the reference included), by hand or from ONNX's backend tests.
TEST_CASE("conv_nd: known answers") {
  std::vector<double> x25(25);  // 5x5: 0 .. 24
  for (size_t i = 0; i < x25.size(); ++i) x25[i] = static_cast<double>(i);
  struct known_case {
    const char* text;
    bool transpose;
    std::vector<double> x, w, y;
  };
  const std::vector<known_case> known{
      // 1-D cross-correlation: y[o] = x[o] + 10 x[o+1] (no flip)
      {"n1 c1 x4 k1 r2 bias0", false, {1, 2, 3, 4}, {1, 10}, {21, 32, 43}},
      // 1-D, dilation 2, pads 1/0: y[o] = x[o-1] + 10 x[o+1]
      {"n1 c1 x4 k1 r2 dil2 pads1,0 bias0", false, {1, 2, 3, 4}, {1, 10}, {20, 31, 42}},
      // ONNX test_conv_with_autopad_same: 5x5, 3x3 ones, stride 2, SAME_LOWER
      {"n1 c1 x5x5 k1 r3x3 strides2,2 auto=lower bias0",
       false,
       x25,
       std::vector<double>(9, 1.0),
       {12, 27, 24, 63, 108, 81, 72, 117, 84}},
      // 3-D 2x2x2 box over 2x2x3: sums of two adjacent columns of both planes
      {"n1 c1 x2x2x3 k1 r2x2x2 bias0",
       false,
       {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
       std::vector<double>(8, 1.0),
       {1 + 2 + 4 + 5 + 7 + 8 + 10 + 11, 2 + 3 + 5 + 6 + 8 + 9 + 11 + 12}},
      // depthwise, channel multiplier 2: channel 0 -> outputs 0, 1; channel 1 -> 2, 3
      {"n1 c2 x2 k4 r1 g2 bias0", false, {1, 2, 3, 4}, {1, 2, 3, 4}, {1, 2, 2, 4, 9, 12, 12, 16}},
      // ONNX test_convtranspose_1d: x [0, 1, 2], w ones [1, 2, 3]
      {"n1 c1 x3 k2 r3 bias0",
       true,
       {0, 1, 2},
       std::vector<double>(6, 1.0),
       {0, 1, 3, 3, 2, 0, 1, 3, 3, 2}},
      // ONNX test_convtranspose_pads: strides [3, 2], pads [1, 2, 1, 2]
      {"n1 c1 x3x3 k2 r3x3 strides3,2 pads1,2,1,2 bias0",
       true,
       {0, 1, 2, 3, 4, 5, 6, 7, 8},
       std::vector<double>(18, 1.0),
       {1, 1, 3, 1, 1, 3, 7, 4, 9, 7, 4, 9, 7, 4, 9, 13, 7, 15, 13, 7, 15,
        1, 1, 3, 1, 1, 3, 7, 4, 9, 7, 4, 9, 7, 4, 9, 13, 7, 15, 13, 7, 15}},
      // y[2i + r] += x[i] w[r]; output_shape 7 > 6: total padding -1, the extra at the end
      {"n1 c1 x3 k1 r2 strides2 oshape7 bias0", true, {1, 2, 3}, {1, 10}, {1, 10, 2, 20, 3, 30, 0}},
      // ... with SAME_UPPER the extra goes to the beginning (pad_begin = floor(-1/2) = -1)
      {"n1 c1 x3 k1 r2 strides2 oshape7 auto=upper bias0",
       true,
       {1, 2, 3},
       {1, 10},
       {0, 1, 10, 2, 20, 3, 30}},
      // SAME_UPPER / SAME_LOWER without output_shape: O = 2 * 3, total padding 1
      {"n1 c1 x3 k1 r3 strides2 auto=upper bias0",
       true,
       {1, 2, 3},
       {1, 10, 100},
       {1, 10, 102, 20, 203, 30}},
      {"n1 c1 x3 k1 r3 strides2 auto=lower bias0",
       true,
       {1, 2, 3},
       {1, 10, 100},
       {10, 102, 20, 203, 30, 300}},
      // output_padding: one more output at the end, reached by no input
      {"n1 c1 x2 k1 r1 strides2 opad1 bias0", true, {5, 7}, {2}, {10, 0, 14, 0}},
  };
  for (const known_case& k : known) {
    const conv_nd_setup v = conv_nd(parse_case(k.text), k.transpose);
    REQUIRE_MESSAGE(numel(ys(v)) == static_cast<int64_t>(k.y.size()), k.text);
    value_rng rng("known");
    call_spec call = fwd(v, rng);
    call.inputs[0].data = k.x;
    call.inputs[1].data = k.w;
    check_known_answer(k.transpose ? "conv_transpose" : "conv_nd", k.text, call, k.y);
  }
}

// The forward's fused clamp (ABI 1.7) on shapes that take each of the cpu's paths (Winograd
// with and without padding, depthwise at stride 1 and 2, one input channel with 16 outputs, 1x1,
// im2col): the answer is clamp(conv(x, w) + b) by the direct formula here, in double, so a
// path that skipped or misplaced the clamp fails (the reference-agreement cases cannot see a
// clamp that both sides skip).
TEST_CASE("conv_nd: fused clamp (known answers)") {
  const char* const cases[] = {
      "n1 c16 x8x8 k16 r3x3 pads1,1,1,1 clip_min=0",
      "n1 c16 x9x10 k16 r3x3 clip_min=-0.1 clip_max=0.2",
      "n2 c8 x9x9 k8 r3x3 pads1,1,1,1 g8 clip_min=0 clip_max=0.1",
      "n1 c8 x10x11 k8 r3x3 strides2,2 pads1,1,1,1 g8 clip_max=0",
      "n1 c1 x12x12 k16 r3x3 clip_min=0",
      "n1 c8 x6x6 k12 r1x1 clip_min=0",
      "n1 c3 x7x7 k4 r3x3 strides2,2 clip_min=0.5 clip_max=-0.5",
  };
  for (const char* text : cases) {
    const conv_nd_setup v = conv_nd(parse_case(text), false);
    const nnp_conv_params& p = v.conv;
    value_rng rng("fused clamp");
    const call_spec call = fwd(v, rng);
    const std::vector<double>&x = call.inputs[0].data, &w = call.inputs[1].data;
    const int64_t H = v.x[0], W = v.x[1], R = v.r[0], S = v.r[1], P = v.y[0], Q = v.y[1];
    const int64_t sh = one_if_zero(p.strides[0]), sw = one_if_zero(p.strides[1]);
    const int64_t cg = v.c / v.group, kg = v.k / v.group;
    std::vector<double> want;
    for (int64_t n = 0; n < v.n; ++n)
      for (int64_t m = 0; m < v.k; ++m)
        for (int64_t oh = 0; oh < P; ++oh)
          for (int64_t ow = 0; ow < Q; ++ow) {
            double y = v.bias ? call.inputs[2].data[static_cast<size_t>(m)] : 0.0;
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t r = 0; r < R; ++r)
                for (int64_t t = 0; t < S; ++t) {
                  const int64_t ih = oh * sh - p.pads[0] + r, iw = ow * sw - p.pads[1] + t;
                  if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                  const int64_t ic = m / kg * cg + c;
                  y += x[static_cast<size_t>(((n * v.c + ic) * H + ih) * W + iw)] *
                       w[static_cast<size_t>(((m * cg + c) * R + r) * S + t)];
                }
            if (p.has_clip_min && y < p.clip_min) y = p.clip_min;
            if (p.has_clip_max && y > p.clip_max) y = p.clip_max;
            want.push_back(y);
          }
    check_known_answer("conv_nd_clamp", text, call, want, 1e-10);
  }
}

// The forward's fused max pooling (ABI 1.8) on shapes that take each of the cpu's paths (the
// Winograd output transform for 2 x 2 on planes at least 15 wide, with and without the clamp,
// whole and in blocks of tile rows (more than 256 tiles); too narrow a plane, odd sizes whose last
// row and column no window covers, windows of 3, 1-d and 3-d on im2col, depthwise): the answer is
// the windows' maxima of clamp(conv(x, w) + b) by the direct formula here, in double. A device
// without it (nnp_op_supported) is skipped.
TEST_CASE("conv_nd: fused max pooling (known answers)") {
  const char* const cases[] = {
      "n2 c16 x18x18 k16 r3x3 pads1,1,1,1 pool=2 clip_min=0",
      "n1 c16 x36x35 k16 r3x3 pool=2",  // 17 x 17 tiles: the Winograd path's blocks of tile rows
      "n1 c16 x19x21 k16 r3x3 pool=2",
      "n1 c16 x12x12 k16 r3x3 pool=2 clip_min=-0.1 clip_max=0.2",
      "n1 c2 x9x11 k3 r3x3 pads1,1,1,1 pool=3",
      "n2 c3 x13 k4 r3 strides2 pool=2 bias0",
      "n1 c2 x6x7x8 k3 r3x3x3 pads1,1,1,1,1,1 pool=2 clip_max=0",
      "n1 c8 x10x10 k8 r3x3 pads1,1,1,1 g8 pool=2 clip_min=0",
  };
  for (const char* text : cases) {
    const conv_nd_setup v = conv_nd(parse_case(text), false);
    const nnp_conv_params& p = v.conv;
    REQUIRE(v.pool > 1);
    value_rng rng("fused max pooling");
    const call_spec call = fwd(v, rng);
    const std::vector<double>&x = call.inputs[0].data, &w = call.inputs[1].data;
    // Three spatial axes, the leading unused ones of extent 1.
    const size_t k = v.x.size();
    int64_t D[3] = {1, 1, 1}, R[3] = {1, 1, 1}, O[3] = {1, 1, 1}, st[3] = {1, 1, 1},
            pb[3] = {0, 0, 0}, win[3] = {1, 1, 1};
    for (size_t i = 0; i < k; ++i) {
      const size_t a = 3 - k + i;
      D[a] = v.x[i];
      R[a] = v.r[i];
      O[a] = v.y[i];
      st[a] = one_if_zero(p.strides[i]);
      pb[a] = p.pads[i];
      win[a] = v.pool;
    }
    const int64_t cg = v.c / v.group, kg = v.k / v.group;
    const auto conv_at = [&](int64_t n, int64_t m, const int64_t* o) {
      double y = v.bias ? call.inputs[2].data[static_cast<size_t>(m)] : 0.0;
      for (int64_t c = 0; c < cg; ++c)
        for (int64_t r0 = 0; r0 < R[0]; ++r0)
          for (int64_t r1 = 0; r1 < R[1]; ++r1)
            for (int64_t r2 = 0; r2 < R[2]; ++r2) {
              const int64_t i0 = o[0] * st[0] - pb[0] + r0, i1 = o[1] * st[1] - pb[1] + r1,
                            i2 = o[2] * st[2] - pb[2] + r2;
              if (i0 < 0 || i0 >= D[0] || i1 < 0 || i1 >= D[1] || i2 < 0 || i2 >= D[2]) continue;
              const int64_t ic = m / kg * cg + c;
              y += x[static_cast<size_t>((((n * v.c + ic) * D[0] + i0) * D[1] + i1) * D[2] + i2)] *
                   w[static_cast<size_t>((((m * cg + c) * R[0] + r0) * R[1] + r1) * R[2] + r2)];
            }
      if (p.has_clip_min && y < p.clip_min) y = p.clip_min;
      if (p.has_clip_max && y > p.clip_max) y = p.clip_max;
      return y;
    };
    std::vector<double> want;
    for (int64_t n = 0; n < v.n; ++n)
      for (int64_t m = 0; m < v.k; ++m)
        for (int64_t q0 = 0; q0 < O[0] / win[0]; ++q0)
          for (int64_t q1 = 0; q1 < O[1] / win[1]; ++q1)
            for (int64_t q2 = 0; q2 < O[2] / win[2]; ++q2) {
              double best = -std::numeric_limits<double>::infinity();
              for (int64_t s0 = 0; s0 < win[0]; ++s0)
                for (int64_t s1 = 0; s1 < win[1]; ++s1)
                  for (int64_t s2 = 0; s2 < win[2]; ++s2) {
                    const int64_t o[3] = {q0 * win[0] + s0, q1 * win[1] + s1, q2 * win[2] + s2};
                    best = std::max(best, conv_at(n, m, o));
                  }
              want.push_back(best);
            }
    REQUIRE(want.size() == static_cast<size_t>(numel(ys_forward(v))));
    check_known_answer("conv_nd_max_pool", text, call, want, 1e-10);
  }
}

// Output sizes as literals (the call with the literal shape is accepted, one larger or smaller
// in any dimension refused, on every device).
TEST_CASE("conv_nd: output sizes (known answers)") {
  struct known_case {
    const char* text;
    bool transpose;
    std::vector<int64_t> y;
  };
  const std::vector<known_case> known{
      {"n1 c1 x7 k1 r3", false, {5}},
      {"n1 c1 x7 k1 r3 strides2 pads2,1", false, {4}},
      {"n1 c1 x9x8 k1 r3x3 dil2,1 pads1,0,2,1", false, {8, 7}},
      {"n1 c1 x5x6x7 k1 r3x3x3 strides2,2,3 auto=upper", false, {3, 3, 3}},
      {"n1 c1 x5x6x7 k1 r3x2x3 auto=valid", false, {3, 5, 5}},
      {"n1 c1 x3x3 k1 r3x3 strides3,2", true, {9, 7}},
      {"n1 c1 x3x3 k1 r3x3 strides3,2 oshape10,8", true, {10, 8}},
      {"n1 c1 x3x4x2 k1 r2x3x3 strides2,1,2 dil1,2,1 pads0,1,1,1,0,0 opad1,0,1", true, {6, 7, 5}},
      {"n1 c1 x4 k1 r3 strides3 auto=lower", true, {12}},
  };
  for (const known_case& k : known) {
    const conv_nd_setup v = conv_nd(parse_case(k.text), k.transpose);
    CHECK_MESSAGE(v.y == k.y, std::string(k.text) << ": computed " << shape_str(v.y));
    value_rng rng("known size");
    call_spec call = fwd(v, rng);
    call.outputs[0].shape = cat({1, 1}, k.y);
    check_output_shape(k.transpose ? "conv_transpose_out_size" : "conv_nd_out_size", k.text, call);
  }
}

// Bad arguments: NNP_STATUS_INVALID_ARGUMENT with a message naming the argument, on the reference
// (libnnplug's shape rule answers before any backend runs).
TEST_CASE("conv_nd: argument errors name the argument") {
  struct bad_case {
    const char* text;
    bool transpose;
    std::function<void(call_spec&)> edit;
    const char* needle;
  };
  const auto conv_p = [](call_spec& c) { return c.params_as<nnp_conv_params>(); };
  const auto convt_p = [](call_spec& c) { return c.params_as<nnp_conv_transpose_params>(); };
  const std::vector<bad_case> bad{
      {"n1 c2 x5 k2 r3", false, [&](call_spec& c) { conv_p(c)->strides[1] = 2; }, "strides[1]"},
      {"n1 c2 x5 k2 r3", false, [&](call_spec& c) { conv_p(c)->pads[2] = 1; }, "pads[2]"},
      {"n1 c2 x5 k2 r3", false, [&](call_spec& c) { conv_p(c)->dilations[0] = -1; },
       "dilations[0]"},
      {"n1 c2 x5 k2 r3", false, [&](call_spec& c) { conv_p(c)->kernel_shape[0] = 2; },
       "kernel_shape"},
      {"n1 c2 x5 k2 r3 pads1,1", false,
       [&](call_spec& c) { conv_p(c)->auto_pad = NNP_AUTO_PAD_SAME_UPPER; }, "params->pads"},
      {"n1 c2 x5 k2 r3", false, [&](call_spec& c) { conv_p(c)->group = 4; }, "group"},
      {"n1 c2 x2 k2 r3", false, [](call_spec&) {}, "output size"},
      {"n1 c2 x5 k2 r3", false,
       [](call_spec& c) {
         c.inputs[0].shape = {1, 2};
       },
       "inputs[0] (x)"},
      {"n1 c2 x5x5x5x5 k2 r3x3x3x3", false, [](call_spec&) {}, "inputs[0] (x)"},
      {"n1 c2 x5 k2 r3", false,
       [](call_spec& c) {
         c.inputs[1].shape = {2, 2, 3, 3};
       },
       "inputs[1] (w)"},
      {"n1 c2 x5 k2 r3", false, [](call_spec& c) { c.inputs[2].shape = {3}; }, "inputs[2] (b)"},
      // an empty filter with a huge kernel extent: refused before any size arithmetic overflows
      // (the product of a tensor's nonzero dimensions must fit int64: 2 * 2^61)
      {"n1 c2 x5 k2 r3 bias0", false,
       [&](call_spec& c) {
         c.inputs[1].shape = {0, 2, int64_t{1} << 61};
         conv_p(c)->dilations[0] = 2;
       },
       "too large"},
      {"n1 c2 x3 k2 r3 bias0", true,
       [&](call_spec& c) {
         c.inputs[1].shape = {2, 0, int64_t{1} << 61};
         convt_p(c)->dilations[0] = 2;
       },
       "too large"},
      {"n1 c2 x3 k2 r3", true, [&](call_spec& c) { convt_p(c)->output_padding[0] = -1; },
       "output_padding[0]"},
      {"n1 c2 x3 k2 r3 oshape5", true, [&](call_spec& c) { convt_p(c)->pads[0] = 1; },
       "params->pads"},
      {"n1 c2 x3x3 k2 r3x3 oshape5,5", true,
       [&](call_spec& c) { convt_p(c)->output_shape[1] = -2; }, "output_shape"},
      {"n1 c2 x3 k2 r3 pads3,2", true, [](call_spec&) {}, "output size"},
      {"n1 c2 x3 k2 r3", true,
       [](call_spec& c) {
         c.inputs[1].shape = {3, 2, 3};
       },
       "inputs[1] (w)"},
  };
  for (const bad_case& b : bad) {
    const conv_nd_setup v = conv_nd(parse_case(b.text), b.transpose);
    value_rng rng("bad");
    call_spec call = fwd(v, rng);
    b.edit(call);
    for (auto& t : call.inputs)
      if (!t.absent) t.data.resize(static_cast<size_t>(std::max<int64_t>(0, numel(t.shape))));
    const run_result r = run_op(reference_device(), call, dtype_id::f32);
    CHECK_MESSAGE(r.status == NNP_STATUS_INVALID_ARGUMENT, std::string(b.text)
                                                               << ": status " << r.status);
    CHECK_MESSAGE(r.message.find(b.needle) != std::string::npos,
                  std::string(b.text)
                      << ": message \"" << r.message << "\" does not name " << b.needle);
  }
}
