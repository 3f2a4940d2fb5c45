// test_loss.cpp — softmax cross-entropy (int64 labels, reduction mean/sum/none,
// ignore_index): forward (loss and optional log_prob) and backward numerics against the
// reference, and backward against finite differences of forward.
// Cases: cases/<list>/cross_entropy.txt: "n8 c10 red=mean ignore=3 logprob1", range=R (logits
// in [-R, R]), offset=O (logits shifted by O), badlabel1 (label C: NaN loss), allignored1 (mean
// over no samples: NaN).
#include <doctest/doctest.h>

#include "harness.hpp"

#include <cmath>

namespace {
using namespace conf;

struct CeCase {
  int64_t n, c;
  nnp_softmax_cross_entropy_params p;
  bool log_prob;
  double range;      // logits uniform in [offset - range, offset + range]
  double offset;     // 1e4, 1e5: catches log-softmax computed as x - (max + log sum)
  bool bad_label;    // label 0 is C (out of range, not ignored): loss NaN
  bool all_ignored;  // every label is ignore_index: mean gives 0/0 = NaN
};

CeCase ce_case(const Case& cs) {
  CeCase v{};
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
std::vector<int64_t> loss_shape(const CeCase& v) {
  return v.p.reduction == NNP_REDUCTION_NONE ? std::vector<int64_t>{v.n} : std::vector<int64_t>{};
}
// Labels in [0, C); with ignore_index, every third sample is ignored.
std::vector<double> labels(const CeCase& v, Rng& rng) {
  std::vector<double> l(static_cast<size_t>(v.n));
  for (size_t i = 0; i < l.size(); ++i) {
    l[i] = static_cast<double>(rng.integer(0, v.c - 1));
    if (v.p.has_ignore_index && (i % 3 == 1 || v.all_ignored))
      l[i] = static_cast<double>(v.p.ignore_index);
  }
  if (v.bad_label && !l.empty()) l[0] = static_cast<double>(v.c);
  return l;
}
OpCall ce_forward(const CeCase& v, std::vector<double> logits, std::vector<double> lab) {
  return op_call(
      NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD, v.p,
      {tensor({v.n, v.c}, std::move(logits)), int_tensor(DT::i64, {v.n}, std::move(lab))},
      {tensor(loss_shape(v)), v.log_prob ? tensor({v.n, v.c}) : absent_tensor()});
}
OpCall ce_backward(const CeCase& v, std::vector<double> logits, std::vector<double> lab,
                   std::vector<double> dloss) {
  return op_call(NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD, v.p,
                 {tensor({v.n, v.c}, std::move(logits)), int_tensor(DT::i64, {v.n}, std::move(lab)),
                  tensor(loss_shape(v), std::move(dloss))},
                 {tensor({v.n, v.c})});
}

const RegisterTemplate reg_fwd("softmax_cross_entropy_forward", [] {
  Rng rng("template ce");
  const CeCase v = ce_case(parse_case("n6 c4 red=mean logprob1"));
  return ce_forward(v, rng.uniform_vec(24), labels(v, rng));
});
const RegisterTemplate reg_bwd("softmax_cross_entropy_backward", [] {
  Rng rng("template ce bwd");
  const CeCase v = ce_case(parse_case("n6 c4 red=none"));
  const auto lab = labels(v, rng);
  return ce_backward(v, rng.uniform_vec(24), lab, rng.uniform_vec(6));
});

}  // namespace

TEST_CASE("softmax_cross_entropy_forward") {
  check_numerics_cases(
      "softmax_cross_entropy_forward", "cross_entropy", "ce_fwd", [](const Case& c, Rng& rng) {
        const CeCase v = ce_case(c);
        const auto logits = rng.uniform_vec(v.n * v.c, v.offset - v.range, v.offset + v.range);
        return ce_forward(v, logits, labels(v, rng));
      });
}

TEST_CASE("softmax_cross_entropy_backward") {
  for (const Case& c : load_cases("cross_entropy")) {
    Rng rng("ce_bwd " + c.text);
    const CeCase v = ce_case(c);
    if (v.bad_label) continue;  // backward of an out-of-range label is not specified
    const auto logits = rng.uniform_vec(v.n * v.c, v.offset - v.range, v.offset + v.range);
    const auto lab = labels(v, rng);
    check_numerics("softmax_cross_entropy_backward", c.text,
                   ce_backward(v, logits, lab, rng.uniform_vec(numel(loss_shape(v)))));
  }
}

TEST_CASE("gradient softmax_cross_entropy") {
  for (const Case& c : load_cases("cross_entropy")) {
    const CeCase v = ce_case(c);
    if (v.n * v.c > 512 || v.bad_label || v.all_ignored) continue;
    Rng rng("gradient ce " + c.text);
    GradientCheck g;
    g.name = "softmax_cross_entropy_backward";
    g.case_text = c.text;
    g.forward = ce_forward(v, rng.uniform_vec(v.n * v.c, -3, 3), labels(v, rng));
    g.backward = [v](const OpCall& f, const auto&, const auto& r) {
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
  struct Known {
    const char* text;
    std::vector<double> labels, loss;
  };
  const std::vector<Known> known{
      {"n2 c4 red=none", {0, 3}, {std::log(4.0), std::log(4.0)}},
      {"n2 c4 red=sum", {1, 2}, {2 * std::log(4.0)}},
      {"n2 c4 red=none", {4, 1}, {nan, std::log(4.0)}},
      {"n2 c4 red=mean ignore=3", {3, 3}, {nan}},
      {"n2 c4 red=none ignore=3", {3, 0}, {0, std::log(4.0)}},
  };
  for (const Known& k : known) {
    const OpCall call =
        ce_forward(ce_case(parse_case(k.text)), std::vector<double>(8, 0.5), k.labels);
    check_known_answer("cross_entropy", k.text, call, k.loss);
  }
  // Logits [1e5, 1e5+1, 1e5+2, 1e5+3] (exact in float32): the loss of label c is
  // log(1 + e^-1 + e^-2 + e^-3) + 3 - c, computed as log(sum) - (x - max).
  const double lse = std::log(1 + std::exp(-1.0) + std::exp(-2.0) + std::exp(-3.0));
  const CeCase v = ce_case(parse_case("n2 c4 red=none logprob1"));
  const OpCall call =
      ce_forward(v, {1e5, 1e5 + 1, 1e5 + 2, 1e5 + 3, -1e5, -1e5 + 1, -1e5 + 2, -1e5 + 3}, {3, 1});
  check_known_answer("cross_entropy", "n2 c4 red=none offset=+-1e5", call, {lse, lse + 2});
}
