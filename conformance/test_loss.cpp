// test_loss.cpp — losses: softmax cross-entropy (NNP_OP_SOFTMAX_CROSS_ENTROPY_*: int64 labels,
// reduction mean/sum/none, ignore_index) and the ONNX losses of ABI 1.2, nll_loss (ONNX
// NegativeLogLikelihoodLoss) and softmax_cross_entropy_loss (ONNX SoftmaxCrossEntropyLoss):
// forward (loss, optional log_prob) and backward numerics against the reference, backward
// against finite differences of forward, known answers (the ONNX losses' computed by hand from
// the ONNX reference formulas) and the shape rule's messages.
// Cases, softmax cross-entropy: cases/<list>/cross_entropy.txt: "n8 c10 red=mean ignore=3
// logprob1", range=R (logits in [-R, R]), offset=O (logits shifted by O), badlabel1 (label C:
// NaN loss), allignored1 (mean over no samples: NaN).
// Cases, ONNX losses: cases/<list>/nll_loss.txt and sce_loss.txt, e.g.
//   "n4 c5 d3x2 red=mean ignore=-1 weight1 logprob1 range=4 offset=1e5"
// n samples, c classes, d = extra dims d1..dk (none: [N, C]), red=mean|sum|none|zero (zero:
// the field left 0, read as mean), ignore=K (ignore_index K; every third target is set to it),
// weight1 (class weights in [0.25, 2]), badtarget=V (target 0 is V, outside [0, C) and not
// ignored: NaN), allignored1 (every target ignored: mean is 0/0 = NaN), logprob1 (sce: also
// output log_prob), range/offset (scores uniform in [offset - range, offset + range]).
#include <doctest/doctest.h>

#include "harness.hpp"

#include <cmath>

namespace {
using namespace conf;

struct ce_setup {
  int64_t n, c;
  nnp_softmax_cross_entropy_params p;
  bool log_prob;
  double range;      // logits uniform in [offset - range, offset + range]
  double offset;     // 1e4, 1e5: catches log-softmax computed as x - (max + log sum)
  bool bad_label;    // label 0 is C (out of range, not ignored): loss NaN
  bool all_ignored;  // every label is ignore_index: mean gives 0/0 = NaN
};

ce_setup ce_case(const case_line& cs) {
  ce_setup v{};
  v.n = cs.i("n", 4);
  v.c = cs.i("c", 5);
  v.p = make_params<nnp_softmax_cross_entropy_params>();
  const std::string red = cs.s("red", "mean");
  v.p.reduction = red == "sum"    ? NNP_REDUCTION_SUM
                  : red == "none" ? NNP_REDUCTION_NONE
                                  : NNP_REDUCTION_MEAN;
  v.p.has_ignore_index = cs.has("ignore") ? 1 : 0;
  v.p.ignore_index = cs.i("ignore", 0);
  v.log_prob = cs.i("logprob", 0) != 0;
  v.range = cs.d("range", 4);
  v.offset = cs.d("offset", 0);
  v.bad_label = cs.i("badlabel", 0) != 0;
  v.all_ignored = cs.i("allignored", 0) != 0 && v.p.has_ignore_index;
  return v;
}
std::vector<int64_t> loss_shape(const ce_setup& v) {
  return v.p.reduction == NNP_REDUCTION_NONE ? std::vector<int64_t>{v.n} : std::vector<int64_t>{};
}
// Labels in [0, C); with ignore_index, every third sample is ignored.
std::vector<double> labels(const ce_setup& v, value_rng& rng) {
  std::vector<double> l(static_cast<size_t>(v.n));
  for (size_t i = 0; i < l.size(); ++i) {
    l[i] = static_cast<double>(rng.integer(0, v.c - 1));
    if (v.p.has_ignore_index && (i % 3 == 1 || v.all_ignored))
      l[i] = static_cast<double>(v.p.ignore_index);
  }
  if (v.bad_label && !l.empty()) l[0] = static_cast<double>(v.c);
  return l;
}
call_spec ce_forward(const ce_setup& v, std::vector<double> logits, std::vector<double> lab) {
  return make_spec(
      NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD, v.p,
      {tensor({v.n, v.c}, std::move(logits)), int_tensor(dtype_id::i64, {v.n}, std::move(lab))},
      {tensor(loss_shape(v)), v.log_prob ? tensor({v.n, v.c}) : absent_tensor()});
}
call_spec ce_backward(const ce_setup& v, std::vector<double> logits, std::vector<double> lab,
                      std::vector<double> dloss) {
  return make_spec(
      NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD, v.p,
      {tensor({v.n, v.c}, std::move(logits)), int_tensor(dtype_id::i64, {v.n}, std::move(lab)),
       tensor(loss_shape(v), std::move(dloss))},
      {tensor({v.n, v.c})});
}

const register_template reg_fwd("softmax_cross_entropy_forward", [] {
  value_rng rng("template ce");
  const ce_setup v = ce_case(parse_case("n6 c4 red=mean logprob1"));
  return ce_forward(v, rng.uniform_vec(24), labels(v, rng));
});
const register_template reg_bwd("softmax_cross_entropy_backward", [] {
  value_rng rng("template ce bwd");
  const ce_setup v = ce_case(parse_case("n6 c4 red=none"));
  const auto lab = labels(v, rng);
  return ce_backward(v, rng.uniform_vec(24), lab, rng.uniform_vec(6));
});

}  // namespace

