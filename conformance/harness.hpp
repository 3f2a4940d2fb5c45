// harness.hpp — the small framework under nnplug-conformance: options, devices, host
// descriptions of op calls, device tensors with guard bytes, random fill, NMSE comparison,
// tolerances, case files and the JSON report sink. Test files (test_<family>.cpp) build op
// calls from case files and hand them to check_numerics() / run_op().
//
// This is the harness's one public header; each section is implemented in its own file:
//   options, --filter, join()          harness_options.cpp
//   dtypes, float16/bfloat16 codecs    harness_codecs.cpp (encode/decode: harness_codecs.hpp)
//   op calls as host data, templates   harness_opcall.cpp
//   devices, streams                   harness_devices.cpp
//   running ops in guarded buffers     harness_buffers.cpp
//   comparison (NMSE, NaN/Inf rules)   harness_compare.cpp
//   tolerances                         harness_tolerances.cpp
//   random data, the numerics driver   harness_numerics.cpp (check_output_shape too)
//   case files                         harness_cases.cpp
//   report (JSON, Markdown, summary)   harness_report.cpp
//   gradients (finite differences)     harness_gradients.cpp
//   known answers on every device      harness_known.cpp
//
// Only the public C API (nnplug.h) is called, so the runner works against any plugin; the one
// op-call type is the plugin kit's header-only nnp::kit::op_call (testing/op_call.hpp).
#pragma once

#include <nnplug/nnplug.h>

