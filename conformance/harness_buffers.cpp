// harness_buffers.cpp — running one op call on a device in guarded buffers: every tensor is
// uploaded with guard bytes before and after it (outputs filled with NaN bytes), the op runs
// on a stream, and after synchronising everything is downloaded and checked (guards intact,
// inputs unchanged, outputs untouched on failure). Also nnp_op_supported for a call and the
// reference's float64 outputs rounded to a dtype.
#include "harness.hpp"
#include "harness_codecs.hpp"

#include <algorithm>
#include <numeric>

namespace conf {

// ---- guarded device buffers -------------------------------------------------------------------
namespace {
constexpr size_t kGuard = 256;  // bytes before and after every tensor
uint8_t guard_byte(size_t i) { return static_cast<uint8_t>(0xA5u ^ (i * 7u)); }
constexpr uint8_t kOutputFill = 0xFF;  // NaN for floats: an element the op forgets stays NaN

struct guarded_buffer {
  device_entry* dev = nullptr;
  void* base = nullptr;
  size_t interior = 0;         // bytes between the guards
  std::vector<uint8_t> image;  // what was uploaded (guards + interior)
  std::vector<uint8_t> after;  // downloaded after the op
  ~guarded_buffer() {
    if (base) nnp_free(dev->dev, base);
  }
};

int64_t extent_elems(const tensor_spec& t) {
  const int64_t n = numel(t.shape);
  if (n <= 0) return 0;
  if (t.strides.empty()) return n;
  int64_t e = 1;
  for (size_t i = 0; i < t.shape.size(); ++i) e += (t.shape[i] - 1) * t.strides[i];
  return e;
}
// Element offsets (in elements) of the row-major logical order.
std::vector<int64_t> element_offsets(const tensor_spec& t) {
  const int64_t n = std::max<int64_t>(numel(t.shape), 0);
  std::vector<int64_t> off(static_cast<size_t>(n));
  if (t.strides.empty()) {
    std::iota(off.begin(), off.end(), 0);
    return off;
  }
  std::vector<int64_t> idx(t.shape.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t o = 0;
    for (size_t i = 0; i < idx.size(); ++i) o += idx[i] * t.strides[i];
    off[static_cast<size_t>(k)] = o;
    for (int i = static_cast<int>(idx.size()) - 1; i >= 0; --i) {
      if (++idx[i] < t.shape[i]) break;
      idx[i] = 0;
    }
  }
  return off;
}

std::string upload(guarded_buffer& b, device_entry& d, const tensor_spec& t, dtype_id dt,
                   bool is_output) {
  b.dev = &d;
  const size_t es = dt_size(dt);
  b.interior = static_cast<size_t>(extent_elems(t)) * es;
  const size_t total = b.interior + 2 * kGuard;
  b.image.assign(total, 0);
  for (size_t i = 0; i < kGuard; ++i) {
    b.image[i] = guard_byte(i);
    b.image[kGuard + b.interior + i] = guard_byte(i + 1);
  }
  std::memset(b.image.data() + kGuard, is_output ? kOutputFill : 0x5A, b.interior);
  if (!t.data.empty()) {
    const auto off = element_offsets(t);
    if (off.size() != t.data.size())
      return "harness: tensor data has " + std::to_string(t.data.size()) + " values for shape " +
             shape_str(t.shape);
    for (size_t k = 0; k < off.size(); ++k)
      encode(t.data[k], dt, b.image.data() + kGuard + static_cast<size_t>(off[k]) * es);
  }
  nnp_status s = nnp_malloc(d.dev, total, &b.base);
  if (s != NNP_STATUS_OK) {
    b.base = nullptr;
    return std::string("nnp_malloc failed: ") + nnp_last_error_message();
  }
  s = nnp_memcpy(d.dev, b.base, nullptr, b.image.data(), total);
  if (s != NNP_STATUS_OK)
    return std::string("nnp_memcpy (upload) failed: ") + nnp_last_error_message();
  return {};
}

std::string download(guarded_buffer& b) {
  b.after.assign(b.image.size(), 0);
  const nnp_status s = nnp_memcpy(nullptr, b.after.data(), b.dev->dev, b.base, b.after.size());
  if (s != NNP_STATUS_OK)
    return std::string("nnp_memcpy (download) failed: ") + nnp_last_error_message();
  return {};
}

bool guards_intact(const guarded_buffer& b, std::string* where) {
  for (size_t i = 0; i < kGuard; ++i) {
    if (b.after[i] != b.image[i]) {
      *where = "guard before the tensor overwritten at byte -" + std::to_string(kGuard - i);
      return false;
    }
    const size_t j = kGuard + b.interior + i;
    if (b.after[j] != b.image[j]) {
      *where = "guard after the tensor overwritten at byte +" + std::to_string(i);
      return false;
    }
  }
  return true;
}

std::vector<double> extract(const guarded_buffer& b, const tensor_spec& t, dtype_id dt) {
  const auto off = element_offsets(t);
  std::vector<double> out(off.size());
  const size_t es = dt_size(dt);
  for (size_t k = 0; k < off.size(); ++k)
    out[k] = decode(b.after.data() + kGuard + static_cast<size_t>(off[k]) * es, dt);
  return out;
}

void make_dltensor(DLTensor& t, const guarded_buffer& b, const tensor_spec& s, dtype_id dt,
                   device_entry& d) {
  std::memset(&t, 0, sizeof(t));
  t.data = b.base;
  t.byte_offset = kGuard;
  t.device = d.dl;
  t.ndim = static_cast<int32_t>(s.shape.size());
  t.dtype = to_dl(dt);
  t.shape = const_cast<int64_t*>(s.shape.data());
  t.strides = s.strides.empty() ? nullptr : const_cast<int64_t*>(s.strides.data());
}
}  // namespace

dtype_id spec_dtype(const tensor_spec& t, dtype_id case_dtype) {
  if (!t.follows_case_dtype) return t.dtype;
  const bool half = case_dtype == dtype_id::f16 || case_dtype == dtype_id::bf16;
  return t.accumulation && half ? dtype_id::f32 : case_dtype;
}

run_result run_op(device_entry& d, const call_spec& call, dtype_id dtype, nnp_stream* stream,
                  const call_mutation& mutate) {
  run_result res;
  if (!stream) stream = d.stream;
  const size_t ni = call.inputs.size(), no = call.outputs.size();
  std::vector<guarded_buffer> in_buf(ni), out_buf(no);
  raw_call raw;
  raw.kind = call.kind;
  raw.param_bytes = call.params;
  raw.in.resize(ni);
  raw.out.resize(no);
  auto fail = [&](const std::string& why) {
    res.status = NNP_STATUS_INTERNAL;
    res.message = why;
    res.problems.push_back(why);
    return res;
  };
  for (size_t i = 0; i < ni; ++i) {
    const tensor_spec& t = call.inputs[i];
    if (t.absent) continue;
    const std::string e = upload(in_buf[i], d, t, spec_dtype(t, dtype), false);
    if (!e.empty()) return fail(e);
    make_dltensor(raw.in[i], in_buf[i], t, spec_dtype(t, dtype), d);
  }
  for (size_t i = 0; i < no; ++i) {
    const tensor_spec& t = call.outputs[i];
    if (t.absent) continue;
    if (t.alias_of >= 0) {
      raw.out[i] = raw.in[static_cast<size_t>(t.alias_of)];
      continue;
    }
    const std::string e = upload(out_buf[i], d, t, spec_dtype(t, dtype), t.data.empty());
    if (!e.empty()) return fail(e);
    make_dltensor(raw.out[i], out_buf[i], t, spec_dtype(t, dtype), d);
  }
  for (size_t i = 0; i < ni; ++i)
    raw.in_ptrs.push_back(call.inputs[i].absent ? nullptr : &raw.in[i]);
  for (size_t i = 0; i < no; ++i)
    raw.out_ptrs.push_back(call.outputs[i].absent ? nullptr : &raw.out[i]);
  raw.params = raw.param_bytes.empty() ? nullptr : raw.param_bytes.data();
  if (mutate) mutate(raw);
  nnp_status s = execute(stream, raw.view());
  if (s != NNP_STATUS_OK) {
    res.status = s;
    res.message = nnp_last_error_message();
  }
  const nnp_status sync = nnp_stream_synchronize(stream);
  if (s == NNP_STATUS_OK && sync != NNP_STATUS_OK) {
    res.status = sync;
    res.message = std::string("nnp_stream_synchronize: ") + nnp_last_error_message();
  }
  // Download and check every buffer.
  for (size_t i = 0; i < ni; ++i) {
    if (call.inputs[i].absent) continue;
    const std::string e = download(in_buf[i]);
    if (!e.empty()) return fail(e);
  }
  for (size_t i = 0; i < no; ++i) {
    if (call.outputs[i].absent || call.outputs[i].alias_of >= 0) continue;
    const std::string e = download(out_buf[i]);
    if (!e.empty()) return fail(e);
  }
  std::vector<bool> aliased(ni, false);
  for (const auto& t : call.outputs)
    if (!t.absent && t.alias_of >= 0) aliased[static_cast<size_t>(t.alias_of)] = true;
  for (size_t i = 0; i < ni; ++i) {
    if (call.inputs[i].absent) continue;
    std::string where;
    if (!guards_intact(in_buf[i], &where))
      res.problems.push_back("input " + std::to_string(i) + ": " + where);
    else if (!aliased[i] && in_buf[i].after != in_buf[i].image)
      res.problems.push_back("input " + std::to_string(i) + " was modified by the op");
    if (aliased[i] && in_buf[i].after != in_buf[i].image && res.status != NNP_STATUS_OK)
      res.outputs_untouched = false;
  }
  res.outputs.resize(no);
  for (size_t i = 0; i < no; ++i) {
    const tensor_spec& t = call.outputs[i];
    if (t.absent) continue;
    const guarded_buffer& b =
        t.alias_of >= 0 ? in_buf[static_cast<size_t>(t.alias_of)] : out_buf[i];
    std::string where;
    if (!guards_intact(b, &where))
      res.problems.push_back("output " + std::to_string(i) + ": " + where);
    if (b.after != b.image) res.outputs_untouched = false;
    res.outputs[i] = extract(b, t, spec_dtype(t, dtype));
  }
  return res;
}

// ---- device tensors that outlive one call ---------------------------------------------------
device_tensor::device_tensor(device_entry& dev, dtype_id dtype, std::vector<int64_t> shape,
                             const std::vector<double>& values)
    : dev_(dev), dtype_(dtype), shape_(std::move(shape)) {
  t_.device = dev.dl;
  t_.ndim = static_cast<int32_t>(shape_.size());
  t_.dtype = to_dl(dtype);
  t_.shape = shape_.data();
  const size_t n = static_cast<size_t>(numel(shape_)), es = dt_size(dtype);
  std::vector<uint8_t> bytes(std::max<size_t>(n * es, 1), 0);
  if (!values.empty() && values.size() != n) {
    error = "harness: " + std::to_string(values.size()) + " values for shape " + shape_str(shape_);
    return;
  }
  for (size_t k = 0; k < values.size(); ++k) encode(values[k], dtype, bytes.data() + k * es);
  void* p = nullptr;
  if (nnp_malloc(dev.dev, bytes.size(), &p) != NNP_STATUS_OK) {
    error = std::string("nnp_malloc failed: ") + nnp_last_error_message();
    return;
  }
  t_.data = p;
  if (nnp_memcpy(dev.dev, p, nullptr, bytes.data(), bytes.size()) != NNP_STATUS_OK)
    error = std::string("nnp_memcpy (upload) failed: ") + nnp_last_error_message();
}

device_tensor::~device_tensor() {
  if (t_.data != nullptr) nnp_free(dev_.dev, t_.data);
}

std::vector<double> device_tensor::read() const {
  const size_t n = static_cast<size_t>(numel(shape_)), es = dt_size(dtype_);
  std::vector<uint8_t> bytes(n * es);
  std::vector<double> out(n);
  if (n == 0 || t_.data == nullptr ||
      nnp_memcpy(nullptr, bytes.data(), dev_.dev, t_.data, bytes.size()) != NNP_STATUS_OK)
    return out;
  for (size_t k = 0; k < n; ++k) out[k] = decode(bytes.data() + k * es, dtype_);
  return out;
}

nnp_status op_supported(device_entry& d, const call_spec& call, dtype_id dtype,
                        std::string* reason) {
  std::vector<DLTensor> in(call.inputs.size()), out(call.outputs.size());
  std::vector<const DLTensor*> ip, op;
  auto fill = [&](DLTensor& t, const tensor_spec& s) {
    std::memset(&t, 0, sizeof(t));
    t.device = d.dl;
    t.ndim = static_cast<int32_t>(s.shape.size());
    t.dtype = to_dl(spec_dtype(s, dtype));
    t.shape = const_cast<int64_t*>(s.shape.data());
    t.strides = s.strides.empty() ? nullptr : const_cast<int64_t*>(s.strides.data());
  };
  for (size_t i = 0; i < in.size(); ++i) {
    fill(in[i], call.inputs[i]);
    ip.push_back(call.inputs[i].absent ? nullptr : &in[i]);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    const tensor_spec& s = call.outputs[i];
    if (s.alias_of >= 0)
      out[i] = in[static_cast<size_t>(s.alias_of)];
    else
      fill(out[i], s);
    op.push_back(s.absent ? nullptr : &out[i]);
  }
  const nnp_status s =
      nnp_op_supported(d.dev, call.kind, call.params.empty() ? nullptr : call.params.data(),
                       ip.size(), ip.data(), op.size(), op.data());
  if (reason) *reason = s == NNP_STATUS_OK ? "" : nnp_last_error_message();
  return s;
}

std::vector<std::vector<double>> reference_outputs(const call_spec& call, dtype_id dt) {
  const run_result r = run_op(reference_device(), quantized(call, dt), dtype_id::f64);
  if (r.status != NNP_STATUS_OK) return {};
  std::vector<std::vector<double>> out = r.outputs;
  for (size_t k = 0; k < out.size(); ++k) {
    const tensor_spec& t = call.outputs[k];
    for (double& e : out[k]) e = quantize(e, spec_dtype(t, dt));
  }
  return out;
}

}  // namespace conf