TEST_CASE("softmax_cross_entropy_forward") {
  check_numerics_cases("softmax_cross_entropy_forward", "cross_entropy", "ce_fwd",
                       [](const case_line& c, value_rng& rng) {
                         const ce_setup v = ce_case(c);
                         const auto logits =
                             rng.uniform_vec(v.n * v.c, v.offset - v.range, v.offset + v.range);
                         return ce_forward(v, logits, labels(v, rng));
                       });
}

TEST_CASE("softmax_cross_entropy_backward") {
  for (const case_line& c : load_cases("cross_entropy")) {
    value_rng rng("ce_bwd " + c.text);
    const ce_setup v = ce_case(c);
    if (v.bad_label) continue;  // backward of an out-of-range label is not specified
    const auto logits = rng.uniform_vec(v.n * v.c, v.offset - v.range, v.offset + v.range);
    const auto lab = labels(v, rng);
    check_numerics("softmax_cross_entropy_backward", c.text,
                   ce_backward(v, logits, lab, rng.uniform_vec(numel(loss_shape(v)))));
  }
}

TEST_CASE("gradient softmax_cross_entropy") {
  for (const case_line& c : load_cases("cross_entropy")) {
    const ce_setup v = ce_case(c);
    if (v.n * v.c > 512 || v.bad_label || v.all_ignored) continue;
    value_rng rng("gradient ce " + c.text);
    gradient_check g;
    g.name = "softmax_cross_entropy_backward";
    g.case_text = c.text;
    g.forward = ce_forward(v, rng.uniform_vec(v.n * v.c, -3, 3), labels(v, rng));
    g.backward = [v](const call_spec& f, const auto&, const auto& r) {
      return ce_backward(v, f.inputs[0].data, f.inputs[1].data, r[0]);
    };
    g.wrt = {{0, 0}};
    check_gradient(g);
  }
}

