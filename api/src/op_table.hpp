// The op table as libnnplug sees it: one op_desc per op kind, generated from api/ops/ops.toml
// (api/src/generated/op_table.inc, included by op_table.cpp). Validation (validate.cpp) runs
// the generic checks from these rows (tensor counts, params fields, dtypes, aliasing) and then
// the op's hand-written shape rule (validate_shapes_<family>.cpp; validate_call.hpp lists them).
#pragma once

#include <nnplug/nnplug_ops.h>

#include <cstddef>
#include <cstdint>

namespace nnp::host {

class call;

// Field types of params structs (letters as the generator writes them).
enum class field_type : char {
  i = 'i',  // int32_t
  l = 'l',  // int64_t
  u = 'u',  // uint64_t
  d = 'd',  // double
  a = 'a',  // int32_t[NNP_MAX_DIMS]
  L = 'L',  // int64_t[NNP_MAX_DIMS]
  p = 'p',  // nnp_comm* (a handle, never dereferenced by validation)
};

// Checks of api/ops/ops.toml ("check =").
enum class check {
  flag,
  min,
  enum_,
  finite,
  positive,
  nonnegative,
  interval,
  reserved,
  shape,
  comm
};

struct param_field {
  const char* name;
  size_t offset;
  field_type type;
  check kind;
  double lo, hi;  // min: lo; enum: [lo, hi]; interval: [lo, hi] or [lo, hi)
  bool hi_open;   // interval only
  const char* enum_name;
  const int32_t* enum_since;  // enum only: the ABI minor that added each value, by value
  int32_t since;              // ABI minor that added the field
  double default_value;
};

// The largest params struct of the table, in bytes (pinned for every struct by op_table.inc):
// the size of the copy a plugin receives (validate.hpp, plugin_params).
constexpr size_t k_max_params_bytes = 512;

struct param_struct {
  const char* name;
  size_t size_1_0;  // the smallest struct_size accepted (1.0 size, or the first minor's)
  size_t size;      // sizeof as compiled into libnnplug
  const param_field* fields;
  size_t n_fields;
};

// float32: always float32, whatever the call's float dtype (a step counter on the device).
enum class dtype_rule {
  float_common,
  int64,
  uint8,
  same_as_input0,
  any_float,
  float32,
  accumulation  // float32 when the call's float dtype is float16/bfloat16, else that dtype
};

// The dtype of an `accumulation` tensor in a call whose float dtype is t.
inline DLDataType accumulation_dtype(const DLDataType& t) {
  const bool half = t.lanes == 1 && t.bits == 16 && (t.code == kDLFloat || t.code == kDLBfloat);
  return half ? DLDataType{kDLFloat, 32, 1} : t;
}

struct tensor_desc {
  const char* name;
  bool optional;
  dtype_rule dtype;
  bool variadic;  // the last input (output) only: stands for 1..NNP_MAX_VARIADIC tensors
  int32_t since;  // ABI minor that added the tensor to its op (0, or the op's: with the op)
  // accumulation tensors: the ABI minor from which the rule holds for this one (before it,
  // the tensor had the call's float dtype); 0 for the other rules
  int32_t dtype_since;
};

struct alias_pair {
  size_t output, input;
};

using shape_rule = void (*)(call& c, const void* params);

struct op_desc {
  int32_t kind;
  const char* name;
  int32_t since;  // ABI minor that added the kind
  const param_struct* params;
  bool params_optional;
  size_t n_inputs;
  const tensor_desc* inputs;
  size_t n_outputs;
  const tensor_desc* outputs;
  size_t n_alias;
  const alias_pair* alias;
  bool allow_strides;
  bool inferable;
  bool variadic_inputs;   // inputs[n_inputs - 1] is variadic
  bool variadic_outputs;  // outputs[n_outputs - 1] is variadic
  bool collective;        // takes a communicator (params->comm): run by its transport
  shape_rule shapes;
};

// The row of a kind, or nullptr for a kind this libnnplug does not know.
const op_desc* find_op(int32_t kind);

// Reads a params field as a double (integers convert exactly up to 2^53).
double read_field(const void* params, const param_field& f);

}  // namespace nnp::host
