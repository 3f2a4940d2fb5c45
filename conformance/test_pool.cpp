// test_pool.cpp — max and average pooling: the 2-D pooling of ABI 1.0 (NCHW, NNP_OP_POOL2D_*)
// and N-D pooling (NNP_OP_POOL_FORWARD / _BACKWARD, 1-D, 2-D and 3-D): forward (y and, N-D,
// ONNX's Indices) and backward numerics against the reference, backward against finite
// differences of forward, known answers (N-D: ONNX's ceil_mode rule, dilations, auto_pad, empty
// windows and Indices in both storage orders), output sizes as literals and the shape rule's
// messages. Max pooling inputs are distinct values, so no window has a tie and Indices compare
// exactly.
// Cases, pool2d: cases/<list>/pool2d.txt: "n2 c3 h7 w7 mode=max r3 s3 stride2 pad1 ceil1 cip1",
// window r x s, stride/stride_h/stride_w, pad/pad_t/pad_b/pad_l/pad_r, ceil1, cip1
// (count_include_pad), global1.
// Cases, N-D: cases/<list>/pool_nd.txt:
//   "n2 c3 d7x6 mode=max k3x2 s2x1 dil1x2 pads1,0,0,1 ceil1 cip1 global1 auto=same_upper order1"
// d = spatial dims D1xD2.. (k = their count), k = kernel_shape, s = strides (default 1),
// dil = dilations (default 1), pads = ONNX pads [b_1..b_k, e_1..e_k] (default 0), ceil1 =
// ceil_mode, cip1 = count_include_pad, global1, auto=same_upper|same_lower|valid, order1 =
// storage_order 1, noidx = no Indices output for max pooling.
// Output sizes are counted here (out_size) and pinned by literals (the known-size tests), never
// taken from the shape helpers that libnnplug's validator and the backends share.
#include <doctest/doctest.h>

#include "harness.hpp"

#include <cmath>
#include <limits>