// Known answers from nnplug_ops.h on every device (the reference included): an out-of-range
// label that is not ignored gives NaN; mean over zero non-ignored samples is 0/0 = NaN; with
// equal logits the loss is log(C); ignored samples contribute 0 and zero gradient rows.
TEST_CASE("softmax_cross_entropy: known answers") {
  const double nan = std::nan("");
  struct known_case {
    const char* text;
    std::vector<double> labels, loss;
  };
  const std::vector<known_case> known{
      {"n2 c4 red=none", {0, 3}, {std::log(4.0), std::log(4.0)}},
      {"n2 c4 red=sum", {1, 2}, {2 * std::log(4.0)}},
      {"n2 c4 red=none", {4, 1}, {nan, std::log(4.0)}},
      {"n2 c4 red=mean ignore=3", {3, 3}, {nan}},
      {"n2 c4 red=none ignore=3", {3, 0}, {0, std::log(4.0)}},
  };
  for (const known_case& k : known) {
    const call_spec call =
        ce_forward(ce_case(parse_case(k.text)), std::vector<double>(8, 0.5), k.labels);
    check_known_answer("cross_entropy", k.text, call, k.loss);
  }
  // Logits [1e5, 1e5+1, 1e5+2, 1e5+3] (exact in float32): the loss of label c is
  // log(1 + e^-1 + e^-2 + e^-3) + 3 - c, computed as log(sum) - (x - max).
  const double lse = std::log(1 + std::exp(-1.0) + std::exp(-2.0) + std::exp(-3.0));
  const ce_setup v = ce_case(parse_case("n2 c4 red=none logprob1"));
  const call_spec call =
      ce_forward(v, {1e5, 1e5 + 1, 1e5 + 2, 1e5 + 3, -1e5, -1e5 + 1, -1e5 + 2, -1e5 + 3}, {3, 1});
  check_known_answer("cross_entropy", "n2 c4 red=none offset=+-1e5", call, {lse, lse + 2});
}

namespace {
using namespace conf;

struct loss_setup {
  bool sce;  // softmax_cross_entropy_loss, else nll_loss
  int64_t n, c;
  std::vector<int64_t> dims;  // d1..dk
  int32_t reduction;
  bool has_ignore;
  int64_t ignore_index;
  bool weight, log_prob, all_ignored, bad;
  int64_t bad_target;
  double range, offset;

