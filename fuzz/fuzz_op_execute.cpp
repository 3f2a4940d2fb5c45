// fuzz_op_execute.cpp — libFuzzer target nnplug-fuzz-op-execute (docs/fuzzing.md).
//
// Each input is decoded into one op call (call_desc.hpp). The call goes through
// nnp_op_infer_shapes, nnp_op_supported on the reference and cpu devices, and, when its
// memory fits the limits, nnp_op_execute on both devices, each with its own copy of every
// buffer. libnnplug and the plugins are built with AddressSanitizer + UBSan, so any
// out-of-bounds access or undefined behaviour is a finding; so is a broken rule of the
// checks below (the target prints the call and aborts):
//  - no call returns INTERNAL or DEVICE_ERROR, and every failure has a message;
//  - validation is the library's: INVALID_ARGUMENT on one device is INVALID_ARGUMENT on the
//    other; nnp_op_supported's INVALID_ARGUMENT is execute's; execute's OK is supported's OK;
//    nnp_op_infer_shapes refuses nothing execute accepts, and its shapes are execute's;
//  - both devices give the same status, unless one says UNSUPPORTED or OUT_OF_MEMORY;
//  - a failed call leaves every byte of every buffer as it was; a call never writes to the
//    DLTensor structs, shapes, strides or params it is given;
//  - a successful call writes the output elements only (gaps of strided outputs and inputs
//    keep their bytes), and writes every output element (the two devices start from different
//    bytes in output buffers);
//  - on OK from both, the outputs agree: integers exactly, floats by NMSE with the NaN/Inf
//    rules of the conformance suite; a float difference beyond the tolerance is accepted only
//    where the call is ill-conditioned (the reference itself moves as much when its float
//    inputs are perturbed by a few units in the last place).
// Values are deterministic: a generator seeded from the input (no time, no randomness).
#include "call_desc.hpp"
#include "op_call.hpp"
#include "values.hpp"

#include <nnplug/nnplug.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

using namespace fuzz;

namespace {

nnp_device* g_dev[2];
nnp_stream* g_stream[2];
const char* const kDevName[2] = {"reference", "cpu"};
// Bytes that output-only buffers start with, per device: an output element a backend does not
// write differs between the devices.
const uint8_t kSentinel[2] = {0xA5, 0x5A};
bool g_verbose = false;

// ---- one call's memory on one device --------------------------------------------------------
struct host_block {
  uint8_t* p = nullptr;
  size_t n = 0;
  explicit host_block(size_t size) : n(size) {
    void* m = nullptr;
    // Exactly `size` bytes (AddressSanitizer reports the first byte past them).
    if (posix_memalign(&m, 64, size) != 0) std::abort();
    p = static_cast<uint8_t*>(m);
  }
  host_block(const host_block&) = delete;
  host_block& operator=(const host_block&) = delete;
  ~host_block() { std::free(p); }
};

struct bound_call {
  std::vector<std::unique_ptr<host_block>> bufs;
  std::vector<std::unique_ptr<int64_t[]>> arrays;  // shapes and strides, kShapeSlots each
  std::vector<DLTensor> tensors;                   // by tensor index
  std::vector<const DLTensor*> in, out;            // the arrays passed (n_inputs/n_outputs)
  std::unique_ptr<host_block> params;
  const void* params_ptr() const { return params ? params->p : nullptr; }
  // The call (c: the description this was bound from), valid while this lives unchanged.
  nnp::kit::op_call view(const call_desc& c) const {
    return conf::make_op_call(c.kind, params_ptr(), c.n_in, in.data(), c.n_out, out.data());
  }
  // What the call must not change.
  std::vector<DLTensor> tensors_before;
  std::vector<std::vector<int64_t>> arrays_before;
  std::vector<uint8_t> params_before;
  std::vector<std::vector<uint8_t>> bytes_before;

