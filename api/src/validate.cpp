// Validation of op calls, driven by the op table (op_table.hpp, generated from
// api/ops/ops.toml), before any plugin sees the call.
//
// Order of checks for a call: op kind known -> tensor counts -> params (NULL, struct_size,
// each field's check from the table) -> each tensor (required present, rank, dims,
// element-count and byte-size overflow, dtype, NULL data, compact strides, device) -> dtype
// rules -> the op's shape rule (validate_shapes_<family>.cpp) -> aliasing (outputs must not overlap
// inputs or each other except the table's "may alias" pairs). The first failure throws an
// nnp::error that becomes the thread's last error; nothing has been touched at that point.
#include "validate.hpp"

#include "internal.hpp"
#include "validate_call.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

namespace nnp::host {

std::string shape_str(const shape_t& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// ------------------------------------------------------------------------------ call --
void call::check_count(const char* what, size_t n, size_t lo, size_t hi) const {
  if (n < lo || n > hi) {
    const std::string expected =
        lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi);
    fail(std::string(what) + ": expected " + expected + ", got " + std::to_string(n));
  }
}

// Trailing optional tensors may be left out of the arrays; a variadic last tensor stands for
// 1..NNP_MAX_VARIADIC tensors.
void call::counts() const {
  auto required = [](const tensor_desc* t, size_t n) {
    size_t r = n;
    while (r > 0 && t[r - 1].optional) --r;
    return r;
  };
  auto most = [](size_t n, bool variadic) { return variadic ? n - 1 + NNP_MAX_VARIADIC : n; };
  check_count("n_inputs", n_in_, required(op_.inputs, op_.n_inputs),
              most(op_.n_inputs, op_.variadic_inputs));
  if (mode_ != call_mode::infer)
    check_count("n_outputs", n_out_, required(op_.outputs, op_.n_outputs),
                most(op_.n_outputs, op_.variadic_outputs));
  else
    check_count("n_outputs", n_out_, 0, most(op_.n_outputs, op_.variadic_outputs));
  if (n_in_ > 0 && in_ == nullptr) fail("inputs is NULL with n_inputs = " + std::to_string(n_in_));
  if (mode_ != call_mode::infer && n_out_ > 0 && out_ == nullptr)
    fail("outputs is NULL with n_outputs = " + std::to_string(n_out_));
}

void call::tensors(bool allow_strides) const {
  for (size_t i = 0; i < n_in_; ++i) {
    if (in(i) == nullptr) {
      if (!input_desc(op_, i).optional) fail(in_label(i) + " is NULL but required");
      continue;
    }
    check_tensor(in_label(i), *in(i), allow_strides);
  }
  if (mode_ == call_mode::infer) return;
  for (size_t i = 0; i < n_out_; ++i) {
    if (out(i) == nullptr) {
      if (!output_desc(op_, i).optional) fail(out_label(i) + " is NULL but required");
      continue;
    }
    check_tensor(out_label(i), *out(i), allow_strides);
  }
}

void call::check_tensor(const arg_name& label, const DLTensor& t, bool allow_strides) const {
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
  // The product of the nonzero dimensions must fit int64 too (a tensor without elements may have
  // any one dimension up to INT64_MAX, not [0, 2^40, 2^40]): then a kernel can multiply any of a
  // shape's dimensions (outer and inner sizes of a view) without overflow.
  int64_t nonzero = 1, bytes = 0;
  bool empty = false, overflow = false;
  for (int d = 0; d < t.ndim; ++d) {
    if (t.shape[d] < 0)
      fail(label + ": expected every dimension >= 0, got shape " + nnp::shape_string(t));
    if (t.shape[d] == 0)
      empty = true;
    else
      overflow |= __builtin_mul_overflow(nonzero, t.shape[d], &nonzero);
  }
  if (overflow)
    fail(label + ": element count of shape " + nnp::shape_string(t) + " overflows int64" +
         (empty ? " (zeros aside: the product of its nonzero dimensions must fit)" : ""));
  const int64_t n = empty ? 0 : nonzero;
  if (__builtin_mul_overflow(n, item, &bytes))
    fail(label + ": byte size of shape " + nnp::shape_string(t) + " overflows int64");
  if (mode_ == call_mode::execute && n > 0 && t.data == nullptr)
    fail(label + ": data is NULL with " + std::to_string(n) + " elements");
  if (t.byte_offset % static_cast<uint64_t>(item) != 0)
    fail(label + ": byte_offset " + std::to_string(t.byte_offset) +
         " is not a multiple of the element size (" + std::to_string(item) + " bytes)");
  // Kernels load whole elements: data must be aligned to the element size as well (numpy's
  // frombuffer at an odd offset makes such arrays; their elements would be misaligned loads).
  if (mode_ == call_mode::execute && n > 0 &&
      reinterpret_cast<uintptr_t>(t.data) % static_cast<uintptr_t>(item) != 0)
    fail(label + ": data " + nnp::format("%p", t.data) + " is not aligned to the element size (" +
         std::to_string(item) + " bytes)");
  if (t.strides != nullptr) {
    if (allow_strides) {
      for (int d = 0; d < t.ndim; ++d)
        if (t.strides[d] < 0)
          fail(label + ": expected strides >= 0, got " + std::to_string(t.strides[d]) +
               " at dimension " + std::to_string(d));
      if (std::strcmp(label.array, "outputs") == 0) check_no_self_overlap(label, t);
    } else if (!nnp::is_compact(t)) {
      std::string s = "[";
      for (int d = 0; d < t.ndim; ++d) s += (d ? ", " : "") + std::to_string(t.strides[d]);
      fail(label + ": expected compact row-major strides (NULL or the compact strides), got " + s +
           "] for shape " + nnp::shape_string(t));
    }
  }
  // The bytes the tensor spans, from data + byte_offset, must not wrap the address space.
  if (mode_ == call_mode::execute && n > 0) {
    int64_t last = 0;  // element offset of the last element
    for (int d = 0; d < t.ndim; ++d) {
      const int64_t st = t.strides != nullptr ? t.strides[d] : 1;
      int64_t step = 0;
      if (__builtin_mul_overflow(t.shape[d] - 1, st, &step) ||
          __builtin_add_overflow(last, step, &last))
        fail(label + ": the strides of shape " + nnp::shape_string(t) + " overflow int64");
    }
    if (t.strides == nullptr) last = n - 1;
    uint64_t end = 0, span = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(last) + 1, static_cast<uint64_t>(item),
                               &span) ||
        __builtin_add_overflow(reinterpret_cast<uintptr_t>(t.data), t.byte_offset, &end) ||
        __builtin_add_overflow(end, span, &end))
      fail(label + ": data + byte_offset (" + std::to_string(t.byte_offset) +
           ") + the tensor's extent wraps the address space");
  }
  if (device_ != nullptr &&
      (t.device.device_type != device_->device_type || t.device.device_id != device_->device_id))
    fail(label + ": expected DLDevice {" + std::to_string(device_->device_type) + ", " +
         std::to_string(device_->device_id) + "} (the stream's device), got {" +
         std::to_string(t.device.device_type) + ", " + std::to_string(t.device.device_id) + "}");
}