  std::vector<int64_t> input_shape() const {
    std::vector<int64_t> s{n, c};
    s.insert(s.end(), dims.begin(), dims.end());
    return s;
  }
  std::vector<int64_t> target_shape() const {
    std::vector<int64_t> s{n};
    s.insert(s.end(), dims.begin(), dims.end());
    return s;
  }
  std::vector<int64_t> loss_shape() const {
    return reduction == NNP_REDUCTION_NONE ? target_shape() : std::vector<int64_t>{};
  }
  template <typename P>
  P params() const {
    auto p = make_params<P>();
    p.reduction = reduction;
    p.has_ignore_index = has_ignore ? 1 : 0;
    p.ignore_index = ignore_index;
    return p;
  }
};

loss_setup loss_case(const case_line& cs, bool sce) {
  loss_setup v{};
  v.sce = sce;
  v.n = cs.i("n", 4);
  v.c = cs.i("c", 5);
  v.dims = cs.dims("d");
  const std::string red = cs.s("red", "mean");
  v.reduction = NNP_REDUCTION_MEAN;
  if (red == "sum") v.reduction = NNP_REDUCTION_SUM;
  if (red == "none") v.reduction = NNP_REDUCTION_NONE;
  if (red == "zero") v.reduction = 0;
  v.has_ignore = cs.has("ignore");
  v.ignore_index = cs.i("ignore", -100);
  v.weight = cs.i("weight", 0) != 0;
  v.log_prob = sce && cs.i("logprob", 0) != 0;
  v.all_ignored = cs.i("allignored", 0) != 0 && v.has_ignore;
  v.bad = cs.has("badtarget");
  v.bad_target = cs.i("badtarget", 0);
  v.range = cs.d("range", sce ? 4 : 3);
  v.offset = cs.d("offset", 0);
  return v;
}

// Targets in [0, C); with ignore_index every third one (all with allignored1) is set to it.
std::vector<double> targets(const loss_setup& v, value_rng& rng) {
  std::vector<double> t(static_cast<size_t>(numel(v.target_shape())));
  for (size_t i = 0; i < t.size(); ++i) {
    t[i] = v.c > 0 ? static_cast<double>(rng.integer(0, v.c - 1)) : 0.0;
    if (v.has_ignore && (i % 3 == 1 || v.all_ignored)) t[i] = static_cast<double>(v.ignore_index);
  }
  if (v.bad && !t.empty()) t[0] = static_cast<double>(v.bad_target);
  return t;
}
// Scores (sce) or log-probabilities (nll: uniform in [-range, 0] shifted by offset).
std::vector<double> inputs(const loss_setup& v, value_rng& rng) {
  const int64_t n = numel(v.input_shape());
  return v.sce ? rng.uniform_vec(n, v.offset - v.range, v.offset + v.range)
               : rng.uniform_vec(n, v.offset - v.range, v.offset);
}
std::vector<double> weights(const loss_setup& v, value_rng& rng) {
  return v.weight ? rng.uniform_vec(v.c, 0.25, 2.0) : std::vector<double>{};
}

tensor_spec weight_tensor(const loss_setup& v, std::vector<double> w) {
  return v.weight ? tensor({v.c}, std::move(w)) : absent_tensor();
}

call_spec loss_forward(const loss_setup& v, std::vector<double> x, std::vector<double> t,
                       std::vector<double> w) {
  std::vector<tensor_spec> in{tensor(v.input_shape(), std::move(x)),
                              int_tensor(dtype_id::i64, v.target_shape(), std::move(t)),
                              weight_tensor(v, std::move(w))};
  if (!v.sce)
    return make_spec(NNP_OP_NLL_LOSS_FORWARD, v.params<nnp_nll_loss_params>(), std::move(in),
                     {tensor(v.loss_shape())});
  return make_spec(
      NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_FORWARD, v.params<nnp_softmax_cross_entropy_loss_params>(),
      std::move(in),
      {tensor(v.loss_shape()), v.log_prob ? tensor(v.input_shape()) : absent_tensor()});
}
call_spec loss_backward(const loss_setup& v, std::vector<double> x, std::vector<double> t,
                        std::vector<double> dloss, std::vector<double> w) {
  std::vector<tensor_spec> in{tensor(v.input_shape(), std::move(x)),
                              int_tensor(dtype_id::i64, v.target_shape(), std::move(t)),
                              tensor(v.loss_shape(), std::move(dloss)),
                              weight_tensor(v, std::move(w))};
  if (!v.sce)
    return make_spec(NNP_OP_NLL_LOSS_BACKWARD, v.params<nnp_nll_loss_params>(), std::move(in),
                     {tensor(v.input_shape())});
  return make_spec(NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_BACKWARD,
                   v.params<nnp_softmax_cross_entropy_loss_params>(), std::move(in),
                   {tensor(v.input_shape())});
}

const char* fwd_name(bool sce) {
  return sce ? "softmax_cross_entropy_loss_forward" : "nll_loss_forward";
}
const char* bwd_name(bool sce) {
  return sce ? "softmax_cross_entropy_loss_backward" : "nll_loss_backward";
}
const char* family(bool sce) { return sce ? "sce_loss" : "nll_loss"; }

call_spec template_forward(bool sce) {
  value_rng rng(std::string("template ") + family(sce));
  const loss_setup v = loss_case(parse_case("n3 c4 d2 red=mean ignore=1 weight1 logprob1"), sce);
  return loss_forward(v, inputs(v, rng), targets(v, rng), weights(v, rng));
}
call_spec template_backward(bool sce) {
  value_rng rng(std::string("template bwd ") + family(sce));
  const loss_setup v = loss_case(parse_case("n3 c4 d2 red=none ignore=1 weight1"), sce);
  const auto x = inputs(v, rng);
  const auto t = targets(v, rng);
  return loss_backward(v, x, t, rng.uniform_vec(numel(v.loss_shape())), weights(v, rng));
}
const register_template reg_nll_fwd("nll_loss_forward", [] { return template_forward(false); });
const register_template reg_nll_bwd("nll_loss_backward", [] { return template_backward(false); });
const register_template reg_sce_fwd("softmax_cross_entropy_loss_forward",
                                    [] { return template_forward(true); });
const register_template reg_sce_bwd("softmax_cross_entropy_loss_backward",
                                    [] { return template_backward(true); });

void forward_numerics(bool sce) {
  check_numerics_cases(fwd_name(sce), family(sce), std::string(family(sce)) + "_fwd",
                       [sce](const case_line& c, value_rng& rng) {
                         const loss_setup v = loss_case(c, sce);
                         const auto x = inputs(v, rng);
                         const auto t = targets(v, rng);
                         return loss_forward(v, x, t, weights(v, rng));
                       });
}

void backward_numerics(bool sce) {
  for (const case_line& c : load_cases(family(sce))) {
    value_rng rng(std::string(family(sce)) + "_bwd " + c.text);
    const loss_setup v = loss_case(c, sce);
    const auto x = inputs(v, rng);
    const auto t = targets(v, rng);
    const auto w = weights(v, rng);
    check_numerics(bwd_name(sce), c.text,
                   loss_backward(v, x, t, rng.uniform_vec(numel(v.loss_shape())), w));
  }
}

void gradients(bool sce) {
  for (const case_line& c : load_cases(family(sce))) {
    const loss_setup v = loss_case(c, sce);
    const int64_t size = numel(v.input_shape());
    if (size == 0 || size > 512 || v.bad || v.all_ignored) continue;
    value_rng rng(std::string("gradient ") + family(sce) + " " + c.text);
    gradient_check g;
    g.name = bwd_name(sce);
    g.case_text = c.text;
    const auto x = rng.uniform_vec(numel(v.input_shape()), -3, sce ? 3 : 0);
    const auto t = targets(v, rng);
    g.forward = loss_forward(v, x, t, weights(v, rng));
    g.backward = [v](const call_spec& f, const auto&, const auto& r) {
      return loss_backward(v, f.inputs[0].data, f.inputs[1].data, r[0], f.inputs[2].data);
    };
    g.wrt = {{0, 0}};
    check_gradient(g);
  }
}

// A hand-written call: input values x, targets t, weights w (empty: none).
call_spec known_call(const char* text, bool sce, std::vector<double> x, std::vector<double> t,
                     std::vector<double> w = {}) {
  loss_setup v = loss_case(parse_case(text), sce);
  v.weight = !w.empty();
  return loss_forward(v, std::move(x), std::move(t), std::move(w));
}

}  // namespace

