// One op call under validation (validate.cpp drives it, the shape rules use it): the tensors
// with their table names, message helpers, and the output shapes, which are either checked
// (nnp_op_execute, nnp_op_supported) or recorded (nnp_op_infer_shapes).
//
// The shape rules: one function per op kind, shapes_<name> (declared by the generated op
// table), in one file per op family, validate_shapes_<family>.cpp:
//   matrix (gemm, matmul), conv (conv2d_*, conv_*, conv_transpose_*), pool (pool2d_*, pool_*),
//   activation (activation_*, softmax_*), norm (batch_norm_*, layer_norm_*), loss
//   (softmax_cross_entropy_*, nll_loss_*, softmax_cross_entropy_loss_*), elem (binary, scale,
//   fill, copy, cast, clip, unary_*, where, dropout_*), reduce, data (transpose, concat, split,
//   slice*, gather*), optim (sgd_update, adam_update), attention, comm (the collectives).
// They run after the table-driven checks of validate.cpp (tensor counts, params fields,
// tensors, dtypes), so they may assume: required tensors are present, ranks are in
// [0, NNP_MAX_DIMS], the params struct is there with its 1.0 fields and its checked fields in
// range. They check what the table cannot say: shapes (nnplug_ops.h's formulas, with the
// geometry of nnplug/geometry/ that the backends share), and the params fields marked
// `check = "shape"` (conditional or shape-dependent ranges). Output shapes go through
// c.output_shape(), which checks them or, for nnp_op_infer_shapes, records them. The helpers
// they share are at the end of this file.
//
// Messages name the op, the argument, the expected and the actual value, e.g.
//   conv2d_forward: inputs[1] (w): expected shape [K, C/groups=3, R, S] (C=6, groups=2),
//   got [4, 6, 3, 3]
#pragma once

#include "op_table.hpp"

#include <nnplug/geometry/error.hpp>
#include <nnplug/geometry/tensor.hpp>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace nnp::host {

// An expected shape, stored inline (rank <= NNP_MAX_DIMS, which the tensor checks enforce
// before any shape is built): validation runs on every op call, so its success path allocates
// nothing.
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
  const int64_t* data() const { return d_; }
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

std::string shape_str(const shape_t& s);

inline shape_t shape_of(const DLTensor* t) { return shape_t(t->shape, t->shape + t->ndim); }

// The name of an nnp_auto_pad value, for messages.
inline const char* auto_pad_name(int32_t v) {
  switch (v) {
    case NNP_AUTO_PAD_SAME_UPPER:
      return "SAME_UPPER";
    case NNP_AUTO_PAD_SAME_LOWER:
      return "SAME_LOWER";
    case NNP_AUTO_PAD_VALID:
      return "VALID";
    default:
      return "NOTSET";
  }
}

// The name of an operand, "inputs[1] (w)" or, for the k-th tensor of a variadic one,
// "inputs[2] (xs[2])", formatted only when a message needs it.
struct arg_name {
  const char* array;  // "inputs" or "outputs"
  size_t index;
  const char* name;
  long variadic = -1;  // k for the k-th tensor of a variadic operand, else -1
  std::string str() const {
    return std::string(array) + "[" + std::to_string(index) + "] (" + name +
           (variadic >= 0 ? "[" + std::to_string(variadic) + "]" : std::string()) + ")";
  }
};

// The table entry of input / output i of `op`: the variadic last entry stands for every i
// from its index on.
inline const tensor_desc& input_desc(const op_desc& op, size_t i) {
  return op.inputs[op.variadic_inputs && i >= op.n_inputs ? op.n_inputs - 1 : i];
}
inline const tensor_desc& output_desc(const op_desc& op, size_t i) {
  return op.outputs[op.variadic_outputs && i >= op.n_outputs ? op.n_outputs - 1 : i];
}
inline std::string operator+(const arg_name& a, const char* s) { return a.str() + s; }
inline std::string operator+(const std::string& s, const arg_name& a) { return s + a.str(); }

// What the call is checked for.
enum class call_mode {
  execute,    // every tensor, data pointers required
  supported,  // every tensor, data may be NULL
  infer,      // inputs only; output shapes are recorded, not checked
};

class call {
 public:
  call(const op_desc& op, size_t n_in, const DLTensor* const* in, size_t n_out,
       const DLTensor* const* out, const DLDevice* device, call_mode mode)
      : op_(op), n_in_(n_in), in_(in), n_out_(n_out), out_(out), device_(device), mode_(mode) {}

  [[noreturn]] void fail(const std::string& message) const {
    nnp::fail(NNP_STATUS_INVALID_ARGUMENT, std::string(op_.name) + ": " + message);
  }

  const op_desc& op() const { return op_; }
  bool inferring() const { return mode_ == call_mode::infer; }

  // Input / output i, or nullptr when absent (optional, left out, or inferring).
  const DLTensor* in(size_t i) const { return i < n_in_ ? in_[i] : nullptr; }
  const DLTensor* out(size_t i) const {
    return mode_ != call_mode::infer && i < n_out_ ? out_[i] : nullptr;
  }
  arg_name in_label(size_t i) const {
    return label("inputs", i, input_desc(op_, i), op_.variadic_inputs, op_.n_inputs);
  }
  arg_name out_label(size_t i) const {
    return label("outputs", i, output_desc(op_, i), op_.variadic_outputs, op_.n_outputs);
  }
  // Counts of the call's arrays (a variadic operand makes them vary; inferring: the number of
  // out_shapes).
  size_t n_in() const { return n_in_; }
  size_t n_out() const { return n_out_; }