// An output whose strides map two indices to one element would be written twice (a stride of
// 0 over an extent > 1, as numpy.broadcast_to or torch.expand views): refused. The test is
// the sufficient one used by array libraries: sorted by stride, each stride exceeds the span
// of the smaller ones; a few non-overlapping interleaved layouts are refused too.
void call::check_no_self_overlap(const arg_name& label, const DLTensor& t) const {
  std::pair<int64_t, int64_t> dims[NNP_MAX_DIMS];  // (stride, extent) of extents > 1
  int k = 0;
  for (int d = 0; d < t.ndim; ++d)
    if (t.shape[d] == 0)
      return;  // no elements
    else if (t.shape[d] > 1)
      dims[k++] = {t.strides[d], t.shape[d]};
  for (int i = 1; i < k; ++i)  // insertion sort of at most NNP_MAX_DIMS entries
    for (int j = i; j > 0 && dims[j] < dims[j - 1]; --j) std::swap(dims[j], dims[j - 1]);
  int64_t span = 0;  // element offset of the last element of the dimensions so far
  for (int i = 0; i < k; ++i) {
    if (dims[i].first <= span)
      fail(label + ": its strides make elements overlap (a stride of " +
           std::to_string(dims[i].first) + " over an extent of " + std::to_string(dims[i].second) +
           " repeats elements); an output must not alias "
           "itself");
    int64_t step = 0;
    if (__builtin_mul_overflow(dims[i].second - 1, dims[i].first, &step) ||
        __builtin_add_overflow(span, step, &span))
      return;  // larger than any stride: nothing after can overlap (the extent check fails)
  }
}