namespace {
using namespace conf;

// Output size along one dimension, by counting window positions, written out independently of
// the library (nnplug_ops.h, NNP_OP_POOL2D_FORWARD and nnp_pool_params). Windows `window` wide
// (N-D: the extent dilation*(kernel-1)+1) start at 0, stride, 2*stride, ... in the padded
// input. Floor mode counts the windows that fit in it. Ceil mode adds one partial window when
// the full ones leave the end of the padded input uncovered, unless that window would start in
// the end (bottom, right) padding (ONNX's rule, PyTorch's for 2-D).
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

struct pool_geometry {
  int64_t n, c, h, w, p, q;
  nnp_pool2d_params prm;
};

pool_geometry pool_shape(const case_line& cs) {
  pool_geometry v{};
  v.n = cs.i("n", 1);
  v.c = cs.i("c", 1);
  v.h = cs.i("h", 6);
  v.w = cs.i("w", v.h);
  auto& p = v.prm;
  p = make_params<nnp_pool2d_params>();
  p.mode = cs.s("mode", "max") == "max" ? NNP_POOL_MAX : NNP_POOL_AVERAGE;
  p.window_h = static_cast<int32_t>(cs.i("r", 2));
  p.window_w = static_cast<int32_t>(cs.i("s", p.window_h));
  read_strides_pads_2d(cs, p, p.window_h);
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
std::vector<int64_t> xs(const pool_geometry& v) { return {v.n, v.c, v.h, v.w}; }
std::vector<int64_t> ys(const pool_geometry& v) { return {v.n, v.c, v.p, v.q}; }

call_spec pool_forward(const pool_geometry& v, std::vector<double> x) {
  return make_spec(NNP_OP_POOL2D_FORWARD, v.prm, {tensor(xs(v), std::move(x))}, {tensor(ys(v))});
}
call_spec pool_backward(const pool_geometry& v, std::vector<double> x, std::vector<double> y,
                        std::vector<double> dy) {
  return make_spec(
      NNP_OP_POOL2D_BACKWARD, v.prm,
      {tensor(xs(v), std::move(x)), tensor(ys(v), std::move(y)), tensor(ys(v), std::move(dy))},
      {tensor(xs(v))});
}
// The forward output in dtype dt, computed by the reference (pool backward needs y).
std::vector<double> reference_forward(const pool_geometry& v, const std::vector<double>& x,
                                      dtype_id dt) {
  const auto out = reference_outputs(pool_forward(v, x), dt);
  return out.empty() ? std::vector<double>(static_cast<size_t>(numel(ys(v))), 0) : out[0];
}

const pool_geometry kTemplate = pool_shape(parse_case("n2 c3 h7 w6 mode=max r3 s2 stride2 pad1"));
const register_template reg_fwd("pool2d_forward", [] {
  value_rng rng("template pool");
  return pool_forward(kTemplate, rng.uniform_vec(numel(xs(kTemplate))));
});
const register_template reg_bwd("pool2d_backward", [] {
  value_rng rng("template pool bwd");
  const auto x = rng.uniform_vec(numel(xs(kTemplate)));
  return pool_backward(kTemplate, x, rng.uniform_vec(numel(ys(kTemplate))),
                       rng.uniform_vec(numel(ys(kTemplate))));
});

// The gradient check of pooling backward op `name` on one case: `forward` is the forward call
// (its x of distinct values, so that no window has a tie), backward(x, y, dy) the backward call,
// whose output 0 is dx.
void check_pool_gradient(
    const std::string& name, const std::string& case_text, call_spec forward,
    const std::function<call_spec(const std::vector<double>&, const std::vector<double>&,
                                  const std::vector<double>&)>& backward) {
  gradient_check g;
  g.name = name;
  g.case_text = case_text;
  g.forward = std::move(forward);
  g.backward = [backward](const call_spec& f, const std::vector<std::vector<double>>& out,
                          const std::vector<std::vector<double>>& r) {
    return backward(f.inputs[0].data, out[0], r[0]);
  };
  g.wrt = {{0, 0}};
  check_gradient(g);
}

}  // namespace

TEST_CASE("pool2d_forward") {
  check_numerics_cases("pool2d_forward", "pool2d", "pool2d_fwd",
                       [](const case_line& c, value_rng& rng) {
                         const pool_geometry v = pool_shape(c);
                         return pool_forward(v, rng.uniform_vec(numel(xs(v))));
                       });
}

TEST_CASE("pool2d_backward") {
  for (const case_line& c : load_cases("pool2d")) {
    value_rng rng("pool2d_bwd " + c.text);
    const pool_geometry v = pool_shape(c);
    const auto x = rng.distinct(numel(xs(v)), 1.0 / 64);
    const auto dy = rng.uniform_vec(numel(ys(v)));
    check_numerics_fn("pool2d_backward", c.text, [&](dtype_id dt) {
      std::vector<double> xq = x;
      for (double& e : xq) e = quantize(e, dt);
      return pool_backward(v, xq, reference_forward(v, xq, dt), dy);
    });
  }
}

TEST_CASE("gradient pool2d") {
  for (const case_line& c : load_cases("pool2d_grad")) {
    const pool_geometry v = pool_shape(c);
    value_rng rng("gradient pool2d " + c.text);
    check_pool_gradient(
        "pool2d_backward", c.text, pool_forward(v, rng.distinct(numel(xs(v)), 0.01)),
        [v](const auto& x, const auto& y, const auto& dy) { return pool_backward(v, x, y, dy); });
  }
}

// Known answers on every device (the reference included): outputs with ceil_mode (PyTorch's
// rule), average divisors with and without count_include_pad, max ignores padding.
TEST_CASE("pool2d_forward: known answers") {
  const std::vector<double> ones(9, 1.0), x9{1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<double> x25(25);  // 5x5: 1 .. 25
  for (size_t i = 0; i < x25.size(); ++i) x25[i] = static_cast<double>(i + 1);
  struct known_case {
    const char* text;
    std::vector<double> x, y;
  };
  const std::vector<known_case> known{
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
  for (const known_case& k : known) {
    check_known_answer("pool2d", k.text, pool_forward(pool_shape(parse_case(k.text)), k.x), k.y);
  }
}

// Output sizes as literals, on every device (the reference included): the call with the literal
// output shape must be accepted and an output one larger or smaller in any dimension refused, so
// libnnplug's validator and every backend agree with these numbers. out_size is checked against
// them too.
TEST_CASE("pool2d_forward: output sizes (known answers)") {
  const std::vector<known_size> known{
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
  for (const known_size& k : known) {
    const pool_geometry v = pool_shape(parse_case(k.text));
    CHECK_MESSAGE(v.p == k.p, std::string(k.text) << ": counted " << v.p << " rows");
    CHECK_MESSAGE(v.q == k.q, std::string(k.text) << ": counted " << v.q << " columns");
    call_spec call = pool_forward(v, std::vector<double>(static_cast<size_t>(numel(xs(v))), 1.0));
    call.outputs[0].shape = {1, 1, k.p, k.q};
    check_output_shape("pool2d_out_size", k.text, call);
  }
}

namespace {
using namespace conf;

struct pool_nd_setup {
  std::vector<int64_t> x, y;
  nnp_pool_params prm;
  bool indices;  // max pooling with the Indices output
};

pool_nd_setup pool_nd_shape(const case_line& cs) {
  pool_nd_setup v{};
  const std::vector<int64_t> d = cs.dims("d", {6, 6});
  const int k = static_cast<int>(d.size());
  v.x = {cs.i("n", 1), cs.i("c", 1)};
  v.x.insert(v.x.end(), d.begin(), d.end());
  v.y = {v.x[0], v.x[1]};
  auto& p = v.prm;
  p = make_params<nnp_pool_params>();
  p.mode = cs.s("mode", "max") == "max" ? NNP_POOL_MAX : NNP_POOL_AVERAGE;
  const std::string ap = cs.s("auto", "notset");
  p.auto_pad = ap == "same_upper"   ? NNP_AUTO_PAD_SAME_UPPER
               : ap == "same_lower" ? NNP_AUTO_PAD_SAME_LOWER
               : ap == "valid"      ? NNP_AUTO_PAD_VALID
                                    : NNP_AUTO_PAD_NOTSET;
  p.ceil_mode = static_cast<int32_t>(cs.i("ceil", 0));
  p.count_include_pad = static_cast<int32_t>(cs.i("cip", 0));
  p.global = static_cast<int32_t>(cs.i("global", 0));
  p.storage_order = static_cast<int32_t>(cs.i("order", 0));
  const auto kern = cs.dims("k", std::vector<int64_t>(static_cast<size_t>(k), 2));
  const auto str = cs.dims("s", std::vector<int64_t>(static_cast<size_t>(k), 1));
  const auto dil = cs.dims("dil", std::vector<int64_t>(static_cast<size_t>(k), 1));
  auto pads = cs.list("pads");
  pads.resize(static_cast<size_t>(2 * k), 0);
  for (int i = 0; i < k; ++i) {
    const auto u = static_cast<size_t>(i);
    p.kernel_shape[i] = static_cast<int32_t>(kern[u]);
    p.strides[i] = static_cast<int32_t>(str[u]);
    p.dilations[i] = static_cast<int32_t>(dil[u]);
    p.pads[i] = static_cast<int32_t>(pads[u]);
    p.pads[k + i] = static_cast<int32_t>(pads[u + static_cast<size_t>(k)]);
  }
  for (int i = 0; i < k; ++i) {
    const auto u = static_cast<size_t>(i);
    const int64_t in = d[u], extent = dil[u] * (kern[u] - 1) + 1, s = str[u];
    int64_t o;
    if (p.global)
      o = 1;
    else if (p.auto_pad == NNP_AUTO_PAD_SAME_UPPER || p.auto_pad == NNP_AUTO_PAD_SAME_LOWER)
      o = (in + s - 1) / s;
    else if (p.auto_pad == NNP_AUTO_PAD_VALID)
      o = count_windows(in, extent, s);
    else
      o = out_size(in, extent, s, pads[u], pads[u + static_cast<size_t>(k)], p.ceil_mode != 0);
    v.y.push_back(o);
  }
  v.indices = p.mode == NNP_POOL_MAX && !cs.has("noidx");
  return v;
}

call_spec pool_nd_forward(const pool_nd_setup& v, std::vector<double> x) {
  return make_spec(NNP_OP_POOL_FORWARD, v.prm, {tensor(v.x, std::move(x))},
                   {tensor(v.y), v.indices ? int_tensor(dtype_id::i64, v.y) : absent_tensor()});
}
call_spec pool_nd_backward(const pool_nd_setup& v, std::vector<double> x, std::vector<double> y,
                           std::vector<double> dy) {
  return make_spec(
      NNP_OP_POOL_BACKWARD, v.prm,
      {tensor(v.x, std::move(x)), tensor(v.y, std::move(y)), tensor(v.y, std::move(dy))},
      {tensor(v.x)});
}
// The forward output y in dtype dt, computed by the reference (pool backward needs it).
std::vector<double> reference_nd_forward(pool_nd_setup v, const std::vector<double>& x,
                                         dtype_id dt) {
  v.indices = false;
  const auto out = reference_outputs(pool_nd_forward(v, x), dt);
  return out.empty() ? std::vector<double>(static_cast<size_t>(numel(v.y)), 0) : out[0];
}

const pool_nd_setup kNdTemplate =
    pool_nd_shape(parse_case("n2 c3 d7x6 mode=max k3x2 s2x2 pads1,0,1,1 ceil1"));
const register_template reg_nd_fwd("pool_forward", [] {
  value_rng rng("template pool_nd");
  return pool_nd_forward(kNdTemplate, rng.distinct(numel(kNdTemplate.x), 1.0 / 64));
});
const register_template reg_nd_bwd("pool_backward", [] {
  value_rng rng("template pool_nd bwd");
  return pool_nd_backward(kNdTemplate, rng.uniform_vec(numel(kNdTemplate.x)),
                          rng.uniform_vec(numel(kNdTemplate.y)),
                          rng.uniform_vec(numel(kNdTemplate.y)));
});

// Runs `call` on every device (the reference included) in float32 and checks y within 1e-12
// NMSE (NaN and +-inf in place) and, when given, Indices exactly.
void check_known_pool(const std::string& text, const call_spec& call, const std::vector<double>& y,
                      const std::vector<double>& indices) {
  for (device_entry* d : all_devices()) {
    if (!d->available || op_supported(*d, call, dtype_id::f32, nullptr) != NNP_STATUS_OK) continue;
    const run_result r = run_op(*d, call, dtype_id::f32);
    REQUIRE_MESSAGE(r.status == NNP_STATUS_OK, d->name << ": " << text << ": " << r.message);
    std::string problem;
    const comparison cy = compare_nmse(r.outputs[0], y, 1e-12);
    if (!cy.ok) problem += "y: " + cy.detail + "; ";
    if (!indices.empty()) {
      const comparison ci = compare_exact(r.outputs[1], indices);
      if (!ci.ok) problem += "indices: " + ci.detail + "; ";
    }
    report({d->name, "pool_nd_known", "float32", "pool_nd_known " + text,
            problem.empty() ? case_outcome::pass : case_outcome::fail, 0, 0, problem});
    CHECK_MESSAGE(problem.empty(), d->name << ": pool_nd " << text << ": " << problem);
  }
}

std::vector<double> iota(int64_t n, double first = 1) {
  std::vector<double> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = first + static_cast<double>(i);
  return v;
}

// The call must be refused with INVALID_ARGUMENT and a message holding every `parts` string.
void check_refused(const std::string& what, const call_spec& call,
                   const std::vector<std::string>& parts) {
  device_entry& ref = reference_device();
  const run_result r = run_op(ref, call, dtype_id::f32);
  std::string problem;
  if (r.status != NNP_STATUS_INVALID_ARGUMENT)
    problem = std::string("returned ") + nnp_status_string(r.status) + ": " + r.message;
  for (const std::string& s : parts)
    if (problem.empty() && r.message.find(s) == std::string::npos)
      problem = "message '" + r.message + "' lacks '" + s + "'";
  report({ref.name, "pool_nd_errors", "float32", "pool_nd_errors " + what,
          problem.empty() ? case_outcome::pass : case_outcome::fail, 0, 0,
          problem.empty() ? r.message : problem});
  CHECK_MESSAGE(problem.empty(), what << ": " << problem);
}

}  // namespace

TEST_CASE("pool_forward") {
  for (const case_line& c : load_cases("pool_nd")) {
    value_rng rng("pool_nd_fwd " + c.text);
    const pool_nd_setup v = pool_nd_shape(c);
    // distinct values: no ties, so every backend's Indices must equal the reference's
    const auto x = rng.distinct(numel(v.x), 1.0 / 64);
    check_numerics("pool_forward", c.text, pool_nd_forward(v, x));
  }
}

TEST_CASE("pool_backward") {
  for (const case_line& c : load_cases("pool_nd")) {
    value_rng rng("pool_nd_bwd " + c.text);
    const pool_nd_setup v = pool_nd_shape(c);
    const auto x = rng.distinct(numel(v.x), 1.0 / 64);
    const auto dy = rng.uniform_vec(numel(v.y));
    check_numerics_fn("pool_backward", c.text, [&](dtype_id dt) {
      std::vector<double> xq = x;
      for (double& e : xq) e = quantize(e, dt);
      return pool_nd_backward(v, xq, reference_nd_forward(v, xq, dt), dy);
    });
  }
}

TEST_CASE("gradient pool_nd") {
  for (const case_line& c : load_cases("pool_nd_grad")) {
    pool_nd_setup v = pool_nd_shape(c);
    v.indices = false;
    value_rng rng("gradient pool_nd " + c.text);
    check_pool_gradient("pool_backward", c.text, pool_nd_forward(v, rng.distinct(numel(v.x), 0.01)),
                        [v](const auto& x, const auto& y, const auto& dy) {
                          return pool_nd_backward(v, x, y, dy);
                        });
  }
}

// Known answers on every device (the reference included).
TEST_CASE("pool_forward: known answers") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> x5 = iota(5), pi7{3, 1, 4, 1, 5, 9, 2};
  struct known_case {
    const char* text;
    std::vector<double> x, y, indices;  // indices empty: not requested (average)
  };
  std::vector<double> x3d = iota(24, 0);  // [2, 1, 2, 3, 2]; one large value per sample
  x3d[3] = 100;
  x3d[12 + 3] = 200;
  std::vector<double> x2d = iota(24, 100);  // [1, 2, 3, 4]: 100 + flat index
  const std::vector<known_case> known{
      // ONNX's ceil_mode rule: ceil((5+2-2)/2)+1 = 4 windows, but the 4th would start in the
      // end padding (at 5 >= 5 + 1 - 1), so it is dropped: windows at -1, 1, 3
      {"d5 mode=max k2 s2 pads1,1 ceil1", x5, {1, 3, 5}, {0, 2, 4}},
      {"d5 mode=avg k2 s2 pads1,1 ceil1", x5, {1, 2.5, 4.5}, {}},
      {"d5 mode=avg k2 s2 pads1,1 ceil1 cip1", x5, {0.5, 2.5, 4.5}, {}},
      // ceil_mode adds a partial window at 4 (taps 4, 5); count_include_pad clips its divisor
      // to the padded extent [0, 5): 1 tap
      {"d5 mode=max k2 s2 ceil1", x5, {2, 4, 5}, {1, 3, 4}},
      {"d5 mode=avg k2 s2 ceil1", x5, {1.5, 3.5, 5}, {}},
      {"d5 mode=avg k2 s2 ceil1 cip1", x5, {1.5, 3.5, 5}, {}},
      // dilation 2, 3 taps (extent 5), padding 2: windows at -2, 0, 2, 4; the first maximum
      {"d7 mode=max k3 s2 dil2 pads2,2", pi7, {4, 5, 5, 5}, {2, 4, 4, 4}},
      {"d7 mode=avg k3 s2 dil2 pads2,2", pi7, {3.5, 4, 11. / 3, 3.5}, {}},
      {"d7 mode=avg k3 s2 dil2 pads2,2 cip1", pi7, {7. / 3, 4, 11. / 3, 7. / 3}, {}},
      // auto_pad: SAME_UPPER pads 0 + 1, SAME_LOWER 1 + 0, VALID none
      {"d5 mode=max k2 s2 auto=same_upper", x5, {2, 4, 5}, {1, 3, 4}},
      {"d5 mode=max k2 s2 auto=same_lower", x5, {1, 3, 5}, {0, 2, 4}},
      {"d5 mode=avg k2 s2 auto=same_lower cip1", x5, {0.5, 2.5, 4.5}, {}},
      {"d5 mode=max k2 s2 auto=valid", x5, {2, 4}, {1, 3}},
      // empty windows (dilation 3 skips the one element): windows at -2 (taps -2, 1), -1
      // (taps -1, 2) and 0 (taps 0, 3)
      {"d1 mode=max k2 dil3 pads2,3", {6}, {-inf, -inf, 6}, {-1, -1, 0}},
      {"d1 mode=avg k2 dil3 pads2,3", {6}, {nan, nan, 6}, {}},
      {"d1 mode=avg k2 dil3 pads2,3 cip1", {6}, {0, 0, 3}, {}},
      // Indices: 2 channels of 3x4 (100 + flat index), 2x2 windows at stride 2: the maxima
      // sit at (1, 1) and (1, 3) of each plane; column-major within the plane: h + w*3
      {"c2 d3x4 mode=max k2x2 s2x2", x2d, {105, 107, 117, 119}, {5, 7, 17, 19}},
      {"c2 d3x4 mode=max k2x2 s2x2 order1", x2d, {105, 107, 117, 119}, {4, 10, 16, 22}},
      // 3-D, 2 samples of [2, 3, 2], global: the maximum at (0, 1, 1) of each sample;
      // row-major (0*3 + 1)*2 + 1 = 3, column-major 0 + 1*2 + 1*2*3 = 8 (+ 12 per sample)
      {"n2 d2x3x2 mode=max global1", x3d, {100, 200}, {3, 15}},
      {"n2 d2x3x2 mode=max global1 order1", x3d, {100, 200}, {8, 20}},
      {"n2 d2x3x2 mode=avg global1", x3d, {(66. - 3 + 100) / 12, (210. - 15 + 200) / 12}, {}},
  };
  for (const known_case& k : known) {
    const pool_nd_setup v = pool_nd_shape(parse_case(k.text));
    check_known_pool(k.text, pool_nd_forward(v, k.x), k.y, k.indices);
  }
}

// Backward known answers: max routes to the first maximum (ties too), average spreads with the
// forward's divisor.
TEST_CASE("pool_backward: known answers") {
  const std::vector<double> x{1, 7, 7, 2, 5}, dy{1, 10};
  const pool_nd_setup mx =
      pool_nd_shape(parse_case("d5 mode=max k3 s2"));  // windows {0,1,2} {2,3,4}
  // window 0: the first 7 (index 1); window 1: 7 at index 2
  check_known_answer("pool_nd_bwd", "d5 mode=max k3 s2", pool_nd_backward(mx, x, {7, 7}, dy),
                     {0, 1, 10, 0, 0});
  const pool_nd_setup av = pool_nd_shape(parse_case("d5 mode=avg k3 s2 pads1,1 cip1"));
  // windows at -1, 1, 3: divisors 3 (padding included)
  check_known_answer("pool_nd_bwd", "d5 mode=avg k3 s2 pads1,1 cip1",
                     pool_nd_backward(av, x, {0, 0, 0}, {3, 6, 9}), {1, 3, 2, 5, 3});
}

// Output sizes as literals, on every device: the call with the literal shape must be accepted
// and one a size off in any dimension refused. out_size is checked against them too.
TEST_CASE("pool_forward: output sizes (known answers)") {
  struct known_case {
    const char* text;
    std::vector<int64_t> y;
  };
  const std::vector<known_case> known{
      {"d5 mode=max k2 s2 pads1,1 ceil1", {3}},  // ONNX's rule drops a 4th window
      {"d5 mode=max k2 s2 ceil1", {3}},
      {"d5 mode=max k2 s2", {2}},
      {"d7 mode=max k3 s2 dil2 pads2,2", {4}},
      {"d10 mode=avg k3 s3 dil2", {2}},        // extent 5: full windows at 0 and 3
      {"d10 mode=avg k3 s3 dil2 ceil1", {3}},  // and a partial one at 6 with ceil_mode
      {"d5 mode=max k2 s2 auto=same_upper", {3}},
      {"d5 mode=max k2 s3 auto=same_lower", {2}},
      {"d5 mode=max k3 s2 dil2 auto=valid", {1}},
      {"d7x6 mode=max k3x2 s2x2 pads1,0,1,1 ceil1", {4, 3}},
      {"d5x5 mode=max k2x2 s2x2 pads1,1,1,1 ceil1", {3, 3}},
      {"d4x5x6 mode=avg k2x3x2 s2x1x3 dil1x2x1 pads1,0,1,0,1,1", {2, 2, 3}},
      {"d4x5x6 mode=avg global1", {1, 1, 1}},
      {"d4x5x6 mode=max k9x1x1 s1x1x1 global1", {1, 1, 1}},  // window fields ignored
  };
  for (const known_case& k : known) {
    pool_nd_setup v = pool_nd_shape(parse_case(k.text));
    v.indices = false;
    std::vector<int64_t> want{1, 1};
    want.insert(want.end(), k.y.begin(), k.y.end());
    CHECK_MESSAGE(v.y == want, k.text << ": counted " << shape_str(v.y));
    call_spec call = pool_nd_forward(v, std::vector<double>(static_cast<size_t>(numel(v.x)), 1.0));
    call.outputs[0].shape = want;
    check_output_shape("pool_nd_out_size", k.text, call);
  }
}

// The shape rule: each bad argument is refused with a message naming it.
TEST_CASE("pool_forward: invalid arguments") {
  const auto call_of = [](const char* text, const std::function<void(pool_nd_setup&)>& edit) {
    pool_nd_setup v = pool_nd_shape(parse_case(text));
    edit(v);
    return pool_nd_forward(v, std::vector<double>(static_cast<size_t>(numel(v.x)), 1.0));
  };
  check_refused("rank 2",
                call_of("d4 mode=max k2",
                        [](pool_nd_setup& v) {
                          v.x = {4, 4};
                        }),
                {"inputs[0] (x)", "expected rank 3, 4 or 5", "got rank 2"});
  check_refused("kernel_shape 0",
                call_of("d4x4 mode=max k2x2", [](pool_nd_setup& v) { v.prm.kernel_shape[1] = 0; }),
                {"params->kernel_shape[1]", "expected >= 1", "got 0"});
  check_refused("kernel_shape beyond k",
                call_of("d4x4 mode=max k2x2", [](pool_nd_setup& v) { v.prm.kernel_shape[2] = 2; }),
                {"params->kernel_shape[2]", "expected 0", "k = 2"});
  check_refused("negative stride",
                call_of("d4x4 mode=max k2x2", [](pool_nd_setup& v) { v.prm.strides[0] = -1; }),
                {"params->strides[0]", "expected >= 0"});
  check_refused("pad >= extent",
                call_of("d6 mode=max k2 dil2", [](pool_nd_setup& v) { v.prm.pads[1] = 3; }),
                {"params->pads[1]", "< the effective kernel", "= 3", "(end)", "got 3"});
  check_refused("pad beyond 2k",
                call_of("d6 mode=max k2", [](pool_nd_setup& v) { v.prm.pads[2] = 1; }),
                {"params->pads[2]", "first 2k entries"});
  check_refused(
      "pads with auto_pad",
      call_of("d6 mode=max k2 auto=same_upper", [](pool_nd_setup& v) { v.prm.pads[0] = 1; }),
      {"params->pads[0]", "auto_pad = SAME_UPPER"});
  check_refused("window larger than x",
                call_of("d3 mode=max k2", [](pool_nd_setup& v) { v.prm.kernel_shape[0] = 5; }),
                {"output size O1 = 0", "expected >= 1"});
  check_refused("indices for average",
                call_of("d6 mode=avg k2", [](pool_nd_setup& v) { v.indices = true; }),
                {"outputs[1] (indices)", "only max pooling"});
  check_refused("wrong y shape",
                call_of("d6 mode=max k2", [](pool_nd_setup& v) { v.y.back() += 1; }),
                {"outputs[0] (y)", "expected shape [1, 1, 5]"});
}

TEST_CASE("pool_forward: nnp_op_infer_shapes") {
  const pool_nd_setup v = pool_nd_shape(parse_case("n2 c3 d9x8x7 mode=max k3x2x2 s2x2x3 ceil1"));
  int64_t shape[5] = {2, 3, 9, 8, 7};
  DLTensor x{};
  x.data = nullptr;
  x.device = DLDevice{kDLCPU, 0};
  x.ndim = 5;
  x.dtype = DLDataType{kDLFloat, 32, 1};
  x.shape = shape;
  const DLTensor* in[] = {&x};
  nnp_shape out[2]{};
  REQUIRE(nnp_op_infer_shapes(NNP_OP_POOL_FORWARD, &v.prm, 1, in, 2, out) == NNP_STATUS_OK);
  for (int o = 0; o < 2; ++o) {
    REQUIRE(out[o].ndim == 5);
    for (int i = 0; i < 5; ++i) CHECK(out[o].dims[i] == v.y[static_cast<size_t>(i)]);
  }
  CHECK(out[1].dtype.code == kDLInt);
  CHECK(out[1].dtype.bits == 64);
  // average pooling: y only; backward: dx has x's shape
  pool_nd_setup a = pool_nd_shape(parse_case("n2 c3 d9x8x7 mode=avg k3x2x2 s2x2x3 ceil1"));
  nnp_shape one[1]{};
  REQUIRE(nnp_op_infer_shapes(NNP_OP_POOL_FORWARD, &a.prm, 1, in, 1, one) == NNP_STATUS_OK);
  for (int i = 0; i < 5; ++i) CHECK(one[0].dims[i] == a.y[static_cast<size_t>(i)]);
  int64_t yshape[5] = {a.y[0], a.y[1], a.y[2], a.y[3], a.y[4]};
  DLTensor y = x;
  y.shape = yshape;
  const DLTensor* bin[] = {&x, &y, &y};
  REQUIRE(nnp_op_infer_shapes(NNP_OP_POOL_BACKWARD, &a.prm, 3, bin, 1, one) == NNP_STATUS_OK);
  for (int i = 0; i < 5; ++i) CHECK(one[0].dims[i] == shape[i]);
}