TEST_CASE("nll_loss_forward") { forward_numerics(false); }
TEST_CASE("nll_loss_backward") { backward_numerics(false); }
TEST_CASE("gradient nll_loss") { gradients(false); }
TEST_CASE("softmax_cross_entropy_loss_forward") { forward_numerics(true); }
TEST_CASE("softmax_cross_entropy_loss_backward") { backward_numerics(true); }
TEST_CASE("gradient softmax_cross_entropy_loss") { gradients(true); }

// Known answers from ONNX NegativeLogLikelihoodLoss's reference formulas (onnx/reference ops):
// loss = -input[n, t, d] * weight[t]; mean divides by the sum of the gathered weights of the
// non-ignored targets. input [2, 3] = [[-1, -2, -3], [-0.5, -1.5, -2.5]], weight
// [0.2, 0.3, 0.5].
TEST_CASE("nll_loss: known answers") {
  const double nan = std::nan("");
  const std::vector<double> x{-1, -2, -3, -0.5, -1.5, -2.5};
  const std::vector<double> w{0.2, 0.3, 0.5};
  struct known_case {
    const char* text;
    std::vector<double> t, w, loss;
  };
  const std::vector<known_case> known{
      {"n2 c3 red=none", {2, 0}, w, {1.5, 0.1}},
      {"n2 c3 red=sum", {2, 0}, w, {1.6}},
      {"n2 c3 red=mean", {2, 0}, w, {1.6 / 0.7}},
      {"n2 c3 red=zero", {2, 0}, w, {1.6 / 0.7}},  // zeroed reduction field: mean
      {"n2 c3 red=mean", {2, 1}, {}, {(3 + 1.5) / 2}},
      // ignore_index inside [0, C): the ignored target weighs nothing in the mean
      {"n2 c3 red=none ignore=0", {2, 0}, w, {1.5, 0}},
      {"n2 c3 red=mean ignore=0", {2, 0}, w, {1.5 / 0.5}},
      // negative ignore_index, and one outside [0, C)
      {"n2 c3 red=none ignore=-1", {-1, 2}, {}, {0, 2.5}},
      {"n2 c3 red=mean ignore=-1", {-1, 2}, w, {2.5 * 0.5 / 0.5}},
      {"n2 c3 red=sum ignore=7", {7, 1}, w, {1.5 * 0.3}},
      {"n2 c3 red=mean ignore=7", {7, 7}, {}, {nan}},  // 0/0
      // targets outside [0, C) that are not ignored: NaN (and a NaN sum / mean)
      {"n2 c3 red=none", {3, 0}, {}, {nan, 0.5}},
      {"n2 c3 red=none ignore=-100", {-1, 0}, w, {nan, 0.1}},
      {"n2 c3 red=sum", {0, 3}, w, {nan}},
      {"n2 c3 red=mean ignore=5", {-7, 0}, w, {nan}},
  };
  for (const known_case& k : known)
    check_known_answer("nll_loss", k.text, known_call(k.text, false, x, k.t, k.w), k.loss);

  // Extra dims: input [1, 2, 2] (N = 1, C = 2, d1 = 2), target [[1, 0]]:
  // loss[0, d] = -input[0, t_d, d] = [-(-2), -(-3)].
  const std::vector<double> x3{-1, -3, -2, -4};  // [n0 c0 d0, c0 d1, c1 d0, c1 d1]
  check_known_answer("nll_loss", "n1 c2 d2 red=none",
                     known_call("n1 c2 d2 red=none", false, x3, {1, 0}), {2, 3});
  check_known_answer("nll_loss", "n1 c2 d2 red=mean weights",
                     known_call("n1 c2 d2 red=mean", false, x3, {1, 0}, {3, 1}),
                     {(2 * 1 + 3 * 3) / 4.0});
}