  // ---- shape checks for the shape rules ---------------------------------------------------
  void expect_rank(const arg_name& label, const DLTensor* t, int rank,
                   const char* what = nullptr) const;
  // Input (or output read as geometry) t must have `expected`.
  void expect_shape(const arg_name& label, const DLTensor* t, const shape_t& expected,
                    const char* why = nullptr) const;
  // Output i has shape `expected`: checked when present, recorded when inferring.
  void output_shape(size_t i, const shape_t& expected, const char* why = nullptr);
  // Output i cannot be inferred from the inputs (the rule reads it as geometry instead).
  [[noreturn]] void not_inferable(size_t i, const char* why) const;
  // Inputs listed must have the shape of `ref`.
  void same_shape_inputs(const DLTensor* ref, const arg_name& ref_label,
                         std::initializer_list<size_t> inputs) const;
  static bool same_shape(const DLTensor* t, const shape_t& expected);
  static bool same_shape(const DLTensor* a, const DLTensor* b);

  // ---- the generic checks, in order (validate.cpp) ------------------------------------------
  void counts() const;
  void tensors(bool allow_strides) const;
  void dtypes();
  void aliasing() const;

  // Results of dtypes(): the call's common float dtype (code 0 if none).
  DLDataType float_dtype() const { return float_dtype_; }
  // Results of inference: shapes of outputs (ndim -1 = not recorded).
  const shape_t& inferred(size_t i) const { return inferred_[i]; }
  bool has_inferred(size_t i) const { return i < inferred_set_.size() && inferred_set_[i]; }

 private:
  void check_tensor(const arg_name& label, const DLTensor& t, bool allow_strides) const;
  void check_no_self_overlap(const arg_name& label, const DLTensor& t) const;
  void check_count(const char* what, size_t n, size_t lo, size_t hi) const;
  static void byte_range(const DLTensor& t, uintptr_t* begin, uintptr_t* end);
  static bool overlap(const DLTensor& a, const DLTensor& b);
  static bool same_memory(const DLTensor& a, const DLTensor& b);
  static arg_name label(const char* array, size_t i, const tensor_desc& d, bool variadic,
                        size_t n_desc) {
    return arg_name{array, i, d.name, variadic && i + 1 >= n_desc ? long(i + 1 - n_desc) : -1};
  }

  const op_desc& op_;
  size_t n_in_;
  const DLTensor* const* in_;
  size_t n_out_;
  const DLTensor* const* out_;
  const DLDevice* device_;  // nullptr: any device (inference)
  call_mode mode_;
  DLDataType float_dtype_{0, 0, 0};
  // Inference only (sized to the number of out_shapes on the first record, after counts()).
  std::vector<shape_t> inferred_;
  std::vector<bool> inferred_set_;
};

// ---- helpers of the shape rules ------------------------------------------------------------
// nnp_conv2d_params with a stride, dilation or groups of 0 read as 1 (nnplug_ops.h): what the
// conv2d shape rules check and what plugins receive (plugin_params, validate.hpp); defined in
// validate_shapes_conv.cpp.
nnp_conv2d_params conv2d_with_defaults(const nnp_conv2d_params& p);

// A shape rule's params: the bounded, zero-extended copy that plugins get (plugin_params,
// validate.hpp), so every field of P is there whatever struct_size the caller wrote.
template <typename P>
const P& params_of(const void* params) {
  return *static_cast<const P*>(params);
}

// params-><field> must be finite / >= lo; an axis in [-rank, rank), returned in [0, rank).
inline void expect_finite(const call& c, const char* field, double v) {
  if (!std::isfinite(v))
    c.fail(std::string("params->") + field + ": expected a finite value, got " +
           nnp::format("%g", v));
}
inline void expect_at_least(const call& c, const char* field, int64_t v, int64_t lo) {
  if (v < lo)
    c.fail(std::string("params->") + field + ": expected >= " + std::to_string(lo) + ", got " +
           std::to_string(v));
}
inline int expect_axis(const call& c, const char* field, int32_t axis, int rank) {
  const int a = nnp::normalize_axis(axis, rank);
  if (a < 0)
    c.fail(std::string("params->") + field + ": expected in [-rank, rank) = [" +
           std::to_string(-rank) + ", " + std::to_string(rank) + "), got " + std::to_string(axis));
  return a;
}

// An output size of the convolution or pooling formulas that does not fit int64 (possible only
// with dimensions near INT64_MAX, which a tensor without elements may have): refused, naming the
// output dimension and the operands of its formula.
[[noreturn]] inline void size_overflow(
    const call& c, const char* out,
    std::initializer_list<std::pair<const char*, int64_t>> operands) {
  std::string what;
  for (const auto& [name, v] : operands)
    what += (what.empty() ? "" : ", ") + std::string(name) + " = " + std::to_string(v);
  c.fail(std::string("output size ") + out + " does not fit in int64 (" + what + ")");
}

// Ops whose every tensor has x's shape (x = input 0): checks the other inputs, sets outputs.
inline void same_shape_as_x(call& c, std::initializer_list<size_t> other_inputs) {
  c.same_shape_inputs(c.in(0), c.in_label(0), other_inputs);
  for (size_t o = 0; o < c.op().n_outputs; ++o) c.output_shape(o, shape_of(c.in(0)), "(x's shape)");
}

// An optional input holding one value read on the device when the op runs (a step counter or
// learning rate, ABI 1.4): shape [] or [1].
inline void expect_one_element(const call& c, size_t i) {
  const DLTensor* t = c.in(i);
  if (t != nullptr && !(t->ndim == 0 || (t->ndim == 1 && t->shape[0] == 1)))
    c.fail(c.in_label(i) + ": expected 1 element (shape [] or [1]), got " + nnp::shape_string(*t));
}

}  // namespace nnp::host
