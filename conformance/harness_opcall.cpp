// harness_opcall.cpp — op calls as host data: tensor_spec constructors, numel/shape_str,
// quantized() (every case-dtype operand rounded to the dtype), and the registry of op
// templates (one valid call per op kind) used by the error and thread tests.
#include "harness.hpp"

namespace conf {

// ---- tensors --------------------------------------------------------------------------------
tensor_spec tensor(std::vector<int64_t> shape, std::vector<double> data) {
  tensor_spec t;
  t.shape = std::move(shape);
  t.data = std::move(data);
  return t;
}
tensor_spec int_tensor(dtype_id dtype, std::vector<int64_t> shape, std::vector<double> data) {
  tensor_spec t = tensor(std::move(shape), std::move(data));
  t.follows_case_dtype = false;
  t.dtype = dtype;
  t.exact = true;
  return t;
}
tensor_spec absent_tensor() {
  tensor_spec t;
  t.absent = true;
  return t;
}
call_spec make_spec(int32_t kind, std::vector<tensor_spec> inputs,
                    std::vector<tensor_spec> outputs) {
  call_spec call;
  call.kind = kind;
  call.inputs = std::move(inputs);
  call.outputs = std::move(outputs);
  return call;
}

int64_t count_windows(int64_t padded, int64_t extent, int64_t stride) {
  if (stride < 1) return 0;
  int64_t n = 0;
  for (int64_t start = 0; start + extent <= padded; start += stride) ++n;
  return n;
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}
std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s.empty() ? "scalar" : s;
}

call_spec quantized(const call_spec& call, dtype_id dtype) {
  call_spec q = call;
  auto round_all = [dtype](tensor_spec& t) {
    const dtype_id d = spec_dtype(t, dtype);
    for (double& v : t.data) v = quantize(v, d);
  };
  for (auto& t : q.inputs) round_all(t);
  for (auto& t : q.outputs) round_all(t);
  return q;
}

std::vector<op_template>& op_templates() {
  static std::vector<op_template> t;
  return t;
}

}  // namespace conf