  void snapshot() {
    tensors_before = tensors;
    arrays_before.clear();
    for (const auto& a : arrays) arrays_before.emplace_back(a.get(), a.get() + kShapeSlots);
    params_before.assign(params ? params->p : nullptr, params ? params->p + params->n : nullptr);
    bytes_before.clear();
    for (const auto& b : bufs) bytes_before.emplace_back(b->p, b->p + b->n);
  }
  bool metadata_unchanged() const {
    if (std::memcmp(tensors.data(), tensors_before.data(), tensors.size() * sizeof(DLTensor)))
      return false;
    for (size_t i = 0; i < arrays.size(); ++i)
      if (!std::equal(arrays_before[i].begin(), arrays_before[i].end(), arrays[i].get()))
        return false;
    return !params || std::equal(params_before.begin(), params_before.end(), params->p);
  }
  // The first buffer that differs from the snapshot, or -1.
  int changed_buffer() const {
    for (size_t b = 0; b < bufs.size(); ++b)
      if (!std::equal(bytes_before[b].begin(), bytes_before[b].end(), bufs[b]->p))
        return static_cast<int>(b);
    return -1;
  }
};

bound_call bind(const call_desc& c, const call_plan& p,
                const std::vector<std::vector<uint8_t>>& values, uint8_t sentinel) {
  bound_call b;
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    b.bufs.emplace_back(new host_block(p.buffers[i].size));
    if (p.buffers[i].output_only)
      std::memset(b.bufs.back()->p, sentinel, p.buffers[i].size);
    else if (p.buffers[i].size > 0)
      std::memcpy(b.bufs.back()->p, values[i].data(), p.buffers[i].size);
  }
  b.tensors.resize(c.n_tensors());
  for (size_t i = 0; i < c.n_tensors(); ++i) {
    const tensor_spec& s = c.tensor(i);
    const tensor_plan& tp = p.tensors[i];
    DLTensor& t = b.tensors[i];
    t = DLTensor{};
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = s.ndim;
    t.dtype = s.dtype;
    b.arrays.emplace_back(new int64_t[kShapeSlots]);
    std::memcpy(b.arrays.back().get(), s.shape, sizeof s.shape);
    t.shape = b.arrays.back().get();
    if (s.smode != strides_mode::null) {
      b.arrays.emplace_back(new int64_t[kShapeSlots]);
      strides_of(s, b.arrays.back().get());
      t.strides = b.arrays.back().get();
    }
    t.byte_offset = tp.byte_offset;
    if (tp.wild_data != nullptr)
      t.data = tp.wild_data;
    else if (tp.buffer >= 0)
      t.data = b.bufs[static_cast<size_t>(tp.buffer)]->p + s.misalign;
  }
  auto array = [&](size_t n, size_t first, size_t count, std::vector<const DLTensor*>& out) {
    out.assign(n, nullptr);
    for (size_t i = 0; i < n && i < count; ++i)
      if (c.tensor(first + i).present) out[i] = &b.tensors[first + i];
  };
  array(c.n_in, 0, c.in.size(), b.in);
  array(c.n_out, c.in.size(), c.out.size(), b.out);
  const std::vector<uint8_t> pb = params_buffer(c);
  if (!pb.empty()) {
    b.params.reset(new host_block(pb.size()));
    std::memcpy(b.params->p, pb.data(), pb.size());
  }
  b.snapshot();
  return b;
}

// ---- backward ops that take their forward's results ----------------------------------------
// Some backward ops take results of their forward op as inputs (pooling's y, the saved
// statistics of the normalisations, attention's Y and softmax_lse), which backends may read or
// recompute: random values there make the outputs undefined. Those inputs are computed by the
// forward op on the reference device before the call (make_consistent).
struct forward_rule {
  int32_t backward, forward;
  // Forward inputs: a backward input index, kZerosLike - k (zeros shaped as backward input k),
  // kEnd. Forward outputs: a backward input index to write, kTempLike - k (a discarded tensor
  // shaped as backward input k), kEnd.
  int in[5], out[6];
};
constexpr int kEnd = -1, kZerosLike = -10, kTempLike = -20;
const forward_rule kForwardRules[] = {
    {NNP_OP_POOL2D_BACKWARD, NNP_OP_POOL2D_FORWARD, {0, kEnd}, {1, kEnd}},
    {NNP_OP_POOL_BACKWARD, NNP_OP_POOL_FORWARD, {0, kEnd}, {1, kEnd}},
    // x, scale, bias = 0 -> y, running_mean, running_var, saved_mean, saved_inv_std
    {NNP_OP_BATCH_NORM_BACKWARD,
     NNP_OP_BATCH_NORM_FORWARD_TRAINING,
     {0, 2, kZerosLike - 2, kEnd},
     {kTempLike - 0, kTempLike - 2, kTempLike - 2, 3, 4, kEnd}},
    // x, scale -> y, mean, inv_std
    {NNP_OP_LAYER_NORM_BACKWARD,
     NNP_OP_LAYER_NORM_FORWARD,
     {0, 2, kEnd},
     {kTempLike - 0, 3, 4, kEnd}},
    // Q, K, V, attn_mask -> Y, softmax_lse
    {NNP_OP_ATTENTION_BACKWARD, NNP_OP_ATTENTION_FORWARD, {0, 1, 2, 3, kEnd}, {4, 6, kEnd}},
};

