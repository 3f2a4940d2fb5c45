// Elementwise ops on the CPU, float32: binary ops with numpy broadcasting (NNP_OP_BINARY), unary
// functions (NNP_OP_UNARY_FORWARD / _BACKWARD: ONNX Exp, Log, Sqrt, Abs, Neg, Reciprocal, Floor,
// Ceil, Sin, Cos, Erf), where (NNP_OP_WHERE, ONNX Where), scale, clip, fill and cast (copy and
// transpose, any strides: copy.cpp).
//
// Speed: every op is one streaming pass split into ~32k-element TBB tasks. Broadcasting (binary,
// where) first coalesces dimensions (merging neighbours that are contiguous for every operand,
// dropping size-1 dimensions), so the innermost loop is as long as possible and has unit or
// zero strides that the compiler vectorises; the outer index is decoded once per task and then
// stepped row by row (odometer, cpu_backend.hpp). Unary ops are one pass of float math, each
// function its own loop (the switch is outside the loop), written through map_block so the loop
// vectorises even in place (abs, neg, reciprocal, floor, ceil, sqrt and the backward products
// do; exp/log/sin/cos/erf call libm per element); where is a branch-free select over unit or
// zero strides.
#include "cpu_backend.hpp"

#include <nnplug/kit/half.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace nnp::cpu {

// ---- broadcasting binary ops --------------------------------------------------------------------
namespace {

// Runs body(row_offsets[operands], inner_len) for every row of the coalesced iteration space
// (the last dimension is the row), rows in parallel.
template <typename F>
void for_each_row(const iter_shape& s, int operands, const F& body) {
  const int last = s.rank - 1;
  const int64_t len = s.dim[last];
  int64_t rows = 1;
  for (int i = 0; i < last; ++i) rows *= s.dim[i];
  parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, len)),
               [&](int64_t b, int64_t e) {
                 odometer w(last, operands, s.dim, s.st, b);
                 for (int64_t r = b; r < e; ++r, w.next()) body(w.off, len);
               });
}

// The coalesced iteration space of ops[0] (the output; compact) over which ops[1..] broadcast
// (numpy: shapes aligned to the right, size-1 dimensions get stride 0).
iter_shape broadcast_shape(const DLTensor* const* ops, int operands) {
  const DLTensor& out = *ops[0];
  iter_shape s;
  s.rank = out.ndim;
  int64_t acc[kMaxOperands] = {1, 1, 1, 1};
  for (int i = out.ndim - 1; i >= 0; --i) {
    s.dim[i] = out.shape[i];
    for (int o = 0; o < operands; ++o) {
      const int k = i - (out.ndim - ops[o]->ndim);
      const int64_t d = k >= 0 ? ops[o]->shape[k] : 1;
      s.st[o][i] = d == 1 ? 0 : acc[o];
      acc[o] *= d;
    }
  }
  return coalesce(s, operands);
}

template <typename Op>
void binary_run(const DLTensor& A, const DLTensor& B, const DLTensor& Y, Op op) {
  const float *a = f32(&A), *b = f32(&B);
  float* y = f32(&Y);
  const int64_t n = numel(Y);
  const int64_t na = numel(A), nb = numel(B);
  if (na == n && nb == n) {
    parallel_for(n, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) y[i] = op(a[i], b[i]);
    });
    return;
  }
  const DLTensor* ops[3] = {&Y, &A, &B};
  const iter_shape cs = broadcast_shape(ops, 3);
  const int last = cs.rank - 1;
  const int64_t ta = cs.st[1][last], tb = cs.st[2][last];
  for_each_row(cs, 3, [&](const int64_t* off, int64_t len) {
    float* yr = y + off[0];
    const float *ar = a + off[1], *br = b + off[2];
    if (ta == 1 && tb == 1) {
      for (int64_t i = 0; i < len; ++i) yr[i] = op(ar[i], br[i]);
    } else if (ta == 1 && tb == 0) {
      const float bv = br[0];
      for (int64_t i = 0; i < len; ++i) yr[i] = op(ar[i], bv);
    } else if (ta == 0 && tb == 1) {
      const float av = ar[0];
      for (int64_t i = 0; i < len; ++i) yr[i] = op(av, br[i]);
    } else {
      for (int64_t i = 0; i < len; ++i) yr[i] = op(ar[i * ta], br[i * tb]);
    }
  });
}

}  // namespace

void binary(const op_call& c) {
  const auto& p = c.params_as<nnp_binary_params>();
  const DLTensor &A = *c.in(0), &B = *c.in(1), &Y = *c.out(0);
  switch (p.op) {
    case NNP_BINARY_ADD:
      return binary_run(A, B, Y, [](float u, float v) { return u + v; });
    case NNP_BINARY_SUB:
      return binary_run(A, B, Y, [](float u, float v) { return u - v; });
    case NNP_BINARY_MUL:
      return binary_run(A, B, Y, [](float u, float v) { return u * v; });
    case NNP_BINARY_DIV:
      return binary_run(A, B, Y, [](float u, float v) { return u / v; });
    case NNP_BINARY_POW:  // C powf: pow(x, 0) = 1 for NaN x too
      return binary_run(A, B, Y, [](float u, float v) { return std::pow(u, v); });
    default:
      unsupported(format("binary op %d is not implemented by the cpu backend", p.op));
  }
}

// ---- unary functions and where -------------------------------------------------------------
constexpr float kTwoOverSqrtPi = 1.12837916709551257390f;

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