void call::dtypes() {
  bool have = false;
  arg_name first{};
  struct accumulation_arg {
    arg_name label;
    const DLTensor* t;
    int32_t since;  // the tensor's dtype_since
  };
  std::vector<accumulation_arg> accumulation;  // checked once float_dtype_ is known
  auto visit = [&](const arg_name& label, const DLTensor* t, dtype_rule rule, int32_t since) {
    if (t == nullptr) return;
    switch (rule) {
      case dtype_rule::accumulation:
        accumulation.push_back({label, t, since});
        return;
      case dtype_rule::float_common:
        if (!nnp::is_float_dtype(t->dtype))
          fail(label + ": expected a float dtype (float16, bfloat16, float32, float64), got " +
               nnp::dtype_name(t->dtype));
        if (!have) {
          have = true;
          float_dtype_ = t->dtype;
          first = label;
        } else if (!nnp::same_dtype(float_dtype_, t->dtype)) {
          fail(label + ": expected dtype " + nnp::dtype_name(float_dtype_) + " (the dtype of " +
               first + "), got " + nnp::dtype_name(t->dtype));
        }
        return;
      case dtype_rule::int64:
        if (!nnp::is_i64(t->dtype))
          fail(label + ": expected dtype int64, got " + nnp::dtype_name(t->dtype));
        return;
      case dtype_rule::uint8:
        if (!nnp::is_u8(t->dtype))
          fail(label + ": expected dtype uint8, got " + nnp::dtype_name(t->dtype));
        return;
      case dtype_rule::same_as_input0:
        if (in(0) != nullptr && !nnp::same_dtype(in(0)->dtype, t->dtype))
          fail(label + ": expected dtype " + nnp::dtype_name(in(0)->dtype) + " (the dtype of " +
               in_label(0) + "), got " + nnp::dtype_name(t->dtype));
        return;
      case dtype_rule::any_float:
        if (!nnp::is_float_dtype(t->dtype))
          fail(label + ": expected dtype float16, bfloat16, float32 or float64, got " +
               nnp::dtype_name(t->dtype));
        return;
      case dtype_rule::float32:
        if (!nnp::is_f32(t->dtype))
          fail(label + ": expected dtype float32 (whatever the call's float dtype), got " +
               nnp::dtype_name(t->dtype));
        return;
    }
  };
  for (size_t i = 0; i < n_in_; ++i) {
    const tensor_desc& d = input_desc(op_, i);
    visit(in_label(i), in(i), d.dtype, d.dtype_since);
  }
  for (size_t i = 0; i < n_out_; ++i) {
    const tensor_desc& d = output_desc(op_, i);
    visit(out_label(i), out(i), d.dtype, d.dtype_since);
  }
  for (const auto& [label, t, since] : accumulation) {
    if (!have) {  // no tensor sets the call's float dtype: any float dtype
      visit(label, t, dtype_rule::float_common, 0);
      continue;
    }
    const DLDataType want = accumulation_dtype(float_dtype_);
    if (!nnp::same_dtype(want, t->dtype))
      fail(label + ": expected dtype " + nnp::dtype_name(want) +
           (nnp::same_dtype(want, float_dtype_)
                ? " (the dtype of " + first + ")"
                : " (float32 in a " + nnp::dtype_name(float_dtype_) + " call, ABI 1." +
                      std::to_string(since) + ")") +
           ", got " + nnp::dtype_name(t->dtype));
  }
}

void call::expect_rank(const arg_name& label, const DLTensor* t, int rank, const char* what) const {
  if (t != nullptr && t->ndim != rank)
    fail(label + ": expected rank " + std::to_string(rank) + (what ? std::string(" ") + what : "") +
         ", got rank " + std::to_string(t->ndim) + " " + nnp::shape_string(*t));
}