// Backward known answers: dinput = -w[t] * g at the target's class; mean divides by sum w.
TEST_CASE("nll_loss_backward: known answers") {
  const double nan = std::nan("");
  const std::vector<double> x{-1, -2, -3, -0.5, -1.5, -2.5};
  loss_setup v = loss_case(parse_case("n2 c3 red=mean ignore=-1"), false);
  v.weight = true;
  check_known_answer("nll_loss_backward", "n2 c3 red=mean ignore=-1 weight",
                     loss_backward(v, x, {2, -1}, {2}, {0.2, 0.3, 0.5}),
                     {0, 0, -2 * 0.5 / 0.5, 0, 0, 0});
  v = loss_case(parse_case("n2 c3 red=none"), false);
  check_known_answer("nll_loss_backward", "n2 c3 red=none badtarget",
                     loss_backward(v, x, {1, 3}, {2, 5}, {}), {0, -2, 0, nan, nan, nan});
}

// Known answers of SoftmaxCrossEntropyLoss: equal scores give log(C) times the weight; scores
// (0, log 3) give probabilities (1/4, 3/4); scores near +-1e5 must lose no precision.
TEST_CASE("softmax_cross_entropy_loss: known answers") {
  const double nan = std::nan("");
  const double l3 = std::log(3.0);
  const std::vector<double> w{0.5, 1.0, 2.0};
  struct known_case {
    const char* text;
    std::vector<double> x, t, w, loss;
  };
  const std::vector<known_case> known{
      {"n2 c3 red=none", std::vector<double>(6, 0.25), {0, 2}, {}, {l3, l3}},
      {"n2 c3 red=none", std::vector<double>(6, 0.25), {0, 2}, w, {0.5 * l3, 2 * l3}},
      {"n2 c3 red=mean", std::vector<double>(6, 0.25), {0, 2}, w, {l3}},
      {"n2 c3 red=sum ignore=2", std::vector<double>(6, 0.25), {0, 2}, w, {0.5 * l3}},
      {"n2 c3 red=none ignore=-5", std::vector<double>(6, 0.25), {-5, 1}, {}, {0, l3}},
      {"n2 c3 red=none", std::vector<double>(6, 0.25), {-5, 1}, {}, {nan, l3}},
      {"n2 c3 red=mean", std::vector<double>(6, 0.25), {0, 3}, {}, {nan}},
      {"n2 c3 red=mean ignore=4", std::vector<double>(6, 0.25), {4, 4}, {}, {nan}},
      // [N=1, C=2, d1=2]: position 0 scores (0, log 3), position 1 scores (log 3, 0)
      {"n1 c2 d2 red=none", {0, l3, l3, 0}, {0, 0}, {}, {std::log(4.0), std::log(4.0 / 3)}},
      {"n1 c2 d2 red=mean", {0, l3, l3, 0}, {1, 0}, {1, 3}, {std::log(4.0 / 3)}},
  };
  for (const known_case& k : known)
    check_known_answer("sce_loss", k.text, known_call(k.text, true, k.x, k.t, k.w), k.loss);

  // Scores [1e5, 1e5+1, 1e5+2, 1e5+3] and their negatives' shift (exact in float32): loss of
  // class c is log(1 + e^-1 + e^-2 + e^-3) + 3 - c; log_prob (output 1) its negative.
  const double lse = std::log(1 + std::exp(-1.0) + std::exp(-2.0) + std::exp(-3.0));
  const call_spec big =
      known_call("n2 c4 red=none logprob1", true,
                 {1e5, 1e5 + 1, 1e5 + 2, 1e5 + 3, -1e5, -1e5 + 1, -1e5 + 2, -1e5 + 3}, {3, 1});
  check_known_answer("sce_loss", "n2 c4 red=none offset=+-1e5", big, {lse, lse + 2}, 1e-12,
                     [&](device_entry& d) {
                       const run_result r = run_op(d, big, dtype_id::f32);
                       const std::vector<double> lp{-3 - lse, -2 - lse, -1 - lse, -lse,
                                                    -3 - lse, -2 - lse, -1 - lse, -lse};
                       const comparison c = compare_nmse(r.outputs[1], lp, 1e-12);
                       CHECK_MESSAGE(c.ok, d.name << ": log_prob near 1e5: " << c.detail);
                     });
}