// Calls f(byte offset within the buffer) for every element of tensor i (shape and strides of
// a valid, addressable description).
template <typename F>
void for_each_element(const call_desc& c, const call_plan& p, size_t i, F&& f) {
  const tensor_spec& s = c.tensor(i);
  const tensor_plan& tp = p.tensors[i];
  if (!tp.addressable || tp.elements == 0) return;
  const size_t item = item_size(s.dtype);
  int64_t st[kShapeSlots];
  strides_of(s, st);
  int64_t idx[NNP_MAX_DIMS] = {};
  for (int64_t n = 0; n < tp.elements; ++n) {
    int64_t off = 0;
    for (int d = 0; d < s.ndim; ++d) off += idx[d] * st[d];
    f(s.misalign + tp.byte_offset + static_cast<uint64_t>(off) * item);
    for (int d = s.ndim - 1; d >= 0; --d) {
      if (++idx[d] < s.shape[d]) break;
      idx[d] = 0;
    }
  }
}

// Runs the forward op of a backward call on the reference and writes its results into
// `values` (the backward's inputs). False if the call's kind needs it and it failed (then the
// outputs are not compared).
bool make_consistent(const call_desc& c, const call_plan& p,
                     std::vector<std::vector<uint8_t>>& values) {
  const forward_rule* rule = nullptr;
  for (const forward_rule& r : kForwardRules)
    if (r.backward == c.kind) rule = &r;
  if (rule == nullptr) return true;
  bound_call b = bind(c, p, values, kSentinel[0]);
  std::vector<std::vector<uint8_t>> temp_bytes;
  std::vector<DLTensor> temps;
  temp_bytes.reserve(8);
  temps.reserve(8);
  bool ok = true;
  auto input = [&](int k) -> const DLTensor* {
    if (static_cast<size_t>(k) >= c.n_in || static_cast<size_t>(k) >= c.in.size()) {
      ok = false;
      return nullptr;
    }
    return b.in[static_cast<size_t>(k)];
  };
  auto temp_like = [&](int k) -> const DLTensor* {
    const DLTensor* t = input(k);
    const size_t item = t != nullptr ? item_size(t->dtype) : 0;
    if (t == nullptr || item == 0 || t->ndim < 0 || t->ndim > NNP_MAX_DIMS) {
      ok = false;
      return nullptr;
    }
    uint64_t n = 1;
    for (int d = 0; d < t->ndim; ++d)
      if (t->shape[d] < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(t->shape[d]), &n) ||
          n > kMaxCallBytes) {
        ok = false;
        return nullptr;
      }
    temp_bytes.emplace_back(n * item + 1, 0);  // zeros (+1: never a NULL data pointer)
    DLTensor d = *t;
    d.strides = nullptr;
    d.byte_offset = 0;
    d.data = temp_bytes.back().data();
    temps.push_back(d);
    return &temps.back();
  };
  std::vector<const DLTensor*> fin, fout;
  for (int k : rule->in) {
    if (k == kEnd) break;
    fin.push_back(k >= 0 ? input(k) : temp_like(kZerosLike - k));
  }
  for (int k : rule->out) {
    if (k == kEnd) break;
    fout.push_back(k >= 0 ? input(k) : temp_like(kTempLike - k));
  }
  if (!ok) return false;
  std::string msg;
  nnp_status st =
      conf::execute(g_stream[0], conf::make_op_call(rule->forward, b.params_ptr(), fin.size(),
                                                    fin.data(), fout.size(), fout.data()));
  if (st == NNP_STATUS_OK) st = nnp_stream_synchronize(g_stream[0]);
  if (st != NNP_STATUS_OK) return false;
  for (size_t i = 0; i < p.buffers.size(); ++i)
    if (!p.buffers[i].output_only) values[i].assign(b.bufs[i]->p, b.bufs[i]->p + b.bufs[i]->n);
  return true;
}

// ---- reporting ------------------------------------------------------------------------------
struct report {
  report(const call_desc& call, const call_plan& memory) : c(call), p(memory) {}
  const call_desc& c;
  const call_plan& p;
  nnp_status infer = NNP_STATUS_OK, sup[2] = {}, exec[2] = {};
  std::string infer_msg, sup_msg[2], exec_msg[2];
  bool executed = false;