void call::expect_shape(const arg_name& label, const DLTensor* t, const shape_t& expected,
                        const char* why) const {
  if (t == nullptr || same_shape(t, expected)) return;
  fail(label + ": expected shape " + shape_str(expected) +
       (why != nullptr ? std::string(" ") + why : std::string()) + ", got " +
       nnp::shape_string(*t));
}

void call::output_shape(size_t i, const shape_t& expected, const char* why) {
  if (mode_ == call_mode::infer) {
    if (i < n_out_) {
      if (inferred_.size() < n_out_) {  // n_out_ passed counts() before any shape rule runs
        inferred_.resize(n_out_);
        inferred_set_.resize(n_out_);
      }
      inferred_[i] = expected;
      inferred_set_[i] = true;
    }
    return;
  }
  expect_shape(out_label(i), out(i), expected, why);
}

void call::not_inferable(size_t i, const char* why) const {
  nnp::fail(NNP_STATUS_UNSUPPORTED, std::string(op_.name) + ": " + out_label(i).str() +
                                        " cannot be inferred from the inputs (" + why + ")");
}

void call::same_shape_inputs(const DLTensor* ref, const arg_name& ref_label,
                             std::initializer_list<size_t> inputs) const {
  for (size_t i : inputs)
    if (in(i) != nullptr && !same_shape(in(i), ref))
      fail(in_label(i) + ": expected shape " + nnp::shape_string(*ref) + " (the shape of " +
           ref_label + "), got " + nnp::shape_string(*in(i)));
}

bool call::same_shape(const DLTensor* t, const shape_t& expected) {
  if (static_cast<size_t>(t->ndim) != expected.size()) return false;
  for (int d = 0; d < t->ndim; ++d)
    if (t->shape[d] != expected[static_cast<size_t>(d)]) return false;
  return true;
}
bool call::same_shape(const DLTensor* a, const DLTensor* b) {
  if (a->ndim != b->ndim) return false;
  for (int d = 0; d < a->ndim; ++d)
    if (a->shape[d] != b->shape[d]) return false;
  return true;
}

void call::aliasing() const {
  if (mode_ == call_mode::infer) return;
  for (size_t o = 0; o < n_out_; ++o) {
    const DLTensor* y = out(o);
    if (y == nullptr) continue;
    for (size_t i = 0; i < n_in_; ++i) {
      const DLTensor* x = in(i);
      if (x == nullptr || !overlap(*y, *x)) continue;
      bool allowed = false;
      for (size_t a = 0; a < op_.n_alias; ++a)
        if (op_.alias[a].output == o && op_.alias[a].input == i && same_memory(*y, *x))
          allowed = true;
      if (!allowed)
        fail(out_label(o) + " overlaps " + in_label(i) +
             (op_.n_alias ? " (only the documented in-place cases may alias, and only "
                            "as exactly the same tensor)"
                          : " (outputs must not overlap inputs)"));
    }
    for (size_t p = o + 1; p < n_out_; ++p)
      if (out(p) != nullptr && overlap(*y, *out(p)))
        fail(out_label(o) + " overlaps " + out_label(p) + " (outputs must not overlap)");
  }
}

