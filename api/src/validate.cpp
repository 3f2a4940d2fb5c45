// Validation of every op kind of nnplug_ops.h, in one place, before any plugin is called.
//
// Order of checks for a call: op kind known -> tensor counts -> params (NULL, struct_size,
// enum ranges, reserved fields, numeric ranges) -> each tensor (required present, rank, dims,
// element-count and byte-size overflow, dtype, NULL data, compact strides, device) -> dtypes
// across operands -> shapes per the op's formulas -> aliasing (outputs must not overlap
// inputs or each other except the documented "may alias" cases). The first failure throws an
// nnp::error that becomes the thread's last error; nothing has been touched at that point.
//
// Messages name the op, the argument, the expected and the actual value, e.g.
//   conv2d_forward: inputs[1] (w): expected shape [K, C/groups=3, R, S] (C=6, groups=2),
//   got [4, 6, 3, 3]
#include "validate.hpp"

#include "internal.hpp"

#include <nnplug_common/boundary.hpp>
#include <nnplug_common/tensor.hpp>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <stdexcept>
#include <string>

namespace nnp::host {
namespace {

// An expected shape, stored inline (rank <= NNP_MAX_DIMS, which check_tensor enforces before
// any shape is built): validation runs on every op call, so its success path allocates nothing.
class shape_t {
 public:
  shape_t() = default;
  explicit shape_t(size_t n) : n_(checked(n)) {}
  shape_t(std::initializer_list<int64_t> dims) : n_(checked(dims.size())) {
    std::copy(dims.begin(), dims.end(), d_);
  }
  shape_t(const int64_t* begin, const int64_t* end)
      : n_(checked(static_cast<size_t>(end - begin))) {
    std::copy(begin, end, d_);
  }
  size_t size() const { return n_; }
  int64_t& operator[](size_t i) { return d_[i]; }
  int64_t operator[](size_t i) const { return d_[i]; }
  void push_back(int64_t v) {
    checked(n_ + 1);
    d_[n_++] = v;
  }
  bool operator==(const shape_t& o) const { return n_ == o.n_ && std::equal(d_, d_ + n_, o.d_); }