  [[noreturn]] void fail(const std::string& what) const {
    std::string s = "nnplug-fuzz: FINDING: " + what + "\n" + describe(c, p) + "\n" + statuses();
    std::fprintf(stderr, "%s\n", s.c_str());
    std::fflush(stderr);
    std::abort();
  }
  std::string statuses() const {
    std::string s = "  infer_shapes: " + line(infer, infer_msg);
    for (int d = 0; d < 2; ++d)
      s += "\n  supported on " + std::string(kDevName[d]) + ": " + line(sup[d], sup_msg[d]);
    if (executed)
      for (int d = 0; d < 2; ++d)
        s += "\n  execute on " + std::string(kDevName[d]) + ": " + line(exec[d], exec_msg[d]);
    return s;
  }
  static std::string line(nnp_status st, const std::string& msg) {
    return std::string(nnp_status_string(st)) + (msg.empty() ? "" : " (" + msg + ")");
  }
};

std::string last_message(nnp_status st) {
  return st == NNP_STATUS_OK ? std::string() : std::string(nnp_last_error_message());
}

void check_status(const report& r, nnp_status st, const std::string& msg, const char* what) {
  if (st == NNP_STATUS_INTERNAL || st == NNP_STATUS_DEVICE_ERROR || static_cast<int>(st) < 0 ||
      static_cast<int>(st) > NNP_STATUS_LOAD_FAILED)
    r.fail(std::string(what) + " returned " + nnp_status_string(st));
  if (st != NNP_STATUS_OK && msg.empty())
    r.fail(std::string(what) + " failed with " + nnp_status_string(st) + " and no message");
}

bool tolerable_pair(nnp_status a, nnp_status b) {
  return a == b || a == NNP_STATUS_UNSUPPORTED || b == NNP_STATUS_UNSUPPORTED ||
         a == NNP_STATUS_OUT_OF_MEMORY || b == NNP_STATUS_OUT_OF_MEMORY;
}

// ---- comparison -----------------------------------------------------------------------------
double tolerance(DLDataType t) {
  if (t.code == kDLBfloat) return 1e-4;
  if (t.bits == 16) return 1e-5;
  if (t.bits == 64) return 1e-14;
  return 1e-7;
}
// Relative size of the perturbation of float inputs (a few units in the last place).
double perturbation(DLDataType t) {
  if (t.code == kDLBfloat) return std::ldexp(1.0, -5);
  if (t.bits == 16) return std::ldexp(1.0, -8);
  if (t.bits == 64) return std::ldexp(1.0, -49);
  return std::ldexp(1.0, -21);
}

struct float_diff {
  bool classes_ok = true;
  double nmse = 0;
  std::string detail;
};

// How NaN and Inf positions are compared (class_rule_of).
enum class class_rule {
  exact,     // NaN where the other has NaN, Inf with the same sign where the other has it
  overflow,  // as exact, except that where one side is NaN or Inf the other may be NaN, Inf
             // or beyond 2^120 (float32 intermediates overflowing where float64 ones did not)
  none,      // values are not compared; every output element must be written
};

// NMSE over positions finite on both sides, NaN/Inf positions by `rule`.
float_diff compare_floats(const std::vector<double>& got, const std::vector<double>& want,
                          class_rule rule, DLDataType t) {
  float_diff r;
  double num = 0, den = 0;
  // Differences within the dtype's subnormal range are rounding of subnormal results (float32
  // arithmetic on the cpu, float64 rounded once on the reference): not counted.
  const double subnormal = t.code == kDLBfloat ? std::ldexp(1.0, -126)
                           : t.bits == 16      ? std::ldexp(1.0, -14)
                           : t.bits == 64      ? std::ldexp(1.0, -1022)
                                               : std::ldexp(1.0, -126);
  const double big = std::ldexp(1.0, 120);
  for (size_t i = 0; i < got.size(); ++i) {
    const double a = got[i], b = want[i];
    const bool finite = std::isfinite(a) && std::isfinite(b);
    bool same_class =
        std::isnan(a) == std::isnan(b) && (!(std::isinf(a) || std::isinf(b)) || a == b);
    if (!finite && rule == class_rule::overflow)
      same_class = !(std::fabs(a) < big) && !(std::fabs(b) < big);  // NaN compares false
    if (!same_class) {
      if (r.classes_ok) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "element %zu: cpu %.9g, reference %.9g", i, a, b);
        r.detail = buf;
      }
      r.classes_ok = false;
      continue;
    }
    if (!finite) continue;
    if (std::fabs(a - b) >= subnormal) num += (a - b) * (a - b);
    den += b * b;
  }
  r.nmse = num / std::max(den, 1e-300);
  if (num == 0) r.nmse = 0;
  if (r.classes_ok && r.detail.empty()) {
    size_t worst = 0;
    double wd = -1;
    for (size_t i = 0; i < got.size(); ++i) {
      const double d = std::fabs(got[i] - want[i]);
      if (std::isfinite(d) && d > wd) {
        wd = d;
        worst = i;
      }
    }
    if (!got.empty()) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "largest difference at element %zu: cpu %.9g, reference %.9g",
                    worst, got[worst], want[worst]);
      r.detail = buf;
    }
  }
  return r;
}

