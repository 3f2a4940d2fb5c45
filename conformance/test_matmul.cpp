// test_matmul.cpp — NNP_OP_MATMUL (numpy matmul, ONNX MatMul, with nnplug's trans_a / trans_b):
// numerics against the reference, known answers (1-D operands, broadcast batches, transposes),
// literal output shapes, and the backward as documented in docs/ops.md (two matmuls with trans
// flags, then a reduce over the broadcast batch dimensions) against finite differences.
// Cases: cases/<list>/matmul.txt: "a2x1x3x4 b5x4x6 ta0 tb0" (shapes as stored; a 1-D shape
// is a vector).
#include <doctest/doctest.h>

#include "harness.hpp"

#include <algorithm>

namespace {
using namespace conf;

struct mm_shapes {
  std::vector<int64_t> a, b;    // as stored
  std::vector<int64_t> pa, pb;  // promoted to rank >= 2 (a 1-D A is [1, K], a 1-D B is [K, 1])
  std::vector<int64_t> batch;   // broadcast batch dimensions
  int64_t m = 1, k = 1, n = 1;
  bool ta = false, tb = false;  // effective (ignored for a 1-D operand)
  std::vector<int64_t> y;       // numpy's result shape
  std::vector<int64_t> py;      // y with the dropped dimensions back: [batch..., M, N]
};

// The expected shapes, written out from numpy's rules (not from the library's helpers).
mm_shapes matmul_shapes(std::vector<int64_t> a, std::vector<int64_t> b, bool ta, bool tb) {
  mm_shapes s;
  s.a = a;
  s.b = b;
  s.ta = ta && a.size() > 1;
  s.tb = tb && b.size() > 1;
  s.pa = a.size() == 1 ? std::vector<int64_t>{1, a[0]} : a;
  s.pb = b.size() == 1 ? std::vector<int64_t>{b[0], 1} : b;
  const size_t ra = s.pa.size(), rb = s.pb.size();
  s.m = s.ta ? s.pa[ra - 1] : s.pa[ra - 2];
  s.k = s.ta ? s.pa[ra - 2] : s.pa[ra - 1];
  s.n = s.tb ? s.pb[rb - 2] : s.pb[rb - 1];
  const size_t ba = ra - 2, bb = rb - 2, br = std::max(ba, bb);
  for (size_t i = 0; i < br; ++i) {
    const int64_t da = i + ba >= br ? s.pa[i + ba - br] : 1;
    const int64_t db = i + bb >= br ? s.pb[i + bb - br] : 1;
    s.batch.push_back(da == 1 ? db : da);
  }
  s.py = s.batch;
  s.py.push_back(s.m);
  s.py.push_back(s.n);
  s.y = s.batch;
  if (a.size() > 1) s.y.push_back(s.m);
  if (b.size() > 1) s.y.push_back(s.n);
  return s;
}

nnp_matmul_params mm_params(bool ta, bool tb) {
  auto p = make_params<nnp_matmul_params>();
  p.trans_a = ta ? 1 : 0;
  p.trans_b = tb ? 1 : 0;
  return p;
}

call_spec make_matmul(const case_line& c, value_rng& rng) {
  const bool ta = c.i("ta", 0) != 0, tb = c.i("tb", 0) != 0;
  const mm_shapes s = matmul_shapes(c.dims("a", {3, 4}), c.dims("b", {4, 5}), ta, tb);
  return make_spec(
      NNP_OP_MATMUL, mm_params(ta, tb),
      {tensor(s.a, rng.uniform_vec(numel(s.a))), tensor(s.b, rng.uniform_vec(numel(s.b)))},
      {tensor(s.y)});
}

const register_template reg_matmul("matmul", "matmul", "a2x3x4 b4x5", make_matmul);

// The gradient of one operand, as docs/ops.md writes it: G = a matmul of dY with the other
// operand (trans flags below), then a reduce (sum, keepdims) over the batch dimensions the
// operand broadcast along; its elements are the operand's, in order. Runs the matmul on the
// reference (float64) and returns the reduce call.
call_spec operand_gradient(const mm_shapes& s, const call_spec& fwd, const std::vector<double>& dy,
                           bool wrt_a) {
  const tensor_spec& A = fwd.inputs[0];
  const tensor_spec& B = fwd.inputs[1];
  const tensor_spec dY = tensor(s.py, dy);
  const tensor_spec pa = tensor(s.pa, A.data), pb = tensor(s.pb, B.data);
  call_spec mm;
  if (wrt_a) {
    // op(A) = A: dA = dY op(B)^T; op(A) = A^T: dA = op(B) dY^T.
    mm = s.ta ? make_spec(NNP_OP_MATMUL, mm_params(s.tb, true), {pb, dY}, {tensor({})})
              : make_spec(NNP_OP_MATMUL, mm_params(false, !s.tb), {dY, pb}, {tensor({})});
  } else {
    // op(B) = B: dB = op(A)^T dY; op(B) = B^T: dB = dY^T op(A).
    mm = s.tb ? make_spec(NNP_OP_MATMUL, mm_params(true, s.ta), {dY, pa}, {tensor({})})
              : make_spec(NNP_OP_MATMUL, mm_params(!s.ta, false), {pa, dY}, {tensor({})});
  }
  // G has the batch dimensions and the operand's last two (as stored).
  const std::vector<int64_t>& own = wrt_a ? s.pa : s.pb;
  std::vector<int64_t> g = s.batch;
  g.push_back(own[own.size() - 2]);
  g.push_back(own[own.size() - 1]);
  mm.outputs[0] = tensor(g);
  const run_result r = run_op(reference_device(), mm, dtype_id::f64);
  REQUIRE_MESSAGE(r.status == NNP_STATUS_OK, "matmul for the gradient: " << r.message);
  // The operand left-padded with 1s to G's rank; reduce where it has 1 and G does not.
  std::vector<int64_t> padded(g.size() - own.size(), 1);
  padded.insert(padded.end(), own.begin(), own.end());
  auto p = make_params<nnp_reduce_params>();
  p.op = NNP_REDUCE_SUM;
  p.keepdims = 1;
  for (size_t i = 0; i < g.size(); ++i)
    if (padded[i] == 1 && g[i] != 1) p.axes[p.n_axes++] = static_cast<int32_t>(i);
  if (p.n_axes == 0) p.noop_with_empty_axes = 1;  // nothing broadcast: the identity
  return make_spec(NNP_OP_REDUCE, p, {tensor(g, r.outputs[0])}, {tensor(padded)});
}

}  // namespace

