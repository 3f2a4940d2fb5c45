// Unary functions (NNP_OP_UNARY_FORWARD / _BACKWARD: ONNX Exp, Log, Sqrt, Abs, Neg, Reciprocal,
// Floor, Ceil, Sin, Cos, Erf) and where (NNP_OP_WHERE, ONNX Where) on the CPU, float32.
//
// Speed: unary ops are one streaming pass of float math split into ~32k-element TBB tasks; each
// function is its own loop (the switch is outside the loop), written through map_block so the
// loop vectorises even in place (abs, neg, reciprocal, floor, ceil, sqrt and the backward
// products do; exp/log/sin/cos/erf call libm per element). where coalesces the dimensions of
// its four operands (condition, x, y, output; numpy broadcasting) so the inner loop is as long
// as possible, then runs rows in parallel with a branch-free select over unit or zero strides.
#include "cpu_backend.hpp"

#include <algorithm>
#include <cmath>

namespace nnp::cpu {
namespace {

// out[i] = f(i) over n elements, in parallel blocks.
template <typename F>
void map_elements(float* out, int64_t n, const F& f) {
  parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) { map_block(out, b, e, f); });
}

constexpr float kTwoOverSqrtPi = 1.12837916709551257390f;

}  // namespace

void unary_forward(const op_call& c) {
  const int op = c.params_as<nnp_unary_params>().op;
  const float* x = f32(c.in(0));
  float* y = f32(c.out(0));
  const int64_t n = numel(*c.in(0));
  switch (op) {
    case NNP_UNARY_EXP:
      return map_elements(y, n, [=](int64_t i) { return std::exp(x[i]); });
    case NNP_UNARY_LOG:
      return map_elements(y, n, [=](int64_t i) { return std::log(x[i]); });
    case NNP_UNARY_SQRT:
      return map_elements(y, n, [=](int64_t i) { return std::sqrt(x[i]); });
    case NNP_UNARY_ABS:
      return map_elements(y, n, [=](int64_t i) { return std::fabs(x[i]); });
    case NNP_UNARY_NEG:
      return map_elements(y, n, [=](int64_t i) { return -x[i]; });
    case NNP_UNARY_RECIPROCAL:
      return map_elements(y, n, [=](int64_t i) { return 1.0f / x[i]; });
    case NNP_UNARY_FLOOR:
      return map_elements(y, n, [=](int64_t i) { return std::floor(x[i]); });
    case NNP_UNARY_CEIL:
      return map_elements(y, n, [=](int64_t i) { return std::ceil(x[i]); });
    case NNP_UNARY_SIN:
      return map_elements(y, n, [=](int64_t i) { return std::sin(x[i]); });
    case NNP_UNARY_COS:
      return map_elements(y, n, [=](int64_t i) { return std::cos(x[i]); });
    case NNP_UNARY_ERF:
      return map_elements(y, n, [=](int64_t i) { return std::erf(x[i]); });
    default:
      unsupported(format("unary op %d is not implemented by the cpu backend", op));
  }
}

// dx = f'(x) * dy (dx may alias dy; map_block reads element i before it writes it).
void unary_backward(const op_call& c) {
  const int op = c.params_as<nnp_unary_params>().op;
  const float* x = f32(c.in(0));
  const float* dy = f32(c.in(1));
  float* dx = f32(c.out(0));
  const int64_t n = numel(*c.in(0));
  switch (op) {
    case NNP_UNARY_EXP:
      return map_elements(dx, n, [=](int64_t i) { return std::exp(x[i]) * dy[i]; });
    case NNP_UNARY_LOG:
      return map_elements(dx, n, [=](int64_t i) { return dy[i] / x[i]; });
    case NNP_UNARY_SQRT:
      return map_elements(dx, n, [=](int64_t i) { return 0.5f * dy[i] / std::sqrt(x[i]); });
    case NNP_UNARY_ABS:  // sign(x) * dy; 0 at x = 0, NaN for NaN x
      return map_elements(dx, n, [=](int64_t i) {
        const float v = x[i];
        const float s = v > 0.0f ? 1.0f : (v < 0.0f ? -1.0f : v * 0.0f);
        return s * dy[i];
      });
    case NNP_UNARY_NEG:
      return map_elements(dx, n, [=](int64_t i) { return -dy[i]; });
    case NNP_UNARY_RECIPROCAL:
      return map_elements(dx, n, [=](int64_t i) { return -dy[i] / (x[i] * x[i]); });
    case NNP_UNARY_SIN:
      return map_elements(dx, n, [=](int64_t i) { return std::cos(x[i]) * dy[i]; });
    case NNP_UNARY_COS:
      return map_elements(dx, n, [=](int64_t i) { return -std::sin(x[i]) * dy[i]; });
    case NNP_UNARY_ERF:
      return map_elements(
          dx, n, [=](int64_t i) { return kTwoOverSqrtPi * std::exp(-x[i] * x[i]) * dy[i]; });
    default:
      unsupported(format("unary op %d has no backward in the cpu backend", op));
  }
}

