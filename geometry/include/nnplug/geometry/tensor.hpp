// nnplug/geometry/tensor.hpp — dtype and DLTensor helpers and the shape maths of nnplug_ops.h
// (convolution and pooling output sizes), the one definition for libnnplug (validation) and
// every plugin (the kit re-exports it as <nnplug/kit/tensor.hpp>). Formulas are those of
// nnplug_ops.h; keep them in this one place. Header-only, no state.
#pragma once

#include <nnplug/nnplug_ops.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

namespace nnp {

// ---- dtypes ---------------------------------------------------------------------------------
inline bool dtype_is(const DLDataType& t, uint8_t code, uint8_t bits) {
  return t.code == code && t.bits == bits && t.lanes == 1;
}
inline bool is_f32(const DLDataType& t) { return dtype_is(t, kDLFloat, 32); }
inline bool is_f64(const DLDataType& t) { return dtype_is(t, kDLFloat, 64); }
inline bool is_f16(const DLDataType& t) { return dtype_is(t, kDLFloat, 16); }
inline bool is_bf16(const DLDataType& t) { return dtype_is(t, kDLBfloat, 16); }
inline bool is_i64(const DLDataType& t) { return dtype_is(t, kDLInt, 64); }
inline bool is_u8(const DLDataType& t) { return dtype_is(t, kDLUInt, 8); }
inline bool is_float_dtype(const DLDataType& t) {
  return is_f32(t) || is_f64(t) || is_f16(t) || is_bf16(t);
}
inline bool same_dtype(const DLDataType& a, const DLDataType& b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
inline size_t dtype_size(const DLDataType& t) {
  return static_cast<size_t>((t.bits * t.lanes + 7) / 8);
}
// "float32", "bfloat16", "int64", ... for messages.
inline std::string dtype_name(const DLDataType& t) {
  const char* base = "unknown";
  switch (t.code) {
    case kDLFloat:
      base = "float";
      break;
    case kDLBfloat:
      base = "bfloat";
      break;
    case kDLInt:
      base = "int";
      break;
    case kDLUInt:
      base = "uint";
      break;
    default:
      break;
  }
  std::string s = std::string(base) + std::to_string(t.bits);
  if (t.lanes != 1) s += "x" + std::to_string(t.lanes);
  return s;
}

// ---- shapes ---------------------------------------------------------------------------------
// Number of elements; assumes validated (non-negative, non-overflowing) shapes.
inline int64_t numel(const DLTensor& t) {
  int64_t n = 1;
  for (int i = 0; i < t.ndim; ++i) n *= t.shape[i];
  return n;
}
// Typed pointer to the first element (data + byte_offset). NULL data (allowed for a tensor
// without elements) stays NULL. The sum is taken on integers: a tensor without elements may
// have any byte_offset (libnnplug checks the extent of tensors with elements only), and
// pointer arithmetic past its object or wrapping is undefined behaviour.
template <typename T>
inline T* data_ptr(const DLTensor& t) {
  if (t.data == nullptr) return nullptr;
  return reinterpret_cast<T*>(reinterpret_cast<uintptr_t>(t.data) + t.byte_offset);
}
// Compact row-major: strides NULL or the compact ones. The stride of an extent-1 dimension
// and every stride of a tensor without elements address nothing and are not compared
// (PyTorch exports [0, 4] with strides [1, 1]).
inline bool is_compact(const DLTensor& t) {
  if (t.strides == nullptr) return true;
  for (int i = 0; i < t.ndim; ++i)
    if (t.shape[i] == 0) return true;
  int64_t expected = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expected) return false;
    expected *= t.shape[i];
  }
  return true;
}
inline std::string shape_string(const DLTensor& t) {
  std::string s = "[";
  for (int i = 0; i < t.ndim; ++i) s += (i ? ", " : "") + std::to_string(t.shape[i]);
  return s + "]";
}
// Normalises an axis in [-rank, rank) to [0, rank); returns -1 if out of range.
inline int normalize_axis(int axis, int rank) {
  if (axis < -rank || axis >= rank) return -1;
  return axis < 0 ? axis + rank : axis;
}

// ---- overflow-safe size arithmetic --------------------------------------------------------
// A tensor without elements may have any other dimension up to INT64_MAX, so the size formulas
// below take int64 dimensions with int32 params and compute in 128-bit integers, where none of
// their intermediates can overflow (every one stays below 2^97 in magnitude). A result that
// does not fit int64 comes back as kSizeOverflow: negative, so a caller's "< 1: invalid" test
// refuses it as well; libnnplug's shape rules refuse it by name.
__extension__ typedef __int128 wide_int;
constexpr int64_t kSizeOverflow = std::numeric_limits<int64_t>::min();
// v as int64, or kSizeOverflow when it does not fit (or is kSizeOverflow itself).
inline int64_t narrow_size(wide_int v) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return v > kMax || v < -static_cast<wide_int>(kMax) ? kSizeOverflow : static_cast<int64_t>(v);
}

// ---- convolution and pooling output sizes -----------------------------------------------------
// floor((in + pad_begin + pad_end - dilation*(k-1) - 1) / stride) + 1; may be <= 0 (invalid), or
// kSizeOverflow when it does not fit int64. stride >= 1.
inline int64_t conv_out_dim(int64_t in, int64_t k, int64_t stride, int64_t pad_begin,
                            int64_t pad_end, int64_t dilation) {
  const wide_int span =
      wide_int{in} + pad_begin + pad_end - wide_int{dilation} * (k - wide_int{1}) - 1;
  if (span < 0) return 0;
  return narrow_size(span / stride + 1);
}
// Pool output size with PyTorch's ceil_mode rule (nnplug_ops.h, NNP_OP_POOL2D_FORWARD); may be
// <= 0 (invalid), or kSizeOverflow when it does not fit int64. stride >= 1.
inline int64_t pool_out_dim(int64_t in, int64_t window, int64_t stride, int64_t pad_begin,
                            int64_t pad_end, bool ceil_mode) {
  const wide_int span = wide_int{in} + pad_begin + pad_end - window;
  if (span < 0) return 0;
  wide_int out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= wide_int{in} + pad_begin) --out;
  return narrow_size(out);
}

// Effective pooling window of params (global pooling resolved against the input H, W).
struct pool_window {
  int64_t window_h, window_w, stride_h, stride_w, pad_top, pad_bottom, pad_left, pad_right;
  bool ceil_mode;
};
inline pool_window resolve_pool_window(const nnp_pool2d_params& p, int64_t h, int64_t w) {
  if (p.global) return pool_window{h, w, 1, 1, 0, 0, 0, 0, false};
  return pool_window{p.window_h,   p.window_w, p.stride_h,  p.stride_w,      p.pad_top,
                     p.pad_bottom, p.pad_left, p.pad_right, p.ceil_mode != 0};
}

}  // namespace nnp