void where(const op_call& c) {
  const DLTensor *C = c.in(0), *X = c.in(1), *Yv = c.in(2), *O = c.out(0);
  if (numel(*O) == 0) return;
  const uint8_t* cond = data_ptr<const uint8_t>(*C);
  const float *x = f32(X), *y = f32(Yv);
  float* out = f32(O);
  const DLTensor* ops[4] = {O, C, X, Yv};
  const iter_shape cs = broadcast_shape(ops, 4);
  const int last = cs.rank - 1;
  const int64_t tc = cs.st[1][last], tx = cs.st[2][last], ty = cs.st[3][last];
  for_each_row(cs, 4, [&](const int64_t* off, int64_t len) {
    const uint8_t* cr = cond + off[1];
    const float *xr = x + off[2], *yr = y + off[3];
    float* orow = out + off[0];
    if (tc == 1 && tx == 1 && ty == 1) {
      map_block(orow, 0, len, [=](int64_t i) { return cr[i] != 0 ? xr[i] : yr[i]; });
    } else {
      map_block(orow, 0, len, [=](int64_t i) { return cr[i * tc] != 0 ? xr[i * tx] : yr[i * ty]; });
    }
  });
}

// ---- scale, clip, fill -------------------------------------------------------------------------
void scale(const op_call& c) {
  const float alpha = static_cast<float>(c.params_as<nnp_scale_params>().alpha);
  const float* x = f32(c.in(0));
  float* y = f32(c.out(0));
  map_elements(y, numel(*c.in(0)), [&](int64_t i) { return alpha * x[i]; });
}

// ONNX Clip: one pass, vectorisable compares; a bound that is not given is +-inf, so NaN
// stays NaN (both compares are false) and min > max gives max.
void clip(const op_call& c) {
  const auto p = c.params_as<nnp_clip_params>();
  const float lo = p.has_min ? static_cast<float>(p.min) : -std::numeric_limits<float>::infinity();
  const float hi = p.has_max ? static_cast<float>(p.max) : std::numeric_limits<float>::infinity();
  const float* x = f32(c.in(0));
  float* y = f32(c.out(0));
  map_elements(y, numel(*c.in(0)), [&](int64_t i) {
    float v = x[i];
    v = v < lo ? lo : v;
    return v > hi ? hi : v;
  });
}

void fill(const op_call& c) {
  const float v = static_cast<float>(c.params_as<nnp_fill_params>().value);
  float* y = f32(c.out(0));
  const int64_t n = numel(*c.out(0));
  if (n == 1) {  // the common scalar case, kept minimal (dispatch-overhead benchmark)
    y[0] = v;
    return;
  }
  parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) { std::fill(y + b, y + e, v); });
}

// ---- cast between float16, bfloat16, float32, float64
// ----------------------------------------------
namespace {

// data + byte_offset as nnp::data_ptr computes it (NULL stays NULL; integer arithmetic).
const void* byte_ptr(const DLTensor& t) { return nnp::data_ptr<const char>(t); }

double load_as_double(const DLDataType& t, const void* p, int64_t i) {
  if (is_f32(t)) return static_cast<const float*>(p)[i];
  if (is_f64(t)) return static_cast<const double*>(p)[i];
  if (is_f16(t)) return half_to_float(static_cast<const uint16_t*>(p)[i]);
  return bf16_to_float(static_cast<const uint16_t*>(p)[i]);
}

void store_from_double(const DLDataType& t, void* p, int64_t i, double v) {
  if (is_f64(t)) {
    static_cast<double*>(p)[i] = v;
  } else if (is_f32(t)) {
    static_cast<float*>(p)[i] = static_cast<float>(v);
  } else if (is_f16(t)) {
    static_cast<uint16_t*>(p)[i] = double_to_half(v);  // rounded once (kit/half.hpp)
  } else {
    static_cast<uint16_t*>(p)[i] = double_to_bf16(v);
  }
}

}  // namespace

void cast(const op_call& c) {
  const DLTensor &X = *c.in(0), &Y = *c.out(0);
  const void* x = byte_ptr(X);
  void* y = const_cast<void*>(byte_ptr(Y));
  const int64_t n = numel(X);
  if (n == 0) return;  // data may be NULL (memcpy must not see it)
  if (same_dtype(X.dtype, Y.dtype)) {
    std::memcpy(y, x, static_cast<size_t>(n) * dtype_size(X.dtype));
    return;
  }
  if (is_f32(X.dtype) && is_f64(Y.dtype)) {
    parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) static_cast<double*>(y)[i] = static_cast<const float*>(x)[i];
    });
    return;
  }
  parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) store_from_double(Y.dtype, y, i, load_as_double(X.dtype, x, i));
  });
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kElementwiseOps[] = {
    {NNP_OP_BINARY,         kit::f32,            binary},
    {NNP_OP_SCALE,          kit::f32,            scale},
    {NNP_OP_FILL,           kit::f32,            fill},
    {NNP_OP_CAST,           kAnyFloat,      cast},
    {NNP_OP_CLIP,           kit::f32,            clip},
    {NNP_OP_UNARY_FORWARD,  kit::f32,            unary_forward},
    {NNP_OP_UNARY_BACKWARD, kit::f32,            unary_backward},
    {NNP_OP_WHERE,          kit::f32,            where},
};
// clang-format on
extern const kit::op_row_list kElementwiseRows = kit::row_list(kElementwiseOps);

}  // namespace nnp::cpu