// Whether a double params field holds a value the call's float dtype cannot hold but as a
// subnormal or 0 (layer_norm's epsilon = 5e-324 in a float32 call): the cpu backend applies
// params in float32 (epsilon 0: 1/sqrt(0) = Inf, and Inf * 0 = NaN), the reference in float64;
// docs/ops.md bounds only large values (|value| <= the dtype's max). Values are not compared
// then.
bool params_underflow(const call_desc& c) {
  const DLDataType t = c.float_dtype;
  if (t.code == kDLFloat && t.bits == 64) return false;
  const double smallest =
      t.code == kDLFloat && t.bits == 16 ? std::ldexp(1.0, -14) : std::ldexp(1.0, -126);
  // The double fields of the op's params struct (generated from api/ops/ops.toml).
  const conf::table_op* op = conf::find_table_op(c.kind);
  if (op == nullptr || op->double_fields.empty()) return false;
  const std::vector<uint8_t> pb = params_buffer(c);
  if (pb.size() < 8) return false;
  uint64_t size;
  std::memcpy(&size, pb.data(), sizeof size);
  for (size_t off : op->double_fields) {
    if (off + 8 > size || off + 8 > pb.size()) continue;
    double v;
    std::memcpy(&v, &pb[off], sizeof v);
    if (v != 0 && std::fabs(v) < smallest) return true;
  }
  return false;
}

// How NaN and Inf positions must agree. Forward elementwise ops and data movement, whose every
// output element is a fixed function of fixed input elements (IEEE semantics as C's <math.h>;
// the table's `exact = true`): exactly. Other ops accumulate or combine many elements, where valid
// implementations differ: with finite inputs, only in overflow (float32 intermediates of the cpu
// backend against float64 ones of the reference); with NaN/Inf inputs, in many ways that change
// finite results too (padding as absent taps or as zeros times Inf, BLAS skipping the product for
// alpha = 0, a zero derivative or a dropped element as a select or as a multiplication by 0, Inf -
// Inf in one formula of a variance and not in another): their values are not compared then.
class_rule class_rule_of(const call_desc& c) {
  if (params_underflow(c)) return class_rule::none;
  const conf::table_op* op = conf::find_table_op(c.kind);
  if (op != nullptr && op->exact) return class_rule::exact;  // the table's `exact`
  return (c.value_mode & 2) ? class_rule::none : class_rule::overflow;
}

std::vector<double> output_floats(const call_desc& c, const call_plan& p, const bound_call& b,
                                  size_t i) {
  std::vector<double> v;
  const DLDataType t = c.tensor(i).dtype;
  const uint8_t* base = b.bufs[static_cast<size_t>(p.tensors[i].buffer)]->p;
  for_each_element(c, p, i, [&](uint64_t at) { v.push_back(load_float(base + at, t)); });
  return v;
}

// NNPLUG_FUZZ_VERBOSE: the first 16 values of each float input, to reproduce a finding.
void print_input_values(const call_desc& c, const call_plan& p,
                        const std::vector<std::vector<uint8_t>>& values) {
  for (size_t i = 0; i < c.in.size() && i < c.n_in; ++i) {
    const tensor_spec& s = c.tensor(i);
    const tensor_plan& tp = p.tensors[i];
    if (!s.present || tp.buffer < 0 || !is_float(s.dtype)) continue;
    const std::vector<uint8_t>& buf = values[static_cast<size_t>(tp.buffer)];
    if (buf.empty()) continue;
    std::string line = "  in" + std::to_string(i) + " values:";
    int n = 0;
    for_each_element(c, p, i, [&](uint64_t at) {
      char v[32];
      std::snprintf(v, sizeof v, " %.9g", load_float(&buf[at], s.dtype));
      if (n++ < 16) line += v;
    });
    std::fprintf(stderr, "%s%s\n", line.c_str(), n > 16 ? " ..." : "");
  }
}

// Runs the call on one device: returns the status (execute, then synchronize).
nnp_status execute(int d, const call_desc& c, bound_call& b, std::string* msg) {
  nnp_status st = conf::execute(g_stream[d], b.view(c));
  *msg = last_message(st);
  if (st == NNP_STATUS_OK) {
    st = nnp_stream_synchronize(g_stream[d]);
    *msg = last_message(st);
  }
  return st;
}

