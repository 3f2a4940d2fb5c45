// The op table's test data for the conformance suite, the API tests and the fuzzer (the
// test-support target nnplug_test_support, testing/): one small valid call per op kind and the
// params values each kind's checks must reject, generated from api/ops/ops.toml
// (generated/op_cases.inc). Shapes here are literals of the table, not
// computed by the shape maths under test.
#pragma once

#include <nnplug/nnplug.h>

#include "param_bytes.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace conf {

struct table_tensor {
  std::vector<int64_t> shape;
  // 'f' the call's float dtype, 'l' int64, 'u' uint8, 'F' float32, 'a' float32 in a
  // float16/bfloat16 call, else the call's float dtype (the table's dtype rules)
  char dtype;
  bool optional;
  int32_t dtype_since;  // 'a': the ABI minor from which the rule holds for it (before: 'f'); else 0
};

// The dtype of a table tensor (its letter above) in a call whose float dtype is float_dtype.
inline DLDataType table_dtype(char letter, DLDataType float_dtype) {
  const bool half = float_dtype.bits == 16;  // float16, bfloat16
  if (letter == 'l') return DLDataType{kDLInt, 64, 1};
  if (letter == 'u') return DLDataType{kDLUInt, 8, 1};
  if (letter == 'F' || (letter == 'a' && half)) return DLDataType{kDLFloat, 32, 1};
  return float_dtype;
}

struct table_example {
  int32_t kind;
  const char* name;
  int32_t since;                // ABI minor that added the kind
  bool inferable;               // nnp_op_infer_shapes derives every output (the table's `infer`)
  std::vector<uint8_t> params;  // empty = NULL params
  std::vector<table_tensor> in, out;
  template <typename P>
  void set_params(const P& p) {
    params = param_bytes(p);
  }
};

struct table_field_case {
  int32_t kind;
  const char* op;
  const char* field;
  size_t offset;
  char type;  // 'i' int32, 'l' int64, 'u' uint64, 'd' double
  double bad;
  const char* why;
};

// Bytes of a params struct that must hold 0 (a reserved field; the last entry of an array
// whose unused entries must be 0).
struct table_zero_field {
  const char* name;  // "reserved0", "perm[7]"
  size_t offset;
  size_t size;
};

// One op kind's facts from the table, for the tests and the fuzzer that need more than the
// example: every kind, collectives included.
struct table_op {
  int32_t kind;
  const char* name;
  bool collective;             // takes a communicator (the table's `collective`)
  bool exact;                  // NaN/Inf positions agree exactly across backends (`exact`)
  bool heavy;                  // arithmetic grows faster than the tensors (`heavy`)
  uint32_t inplace_outputs;    // bit o: output o is read and written (the outputs' `inplace`)
  bool zeroed_params_invalid;  // params of all zeros (struct_size kept) are refused
  std::vector<table_zero_field> must_be_zero;
  std::vector<size_t> double_fields;  // offsets of the params' double fields
  bool inplace(size_t output) const { return output < 32 && ((inplace_outputs >> output) & 1u); }
};

#include "generated/op_cases.inc"

// The facts of a kind, or nullptr for a kind the table lacks.
inline const table_op* find_table_op(int32_t kind) {
  for (const table_op& op : table_ops())
    if (op.kind == kind) return &op;
  return nullptr;
}

// An example's tensors as DLTensors on `device` with data from `alloc(bytes)` (nullptr data
// when alloc is empty). float tensors get `float_dtype`; optional tensors are present.
struct bound_example {
  std::vector<DLTensor> in, out;
  std::vector<const DLTensor*> in_ptrs, out_ptrs;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<void*> data;
  const void* params = nullptr;
};

template <typename Alloc>
bound_example bind_example(const table_example& e, DLDevice device, DLDataType float_dtype,
                           Alloc&& alloc) {
  bound_example b;
  b.shapes.reserve(e.in.size() + e.out.size());
  auto make = [&](const table_tensor& t) {
    b.shapes.push_back(t.shape);
    DLTensor d{};
    d.device = device;
    d.ndim = static_cast<int32_t>(t.shape.size());
    d.dtype = table_dtype(t.dtype, float_dtype);
    d.shape = b.shapes.back().data();
    size_t n = 1;
    for (int64_t v : t.shape) n *= static_cast<size_t>(v);
    d.data = alloc(n * ((d.dtype.bits + 7) / 8));
    b.data.push_back(d.data);
    return d;
  };
  for (const table_tensor& t : e.in) b.in.push_back(make(t));
  for (const table_tensor& t : e.out) b.out.push_back(make(t));
  for (DLTensor& t : b.in) b.in_ptrs.push_back(&t);
  for (DLTensor& t : b.out) b.out_ptrs.push_back(&t);
  b.params = e.params.empty() ? nullptr : e.params.data();
  return b;
}

}  // namespace conf
