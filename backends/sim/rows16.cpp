// rows16.cpp — the simulated accelerator's float16 and bfloat16 ops. A GPU runs 16-bit ops
// (cuda: GEMM, convolution, pooling, activations, attention, ...), so the sim does too, for
// host code that passes 16-bit tensors (mixed-precision training, the Python package's dtype
// handling) to be testable without one. Every op kind the reference kernels run in float32 and
// float64 also runs here in float16 and bfloat16: the call's tensors of its dtype are widened
// to float64 copies, the reference's float64 kernel runs on them, and each output is rounded
// once to its own dtype (round to nearest even, nnplug/kit/half.hpp). So a 16-bit result is the
// exact result rounded once: what a 16-bit kernel with wider accumulation approximates, and
// never worse. The float32 tensors of a 16-bit call that follow the op table's `accumulation`
// rule (attention's softmax_lse, the normalisations' statistics, batch norm's scale and bias)
// are widened too and rounded back to float32; fixed float32 tensors (dropout's and Adam's step and
// lr tensors) are passed as they are, as in a float64 call.
//
// CAST converts between any two of float16, bfloat16, float32 and float64 (rounded once). The
// data-movement rows (copy, transpose, concat, ...) take any dtype already and are the
// reference's.
#include "sim.hpp"

#include "rows.hpp"

#include <nnplug/kit/broadcast.hpp>
#include <nnplug/kit/half.hpp>
#include <nnplug/kit/op_kinds.hpp>
#include <nnplug/kit/tensor.hpp>

#include <vector>

namespace nnp::sim {
namespace {

using kit::op_call;
using kit::op_row;

// The reference row of `kind`: the first one of its kernel files (rows.hpp), or nullptr.
const op_row* reference_row(int32_t kind) {
  for (const kit::op_row_list* list : ref::kFamilies)
    for (size_t i = 0; i < list->n_rows; ++i)
      if (list->rows[i].kind == kind) return &list->rows[i];
  return nullptr;
}

// Element i (row-major over the shape, through the strides if any) of t as a double, and its
// store rounded once to t's dtype.
int64_t element_offset(const DLTensor& t, int64_t i) {
  return t.strides != nullptr ? broadcast_offset(i, t.shape, t.ndim, t.strides) : i;
}

double load(const DLTensor& t, int64_t i) {
  const char* base = static_cast<const char*>(t.data) + t.byte_offset;
  const int64_t k = element_offset(t, i);
  if (is_f64(t.dtype)) return reinterpret_cast<const double*>(base)[k];
  if (is_f32(t.dtype)) return reinterpret_cast<const float*>(base)[k];
  const uint16_t h = reinterpret_cast<const uint16_t*>(base)[k];
  return is_f16(t.dtype) ? half_to_float(h) : bf16_to_float(h);
}

void store(const DLTensor& t, int64_t i, double v) {
  char* base = static_cast<char*>(t.data) + t.byte_offset;
  const int64_t k = element_offset(t, i);
  if (is_f64(t.dtype))
    reinterpret_cast<double*>(base)[k] = v;
  else if (is_f32(t.dtype))
    reinterpret_cast<float*>(base)[k] = static_cast<float>(v);
  else
    reinterpret_cast<uint16_t*>(base)[k] = is_f16(t.dtype) ? double_to_half(v) : double_to_bf16(v);
}

// Whether tensor i (inputs, then outputs) of a float16/bfloat16 call is widened: one of the
// call's dtype, or a float32 tensor under the op table's `accumulation` rule (float64 in a
// float64 call; the plugin kit's k_accumulation_tensors: attention's softmax_lse, the
// normalisations' statistics, batch norm's per-channel tensors).
bool widens(const op_call& c, size_t i, const DLDataType& call_dtype) {
  const DLTensor* t = i < c.n_inputs ? c.in(i) : c.out(i - c.n_inputs);
  if (t == nullptr) return false;
  if (t->dtype.code == call_dtype.code && t->dtype.bits == call_dtype.bits) return true;
  const bool output = i >= c.n_inputs;
  return is_f32(t->dtype) &&
         kit::is_accumulation_tensor(c.kind, output, output ? i - c.n_inputs : i);
}

// A 16-bit call with its widened tensors (widens) replaced by float64 ones: `with_data` false
// keeps the original data pointers (for the row's check, which reads no data); true gives
// each one a compact float64 copy of the original's elements.
class widened {
 public:
  widened(const op_call& c, bool with_data) : call_(c) {
    const size_t n = c.n_inputs + c.n_outputs;
    DLDataType dt{};
    kit::call_dtype(c, &dt);
    tensors_.resize(n);
    pointers_.resize(n);
    copies_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const DLTensor* t = i < c.n_inputs ? c.in(i) : c.out(i - c.n_inputs);
      pointers_[i] = t;
      if (!widens(c, i, dt)) continue;
      tensors_[i] = *t;
      tensors_[i].dtype = DLDataType{kDLFloat, 64, 1};
      if (with_data) {
        std::vector<double>& v = copies_[i];
        v.resize(static_cast<size_t>(numel(*t)));
        for (size_t k = 0; k < v.size(); ++k) v[k] = load(*t, static_cast<int64_t>(k));
        tensors_[i].data = v.data();
        tensors_[i].byte_offset = 0;
        tensors_[i].strides = nullptr;
      }
      pointers_[i] = &tensors_[i];
    }
  }