TEST_CASE("matmul") { check_numerics_cases("matmul", make_matmul); }

TEST_CASE("gradient matmul (two matmuls and a reduce)") {
  for (const case_line& c : load_cases("matmul")) {
    value_rng rng("gradient matmul " + c.text);
    const bool ta = c.i("ta", 0) != 0, tb = c.i("tb", 0) != 0;
    const mm_shapes s = matmul_shapes(c.dims("a", {3, 4}), c.dims("b", {4, 5}), ta, tb);
    if (numel(s.a) == 0 || numel(s.b) == 0 || numel(s.y) == 0) continue;
    for (const bool wrt_a : {true, false}) {
      gradient_check g;
      g.name = wrt_a ? "matmul_backward_a" : "matmul_backward_b";
      g.case_text = c.text;
      g.forward = make_matmul(c, rng);
      g.backward = [s, wrt_a](const call_spec& f, const auto&, const auto& r) {
        return operand_gradient(s, f, r[0], wrt_a);
      };
      g.wrt = {{wrt_a ? 0 : 1, 0}};
      check_gradient(g);
    }
  }
}

// Known answers on every device (the reference included).
TEST_CASE("matmul: known answers") {
  struct known_case {
    const char* text;
    std::vector<double> a, b, y;
  };
  const std::vector<known_case> known{
      // [2, 2] x [2, 2] and the transposes (as BLAS)
      {"a2x2 b2x2", {1, 2, 3, 4}, {5, 6, 7, 8}, {19, 22, 43, 50}},
      {"a2x2 b2x2 ta1", {1, 2, 3, 4}, {5, 6, 7, 8}, {26, 30, 38, 44}},
      {"a2x2 b2x2 tb1", {1, 2, 3, 4}, {5, 6, 7, 8}, {17, 23, 39, 53}},
      // vector . vector = rank 0; vector x matrix; matrix x vector (trans ignored for 1-D)
      {"a3 b3", {1, 2, 3}, {4, 5, 6}, {32}},
      {"a2 b2x3", {1, 2}, {1, 2, 3, 4, 5, 6}, {9, 12, 15}},
      {"a2x3 b3 tb1", {1, 2, 3, 4, 5, 6}, {1, 0, -1}, {-2, -2}},
      // batch broadcast: [2, 1, 2] x [2, 1]: each batch entry times the shared column
      {"a2x1x2 b2x1", {1, 2, 3, 4}, {10, 1}, {12, 34}},
      // [1, 2] x [2, 2, 1]: the shared row times each batch entry
      {"a1x2 b2x2x1", {1, 2}, {1, 1, 2, -1}, {3, 0}},
      // empty inner product: zeros
      {"a2x0 b0x2", {}, {}, {0, 0, 0, 0}},
  };
  for (const known_case& k : known) {
    value_rng rng("known");
    call_spec call = make_matmul(parse_case(k.text), rng);
    call.inputs[0].data = k.a;
    call.inputs[1].data = k.b;
    check_known_answer("matmul", k.text, call, k.y);
  }
}

// Output shapes as literals (numpy), on every device: accepted with the literal shape, refused
// one larger or smaller in any dimension.
TEST_CASE("matmul: output shapes (known answers)") {
  const std::vector<known_shape> known{
      {"a3x4 b4x5", {3, 5}},         {"a2x1x3x4 b5x4x6", {2, 5, 3, 6}},
      {"a4 b2x4x6", {2, 6}},         {"a2x3x4 b4", {2, 3}},
      {"a4x3 b5x4 ta1 tb1", {3, 5}}, {"a7x1x4x3 b1x6x4x2 ta1", {7, 6, 3, 2}},
  };
  check_output_shapes("matmul_out_shape", known, make_matmul);
}