#include "op_call.hpp"
#include "param_bytes.hpp"

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace conf {

// ---- options --------------------------------------------------------------------------------
struct runner_options {
  std::vector<std::string> backends;         // --backend NAME (device "NAME:0" or "NAME:i")
  std::vector<std::string> plugins;          // --plugin PATH
  std::string reference = "reference";       // --reference NAME
  uint64_t seed = 20240611;                  // --seed N
  std::string report;                        // --report FILE.json
  std::string markdown;                      // --markdown FILE.md
  std::string cases = "ci";                  // --cases ci|full|DIR
  std::string filter;                        // --filter TEXT: numerics/gradient case names
  std::vector<std::string> tolerance_files;  // --tolerances FILE (after the default file)
  bool shutdown = false;                     // --shutdown: call nnp_shutdown() at the end
  // --allow-missing-cases: a case family without a case file is a note instead of a failure
  // (for a DIR of --cases that holds some families on purpose).
  bool allow_missing_cases = false;
};
runner_options& options();
// True if a numerics or gradient case of this name runs (--filter is a substring of it).
bool case_selected(const std::string& case_name);

// ---- dtypes ---------------------------------------------------------------------------------
enum class dtype_id { f32, f64, f16, bf16, i64, u8, i32 };
DLDataType to_dl(dtype_id t);
const char* dt_name(dtype_id t);   // "float32", "float64", "float16", "bfloat16", "int64", ...
const char* dt_short(dtype_id t);  // "f32", "f64", "f16", "bf16", ...
size_t dt_size(dtype_id t);
bool dt_is_float(dtype_id t);
// The float dtypes every numerics case is tried in (unsupported ones are reported).
const std::vector<dtype_id>& float_dtypes();
// Rounds a value to what dtype t can hold (float16/bfloat16 round to nearest even).
double quantize(double v, dtype_id t);

// ---- op calls as host data ------------------------------------------------------------------
// One operand of an op call. Tensors with follows_case_dtype take the case's float dtype; others
// keep `dtype` (int64 labels, uint8 masks, a cast's destination).
struct tensor_spec {
  std::vector<int64_t> shape;
  bool follows_case_dtype = true;  // dtype = the case's float dtype
  bool accumulation = false;       // with follows_case_dtype: float32 when the case's dtype is
                                   // float16/bfloat16 (the op table's `accumulation` rule)
  dtype_id dtype = dtype_id::f32;  // used when follows_case_dtype is false
  std::vector<double> data;        // inputs and in/out outputs: initial values (row-major)
  std::vector<int64_t> strides;    // empty = compact; else strides in elements (NNP_OP_COPY)
  int alias_of = -1;               // outputs: index of the input whose memory it shares
  bool absent = false;             // optional tensor passed as NULL
  bool exact = false;              // outputs: compare bit-exactly (integers, masks)
};
tensor_spec tensor(std::vector<int64_t> shape, std::vector<double> data = {});
tensor_spec int_tensor(dtype_id dtype, std::vector<int64_t> shape, std::vector<double> data = {});
tensor_spec absent_tensor();
// A statistic under the op table's accumulation rule: float32 in a float16/bfloat16 case, else
// the case's dtype (attention's softmax_lse, the normalisations' statistics, batch norm's
// per-channel tensors).
inline tensor_spec accumulation_tensor(std::vector<int64_t> shape, std::vector<double> data = {}) {
  tensor_spec t = tensor(std::move(shape), std::move(data));
  t.accumulation = true;
  return t;
}
int64_t numel(const std::vector<int64_t>& shape);
std::string shape_str(const std::vector<int64_t>& shape);

// A call described by host data (not a call: run_op binds it to device buffers and makes the
// one op-call type, nnp::kit::op_call, from it; testing/op_call.hpp).
struct call_spec {
  int32_t kind = 0;
  std::vector<uint8_t> params;  // empty = NULL params
  std::vector<tensor_spec> inputs, outputs;
  template <typename P>
  void set_params(const P& p) {
    params = param_bytes(p);
  }
  template <typename P>
  P* params_as() {
    return params.size() >= sizeof(P) ? reinterpret_cast<P*>(params.data()) : nullptr;
  }
};
// The description of a call of `kind` with these operands and NULL params, or params `p`.
call_spec make_spec(int32_t kind, std::vector<tensor_spec> inputs,
                    std::vector<tensor_spec> outputs);
template <typename P>
call_spec make_spec(int32_t kind, const P& p, std::vector<tensor_spec> inputs,
                    std::vector<tensor_spec> outputs) {
  call_spec call = make_spec(kind, std::move(inputs), std::move(outputs));
  call.set_params(p);
  return call;
}
// The description of a call whose inputs and single output all have `shape` (activations, softmax,
// ...). With alias_input >= 0 the output aliases that input (the ops' "may alias" case).
template <typename P>
call_spec same_shape_spec(int32_t kind, const P& p, const std::vector<int64_t>& shape,
                          std::vector<std::vector<double>> inputs, int alias_input = -1) {
  std::vector<tensor_spec> in;
  for (auto& data : inputs) in.push_back(tensor(shape, std::move(data)));
  call_spec call = make_spec(kind, p, std::move(in), {tensor(shape)});
  if (alias_input >= 0) call.outputs[0].alias_of = alias_input;
  return call;
}
// The forward and backward op of a family whose operands all have one shape (activation,
// unary, softmax): forward(x) gives y, backward(a, dy) gives dx, where `a` is the forward's x or
// y as the backward op wants it. With `inplace` the output aliases x (forward) or dy (backward).
template <typename P>
struct same_shape_ops {
  int32_t forward_kind, backward_kind;
  call_spec forward(const P& p, const std::vector<int64_t>& shape, std::vector<double> x,
                    bool inplace) const {
    return same_shape_spec(forward_kind, p, shape, {std::move(x)}, inplace ? 0 : -1);
  }
  call_spec backward(const P& p, const std::vector<int64_t>& shape, std::vector<double> a,
                     std::vector<double> dy, bool inplace) const {
    return same_shape_spec(backward_kind, p, shape, {std::move(a), std::move(dy)},
                           inplace ? 1 : -1);
  }
};
template <typename P>
P make_params() {
  P p;
  std::memset(&p, 0, sizeof(P));
  p.struct_size = sizeof(P);
  return p;
}

// ---- devices --------------------------------------------------------------------------------
struct device_entry {
  std::string label;   // what the user asked for ("cpu", "./libnnplug-mine.so")
  std::string name;    // device name, "cpu:0"
  std::string plugin;  // plugin name
  nnp_device* dev = nullptr;
  DLDevice dl{kDLCPU, 0};
  nnp_stream* stream = nullptr;  // the main thread's stream
  bool available = false;        // false: no device (reason) or failed to load (failed)
  bool failed = false;           // load or lookup failed: a failure, not "no device"
  std::string reason;
  std::string plugin_version, plugin_path;  // from the plugin's load record
};
// Loads plugins and looks up devices as the options say. Returns false after printing why if
// the reference is not usable.
bool setup_devices();
device_entry& reference_device();
std::vector<device_entry*> backends_under_test();  // available or not
// The backends under test, then the reference (known-answer tests run on all of them).
std::vector<device_entry*> all_devices();
// Destroys the main-thread streams (before nnp_shutdown or exit).
void release_devices();

// ---- running ops ----------------------------------------------------------------------------
struct run_result {
  nnp_status status = NNP_STATUS_OK;
  std::string message;                       // nnp_last_error_message() on failure
  std::vector<std::vector<double>> outputs;  // per output (row-major); empty if absent
  std::vector<std::string> problems;         // guard bytes, changed inputs
  bool outputs_untouched = true;             // every output buffer byte as before the call
};
// What a call is made of just before nnp_op_execute (it owns the tensors, pointer arrays and
// params bytes); a call_mutation may break it (error tests): change tensor fields, point shapes
// into `storage`, set pointers to NULL, edit `param_bytes` or set `params` to NULL. view() is
// the call itself, valid while the raw_call lives unchanged.
struct raw_call {
  int32_t kind = 0;
  const void* params = nullptr;
  std::vector<uint8_t> param_bytes;
  std::vector<DLTensor> in, out;
  std::vector<const DLTensor*> in_ptrs, out_ptrs;
  std::vector<std::vector<int64_t>> storage;

  nnp::kit::op_call view() const {
    return make_op_call(kind, params, in_ptrs.size(), in_ptrs.data(), out_ptrs.size(),
                        out_ptrs.data());
  }
};
using call_mutation = std::function<void(raw_call&)>;
// Allocates every tensor with guard bytes on `dev`, uploads, executes on `stream` (default:
// the device's), synchronises, downloads and checks guards and untouched inputs.
// `dtype` is the case's float dtype.
// The dtype tensor t has in a call of case dtype case_dtype.
dtype_id spec_dtype(const tensor_spec& t, dtype_id case_dtype);
run_result run_op(device_entry& dev, const call_spec& call, dtype_id dtype,
                  nnp_stream* stream = nullptr, const call_mutation& mutate = {});
// On a device whose memory is not the host's (sim, cuda): `call` (float32) with its input
// `index`, a one-element float32 tensor named `name`, passed as host memory instead must be
// refused with INVALID_ARGUMENT naming that input's device, outputs untouched (doctest checks).
// Nothing on host-memory devices.
// Reports one case whose checks collected `problems` (pass when empty; the error column is
// `error`, by default the number of problems) and fails the doctest case with them.
void report_problems(const device_entry& dev, const std::string& op, const std::string& dtype,
                     const std::string& case_name, const std::vector<std::string>& problems,
                     double error = -1);
void check_host_scalar_refused(device_entry& dev, const call_spec& call, size_t index,
                               const std::string& name);
// A compact tensor on a device that stays allocated across op calls, for tests that queue
// several ops on one stream (e.g. a step counter updated in place between two calls): filled
// from `values` encoded in `dtype` (zeros when empty), read back with read(). A failed
// allocation or upload leaves `error` set (and dl()->data NULL).
class device_tensor {
 public:
  device_tensor(device_entry& dev, dtype_id dtype, std::vector<int64_t> shape,
                const std::vector<double>& values = {});
  ~device_tensor();
  device_tensor(const device_tensor&) = delete;
  device_tensor& operator=(const device_tensor&) = delete;
  const DLTensor* dl() const { return &t_; }
  // The elements, copied to the host (nnp_memcpy, which waits for the device's work first).
  std::vector<double> read() const;
  std::string error;

 private:
  device_entry& dev_;
  dtype_id dtype_;
  std::vector<int64_t> shape_;
  DLTensor t_{};
};
// nnp_op_supported for this call with this dtype (data pointers are NULL). OK or the status;
// *reason gets the message.
nnp_status op_supported(device_entry& dev, const call_spec& call, dtype_id dtype,
                        std::string* reason);
// Runs `call` on the reference in float64 and rounds its outputs to dt: for ops whose inputs
// must be a forward's outputs (pool backward's y, softmax backward's y). Empty on failure.
std::vector<std::vector<double>> reference_outputs(const call_spec& call, dtype_id dt);
// Rounds every case-dtype input and in/out output to dtype (so that the reference, which may
// compute in a wider dtype, sees exactly the backend's values).
call_spec quantized(const call_spec& call, dtype_id dtype);

// ---- comparison -----------------------------------------------------------------------------
struct comparison {
  bool ok = true;
  double error = 0;    // NMSE (or count of mismatches for exact comparisons)
  std::string detail;  // first problem, if any
};
// NMSE = sum((a-b)^2) / max(sum(b^2), tiny) over finite positions; NaN in `got` where `want`
// is not NaN fails; Inf must match in position and sign.
comparison compare_nmse(const std::vector<double>& got, const std::vector<double>& want,
                        double threshold);
comparison compare_exact(const std::vector<double>& got, const std::vector<double>& want);

// ---- tolerances -----------------------------------------------------------------------------
// Lines "op dtype nmse" ('*' matches any); later lines and later files win.
double tolerance(const std::string& op, dtype_id dtype);
double tolerance(const std::string& op, const std::string& dtype);
bool load_tolerances();

// ---- random data ----------------------------------------------------------------------------
// Deterministic per (seed, key): the same case always gets the same inputs.
class value_rng {
 public:
  explicit value_rng(const std::string& key);
  double uniform(double lo, double hi);
  int64_t integer(int64_t lo, int64_t hi);  // inclusive
  std::vector<double> uniform_vec(int64_t n, double lo = -1, double hi = 1);
  // Values with |v| in [min_abs, max_abs] and random sign: stays away from kinks at 0.
  std::vector<double> away_from_zero(int64_t n, double min_abs, double max_abs);
  // n distinct values (a shuffled grid): no ties for max pooling.
  std::vector<double> distinct(int64_t n, double spacing);
  std::mt19937_64& engine() { return eng_; }

 private:
  std::mt19937_64 eng_;
};

// A 2-D output size worked out by hand: the case's text and the output's P x Q.
struct known_size {
  const char* text;
  int64_t p, q;
};

// The activation functions (nnp_activation_params.function) by the names case files give them
// (fn=relu, ...).
inline const std::vector<std::pair<std::string, int32_t>>& activation_functions() {
  static const std::vector<std::pair<std::string, int32_t>> fns{
      {"relu", NNP_ACTIVATION_RELU},
      {"leaky_relu", NNP_ACTIVATION_LEAKY_RELU},
      {"sigmoid", NNP_ACTIVATION_SIGMOID},
      {"tanh", NNP_ACTIVATION_TANH},
      {"gelu_erf", NNP_ACTIVATION_GELU_ERF},
      {"gelu_tanh", NNP_ACTIVATION_GELU_TANH},
      {"elu", NNP_ACTIVATION_ELU}};
  return fns;
}

// ---- case files -----------------------------------------------------------------------------
// One case a line: space-separated tokens "key=value" or "keyVALUE" (key = leading [a-z_],
// value = the rest, e.g. "stride2", "pad_t1", "axis-1"); a bare word is a flag. '#' comments.
struct case_line {
  std::string text;  // the line as written (normalised spaces)
  std::map<std::string, std::string> kv;
  bool has(const std::string& k) const { return kv.count(k) != 0; }
  int64_t i(const std::string& k, int64_t def) const;
  double d(const std::string& k, double def) const;
  std::string s(const std::string& k, const std::string& def) const;
  std::vector<int64_t> dims(const std::string& k, std::vector<int64_t> def = {}) const;  // 2x3x4
  std::vector<int64_t> list(const std::string& k) const;                                 // 1,0,2
};
case_line parse_case(const std::string& line);
// A 2-D params struct's strides and pads (nnp_conv2d_params, nnp_pool2d_params) from the tokens
// "stride" (default default_stride), "stride_h", "stride_w", "pad" (default 0), "pad_t", "pad_b",
// "pad_l" and "pad_r".
template <typename P>
void read_strides_pads_2d(const case_line& cs, P& p, int64_t default_stride) {
  const int64_t stride = cs.i("stride", default_stride), pad = cs.i("pad", 0);
  p.stride_h = static_cast<int32_t>(cs.i("stride_h", stride));
  p.stride_w = static_cast<int32_t>(cs.i("stride_w", stride));
  p.pad_top = static_cast<int32_t>(cs.i("pad_t", pad));
  p.pad_bottom = static_cast<int32_t>(cs.i("pad_b", pad));
  p.pad_left = static_cast<int32_t>(cs.i("pad_l", pad));
  p.pad_right = static_cast<int32_t>(cs.i("pad_r", pad));
}
// Cases of `family` from the selected list (ci, full or a directory); full falls back to ci.
std::vector<case_line> load_cases(const std::string& family);
std::string data_dir();  // where tolerances.txt and cases/ live

// ---- report ---------------------------------------------------------------------------------
enum class case_outcome { pass, fail, unsupported, no_device };
const char* outcome_name(case_outcome o);
struct report_entry {
  std::string backend, op, dtype, case_name;
  case_outcome outcome;
  double error = 0, threshold = 0;
  std::string message;
};
void report(const report_entry& e);
bool write_report(const std::string& path);
// Markdown summary: one row per (backend, op), one column per dtype: passed/total and the
// worst error, "fail", "unsupported" or "no device".
bool write_markdown_report(const std::string& path);
void print_summary();

// ---- the numerics driver --------------------------------------------------------------------
// Runs `call` (built for `dtypes`) on every backend under test and on the reference and
// compares every output; records pass/fail/unsupported and asserts through doctest.
// `op` names the op for tolerances and the report ("conv2d_forward"); case_text the case.
struct numerics_options {
  std::vector<dtype_id> dtypes = float_dtypes();
};
void check_numerics(const std::string& op, const std::string& case_text, const call_spec& call,
                    const numerics_options& opt = {});
// Same, but the call depends on the dtype (e.g. cast destinations).
void check_numerics_fn(const std::string& op, const std::string& case_text,
                       const std::function<call_spec(dtype_id)>& make,
                       const numerics_options& opt = {});
// check_numerics on every case of load_cases(family): make(case, rng) builds the call, with rng
// keyed "<rng_key> <case text>" (the key fixes the case's inputs: keep it stable). The short form
// uses `op` as the family and the key.
using case_call_fn = std::function<call_spec(const case_line&, value_rng&)>;
void check_numerics_cases(const std::string& op, const std::string& family,
                          const std::string& rng_key, const case_call_fn& make);
void check_numerics_cases(const std::string& op, const case_call_fn& make);
// Known output shape, on every device (the reference included) in float32: `call`, whose output 0
// has the expected shape written as a literal by the test, must be accepted and run, and output 0
// one larger or one smaller in any dimension must be refused. Devices that declare the call
// unsupported are skipped. `op` names the check in the report ("conv2d_out_size").
void check_output_shape(const std::string& op, const std::string& case_text, const call_spec& call);
// An output shape written as a literal: a case's text and output 0's shape.
struct known_shape {
  const char* text;
  std::vector<int64_t> y;
};
// check_output_shape for each known shape: the call make(parse_case(text), rng), rng keyed
// "known shape", with output 0 given the literal shape y.
void check_output_shapes(const std::string& op, const std::vector<known_shape>& known,
                         const case_call_fn& make);

// ---- known answers -------------------------------------------------------------------------
// Known answers on all_devices() in float32, for hand-computed values the reference must meet
// too: a device that declares `call` unsupported is skipped, any other must run it (REQUIRE) and
// give output 0 = `want` within NMSE `threshold` (0: bit-exactly, compare_exact). Reported as op
// "<family>_known", case "<family>_known <case_text>". `then` runs further checks on each device
// that ran the call.
void check_known_answer(const std::string& family, const std::string& case_text,
                        const call_spec& call, const std::vector<double>& want,
                        double threshold = 1e-12,
                        const std::function<void(device_entry&)>& then = {});
// Known answers for several outputs on all_devices(): each device runs `call` in the first of
// `dtypes` it supports (none: skipped) and must give output k = want[k] within NMSE
// threshold(dtype) for every k. Reported as op `op`, case "<op> <case_text>", in that dtype.
void check_known_outputs(const std::string& op, const std::string& case_text, const call_spec& call,
                         const std::vector<std::vector<double>>& want,
                         const std::vector<dtype_id>& dtypes,
                         const std::function<double(dtype_id)>& threshold);

// ---- gradients ------------------------------------------------------------------------------
// Checks a backward op against central finite differences of its forward op on the reference
// in float64: L(x) = sum_k sum(forward(x)_k * r_k); dL/dwrt from `backward` vs
// (L(x + h e_i) - L(x - h e_i)) / 2h on a sample of coordinates.
struct gradient_check {
  std::string name;  // report name, e.g. "conv2d_backward_data"
  std::string case_text;
  call_spec forward;              // inputs are the point x
  std::vector<int> loss_outputs;  // which forward outputs enter L (default: output 0)
  // Builds the backward call from the forward call, its outputs and the weights r; returns
  // the call and, through grad_index, for each checked forward input the backward output
  // holding its gradient.
  std::function<call_spec(const call_spec& fwd, const std::vector<std::vector<double>>& fwd_out,
                          const std::vector<std::vector<double>>& r)>
      backward;
  std::vector<std::pair<int, int>> wrt;  // (forward input index, backward output index)
  double step = 1e-6;
  int max_coords = 24;
};
void check_gradient(const gradient_check& g);
// The check without reporting or asserting (outcome pass/fail/unsupported and the message).
report_entry evaluate_gradient(const gradient_check& g);

// ---- op templates (errors, threads) ---------------------------------------------------------
// A valid call per op kind, registered by the family files, used by the error and thread tests.
struct op_template {
  std::string name;
  std::function<call_spec()> make;
};
std::vector<op_template>& op_templates();
struct register_template {
  register_template(const std::string& name, std::function<call_spec()> make) {
    op_templates().push_back({name, std::move(make)});
  }
  // The template make(parse_case(case_text), rng), with rng keyed "template <rng_name>" (the
  // key fixes the template's inputs: keep it stable).
  register_template(const std::string& name, const std::string& rng_name,
                    const std::string& case_text, case_call_fn make)
      : register_template(name, [rng_name, case_text, make = std::move(make)] {
          value_rng rng("template " + rng_name);
          return make(parse_case(case_text), rng);
        }) {}
};
// Template makers for a same_shape_ops family (the `make` of register_template): the forward or
// backward call of the case's params (params_of) on `shape`, inputs uniform in [-1, 1], not in
// place.
template <typename P>
case_call_fn forward_template_of(same_shape_ops<P> ops, P (*params_of)(const case_line&),
                                 std::vector<int64_t> shape) {
  return [ops, params_of, shape](const case_line& c, value_rng& rng) {
    return ops.forward(params_of(c), shape, rng.uniform_vec(numel(shape)), false);
  };
}
template <typename P>
case_call_fn backward_template_of(same_shape_ops<P> ops, P (*params_of)(const case_line&),
                                  std::vector<int64_t> shape) {
  return [ops, params_of, shape](const case_line& c, value_rng& rng) {
    return ops.backward(params_of(c), shape, rng.uniform_vec(numel(shape)),
                        rng.uniform_vec(numel(shape)), false);
  };
}
// The forward call of a case for check_numerics_cases: params_of(case) on shape_of(case) with
// x = x_of(case, rng), in place (y aliases x) with the token inplace1.
template <typename P>
case_call_fn forward_case_of(same_shape_ops<P> ops, P (*params_of)(const case_line&),
                             std::vector<int64_t> (*shape_of)(const case_line&),
                             std::vector<double> (*x_of)(const case_line&, value_rng&)) {
  return [ops, params_of, shape_of, x_of](const case_line& c, value_rng& rng) {
    return ops.forward(params_of(c), shape_of(c), x_of(c, rng), c.i("inplace", 0) != 0);
  };
}

// ---- host reference helpers -----------------------------------------------------------------
// How many windows `extent` wide fit in `padded` elements when they start at 0, stride,
// 2*stride, ... (0 when stride < 1): the output size of a convolution or pooling along one
// dimension, counted rather than taken from the library's shape maths.
int64_t count_windows(int64_t padded, int64_t extent, int64_t stride);
std::string join(const std::vector<std::string>& parts, const std::string& sep);

}  // namespace conf