  op_call call() const {
    op_call w = call_;
    w.inputs = pointers_.data();
    w.outputs = pointers_.data() + call_.n_inputs;
    return w;
  }

  // Rounds every floating-point output's float64 copy into the original tensor.
  void write_back() const {
    for (size_t o = 0; o < call_.n_outputs; ++o) {
      const DLTensor* t = call_.out(o);
      const std::vector<double>& v = copies_[call_.n_inputs + o];
      if (pointers_[call_.n_inputs + o] == t) continue;  // not widened
      for (size_t k = 0; k < v.size(); ++k) store(*t, static_cast<int64_t>(k), v[k]);
    }
  }

 private:
  op_call call_;
  std::vector<DLTensor> tensors_;
  std::vector<const DLTensor*> pointers_;
  std::vector<std::vector<double>> copies_;
};

bool is_16bit_call(const op_call& c) { return (kit::call_dtype(c) & (kit::f16 | kit::bf16)) != 0; }

// The rows' kernel and check: a float32/float64 call goes to the reference row as it is.
void run(const op_call& c) {
  const op_row& row = *reference_row(c.kind);
  if (!is_16bit_call(c)) return row.kernel(c);
  const widened w(c, true);
  row.kernel(w.call());
  w.write_back();
}

void check(const op_call& c) {
  const op_row& row = *reference_row(c.kind);
  if (row.check == nullptr) return;
  if (!is_16bit_call(c)) return row.check(c);
  row.check(widened(c, false).call());
}

void cast(const op_call& c) {
  const DLTensor& x = *c.in(0);
  const DLTensor& y = *c.out(0);
  const int64_t n = numel(x);
  for (int64_t i = 0; i < n; ++i) store(y, i, load(x, i));
}

void check_cast(const op_call& c) {
  if (!is_float_dtype(c.out(0)->dtype))
    unsupported(
        format("cast's output 0 is %s: the sim backend casts between float16, "
               "bfloat16, float32 and float64",
               dtype_name(c.out(0)->dtype).c_str()));
}

// One 16-bit row per reference row of a float32+float64 kernel (CAST: its own), in the
// reference's order; built once, when the plugin is loaded.
std::vector<op_row> make_rows() {
  std::vector<op_row> rows;
  for (const kit::op_row_list* list : ref::kFamilies)
    for (size_t i = 0; i < list->n_rows; ++i) {
      const op_row& r = list->rows[i];
      if (reference_row(r.kind) != &r) continue;  // a later row of a kind is never used
      if (r.kind == NNP_OP_CAST)
        rows.push_back(op_row{r.kind, kit::all_floats, cast, check_cast});
      else if ((r.dtypes & ref::kFloats) == ref::kFloats && !(r.dtypes & kit::any))
        rows.push_back(op_row{r.kind, r.dtypes | kit::f16 | kit::bf16, run, check});
    }
  return rows;
}

const std::vector<op_row> kRowVector = make_rows();

}  // namespace

extern const kit::op_row_list kRows16{kRowVector.data(), kRowVector.size()};

}  // namespace nnp::sim