// The reference on float inputs perturbed by a few units in the last place: NMSE of its
// output i against `want` (its output on the exact inputs), or -1 if it could not run.
double perturbed_nmse(const call_desc& c, const call_plan& p, size_t out_index,
                      const std::vector<std::vector<uint8_t>>& values,
                      const std::vector<double>& want) {
  std::vector<std::vector<uint8_t>> v = values;
  for (size_t i = 0; i < c.n_tensors(); ++i) {
    const bool input = i < c.in.size();
    const size_t o = i - c.in.size();
    if (input ? i >= c.n_in : (o >= c.n_out || !inplace_output(c.kind, o))) continue;
    const tensor_spec& s = c.tensor(i);
    const tensor_plan& tp = p.tensors[i];
    if (!s.present || tp.buffer < 0 || !is_float(s.dtype)) continue;
    std::vector<uint8_t>& buf = v[static_cast<size_t>(tp.buffer)];
    const std::vector<uint8_t>& orig = values[static_cast<size_t>(tp.buffer)];
    if (buf.empty()) continue;
    const double eps = perturbation(s.dtype);
    for_each_element(c, p, i, [&](uint64_t at) {
      const double x = load_float(&orig[at], s.dtype);
      const uint64_t h = (at * 0x9E3779B97F4A7C15ull) >> 63;
      store_float(&buf[at], s.dtype, x * (1 + (h ? eps : -eps)));
    });
  }
  bound_call b = bind(c, p, v, kSentinel[0]);
  std::string msg;
  if (execute(0, c, b, &msg) != NNP_STATUS_OK) return -1;
  const std::vector<double> got = output_floats(c, p, b, out_index);
  if (got.size() != want.size()) return -1;
  double num = 0, den = 0;
  for (size_t k = 0; k < got.size(); ++k)
    if (std::isfinite(got[k]) && std::isfinite(want[k])) {
      num += (got[k] - want[k]) * (got[k] - want[k]);
      den += want[k] * want[k];
    }
  return num == 0 ? 0 : num / std::max(den, 1e-300);
}

// After a successful call on device d: only output elements changed. Marks the output bytes.
std::vector<std::vector<bool>> output_masks(const call_desc& c, const call_plan& p) {
  std::vector<std::vector<bool>> mask(p.buffers.size());
  for (size_t b = 0; b < p.buffers.size(); ++b) mask[b].assign(p.buffers[b].size, false);
  for (size_t o = 0; o < c.out.size() && o < c.n_out; ++o) {
    const size_t i = c.in.size() + o;
    const tensor_plan& tp = p.tensors[i];
    if (!c.out[o].present || tp.buffer < 0) continue;
    const size_t item = item_size(c.out[o].dtype);
    std::vector<bool>& m = mask[static_cast<size_t>(tp.buffer)];
    for_each_element(c, p, i, [&](uint64_t at) {
      for (size_t k = 0; k < item && at + k < m.size(); ++k) m[at + k] = true;
    });
  }
  return mask;
}

void check_only_outputs_written(const report& r, const bound_call& b,
                                const std::vector<std::vector<bool>>& mask, int d) {
  for (size_t k = 0; k < b.bufs.size(); ++k)
    for (size_t i = 0; i < b.bufs[k]->n; ++i)
      if (!mask[k][i] && b.bufs[k]->p[i] != b.bytes_before[k][i])
        r.fail(std::string(kDevName[d]) + " wrote byte " + std::to_string(i) + " of buffer " +
               std::to_string(k) + ", which is no output element");
}

// Every element of output i was written: none of 4 bytes or more consists of the device's
// sentinel alone (0xA5A5A5A5 and 0x5A5A5A5A are no plausible results; 1- and 2-byte elements
// are not checked).
void check_written(const report& r, const call_desc& c, const call_plan& p, const bound_call& b,
                   size_t i, int d) {
  const tensor_plan& tp = p.tensors[i];
  const size_t item = item_size(c.tensor(i).dtype);
  if (item < 4 || !p.buffers[static_cast<size_t>(tp.buffer)].output_only) return;
  const uint8_t* base = b.bufs[static_cast<size_t>(tp.buffer)]->p;
  int64_t n = 0;
  for_each_element(c, p, i, [&](uint64_t at) {
    if (std::all_of(base + at, base + at + item, [&](uint8_t x) { return x == kSentinel[d]; }))
      r.fail("out" + std::to_string(i - c.in.size()) + ": element " + std::to_string(n) +
             " was not written on " + kDevName[d]);
    ++n;
  });
}