// ---- where
// ---------------------------------------------------------------------------------------
namespace {

// Operands: 0 output, 1 condition, 2 x, 3 y; strides in elements (0 = broadcast).
constexpr int kOps = 4;
struct where_shape {
  int rank = 0;
  int64_t dim[NNP_MAX_DIMS];
  int64_t st[kOps][NNP_MAX_DIMS];
};

// Drops size-1 dimensions and merges neighbours contiguous for every operand; >= 1 dimension.
where_shape coalesce(const where_shape& in) {
  where_shape out;
  for (int i = 0; i < in.rank; ++i) {
    if (in.dim[i] == 1) continue;
    if (out.rank > 0) {
      const int j = out.rank - 1;
      bool merge = true;
      for (int o = 0; o < kOps; ++o)
        if (out.st[o][j] != in.st[o][i] * in.dim[i]) merge = false;
      if (merge) {
        out.dim[j] *= in.dim[i];
        for (int o = 0; o < kOps; ++o) out.st[o][j] = in.st[o][i];
        continue;
      }
    }
    out.dim[out.rank] = in.dim[i];
    for (int o = 0; o < kOps; ++o) out.st[o][out.rank] = in.st[o][i];
    ++out.rank;
  }
  if (out.rank == 0) {
    out.rank = 1;
    out.dim[0] = 1;
    for (int o = 0; o < kOps; ++o) out.st[o][0] = 1;
  }
  return out;
}

}  // namespace

void where(const op_call& c) {
  const DLTensor *C = c.in(0), *X = c.in(1), *Yv = c.in(2), *O = c.out(0);
  const int64_t n = numel(*O);
  if (n == 0) return;
  const uint8_t* cond = data_ptr<const uint8_t>(*C);
  const float *x = f32(X), *y = f32(Yv);
  float* out = f32(O);
  where_shape s;
  s.rank = O->ndim;
  const DLTensor* ops[kOps] = {O, C, X, Yv};
  int64_t acc[kOps] = {1, 1, 1, 1};
  for (int i = O->ndim - 1; i >= 0; --i) {
    s.dim[i] = O->shape[i];
    for (int o = 0; o < kOps; ++o) {
      const int k = i - (O->ndim - ops[o]->ndim);
      const int64_t d = k >= 0 ? ops[o]->shape[k] : 1;
      s.st[o][i] = d == 1 ? 0 : acc[o];
      acc[o] *= d;
    }
  }
  const where_shape cs = coalesce(s);
  const int last = cs.rank - 1;
  const int64_t len = cs.dim[last];
  const int64_t tc = cs.st[1][last], tx = cs.st[2][last], ty = cs.st[3][last];
  int64_t rows = 1;
  for (int i = 0; i < last; ++i) rows *= cs.dim[i];
  parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / len), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t off[kOps] = {0, 0, 0, 0};
      int64_t rem = r;
      for (int i = last - 1; i >= 0; --i) {
        const int64_t idx = rem % cs.dim[i];
        rem /= cs.dim[i];
        for (int o = 0; o < kOps; ++o) off[o] += idx * cs.st[o][i];
      }
      const uint8_t* cr = cond + off[1];
      const float *xr = x + off[2], *yr = y + off[3];
      float* orow = out + off[0];
      if (tc == 1 && tx == 1 && ty == 1) {
        map_block(orow, 0, len, [=](int64_t i) { return cr[i] != 0 ? xr[i] : yr[i]; });
      } else {
        map_block(orow, 0, len,
                  [=](int64_t i) { return cr[i * tc] != 0 ? xr[i * tx] : yr[i * ty]; });
      }
    }
  });
}

}  // namespace nnp::cpu