// Backward known answers: (softmax - onehot) * w[t] * g; equal scores give softmax 1/C.
TEST_CASE("softmax_cross_entropy_loss_backward: known answers") {
  loss_setup v = loss_case(parse_case("n2 c2 red=sum ignore=1"), true);
  v.weight = true;
  // sample 0: label 0, w 2, g 3: (0.5 - 1, 0.5) * 6; sample 1 ignored
  check_known_answer("sce_loss_backward", "n2 c2 red=sum ignore=1 weight",
                     loss_backward(v, {0.5, 0.5, 0.5, 0.5}, {0, 1}, {3}, {2, 4}), {-3, 3, 0, 0});
}

// The shape rule: every bad argument gets INVALID_ARGUMENT naming it, on every device.
TEST_CASE("onnx losses: invalid arguments") {
  struct bad_case {
    const char* what;
    std::function<call_spec()> make;
    const char* expect;
  };
  const auto call = [](const char* text, bool sce) {
    const loss_setup v = loss_case(parse_case(text), sce);
    value_rng rng("bad args");
    return loss_forward(v, inputs(v, rng), targets(v, rng), weights(v, rng));
  };
  // `c` with input `index` given `shape` (and as many elements).
  const auto reshaped = [](call_spec c, size_t index, const std::vector<int64_t>& shape) {
    c.inputs[index].shape = shape;
    c.inputs[index].data.resize(static_cast<size_t>(numel(shape)));
    return c;
  };
  const std::vector<bad_case> bad{
      {"target shape",
       [&] {
         return reshaped(call("n4 c3 d2 red=none", false), 1, {4, 3});
       },
       "inputs[1] (target)"},
      {"weight shape", [&] { return reshaped(call("n4 c3 weight1", true), 2, {4}); },
       "inputs[2] (weights)"},
      {"rank 1 input", [&] { return reshaped(call("n4 c3 red=none", false), 0, {12}); },
       "inputs[0] (input)"},
      {"loss shape",
       [&] {
         call_spec c = call("n4 c3 red=none", true);
         c.outputs[0].shape = {};
         c.outputs[0].data.clear();
         return c;
       },
       "outputs[0] (loss)"},
      {"reduction",
       [&] {
         call_spec c = call("n4 c3", false);
         c.params_as<nnp_nll_loss_params>()->reduction = 4;
         return c;
       },
       "params->reduction"},
      {"reduction negative",
       [&] {
         call_spec c = call("n4 c3", true);
         c.params_as<nnp_softmax_cross_entropy_loss_params>()->reduction = -1;
         return c;
       },
       "params->reduction"},
      {"dloss shape",
       [&] {
         const loss_setup v = loss_case(parse_case("n4 c3 red=mean"), true);
         call_spec c = loss_backward(v, std::vector<double>(12), {0, 1, 2, 0}, {1}, {});
         c.inputs[2].shape = {4};  // [N] where mean's loss is []
         c.inputs[2].data.assign(4, 1.0);
         return c;
       },
       "inputs[2] (dloss)"},
  };
  for (const bad_case& b : bad) {
    const call_spec c = b.make();
    for (device_entry* d : all_devices()) {
      if (!d->available) continue;
      const run_result r = run_op(*d, c, dtype_id::f32);
      const std::string what = d->name + ": " + b.what;
      CHECK_MESSAGE(r.status == NNP_STATUS_INVALID_ARGUMENT, what);
      CHECK_MESSAGE(r.message.find(b.expect) != std::string::npos, what << ": " << r.message);
    }
  }
}