void compare_outputs(const report& r, const call_desc& c, const call_plan& p,
                     const std::vector<std::vector<uint8_t>>& values, const bound_call& ref,
                     const bound_call& cpu) {
  const class_rule rule = class_rule_of(c);
  for (size_t o = 0; o < c.out.size() && o < c.n_out; ++o) {
    const size_t i = c.in.size() + o;
    const tensor_spec& s = c.out[o];
    const tensor_plan& tp = p.tensors[i];
    if (!s.present || tp.buffer < 0) continue;
    const std::string name = "out" + std::to_string(o);
    if (rule == class_rule::none) {
      check_written(r, c, p, ref, i, 0);
      check_written(r, c, p, cpu, i, 1);
    } else if (is_float(s.dtype)) {
      const std::vector<double> want = output_floats(c, p, ref, i),
                                got = output_floats(c, p, cpu, i);
      const float_diff fd = compare_floats(got, want, rule, s.dtype);
      const double tol = tolerance(s.dtype);
      if (!fd.classes_ok) r.fail(name + ": NaN/Inf differ between cpu and reference: " + fd.detail);
      if (fd.nmse <= tol) continue;
      const double pert = perturbed_nmse(c, p, i, values, want);
      if (pert >= 0 && fd.nmse <= std::max(tol, 1e4 * pert)) continue;  // ill-conditioned
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    ": cpu and reference differ, NMSE %.3g > %.3g (perturbed reference: %.3g); ",
                    fd.nmse, tol, pert);
      r.fail(name + buf + fd.detail);
    } else {
      const size_t item = item_size(s.dtype);
      const uint8_t* a = ref.bufs[static_cast<size_t>(tp.buffer)]->p;
      const uint8_t* b = cpu.bufs[static_cast<size_t>(tp.buffer)]->p;
      int64_t n = 0;
      for_each_element(c, p, i, [&](uint64_t at) {
        if (std::memcmp(a + at, b + at, item) != 0) {
          int64_t x = 0, y = 0;
          std::memcpy(&x, a + at, std::min<size_t>(item, 8));
          std::memcpy(&y, b + at, std::min<size_t>(item, 8));
          r.fail(name + ": element " + std::to_string(n) + " differs: cpu " + std::to_string(y) +
                 ", reference " + std::to_string(x));
        }
        ++n;
      });
    }
  }
}

void write_seeds(const char* dir) {
  struct variant {
    const char* suffix;
    uint8_t flags;
  };
  // float32; float64 (the reference only); float16; float32 with NaN/Inf values and extreme
  // integers (labels, indices).
  const variant variants[] = {{"f32", 0x00}, {"f64", 0x05}, {"f16", 0x06}, {"f32-special", 0x70}};
  for (size_t e = 0; e < examples().size(); ++e)
    for (const variant& v : variants) {
      const std::string path = std::string(dir) + "/" + examples()[e].name + "-" + v.suffix;
      FILE* f = std::fopen(path.c_str(), "wb");
      if (f == nullptr) {
        std::perror(path.c_str());
        std::exit(1);
      }
      const std::vector<uint8_t> bytes = seed_input(e, v.flags);
      std::fwrite(bytes.data(), 1, bytes.size(), f);
      std::fclose(f);
    }
  std::printf("nnplug-fuzz: wrote %zu seeds to %s\n", examples().size() * 4, dir);
  std::exit(0);
}

}  // namespace