 private:
  static size_t checked(size_t n) {
    if (n > NNP_MAX_DIMS) throw std::length_error("shape rank above NNP_MAX_DIMS");
    return n;
  }
  int64_t d_[NNP_MAX_DIMS] = {};
  size_t n_ = 0;
};

std::string shape_str(const shape_t& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

shape_t shape_of(const DLTensor* t) { return shape_t(t->shape, t->shape + t->ndim); }

// The name of an operand, "inputs[1] (w)", formatted only when a message needs it (validation
// runs on every op call, so the success path builds no strings).
struct arg_name {
  const char* array;  // "inputs" or "outputs"
  size_t index;
  const char* name;
  std::string str() const {
    return std::string(array) + "[" + std::to_string(index) + "] (" + name + ")";
  }
};
std::string operator+(const arg_name& a, const char* s) { return a.str() + s; }
std::string operator+(const std::string& s, const arg_name& a) { return s + a.str(); }

// One op call under validation.
class call {
 public:
  call(const char* op, size_t n_in, const DLTensor* const* in, size_t n_out,
       const DLTensor* const* out, const DLDevice& device, bool require_data)
      : op_(op),
        n_in_(n_in),
        in_(in),
        n_out_(n_out),
        out_(out),
        device_(device),
        require_data_(require_data) {}

  [[noreturn]] void fail(const std::string& message) const {
    nnp::fail(NNP_STATUS_INVALID_ARGUMENT, std::string(op_) + ": " + message);
  }

  // ---- counts and tensor names ------------------------------------------------------------
  // Declares the op's tensors. Trailing optional tensors may be left out of the arrays.
  void arity(std::initializer_list<const char*> in_names, size_t in_required,
             std::initializer_list<const char*> out_names, size_t out_required) {
    n_in_names_ = 0;
    for (const char* name : in_names) in_names_[n_in_names_++] = name;
    n_out_names_ = 0;
    for (const char* name : out_names) out_names_[n_out_names_++] = name;
    check_count("n_inputs", n_in_, in_required, n_in_names_);
    check_count("n_outputs", n_out_, out_required, n_out_names_);
    if (n_in_ > 0 && in_ == nullptr)
      fail("inputs is NULL with n_inputs = " + std::to_string(n_in_));
    if (n_out_ > 0 && out_ == nullptr)
      fail("outputs is NULL with n_outputs = " + std::to_string(n_out_));
  }

  const DLTensor* in(size_t i) const { return i < n_in_ ? in_[i] : nullptr; }
  const DLTensor* out(size_t i) const { return i < n_out_ ? out_[i] : nullptr; }

  arg_name in_label(size_t i) const { return arg_name{"inputs", i, in_names_[i]}; }
  arg_name out_label(size_t i) const { return arg_name{"outputs", i, out_names_[i]}; }

  // Required tensors must be present; every present tensor passes the generic checks.
  void tensors(std::initializer_list<size_t> in_required,
               std::initializer_list<size_t> out_required, bool allow_strides = false) {
    for (size_t i : in_required)
      if (in(i) == nullptr) fail(in_label(i) + " is NULL but required");
    for (size_t i : out_required)
      if (out(i) == nullptr) fail(out_label(i) + " is NULL but required");
    for (size_t i = 0; i < n_in_; ++i)
      if (in(i) != nullptr) check_tensor(in_label(i), *in(i), allow_strides);
    for (size_t i = 0; i < n_out_; ++i)
      if (out(i) != nullptr) check_tensor(out_label(i), *out(i), allow_strides);
  }

  // ---- dtypes ----------------------------------------------------------------------------
  // Every present tensor except those listed in `non_float_*` is a float of one dtype.
  DLDataType common_float_dtype(std::initializer_list<size_t> non_float_in = {},
                                std::initializer_list<size_t> non_float_out = {}) const {
    bool have = false;
    DLDataType dt{};
    arg_name first{};
    auto visit = [&](const arg_name& label, const DLTensor* t) {
      if (t == nullptr) return;
      if (!nnp::is_float_dtype(t->dtype))
        fail(label + ": expected a float dtype (float16, bfloat16, float32, float64), got " +
             nnp::dtype_name(t->dtype));
      if (!have) {
        have = true;
        dt = t->dtype;
        first = label;
      } else if (!nnp::same_dtype(dt, t->dtype)) {
        fail(label + ": expected dtype " + nnp::dtype_name(dt) + " (the dtype of " + first +
             "), got " + nnp::dtype_name(t->dtype));
      }
    };
    for (size_t i = 0; i < n_in_; ++i)
      if (!contains(non_float_in, i)) visit(in_label(i), in(i));
    for (size_t i = 0; i < n_out_; ++i)
      if (!contains(non_float_out, i)) visit(out_label(i), out(i));
    return dt;
  }

  void expect_dtype(const arg_name& label, const DLTensor* t, bool ok, const char* expected) const {
    if (t != nullptr && !ok)
      fail(label + ": expected dtype " + expected + ", got " + nnp::dtype_name(t->dtype));
  }

  // ---- shapes ----------------------------------------------------------------------------
  void expect_rank(const arg_name& label, const DLTensor* t, int rank,
                   const char* what = nullptr) const {
    if (t != nullptr && t->ndim != rank)
      fail(label + ": expected rank " + std::to_string(rank) +
           (what ? std::string(" ") + what : "") + ", got rank " + std::to_string(t->ndim) + " " +
           nnp::shape_string(*t));
  }
  void expect_shape(const arg_name& label, const DLTensor* t, const shape_t& expected,
                    const char* why = nullptr) const {
    if (t == nullptr || same_shape(t, expected)) return;
    fail(label + ": expected shape " + shape_str(expected) +
         (why != nullptr ? std::string(" ") + why : std::string()) + ", got " +
         nnp::shape_string(*t));
  }
  static bool same_shape(const DLTensor* t, const shape_t& expected) {
    if (static_cast<size_t>(t->ndim) != expected.size()) return false;
    for (int d = 0; d < t->ndim; ++d)
      if (t->shape[d] != expected[static_cast<size_t>(d)]) return false;
    return true;
  }
  static bool same_shape(const DLTensor* a, const DLTensor* b) {
    if (a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; ++d)
      if (a->shape[d] != b->shape[d]) return false;
    return true;
  }

  // ---- aliasing ----------------------------------------------------------------------------
  // Outputs must not overlap inputs or other outputs, except the pairs (out, in) listed as
  // "may alias", which may be exactly the same tensor memory.
  void aliasing(std::initializer_list<std::pair<size_t, size_t>> may_alias = {}) const {
    for (size_t o = 0; o < n_out_; ++o) {
      const DLTensor* y = out(o);
      if (y == nullptr) continue;
      for (size_t i = 0; i < n_in_; ++i) {
        const DLTensor* x = in(i);
        if (x == nullptr || !overlap(*y, *x)) continue;
        bool allowed = false;
        for (const auto& pair : may_alias)
          if (pair.first == o && pair.second == i && same_memory(*y, *x)) allowed = true;
        if (!allowed)
          fail(out_label(o) + " overlaps " + in_label(i) +
               (may_alias.size() ? " (only the documented in-place cases may alias, and only "
                                   "as exactly the same tensor)"
                                 : " (outputs must not overlap inputs)"));
      }
      for (size_t p = o + 1; p < n_out_; ++p)
        if (out(p) != nullptr && overlap(*y, *out(p)))
          fail(out_label(o) + " overlaps " + out_label(p) + " (outputs must not overlap)");
    }
  }

  const DLDataType* dtype_or_null(const DLTensor* t) const { return t ? &t->dtype : nullptr; }

 private:
  static bool contains(std::initializer_list<size_t> list, size_t v) {
    for (size_t x : list)
      if (x == v) return true;
    return false;
  }

  void check_count(const char* what, size_t n, size_t lo, size_t hi) const {
    if (n < lo || n > hi) {
      const std::string expected =
          lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi);
      fail(std::string(what) + ": expected " + expected + ", got " + std::to_string(n));
    }
  }

  void check_tensor(const arg_name& label, const DLTensor& t, bool allow_strides) const {
    if (t.ndim < 0 || t.ndim > NNP_MAX_DIMS)
      fail(label + ": expected rank in [0, " + std::to_string(NNP_MAX_DIMS) + "], got " +
           std::to_string(t.ndim));
    if (t.ndim > 0 && t.shape == nullptr)
      fail(label + ": shape is NULL with rank " + std::to_string(t.ndim));
    if (t.dtype.lanes != 1 || t.dtype.bits == 0 || t.dtype.bits % 8 != 0)
      fail(label + ": unsupported dtype " + nnp::dtype_name(t.dtype) +
           " (expected one lane of whole bytes)");
    const int64_t item = static_cast<int64_t>(nnp::dtype_size(t.dtype));
    // Overflow checks with __builtin_mul_overflow (GCC/Clang): no division on this per-call path.
    int64_t n = 1, bytes = 0;
    for (int d = 0; d < t.ndim; ++d) {
      if (t.shape[d] < 0)
        fail(label + ": expected every dimension >= 0, got shape " + nnp::shape_string(t));
      if (__builtin_mul_overflow(n, t.shape[d], &n))
        fail(label + ": element count of shape " + nnp::shape_string(t) + " overflows int64");
    }
    if (__builtin_mul_overflow(n, item, &bytes))
      fail(label + ": byte size of shape " + nnp::shape_string(t) + " overflows int64");
    if (require_data_ && n > 0 && t.data == nullptr)
      fail(label + ": data is NULL with " + std::to_string(n) + " elements");
    if (t.strides != nullptr) {
      if (allow_strides) {
        for (int d = 0; d < t.ndim; ++d)
          if (t.strides[d] < 0)
            fail(label + ": expected strides >= 0, got " + std::to_string(t.strides[d]) +
                 " at dimension " + std::to_string(d));
      } else if (!nnp::is_compact(t)) {
        std::string s = "[";
        for (int d = 0; d < t.ndim; ++d) s += (d ? ", " : "") + std::to_string(t.strides[d]);
        fail(label + ": expected compact row-major strides (NULL or the compact strides), got " +
             s + "] for shape " + nnp::shape_string(t));
      }
    }
    if (t.device.device_type != device_.device_type || t.device.device_id != device_.device_id)
      fail(label + ": expected DLDevice {" + std::to_string(device_.device_type) + ", " +
           std::to_string(device_.device_id) + "} (the stream's device), got {" +
           std::to_string(t.device.device_type) + ", " + std::to_string(t.device.device_id) + "}");
  }

  // Byte range [begin, end) covered by a tensor (0-size for empty or data-less tensors).
  static void byte_range(const DLTensor& t, uintptr_t* begin, uintptr_t* end) {
    const int64_t n = nnp::numel(t);
    *begin = *end = 0;
    if (n == 0 || t.data == nullptr) return;
    const uintptr_t base = reinterpret_cast<uintptr_t>(t.data) + t.byte_offset;
    uint64_t extent = 1;  // in elements: 1 + sum (shape-1) * stride
    if (t.strides == nullptr) {
      extent = static_cast<uint64_t>(n);
    } else {
      for (int d = 0; d < t.ndim; ++d)
        extent += static_cast<uint64_t>(t.shape[d] - 1) * static_cast<uint64_t>(t.strides[d]);
    }
    *begin = base;
    *end = base + extent * nnp::dtype_size(t.dtype);
  }
  static bool overlap(const DLTensor& a, const DLTensor& b) {
    uintptr_t a0, a1, b0, b1;
    byte_range(a, &a0, &a1);
    byte_range(b, &b0, &b1);
    if (a0 == a1 || b0 == b1) return false;
    return a0 < b1 && b0 < a1;
  }
  static bool same_memory(const DLTensor& a, const DLTensor& b) {
    return static_cast<char*>(a.data) + a.byte_offset ==
               static_cast<char*>(b.data) + b.byte_offset &&
           shape_of(&a) == shape_of(&b) && nnp::same_dtype(a.dtype, b.dtype) &&
           nnp::is_compact(a) && nnp::is_compact(b);
  }

  const char* op_;
  size_t n_in_;
  const DLTensor* const* in_;
  size_t n_out_;
  const DLTensor* const* out_;
  DLDevice device_;
  bool require_data_;
  // Tensor names of the op (at most 5 inputs / 5 outputs in version 1).
  const char* in_names_[8] = {};
  const char* out_names_[8] = {};
  size_t n_in_names_ = 0, n_out_names_ = 0;
};

// ---- params ----------------------------------------------------------------------------------
template <typename P>
const P& params_as(const call& c, const void* params, size_t size_1_0, const char* type) {
  if (params == nullptr) c.fail(std::string("params is NULL (expected a ") + type + ")");
  const size_t size = *static_cast<const size_t*>(params);
  if (size < size_1_0)
    c.fail(std::string("params->struct_size: expected >= ") + std::to_string(size_1_0) +
           " (sizeof(" + type + ")), got " + std::to_string(size));
  return *static_cast<const P*>(params);
}
#define NNP_PARAMS(T, SIZE) params_as<T>(c, params, SIZE, #T)

void expect_flag(const call& c, const char* field, int32_t v) {
  if (v != 0 && v != 1)
    c.fail(std::string("params->") + field + ": expected 0 or 1, got " + std::to_string(v));
}
void expect_enum(const call& c, const char* field, int32_t v, int32_t lo, int32_t hi,
                 const char* type) {
  if (v < lo || v > hi)
    c.fail(std::string("params->") + field + ": expected an " + type + " in [" +
           std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(v));
}
void expect_zero(const call& c, const char* field, int64_t v) {
  if (v != 0)
    c.fail(std::string("params->") + field + ": reserved, expected 0, got " + std::to_string(v));
}
void expect_at_least(const call& c, const char* field, int64_t v, int64_t lo) {
  if (v < lo)
    c.fail(std::string("params->") + field + ": expected >= " + std::to_string(lo) + ", got " +
           std::to_string(v));
}
void expect_finite(const call& c, const char* field, double v) {
  if (!std::isfinite(v))
    c.fail(std::string("params->") + field + ": expected a finite value, got " + std::to_string(v));
}
void expect_range(const call& c, const char* field, double v, double lo, double hi, bool hi_open,
                  const char* range) {
  if (!(v >= lo && (hi_open ? v < hi : v <= hi)))
    c.fail(std::string("params->") + field + ": expected a value in " + range + ", got " +
           nnp::format("%g", v));
}

// ---- same-shape helpers -------------------------------------------------------------------
void same_shape_all(const call& c, const DLTensor* ref, const arg_name& ref_label,
                    std::initializer_list<std::pair<arg_name, const DLTensor*>> others) {
  for (const auto& [label, t] : others)
    if (t != nullptr && !call::same_shape(t, ref))
      c.fail(label + ": expected shape " + nnp::shape_string(*ref) + " (the shape of " + ref_label +
             "), got " + nnp::shape_string(*t));
}

// ================================================================================ GEMM ====
void validate_gemm(call& c, const void* params) {
  c.arity({"A", "B", "C"}, 2, {"Y"}, 1);
  const auto& p = NNP_PARAMS(nnp_gemm_params, NNP_GEMM_PARAMS_STRUCT_SIZE_1_0);
  expect_flag(c, "trans_a", p.trans_a);
  expect_flag(c, "trans_b", p.trans_b);
  expect_finite(c, "alpha", p.alpha);
  c.tensors({0, 1}, {0});
  c.common_float_dtype();
  const DLTensor *a = c.in(0), *b = c.in(1), *cc = c.in(2), *y = c.out(0);
  for (size_t i = 0; i < 2; ++i)
    if (c.in(i)->ndim != 2 && c.in(i)->ndim != 3)
      c.fail(c.in_label(i) + ": expected rank 2 or 3 (batched), got rank " +
             std::to_string(c.in(i)->ndim) + " " + nnp::shape_string(*c.in(i)));
  const int ao = a->ndim - 2, bo = b->ndim - 2;
  const int64_t m = p.trans_a ? a->shape[ao + 1] : a->shape[ao];
  const int64_t ka = p.trans_a ? a->shape[ao] : a->shape[ao + 1];
  const int64_t kb = p.trans_b ? b->shape[bo + 1] : b->shape[bo];
  const int64_t n = p.trans_b ? b->shape[bo] : b->shape[bo + 1];
  if (ka != kb)
    c.fail(c.in_label(1) + ": expected K = " + std::to_string(ka) + " (from A " +
           nnp::shape_string(*a) + ", trans_a=" + std::to_string(p.trans_a) +
           "), got K = " + std::to_string(kb) + " (B " + nnp::shape_string(*b) +
           ", trans_b=" + std::to_string(p.trans_b) + ")");
  int64_t batch = -1;
  if (a->ndim == 3) batch = a->shape[0];
  if (b->ndim == 3) {
    if (batch >= 0 && b->shape[0] != batch)
      c.fail(c.in_label(1) + ": expected batch " + std::to_string(batch) + " (A's), got " +
             std::to_string(b->shape[0]));
    batch = b->shape[0];
  }
  const shape_t y_shape = batch >= 0 ? shape_t{batch, m, n} : shape_t{m, n};
  c.expect_shape(c.out_label(0), y, y_shape, batch >= 0 ? "([batch, M, N])" : "([M, N])");
  if (cc != nullptr) {
    expect_finite(c, "beta", p.beta);
    const shape_t cs = shape_of(cc);
    const bool ok = cs == shape_t{n} || cs == shape_t{m, n} || (batch >= 0 && cs == y_shape);
    if (!ok)
      c.fail(c.in_label(2) + ": expected shape [N] = [" + std::to_string(n) + "] or [M, N] = [" +
             std::to_string(m) + ", " + std::to_string(n) + "]" +
             (batch >= 0 ? " or [batch, M, N] = " + shape_str(y_shape) : std::string()) + ", got " +
             nnp::shape_string(*cc));
  }
  c.aliasing({{0, 2}});
}

// ========================================================================= convolution ====
struct conv_geometry {
  int64_t n, c, h, w, k, r, s, p, q;
};

const nnp_conv2d_params& conv_params(call& c, const void* params) {
  const auto& p = NNP_PARAMS(nnp_conv2d_params, NNP_CONV2D_PARAMS_STRUCT_SIZE_1_0);
  expect_at_least(c, "stride_h", p.stride_h, 1);
  expect_at_least(c, "stride_w", p.stride_w, 1);
  expect_at_least(c, "dilation_h", p.dilation_h, 1);
  expect_at_least(c, "dilation_w", p.dilation_w, 1);
  expect_at_least(c, "pad_top", p.pad_top, 0);
  expect_at_least(c, "pad_bottom", p.pad_bottom, 0);
  expect_at_least(c, "pad_left", p.pad_left, 0);
  expect_at_least(c, "pad_right", p.pad_right, 0);
  expect_at_least(c, "groups", p.groups, 1);
  return p;
}

// Checks x (NCHW) and w (OIHW) of a convolution and returns the geometry; P, Q >= 1.
conv_geometry conv_check_xw(const call& c, const nnp_conv2d_params& p, const arg_name& xl,
                            const DLTensor* x, const arg_name& wl, const DLTensor* w) {
  c.expect_rank(xl, x, 4, "[N, C, H, W]");
  c.expect_rank(wl, w, 4, "[K, C/groups, R, S]");
  conv_geometry g{x->shape[0], x->shape[1], x->shape[2],
                  x->shape[3], w->shape[0], w->shape[2],
                  w->shape[3], 0,           0};
  if (g.c % p.groups != 0)
    c.fail(xl + ": expected C divisible by groups = " + std::to_string(p.groups) +
           ", got C = " + std::to_string(g.c));
  if (g.k % p.groups != 0)
    c.fail(wl + ": expected K divisible by groups = " + std::to_string(p.groups) +
           ", got K = " + std::to_string(g.k));
  if (w->shape[1] != g.c / p.groups)
    c.fail(wl + ": expected shape [K, C/groups=" + std::to_string(g.c / p.groups) +
           ", R, S] (C=" + std::to_string(g.c) + ", groups=" + std::to_string(p.groups) +
           "), got " + nnp::shape_string(*w));
  g.p = nnp::conv_out_dim(g.h, g.r, p.stride_h, p.pad_top, p.pad_bottom, p.dilation_h);
  g.q = nnp::conv_out_dim(g.w, g.s, p.stride_w, p.pad_left, p.pad_right, p.dilation_w);
  if (g.p < 1 || g.q < 1)
    c.fail("output size P x Q = " + std::to_string(g.p) + " x " + std::to_string(g.q) +
           ": expected P >= 1 and Q >= 1 (H=" + std::to_string(g.h) + ", W=" + std::to_string(g.w) +
           ", R=" + std::to_string(g.r) + ", S=" + std::to_string(g.s) +
           " with the given stride, padding and dilation)");
  return g;
}

void validate_conv2d_forward(call& c, const void* params) {
  c.arity({"x", "w", "b"}, 2, {"y"}, 1);
  const auto& p = conv_params(c, params);
  c.tensors({0, 1}, {0});
  c.common_float_dtype();
  const conv_geometry g = conv_check_xw(c, p, c.in_label(0), c.in(0), c.in_label(1), c.in(1));
  c.expect_shape(c.in_label(2), c.in(2), {g.k}, "([K])");
  c.expect_shape(c.out_label(0), c.out(0), {g.n, g.k, g.p, g.q}, "([N, K, P, Q])");
  c.aliasing();
}

void validate_conv2d_backward_data(call& c, const void* params) {
  c.arity({"dy", "w"}, 2, {"dx"}, 1);
  const auto& p = conv_params(c, params);
  c.tensors({0, 1}, {0});
  c.common_float_dtype();
  // dx has x's shape: the geometry comes from dx and w.
  const conv_geometry g = conv_check_xw(c, p, c.out_label(0), c.out(0), c.in_label(1), c.in(1));
  c.expect_shape(c.in_label(0), c.in(0), {g.n, g.k, g.p, g.q}, "([N, K, P, Q])");
  c.aliasing();
}

void validate_conv2d_backward_filter(call& c, const void* params) {
  c.arity({"x", "dy"}, 2, {"dw"}, 1);
  const auto& p = conv_params(c, params);
  c.tensors({0, 1}, {0});
  c.common_float_dtype();
  const conv_geometry g = conv_check_xw(c, p, c.in_label(0), c.in(0), c.out_label(0), c.out(0));
  c.expect_shape(c.in_label(1), c.in(1), {g.n, g.k, g.p, g.q}, "([N, K, P, Q])");
  c.aliasing();
}

void validate_conv2d_backward_bias(call& c, const void* params) {
  c.arity({"dy"}, 1, {"db"}, 1);
  if (params != nullptr) (void)NNP_PARAMS(nnp_conv2d_params, NNP_CONV2D_PARAMS_STRUCT_SIZE_1_0);
  c.tensors({0}, {0});
  c.common_float_dtype();
  c.expect_rank(c.in_label(0), c.in(0), 4, "[N, K, P, Q]");
  c.expect_shape(c.out_label(0), c.out(0), {c.in(0)->shape[1]}, "([K])");
  c.aliasing();
}

// ============================================================================= pooling ====
void validate_pool2d(call& c, const void* params, bool backward) {
  if (backward)
    c.arity({"x", "y", "dy"}, 3, {"dx"}, 1);
  else
    c.arity({"x"}, 1, {"y"}, 1);
  const auto& p = NNP_PARAMS(nnp_pool2d_params, NNP_POOL2D_PARAMS_STRUCT_SIZE_1_0);
  expect_enum(c, "mode", p.mode, NNP_POOL_MAX, NNP_POOL_AVERAGE, "nnp_pool_mode");
  expect_flag(c, "ceil_mode", p.ceil_mode);
  expect_flag(c, "count_include_pad", p.count_include_pad);
  expect_flag(c, "global", p.global);
  if (!p.global) {
    expect_at_least(c, "window_h", p.window_h, 1);
    expect_at_least(c, "window_w", p.window_w, 1);
    expect_at_least(c, "stride_h", p.stride_h, 1);
    expect_at_least(c, "stride_w", p.stride_w, 1);
    const struct {
      const char* name;
      int32_t pad, window;
      const char* wname;
    } pads[] = {{"pad_top", p.pad_top, p.window_h, "window_h"},
                {"pad_bottom", p.pad_bottom, p.window_h, "window_h"},
                {"pad_left", p.pad_left, p.window_w, "window_w"},
                {"pad_right", p.pad_right, p.window_w, "window_w"}};
    for (const auto& pd : pads)
      if (pd.pad < 0 || pd.pad >= pd.window)
        c.fail(std::string("params->") + pd.name + ": expected 0 <= pad < " + pd.wname + " = " +
               std::to_string(pd.window) + ", got " + std::to_string(pd.pad));
  }
  if (backward)
    c.tensors({0, 1, 2}, {0});
  else
    c.tensors({0}, {0});
  c.common_float_dtype();
  const DLTensor* x = c.in(0);
  c.expect_rank(c.in_label(0), x, 4, "[N, C, H, W]");
  const nnp::pool_window pw = nnp::resolve_pool_window(p, x->shape[2], x->shape[3]);
  const int64_t ph = nnp::pool_out_dim(x->shape[2], pw.window_h, pw.stride_h, pw.pad_top,
                                       pw.pad_bottom, pw.ceil_mode);
  const int64_t qw = nnp::pool_out_dim(x->shape[3], pw.window_w, pw.stride_w, pw.pad_left,
                                       pw.pad_right, pw.ceil_mode);
  if (ph < 1 || qw < 1)
    c.fail("output size P x Q = " + std::to_string(ph) + " x " + std::to_string(qw) +
           ": expected P >= 1 and Q >= 1 (the window does not fit in x " + nnp::shape_string(*x) +
           ")");
  const shape_t y_shape{x->shape[0], x->shape[1], ph, qw};
  if (backward) {
    c.expect_shape(c.in_label(1), c.in(1), y_shape, "([N, C, P, Q])");
    c.expect_shape(c.in_label(2), c.in(2), y_shape, "([N, C, P, Q])");
    c.expect_shape(c.out_label(0), c.out(0), shape_of(x), "(x's shape)");
  } else {
    c.expect_shape(c.out_label(0), c.out(0), y_shape, "([N, C, P, Q])");
  }
  c.aliasing();
}

// ====================================================================== activation etc ====
void validate_activation(call& c, const void* params, bool backward) {
  if (backward)
    c.arity({"x", "dy"}, 2, {"dx"}, 1);
  else
    c.arity({"x"}, 1, {"y"}, 1);
  const auto& p = NNP_PARAMS(nnp_activation_params, NNP_ACTIVATION_PARAMS_STRUCT_SIZE_1_0);
  expect_enum(c, "function", p.function, NNP_ACTIVATION_RELU, NNP_ACTIVATION_ELU, "nnp_activation");
  expect_zero(c, "reserved0", p.reserved0);
  if (p.function == NNP_ACTIVATION_LEAKY_RELU || p.function == NNP_ACTIVATION_ELU)
    expect_finite(c, "alpha", p.alpha);
  if (backward)
    c.tensors({0, 1}, {0});
  else
    c.tensors({0}, {0});
  c.common_float_dtype();
  if (backward) {
    same_shape_all(c, c.in(0), c.in_label(0),
                   {{c.in_label(1), c.in(1)}, {c.out_label(0), c.out(0)}});
    c.aliasing({{0, 1}});
  } else {
    same_shape_all(c, c.in(0), c.in_label(0), {{c.out_label(0), c.out(0)}});
    c.aliasing({{0, 0}});
  }
}

void validate_softmax(call& c, const void* params, bool backward) {
  if (backward)
    c.arity({"y", "dy"}, 2, {"dx"}, 1);
  else
    c.arity({"x"}, 1, {"y"}, 1);
  const auto& p = NNP_PARAMS(nnp_softmax_params, NNP_SOFTMAX_PARAMS_STRUCT_SIZE_1_0);
  expect_flag(c, "log", p.log);
  if (backward)
    c.tensors({0, 1}, {0});
  else
    c.tensors({0}, {0});
  c.common_float_dtype();
  const DLTensor* x = c.in(0);
  if (nnp::normalize_axis(p.axis, x->ndim) < 0)
    c.fail("params->axis: expected in [-rank, rank) = [" + std::to_string(-x->ndim) + ", " +
           std::to_string(x->ndim) + "), got " + std::to_string(p.axis));
  if (backward) {
    same_shape_all(c, x, c.in_label(0), {{c.in_label(1), c.in(1)}, {c.out_label(0), c.out(0)}});
    c.aliasing({{0, 1}});
  } else {
    same_shape_all(c, x, c.in_label(0), {{c.out_label(0), c.out(0)}});
    c.aliasing({{0, 0}});
  }
}

// ================================================================================ loss ====
void validate_sce(call& c, const void* params, bool backward) {
  if (backward)
    c.arity({"logits", "labels", "dloss"}, 3, {"dlogits"}, 1);
  else
    c.arity({"logits", "labels"}, 2, {"loss", "log_prob"}, 1);
  const auto& p = NNP_PARAMS(nnp_softmax_cross_entropy_params,
                             NNP_SOFTMAX_CROSS_ENTROPY_PARAMS_STRUCT_SIZE_1_0);
  expect_enum(c, "reduction", p.reduction, NNP_REDUCTION_MEAN, NNP_REDUCTION_NONE, "nnp_reduction");
  expect_flag(c, "has_ignore_index", p.has_ignore_index);
  if (backward)
    c.tensors({0, 1, 2}, {0});
  else
    c.tensors({0, 1}, {0});
  c.common_float_dtype({1});
  c.expect_dtype(c.in_label(1), c.in(1), nnp::is_i64(c.in(1)->dtype), "int64");
  const DLTensor* logits = c.in(0);
  c.expect_rank(c.in_label(0), logits, 2, "[N, C]");
  const int64_t n = logits->shape[0];
  c.expect_shape(c.in_label(1), c.in(1), {n}, "([N])");
  const shape_t loss_shape = p.reduction == NNP_REDUCTION_NONE ? shape_t{n} : shape_t{};
  const char* why = p.reduction == NNP_REDUCTION_NONE ? "([N] for reduction none)"
                                                      : "([] for reduction mean/sum)";
  if (backward) {
    c.expect_shape(c.in_label(2), c.in(2), loss_shape, why);
    c.expect_shape(c.out_label(0), c.out(0), shape_of(logits), "([N, C])");
  } else {
    c.expect_shape(c.out_label(0), c.out(0), loss_shape, why);
    c.expect_shape(c.out_label(1), c.out(1), shape_of(logits), "([N, C])");
  }
  c.aliasing();
}

// ======================================================================= normalisation ====
const nnp_batch_norm_params& bn_params(call& c, const void* params) {
  const auto& p = NNP_PARAMS(nnp_batch_norm_params, NNP_BATCH_NORM_PARAMS_STRUCT_SIZE_1_0);
  if (!(p.epsilon > 0) || !std::isfinite(p.epsilon))
    c.fail("params->epsilon: expected > 0, got " + nnp::format("%g", p.epsilon));
  expect_range(c, "momentum", p.momentum, 0.0, 1.0, false, "[0, 1]");
  return p;
}

// x is [N, C] or [N, C, H, W]; returns C.
int64_t bn_channels(const call& c, const DLTensor* x) {
  if (x->ndim != 2 && x->ndim != 4)
    c.fail(c.in_label(0) + ": expected rank 2 [N, C] or rank 4 [N, C, H, W], got rank " +
           std::to_string(x->ndim) + " " + nnp::shape_string(*x));
  return x->shape[1];
}

void validate_bn_training(call& c, const void* params) {
  c.arity({"x", "scale", "bias"}, 3,
          {"y", "running_mean", "running_var", "saved_mean", "saved_inv_std"}, 5);
  bn_params(c, params);
  c.tensors({0, 1, 2}, {0, 1, 2, 3, 4});
  c.common_float_dtype();
  const int64_t ch = bn_channels(c, c.in(0));
  for (size_t i = 1; i < 3; ++i) c.expect_shape(c.in_label(i), c.in(i), {ch}, "([C])");
  c.expect_shape(c.out_label(0), c.out(0), shape_of(c.in(0)), "(x's shape)");
  for (size_t i = 1; i < 5; ++i) c.expect_shape(c.out_label(i), c.out(i), {ch}, "([C])");
  c.aliasing();
}

void validate_bn_inference(call& c, const void* params) {
  c.arity({"x", "scale", "bias", "mean", "var"}, 5, {"y"}, 1);
  bn_params(c, params);
  c.tensors({0, 1, 2, 3, 4}, {0});
  c.common_float_dtype();
  const int64_t ch = bn_channels(c, c.in(0));
  for (size_t i = 1; i < 5; ++i) c.expect_shape(c.in_label(i), c.in(i), {ch}, "([C])");
  c.expect_shape(c.out_label(0), c.out(0), shape_of(c.in(0)), "(x's shape)");
  c.aliasing();
}

void validate_bn_backward(call& c, const void* params) {
  c.arity({"x", "dy", "scale", "saved_mean", "saved_inv_std"}, 5, {"dx", "dscale", "dbias"}, 3);
  bn_params(c, params);
  c.tensors({0, 1, 2, 3, 4}, {0, 1, 2});
  c.common_float_dtype();
  const int64_t ch = bn_channels(c, c.in(0));
  c.expect_shape(c.in_label(1), c.in(1), shape_of(c.in(0)), "(x's shape)");
  for (size_t i = 2; i < 5; ++i) c.expect_shape(c.in_label(i), c.in(i), {ch}, "([C])");
  c.expect_shape(c.out_label(0), c.out(0), shape_of(c.in(0)), "(x's shape)");
  for (size_t i = 1; i < 3; ++i) c.expect_shape(c.out_label(i), c.out(i), {ch}, "([C])");
  c.aliasing();
}

struct ln_shapes {
  shape_t inner, stats;
};

ln_shapes layer_norm_shapes(const call& c, const nnp_layer_norm_params& p, const DLTensor* x) {
  const int axis = nnp::normalize_axis(p.axis, x->ndim);
  if (axis < 0)
    c.fail("params->axis: expected in [-rank, rank) = [" + std::to_string(-x->ndim) + ", " +
           std::to_string(x->ndim) + "), got " + std::to_string(p.axis));
  ln_shapes s;
  for (int d = 0; d < x->ndim; ++d) {
    if (d >= axis) s.inner.push_back(x->shape[d]);
    s.stats.push_back(d >= axis ? 1 : x->shape[d]);
  }
  return s;
}

const nnp_layer_norm_params& ln_params(call& c, const void* params) {
  const auto& p = NNP_PARAMS(nnp_layer_norm_params, NNP_LAYER_NORM_PARAMS_STRUCT_SIZE_1_0);
  expect_zero(c, "reserved0", p.reserved0);
  if (!(p.epsilon >= 0) || !std::isfinite(p.epsilon))
    c.fail("params->epsilon: expected >= 0, got " + nnp::format("%g", p.epsilon));
  return p;
}

void validate_ln_forward(call& c, const void* params) {
  c.arity({"x", "scale", "bias"}, 2, {"y", "mean", "inv_std"}, 1);
  const auto& p = ln_params(c, params);
  c.tensors({0, 1}, {0});
  c.common_float_dtype();
  const DLTensor* x = c.in(0);
  const ln_shapes s = layer_norm_shapes(c, p, x);
  c.expect_shape(c.in_label(1), c.in(1), s.inner, "(x.shape[axis:])");
  c.expect_shape(c.in_label(2), c.in(2), s.inner, "(x.shape[axis:])");
  c.expect_shape(c.out_label(0), c.out(0), shape_of(x), "(x's shape)");
  c.expect_shape(c.out_label(1), c.out(1), s.stats, "(x's shape with 1 from axis on)");
  c.expect_shape(c.out_label(2), c.out(2), s.stats, "(x's shape with 1 from axis on)");
  c.aliasing();
}

void validate_ln_backward(call& c, const void* params) {
  c.arity({"x", "dy", "scale", "mean", "inv_std"}, 5, {"dx", "dscale", "dbias"}, 2);
  const auto& p = ln_params(c, params);
  c.tensors({0, 1, 2, 3, 4}, {0, 1});
  c.common_float_dtype();
  const DLTensor* x = c.in(0);
  const ln_shapes s = layer_norm_shapes(c, p, x);
  c.expect_shape(c.in_label(1), c.in(1), shape_of(x), "(x's shape)");
  c.expect_shape(c.in_label(2), c.in(2), s.inner, "(x.shape[axis:])");
  c.expect_shape(c.in_label(3), c.in(3), s.stats, "(x's shape with 1 from axis on)");
  c.expect_shape(c.in_label(4), c.in(4), s.stats, "(x's shape with 1 from axis on)");
  c.expect_shape(c.out_label(0), c.out(0), shape_of(x), "(x's shape)");
  c.expect_shape(c.out_label(1), c.out(1), s.inner, "(x.shape[axis:])");
  c.expect_shape(c.out_label(2), c.out(2), s.inner, "(x.shape[axis:])");
  c.aliasing();
}

// ============================================================================= dropout ====
void validate_dropout(call& c, const void* params, bool backward) {
  if (backward)
    c.arity({"dy"}, 1, {"dx"}, 1);
  else
    c.arity({"x"}, 1, {"y", "mask"}, 1);
  const auto& p = NNP_PARAMS(nnp_dropout_params, NNP_DROPOUT_PARAMS_STRUCT_SIZE_1_0);
  expect_range(c, "ratio", p.ratio, 0.0, 1.0, true, "[0, 1)");
  c.tensors({0}, {0});
  c.common_float_dtype({}, {1});
  same_shape_all(c, c.in(0), c.in_label(0), {{c.out_label(0), c.out(0)}});
  if (!backward && c.out(1) != nullptr) {
    c.expect_dtype(c.out_label(1), c.out(1), nnp::is_u8(c.out(1)->dtype), "uint8");
    c.expect_shape(c.out_label(1), c.out(1), shape_of(c.in(0)), "(x's shape)");
  }
  c.aliasing({{0, 0}});
}

// ========================================================================= elementwise ====
void validate_binary(call& c, const void* params) {
  c.arity({"a", "b"}, 2, {"y"}, 1);
  const auto& p = NNP_PARAMS(nnp_binary_params, NNP_BINARY_PARAMS_STRUCT_SIZE_1_0);
  expect_enum(c, "op", p.op, NNP_BINARY_ADD, NNP_BINARY_DIV, "nnp_binary_op");
  c.tensors({0, 1}, {0});
  c.common_float_dtype();
  const DLTensor *a = c.in(0), *b = c.in(1);
  const int rank = std::max(a->ndim, b->ndim);
  shape_t y(static_cast<size_t>(rank));
  for (int i = 0; i < rank; ++i) {
    const int ia = i - (rank - a->ndim), ib = i - (rank - b->ndim);
    const int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    if (da != db && da != 1 && db != 1)
      c.fail("inputs a " + nnp::shape_string(*a) + " and b " + nnp::shape_string(*b) +
             " do not broadcast (numpy rules): dimension " + std::to_string(i) + " is " +
             std::to_string(da) + " vs " + std::to_string(db));
    y[static_cast<size_t>(i)] = da == 1 ? db : da;
  }
  c.expect_shape(c.out_label(0), c.out(0), y, "(the broadcast shape of a and b)");
  c.aliasing({{0, 0}, {0, 1}});
}

void validate_scale(call& c, const void* params) {
  c.arity({"x"}, 1, {"y"}, 1);
  NNP_PARAMS(nnp_scale_params, NNP_SCALE_PARAMS_STRUCT_SIZE_1_0);
  c.tensors({0}, {0});
  c.common_float_dtype();
  same_shape_all(c, c.in(0), c.in_label(0), {{c.out_label(0), c.out(0)}});
  c.aliasing({{0, 0}});
}

void validate_fill(call& c, const void* params) {
  c.arity({}, 0, {"y"}, 1);
  NNP_PARAMS(nnp_fill_params, NNP_FILL_PARAMS_STRUCT_SIZE_1_0);
  c.tensors({}, {0});
  c.common_float_dtype();
}

void validate_copy(call& c) {
  c.arity({"x"}, 1, {"y"}, 1);
  c.tensors({0}, {0}, /*allow_strides=*/true);
  const DLTensor *x = c.in(0), *y = c.out(0);
  if (!nnp::same_dtype(x->dtype, y->dtype))
    c.fail(c.out_label(0) + ": expected dtype " + nnp::dtype_name(x->dtype) + " (x's), got " +
           nnp::dtype_name(y->dtype));
  same_shape_all(c, x, c.in_label(0), {{c.out_label(0), y}});
  c.aliasing();
}

void validate_cast(call& c) {
  c.arity({"x"}, 1, {"y"}, 1);
  c.tensors({0}, {0});
  for (const auto& [label, t] :
       {std::make_pair(c.in_label(0), c.in(0)), std::make_pair(c.out_label(0), c.out(0))})
    c.expect_dtype(label, t, nnp::is_float_dtype(t->dtype),
                   "float16, bfloat16, float32 or float64");
  same_shape_all(c, c.in(0), c.in_label(0), {{c.out_label(0), c.out(0)}});
  c.aliasing();
}

void validate_transpose(call& c, const void* params) {
  c.arity({"x"}, 1, {"y"}, 1);
  const auto& p = NNP_PARAMS(nnp_transpose_params, NNP_TRANSPOSE_PARAMS_STRUCT_SIZE_1_0);
  c.tensors({0}, {0});
  c.common_float_dtype();
  const DLTensor* x = c.in(0);
  bool seen[NNP_MAX_DIMS] = {};
  shape_t y;
  for (int i = 0; i < NNP_MAX_DIMS; ++i) {
    const int32_t v = p.perm[i];
    if (i >= x->ndim) {
      if (v != 0)
        c.fail("params->perm[" + std::to_string(i) + "]: expected 0 beyond rank " +
               std::to_string(x->ndim) + ", got " + std::to_string(v));
      continue;
    }
    if (v < 0 || v >= x->ndim || seen[v])
      c.fail("params->perm: expected a permutation of 0.." + std::to_string(x->ndim - 1) +
             ", got perm[" + std::to_string(i) + "] = " + std::to_string(v) +
             (v >= 0 && v < x->ndim ? " (repeated)" : " (out of range)"));
    seen[v] = true;
    y.push_back(x->shape[v]);
  }
  c.expect_shape(c.out_label(0), c.out(0), y, "(x.shape permuted by perm)");
  c.aliasing();
}

// =========================================================================== reduction ====
void validate_reduce(call& c, const void* params) {
  c.arity({"x"}, 1, {"y"}, 1);
  const auto& p = NNP_PARAMS(nnp_reduce_params, NNP_REDUCE_PARAMS_STRUCT_SIZE_1_0);
  expect_enum(c, "op", p.op, NNP_REDUCE_SUM, NNP_REDUCE_MAX, "nnp_reduce_op");
  expect_flag(c, "keepdims", p.keepdims);
  c.tensors({0}, {0});
  c.common_float_dtype();
  const DLTensor* x = c.in(0);
  if (p.n_axes < 0 || p.n_axes > x->ndim)
    c.fail("params->n_axes: expected in [0, rank = " + std::to_string(x->ndim) + "], got " +
           std::to_string(p.n_axes));
  bool reduced[NNP_MAX_DIMS] = {};
  for (int i = 0; i < p.n_axes; ++i) {
    const int a = nnp::normalize_axis(p.axes[i], x->ndim);
    if (a < 0)
      c.fail("params->axes[" + std::to_string(i) + "]: expected in [-rank, rank) = [" +
             std::to_string(-x->ndim) + ", " + std::to_string(x->ndim) + "), got " +
             std::to_string(p.axes[i]));
    if (reduced[a])
      c.fail("params->axes[" + std::to_string(i) + "]: axis " + std::to_string(p.axes[i]) +
             " is repeated");
    reduced[a] = true;
  }
  shape_t y;
  for (int d = 0; d < x->ndim; ++d) {
    const bool r = p.n_axes == 0 || reduced[d];
    if (!r)
      y.push_back(x->shape[d]);
    else if (p.keepdims)
      y.push_back(1);
  }
  c.expect_shape(
      c.out_label(0), c.out(0), y,
      p.keepdims ? "(x's shape with reduced axes as 1)" : "(x's shape without the reduced axes)");
  c.aliasing();
}

// ========================================================================== optimisers ====
void validate_sgd(call& c, const void* params) {
  c.arity({"grad"}, 1, {"param", "momentum_buffer"}, 1);
  const auto& p = NNP_PARAMS(nnp_sgd_params, NNP_SGD_PARAMS_STRUCT_SIZE_1_0);
  expect_finite(c, "lr", p.lr);
  expect_finite(c, "momentum", p.momentum);
  expect_finite(c, "dampening", p.dampening);
  expect_finite(c, "weight_decay", p.weight_decay);
  expect_flag(c, "nesterov", p.nesterov);
  expect_zero(c, "reserved0", p.reserved0);
  if (p.nesterov && !(p.momentum > 0 && p.dampening == 0))
    c.fail("params->nesterov = 1 requires momentum > 0 and dampening = 0, got momentum " +
           nnp::format("%g", p.momentum) + ", dampening " + nnp::format("%g", p.dampening));
  if (p.momentum != 0)
    c.tensors({0}, {0, 1});
  else
    c.tensors({0}, {0});
  c.common_float_dtype();
  same_shape_all(c, c.out(0), c.out_label(0),
                 {{c.in_label(0), c.in(0)}, {c.out_label(1), c.out(1)}});
  c.aliasing();
}

void validate_adam(call& c, const void* params) {
  c.arity({"grad"}, 1, {"param", "m", "v"}, 3);
  const auto& p = NNP_PARAMS(nnp_adam_params, NNP_ADAM_PARAMS_STRUCT_SIZE_1_0);
  expect_finite(c, "lr", p.lr);
  expect_range(c, "beta1", p.beta1, 0.0, 1.0, true, "[0, 1)");
  expect_range(c, "beta2", p.beta2, 0.0, 1.0, true, "[0, 1)");
  if (!(p.epsilon >= 0) || !std::isfinite(p.epsilon))
    c.fail("params->epsilon: expected >= 0, got " + nnp::format("%g", p.epsilon));
  expect_finite(c, "weight_decay", p.weight_decay);
  expect_at_least(c, "step", p.step, 1);
  expect_flag(c, "adamw", p.adamw);
  expect_zero(c, "reserved0", p.reserved0);
  c.tensors({0}, {0, 1, 2});
  c.common_float_dtype();
  same_shape_all(
      c, c.out(0), c.out_label(0),
      {{c.in_label(0), c.in(0)}, {c.out_label(1), c.out(1)}, {c.out_label(2), c.out(2)}});
  c.aliasing();
}

void dispatch(call& c, int32_t kind, const void* params) {
  switch (kind) {
    case NNP_OP_GEMM:
      return validate_gemm(c, params);
    case NNP_OP_CONV2D_FORWARD:
      return validate_conv2d_forward(c, params);
    case NNP_OP_CONV2D_BACKWARD_DATA:
      return validate_conv2d_backward_data(c, params);
    case NNP_OP_CONV2D_BACKWARD_FILTER:
      return validate_conv2d_backward_filter(c, params);
    case NNP_OP_CONV2D_BACKWARD_BIAS:
      return validate_conv2d_backward_bias(c, params);
    case NNP_OP_POOL2D_FORWARD:
      return validate_pool2d(c, params, false);
    case NNP_OP_POOL2D_BACKWARD:
      return validate_pool2d(c, params, true);
    case NNP_OP_ACTIVATION_FORWARD:
      return validate_activation(c, params, false);
    case NNP_OP_ACTIVATION_BACKWARD:
      return validate_activation(c, params, true);
    case NNP_OP_SOFTMAX_FORWARD:
      return validate_softmax(c, params, false);
    case NNP_OP_SOFTMAX_BACKWARD:
      return validate_softmax(c, params, true);
    case NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD:
      return validate_sce(c, params, false);
    case NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD:
      return validate_sce(c, params, true);
    case NNP_OP_BATCH_NORM_FORWARD_TRAINING:
      return validate_bn_training(c, params);
    case NNP_OP_BATCH_NORM_FORWARD_INFERENCE:
      return validate_bn_inference(c, params);
    case NNP_OP_BATCH_NORM_BACKWARD:
      return validate_bn_backward(c, params);
    case NNP_OP_LAYER_NORM_FORWARD:
      return validate_ln_forward(c, params);
    case NNP_OP_LAYER_NORM_BACKWARD:
      return validate_ln_backward(c, params);
    case NNP_OP_DROPOUT_FORWARD:
      return validate_dropout(c, params, false);
    case NNP_OP_DROPOUT_BACKWARD:
      return validate_dropout(c, params, true);
    case NNP_OP_BINARY:
      return validate_binary(c, params);
    case NNP_OP_SCALE:
      return validate_scale(c, params);
    case NNP_OP_FILL:
      return validate_fill(c, params);
    case NNP_OP_COPY:
      return validate_copy(c);
    case NNP_OP_TRANSPOSE:
      return validate_transpose(c, params);
    case NNP_OP_CAST:
      return validate_cast(c);
    case NNP_OP_REDUCE:
      return validate_reduce(c, params);
    case NNP_OP_SGD_UPDATE:
      return validate_sgd(c, params);
    case NNP_OP_ADAM_UPDATE:
      return validate_adam(c, params);
    default:
      break;
  }
}

}  // namespace

nnp_status validate_op(int32_t op_kind, const void* params, size_t n_inputs,
                       const DLTensor* const* inputs, size_t n_outputs,
                       const DLTensor* const* outputs, const DLDevice& device, bool require_data) {
  const char* op = nnp_op_kind_name(op_kind);
  if (op == nullptr)
    return set_last_errorf(NNP_STATUS_UNSUPPORTED, "op kind %d is unknown to libnnplug %s",
                           static_cast<int>(op_kind), nnp_version_string());
  try {
    call c(op, n_inputs, inputs, n_outputs, outputs, device, require_data);
    dispatch(c, op_kind, params);
    return NNP_STATUS_OK;
  } catch (const nnp::error& e) {
    return set_last_error(e.status(), e.what());
  } catch (const std::bad_alloc&) {
    return set_last_errorf(NNP_STATUS_OUT_OF_MEMORY, "%s: out of host memory", op);
  } catch (const std::exception& e) {
    return set_last_errorf(NNP_STATUS_INTERNAL, "%s: %s", op, e.what());
  }
}

}  // namespace nnp::host