// Byte range [begin, end) covered by a tensor (0-size for empty or data-less tensors).
void call::byte_range(const DLTensor& t, uintptr_t* begin, uintptr_t* end) {
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
bool call::overlap(const DLTensor& a, const DLTensor& b) {
  uintptr_t a0, a1, b0, b1;
  byte_range(a, &a0, &a1);
  byte_range(b, &b0, &b1);
  if (a0 == a1 || b0 == b1) return false;
  return a0 < b1 && b0 < a1;
}
bool call::same_memory(const DLTensor& a, const DLTensor& b) {
  // Addresses as integers: data + byte_offset may wrap (refused later, or not checked in
  // nnp_op_supported), which pointer arithmetic must not do.
  return reinterpret_cast<uintptr_t>(a.data) + a.byte_offset ==
             reinterpret_cast<uintptr_t>(b.data) + b.byte_offset &&
         same_shape(&a, &b) && nnp::same_dtype(a.dtype, b.dtype) && nnp::is_compact(a) &&
         nnp::is_compact(b);
}

// ---------------------------------------------------------------------------- params --
double read_field(const void* params, const param_field& f) {
  const char* p = static_cast<const char*>(params) + f.offset;
  switch (f.type) {
    case field_type::i: {
      int32_t v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    case field_type::l: {
      int64_t v;
      std::memcpy(&v, p, sizeof v);
      return static_cast<double>(v);
    }
    case field_type::u: {
      uint64_t v;
      std::memcpy(&v, p, sizeof v);
      return static_cast<double>(v);
    }
    case field_type::d: {
      double v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    case field_type::a:
    case field_type::L:
    case field_type::p:
      break;
  }
  return 0;
}

namespace {

std::string number(double v, field_type t) {
  if (t == field_type::d) return nnp::format("%g", v);
  return nnp::format("%.0f", v);
}

// Bytes of field f.
size_t field_bytes(const param_field& f) {
  return f.type == field_type::a   ? sizeof(int32_t) * NNP_MAX_DIMS
         : f.type == field_type::L ? sizeof(int64_t) * NNP_MAX_DIMS
         : f.type == field_type::i ? sizeof(int32_t)
                                   : 8;
}

// The caller's struct_size covers field f.
bool covers(size_t struct_size, const param_field& f) {
  return struct_size >= f.offset + field_bytes(f);
}

// The params struct_size rule (docs/security.md): a size at least the struct's 1.0 size that
// ends exactly where a field ends, or at least sizeof the struct as compiled into libnnplug.
// A size ending inside a field would leave that field half given: validation would treat it as
// absent while a plugin reading the struct by its own sizeof would see its first bytes.
void check_struct_size(const call& c, const param_struct& ps, size_t size) {
  if (size < ps.size_1_0)
    c.fail(std::string("params->struct_size: expected >= ") + std::to_string(ps.size_1_0) +
           " (sizeof(" + ps.name + ")), got " + std::to_string(size));
  if (size >= ps.size) return;
  for (size_t i = 0; i < ps.n_fields; ++i)
    if (ps.fields[i].offset + field_bytes(ps.fields[i]) == size) return;
  const param_field* inside = nullptr;
  for (size_t i = 0; i < ps.n_fields && inside == nullptr; ++i)
    if (ps.fields[i].offset < size && size < ps.fields[i].offset + field_bytes(ps.fields[i]))
      inside = &ps.fields[i];
  c.fail(std::string("params->struct_size: ") + std::to_string(size) + " ends inside " +
         (inside != nullptr ? std::string("field '") + inside->name + "'" : "the struct") +
         "; expected the end of a field (the NNP_..._STRUCT_SIZE_1_<minor> of some ABI minor) "
         "or >= " +
         std::to_string(ps.size) + " (sizeof(" + ps.name + "))");
}

void check_params(const call& c, const void* params) {
  const param_struct* ps = c.op().params;
  if (ps == nullptr) return;  // no params struct (copy, cast): params are ignored
  if (params == nullptr) {
    if (c.op().params_optional) return;
    c.fail(std::string("params is NULL (expected a ") + ps->name + ")");
  }
  size_t size;
  std::memcpy(&size, params, sizeof size);
  check_struct_size(c, *ps, size);
  for (size_t i = 0; i < ps->n_fields; ++i) {
    const param_field& f = ps->fields[i];
    if (f.kind == check::shape || !covers(size, f)) continue;
    const double v = read_field(params, f);
    // The field's name is formatted only for a message: this runs on every op call.
    const auto field = [&f] { return std::string("params->") + f.name; };
    switch (f.kind) {
      case check::flag:
        if (v != 0 && v != 1) c.fail(field() + ": expected 0 or 1, got " + number(v, f.type));
        break;
      case check::min:
        if (v < f.lo)
          c.fail(field() + ": expected >= " + number(f.lo, f.type) + ", got " + number(v, f.type));
        break;
      case check::enum_:
        if (v < f.lo || v > f.hi)
          c.fail(field() + ": expected an " + f.enum_name + " in [" + number(f.lo, f.type) + ", " +
                 number(f.hi, f.type) + "], got " + number(v, f.type));
        break;
      case check::finite:
        if (!std::isfinite(v))
          c.fail(field() + ": expected a finite value, got " + number(v, f.type));
        break;
      case check::positive:
        if (!(v > 0) || !std::isfinite(v))
          c.fail(field() + ": expected > 0, got " + number(v, f.type));
        break;
      case check::nonnegative:
        if (!(v >= 0) || !std::isfinite(v))
          c.fail(field() + ": expected >= 0, got " + number(v, f.type));
        break;
      case check::interval:
        if (!(v >= f.lo && (f.hi_open ? v < f.hi : v <= f.hi)))
          c.fail(field() + ": expected a value in [" + number(f.lo, f.type) + ", " +
                 number(f.hi, f.type) + (f.hi_open ? ")" : "]") + ", got " + number(v, f.type));
        break;
      case check::reserved:
        if (v != 0) c.fail(field() + ": reserved, expected 0, got " + number(v, f.type));
        break;
      case check::comm: {
        const void* handle;
        std::memcpy(&handle, static_cast<const char*>(params) + f.offset, sizeof handle);
        const std::string problem = comm_param_problem(handle);
        if (!problem.empty()) c.fail(field() + " " + problem);
        break;
      }
      case check::shape:
        break;
    }
  }
}

// Runs every check of `c` for `op`; rethrows as a status (the thread's last error).
template <typename F>
nnp_status guarded(const char* op, F&& body) {
  try {
    body();
    return NNP_STATUS_OK;
  } catch (const nnp::error& e) {
    return set_last_error(e.status(), e.what());
  } catch (const std::bad_alloc&) {
    return set_last_errorf(NNP_STATUS_OUT_OF_MEMORY, "%s: out of host memory", op);
  } catch (const std::exception& e) {
    return set_last_errorf(NNP_STATUS_INTERNAL, "%s: %s", op, e.what());
  }
}

// Double params are applied in the call's float dtype: a finite value that dtype cannot hold
// (alpha = 1e308 in a float32 GEMM) would turn into inf or NaN; refused instead.
void check_params_fit_dtype(const call& c, const void* params) {
  const param_struct* ps = c.op().params;
  const DLDataType dt = c.float_dtype();
  if (ps == nullptr || params == nullptr || dt.code == 0 || dt.bits == 64) return;
  const double limit = dt.code == kDLBfloat ? 3.3895313892515355e38  // bfloat16's max
                       : dt.bits == 16      ? 65504.0                // float16's max
                                            : 3.4028234663852886e38;      // float32's max
  size_t size;
  std::memcpy(&size, params, sizeof size);
  for (size_t i = 0; i < ps->n_fields; ++i) {
    const param_field& f = ps->fields[i];
    if (f.type != field_type::d || f.kind == check::reserved || !covers(size, f)) continue;
    const double v = read_field(params, f);
    if (std::isfinite(v) && std::fabs(v) > limit)
      c.fail(std::string("params->") + f.name + " = " + number(v, f.type) +
             " does not fit the call's dtype " + nnp::dtype_name(dt) +
             " (|value| <= " + number(limit, f.type) + ")");
  }
}

void run_checks(call& c, const void* params) {
  c.counts();
  check_params(c, params);
  c.tensors(c.op().allow_strides);
  c.dtypes();
  check_params_fit_dtype(c, params);
  // The shape rule reads the copy plugins get (bounded, zero-extended): a field that a later
  // minor added reads as its default when the caller's struct_size ends before it.
  const plugin_params bounded(c.op().kind, params);
  c.op().shapes(c, bounded.get());
  c.aliasing();
}

}  // namespace

nnp_status validate_op(int32_t op_kind, const void* params, size_t n_inputs,
                       const DLTensor* const* inputs, size_t n_outputs,
                       const DLTensor* const* outputs, const DLDevice& device, bool require_data) {
  const op_desc* op = find_op(op_kind);
  if (op == nullptr)
    return set_last_errorf(NNP_STATUS_UNSUPPORTED, "op kind %d is unknown to libnnplug %s",
                           static_cast<int>(op_kind), nnp_version_string());
  return guarded(op->name, [&] {
    call c(*op, n_inputs, inputs, n_outputs, outputs, &device,
           require_data ? call_mode::execute : call_mode::supported);
    run_checks(c, params);
  });
}

plugin_params::plugin_params(int32_t op_kind, const void* params) {
  const op_desc* op = find_op(op_kind);
  if (op == nullptr || op->params == nullptr || params == nullptr) return;
  size_t size;
  std::memcpy(&size, params, sizeof size);
  size = std::min(size, op->params->size);
  std::memcpy(bytes_, params, size);
  std::memset(bytes_ + size, 0, sizeof bytes_ - size);
  std::memcpy(bytes_, &size, sizeof size);
  // nnp_conv2d_params: a stride, dilation or groups of 0 means 1 (nnplug_ops.h); plugins get the
  // 1, so that no plugin (one built for ABI 1.0 included) ever sees a 0 there.
  if (std::strcmp(op->params->name, "nnp_conv2d_params") == 0) {
    nnp_conv2d_params p;
    std::memcpy(&p, bytes_, sizeof p);  // bytes_ holds the whole struct, zero-padded
    const int32_t reserved0 = p.reserved0;
    p = conv2d_with_defaults(p);
    p.reserved0 = reserved0;
    std::memcpy(bytes_, &p, sizeof p);
  }
  params_ = bytes_;
}

nnp_status check_plugin_minor(int32_t op_kind, const void* params, size_t n_inputs,
                              const DLTensor* const* inputs, size_t n_outputs,
                              const DLTensor* const* outputs, const char* plugin,
                              int32_t plugin_minor) {
  const op_desc* op = find_op(op_kind);
  if (op == nullptr) return NNP_STATUS_OK;  // validated before
  if (op->since > plugin_minor)
    return set_last_errorf(NNP_STATUS_UNSUPPORTED,
                           "%s: op kind %s is new in ABI 1.%d; plugin '%s' is built for ABI 1.%d",
                           op->name, op->name, static_cast<int>(op->since), plugin,
                           static_cast<int>(plugin_minor));
  // Tensor i of the call (inputs, then outputs) with its table entry. The counts were validated:
  // every index has one.
  const auto tensor_at = [&](size_t i) -> std::pair<const DLTensor*, const tensor_desc&> {
    if (i < n_inputs) return {inputs[i], input_desc(*op, i)};
    return {outputs[i - n_inputs], output_desc(*op, i - n_inputs)};
  };
  // A tensor the op gained after the plugin's minor, passed (present in the arrays): the plugin
  // would not know to read it. Left out (NULL or past the counts), the call is one it knows.
  for (size_t i = 0; i < n_inputs + n_outputs; ++i) {
    const bool input = i < n_inputs;
    const auto [t, d] = tensor_at(i);
    if (t != nullptr && d.since > plugin_minor)
      return set_last_errorf(NNP_STATUS_UNSUPPORTED,
                             "%s: %s '%s' is new in ABI 1.%d; plugin '%s' is built for ABI 1.%d",
                             op->name, input ? "input" : "output", d.name,
                             static_cast<int>(d.since), plugin, static_cast<int>(plugin_minor));
  }
  // A float32 statistic in a 16-bit call (the accumulation rule, from the tensor's
  // dtype_since: 1.9 for attention's softmax_lse, 1.10 for the normalisations' statistics and
  // batch norm's per-channel tensors): a plugin built for an earlier minor expects it in the
  // call's dtype. (Validated before: the
  // call's first float tensor sets its dtype.)
  const DLDataType* call_dtype = nullptr;
  for (size_t i = 0; i < n_inputs + n_outputs && call_dtype == nullptr; ++i) {
    const auto [t, d] = tensor_at(i);
    if (t != nullptr && d.dtype == dtype_rule::float_common) call_dtype = &t->dtype;
  }
  for (size_t i = 0; i < n_inputs + n_outputs && call_dtype != nullptr; ++i) {
    const bool input = i < n_inputs;
    const auto [t, d] = tensor_at(i);
    if (t != nullptr && d.dtype == dtype_rule::accumulation && plugin_minor < d.dtype_since &&
        !nnp::same_dtype(t->dtype, *call_dtype))
      return set_last_errorf(NNP_STATUS_UNSUPPORTED,
                             "%s: %s '%s' is float32 in a %s call, the rule of ABI 1.%d; plugin "
                             "'%s' is built for ABI 1.%d, which had it in the call's dtype",
                             op->name, input ? "input" : "output", d.name,
                             nnp::dtype_name(*call_dtype).c_str(), static_cast<int>(d.dtype_since),
                             plugin, static_cast<int>(plugin_minor));
  }
  const param_struct* ps = op->params;
  if (ps == nullptr || params == nullptr) return NNP_STATUS_OK;
  size_t size;
  std::memcpy(&size, params, sizeof size);
  for (size_t i = 0; i < ps->n_fields; ++i) {
    const param_field& f = ps->fields[i];
    if (f.type == field_type::a || f.type == field_type::L || f.type == field_type::p ||
        !covers(size, f))
      continue;
    const double v = read_field(params, f);
    if (f.since <= plugin_minor) {
      // A value added to the enum after the plugin's minor (the value was range-checked
      // before: it indexes enum_since).
      if (f.kind == check::enum_ && f.enum_since[static_cast<size_t>(v)] > plugin_minor)
        return set_last_errorf(NNP_STATUS_UNSUPPORTED,
                               "%s: params->%s = %s is a value new in ABI 1.%d; plugin '%s' is "
                               "built for ABI 1.%d",
                               op->name, f.name, number(v, f.type).c_str(),
                               static_cast<int>(f.enum_since[static_cast<size_t>(v)]), plugin,
                               static_cast<int>(plugin_minor));
      continue;
    }
    if (v != f.default_value)
      return set_last_errorf(NNP_STATUS_UNSUPPORTED,
                             "%s: params->%s (new in ABI 1.%d) is %s, but plugin '%s' is built "
                             "for ABI 1.%d and would ignore it",
                             op->name, f.name, static_cast<int>(f.since), number(v, f.type).c_str(),
                             plugin, static_cast<int>(plugin_minor));
  }
  return NNP_STATUS_OK;
}

nnp_status infer_shapes(int32_t op_kind, const void* params, size_t n_inputs,
                        const DLTensor* const* inputs, size_t n_outputs, nnp_shape* out_shapes) {
  const op_desc* op = find_op(op_kind);
  if (op == nullptr)
    return set_last_errorf(NNP_STATUS_UNSUPPORTED, "op kind %d is unknown to libnnplug %s",
                           static_cast<int>(op_kind), nnp_version_string());
  return guarded(op->name, [&] {
    call c(*op, n_inputs, inputs, n_outputs, nullptr, nullptr, call_mode::infer);
    if (n_outputs > 0 && out_shapes == nullptr)
      c.fail("out_shapes is NULL with n_outputs = " + std::to_string(n_outputs));
    run_checks(c, params);  // aliasing is skipped when inferring: there are no outputs
    // Fill only after every check passed: a failure leaves out_shapes untouched.
    for (size_t i = 0; i < n_outputs; ++i)
      if (!c.has_inferred(i)) c.not_inferable(i, "the table says so");
    for (size_t i = 0; i < n_outputs; ++i) {
      nnp_shape s{};
      const shape_t& sh = c.inferred(i);
      s.ndim = static_cast<int32_t>(sh.size());
      for (size_t d = 0; d < sh.size(); ++d) s.dims[d] = sh[d];
      switch (output_desc(*op, i).dtype) {
        case dtype_rule::float_common:
          s.dtype = c.float_dtype();
          break;
        case dtype_rule::int64:
          s.dtype = DLDataType{kDLInt, 64, 1};
          break;
        case dtype_rule::uint8:
          s.dtype = DLDataType{kDLUInt, 8, 1};
          break;
        case dtype_rule::same_as_input0:
          s.dtype = inputs[0]->dtype;
          break;
        case dtype_rule::any_float:
          s.dtype = DLDataType{0, 0, 0};  // the caller's choice
          break;
        case dtype_rule::float32:
          s.dtype = DLDataType{kDLFloat, 32, 1};
          break;
        case dtype_rule::accumulation:
          s.dtype = accumulation_dtype(c.float_dtype());
          break;
      }
      out_shapes[i] = s;
    }
  });
}

}  // namespace nnp::host