// LeakSanitizer's built-in suppressions for this program. The cpu backend keeps per-thread
// scratch vectors in a tbb::enumerable_thread_specific, whose storage comes from TBB's own
// allocator (libtbbmalloc, mmap'd memory that LeakSanitizer does not scan for pointers): the
// vectors look unreferenced while the device holds them. They are freed by nnp_shutdown().
extern "C" const char* __lsan_default_suppressions() { return "leak:nnp::cpu::scratch\n"; }

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("NNPLUG_FUZZ_WRITE_SEEDS")) write_seeds(dir);
  g_verbose = std::getenv("NNPLUG_FUZZ_VERBOSE") != nullptr;
  // Two worker threads on the cpu device (its parallel paths run; CI machines are small).
  setenv("NNPLUG_NUM_THREADS", "2", /*overwrite=*/0);
  for (int d = 0; d < 2; ++d) {
    if (nnp_get_device(kDevName[d], &g_dev[d]) != NNP_STATUS_OK ||
        nnp_stream_create(g_dev[d], &g_stream[d]) != NNP_STATUS_OK) {
      std::fprintf(stderr, "nnplug-fuzz: no %s device: %s\n", kDevName[d],
                   nnp_last_error_message());
      std::exit(1);
    }
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const call_desc c = decode(data, size);
  const call_plan p = plan(c);
  std::vector<std::vector<uint8_t>> values = make_values(c, p);
  const bool consistent = p.executable && make_consistent(c, p, values);
  report r(c, p);

  // Validation alone: shape inference and nnp_op_supported on both devices.
  {
    bound_call probe = bind(c, p, values, 0);
    std::vector<nnp_shape> shapes(c.n_out);
    r.infer = conf::infer_shapes(probe.view(c), shapes.data());
    r.infer_msg = last_message(r.infer);
    check_status(r, r.infer, r.infer_msg, "nnp_op_infer_shapes");
    for (int d = 0; d < 2; ++d) {
      r.sup[d] = conf::supported(g_dev[d], probe.view(c));
      r.sup_msg[d] = last_message(r.sup[d]);
      check_status(r, r.sup[d], r.sup_msg[d], "nnp_op_supported");
    }
    if (!probe.metadata_unchanged()) r.fail("a validation call wrote to its tensors or params");
    if (probe.changed_buffer() >= 0) r.fail("a validation call wrote to tensor memory");
    if ((r.sup[0] == NNP_STATUS_INVALID_ARGUMENT) != (r.sup[1] == NNP_STATUS_INVALID_ARGUMENT))
      r.fail("nnp_op_supported: INVALID_ARGUMENT on one device only");
    if (r.infer == NNP_STATUS_INVALID_ARGUMENT && r.sup[0] != NNP_STATUS_INVALID_ARGUMENT)
      r.fail("nnp_op_infer_shapes refuses inputs that nnp_op_supported accepts");
    // Where the call is valid, the inferred shapes are the outputs' shapes.
    if (r.infer == NNP_STATUS_OK && r.sup[0] != NNP_STATUS_INVALID_ARGUMENT)
      for (size_t o = 0; o < c.n_out && o < c.out.size(); ++o) {
        const tensor_spec& t = c.out[o];
        if (!t.present) continue;
        bool same = shapes[o].ndim == t.ndim;
        for (int d = 0; same && d < t.ndim; ++d) same = shapes[o].dims[d] == t.shape[d];
        if (shapes[o].dtype.bits != 0)
          same = same && std::memcmp(&shapes[o].dtype, &t.dtype, sizeof t.dtype) == 0;
        if (!same)
          r.fail("out" + std::to_string(o) +
                 ": nnp_op_infer_shapes gives another shape or dtype than the valid call has");
      }
  }
  if (g_verbose) std::fprintf(stderr, "%s\n%s\n", describe(c, p).c_str(), r.statuses().c_str());
  if (!p.executable) return 0;
  if (g_verbose) print_input_values(c, p, values);

  // Execution on both devices, each on its own copy of the call's memory.
  r.executed = true;
  bound_call run[2] = {bind(c, p, values, kSentinel[0]), bind(c, p, values, kSentinel[1])};
  for (int d = 0; d < 2; ++d) {
    r.exec[d] = execute(d, c, run[d], &r.exec_msg[d]);
    check_status(r, r.exec[d], r.exec_msg[d], "nnp_op_execute");
  }
  if (g_verbose) std::fprintf(stderr, "%s\n", r.statuses().c_str());
  const std::vector<std::vector<bool>> mask = output_masks(c, p);
  for (int d = 0; d < 2; ++d) {
    const nnp_status st = r.exec[d];
    if (!run[d].metadata_unchanged()) r.fail("execute wrote to its tensors or params");
    if (r.sup[d] == NNP_STATUS_INVALID_ARGUMENT && st != NNP_STATUS_INVALID_ARGUMENT)
      r.fail("nnp_op_supported said INVALID_ARGUMENT, execute did not");
    if (st == NNP_STATUS_OK && r.sup[d] != NNP_STATUS_OK)
      r.fail("execute succeeded where nnp_op_supported did not");
    if (st == NNP_STATUS_UNSUPPORTED && r.sup[d] == NNP_STATUS_OK)
      r.fail("execute said UNSUPPORTED where nnp_op_supported said OK");
    if (st == NNP_STATUS_OK && r.infer == NNP_STATUS_INVALID_ARGUMENT)
      r.fail("nnp_op_infer_shapes refuses inputs that execute accepts");
    if (st != NNP_STATUS_OK) {
      const int b = run[d].changed_buffer();
      if (b >= 0)
        r.fail(std::string(kDevName[d]) + ": a failed call changed buffer " + std::to_string(b));
    } else {
      check_only_outputs_written(r, run[d], mask, d);
    }
  }
  if (!tolerable_pair(r.exec[0], r.exec[1])) r.fail("the devices disagree on the status");
  if (r.exec[0] == NNP_STATUS_OK && r.exec[1] == NNP_STATUS_OK && consistent)
    compare_outputs(r, c, p, values, run[0], run[1]);
  return 0;
}