// nnp_op_infer_shapes gives the loss shape of every reduction (extra dims included) and
// log_prob's; check_output_shape: each device accepts exactly that loss shape.
TEST_CASE("onnx losses: inferred shapes") {
  for (const char* text :
       {"n4 c3 d2x5 red=none", "n4 c3 d2x5 red=mean", "n2 c3 red=none", "n2 c3 red=zero weight1"}) {
    for (bool sce : {false, true}) {
      const loss_setup v = loss_case(parse_case(text), sce);
      value_rng rng("infer");
      const call_spec call = loss_forward(v, inputs(v, rng), targets(v, rng), weights(v, rng));
      check_output_shape(std::string(family(sce)) + "_shape", text, call);

      std::vector<int64_t> xs = v.input_shape(), ts = v.target_shape();
      std::vector<DLTensor> in(3);
      in[0].ndim = static_cast<int32_t>(xs.size());
      in[0].shape = xs.data();
      in[0].dtype = DLDataType{kDLFloat, 32, 1};
      in[1].ndim = static_cast<int32_t>(ts.size());
      in[1].shape = ts.data();
      in[1].dtype = DLDataType{kDLInt, 64, 1};
      int64_t cdim = v.c;
      in[2].ndim = 1;
      in[2].shape = &cdim;
      in[2].dtype = DLDataType{kDLFloat, 32, 1};
      const DLTensor* ptrs[3] = {&in[0], &in[1], v.weight ? &in[2] : nullptr};
      nnp_shape out[2] = {};
      const auto& params = call.params;
      const size_t n_out = sce ? 2 : 1;
      REQUIRE(nnp_op_infer_shapes(call.kind, params.data(), 3, ptrs, n_out, out) == NNP_STATUS_OK);
      const std::vector<int64_t> want = v.loss_shape();
      CHECK(std::vector<int64_t>(out[0].dims, out[0].dims + out[0].ndim) == want);
      if (sce) CHECK(std::vector<int64_t>(out[1].dims, out[1].dims + out[1].ndim) == xs);
    }
  }
}
