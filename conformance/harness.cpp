// harness.cpp — implementation of the conformance harness (see harness.hpp): dtype
// conversions, guarded device tensors, op execution, NMSE, tolerances, case files, the report.
#include "harness.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <sstream>
#include <sys/stat.h>

namespace conf {

Options& options() {
  static Options o;
  return o;
}

bool case_selected(const std::string& case_name) {
  return options().filter.empty() || case_name.find(options().filter) != std::string::npos;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

// ---- dtypes ---------------------------------------------------------------------------------
DLDataType to_dl(DT t) {
  switch (t) {
    case DT::f32:
      return DLDataType{kDLFloat, 32, 1};
    case DT::f64:
      return DLDataType{kDLFloat, 64, 1};
    case DT::f16:
      return DLDataType{kDLFloat, 16, 1};
    case DT::bf16:
      return DLDataType{kDLBfloat, 16, 1};
    case DT::i64:
      return DLDataType{kDLInt, 64, 1};
    case DT::u8:
      return DLDataType{kDLUInt, 8, 1};
    case DT::i32:
      return DLDataType{kDLInt, 32, 1};
  }
  return DLDataType{kDLFloat, 32, 1};
}
const char* dt_name(DT t) {
  switch (t) {
    case DT::f32:
      return "float32";
    case DT::f64:
      return "float64";
    case DT::f16:
      return "float16";
    case DT::bf16:
      return "bfloat16";
    case DT::i64:
      return "int64";
    case DT::u8:
      return "uint8";
    case DT::i32:
      return "int32";
  }
  return "?";
}
const char* dt_short(DT t) {
  switch (t) {
    case DT::f32:
      return "f32";
    case DT::f64:
      return "f64";
    case DT::f16:
      return "f16";
    case DT::bf16:
      return "bf16";
    case DT::i64:
      return "i64";
    case DT::u8:
      return "u8";
    case DT::i32:
      return "i32";
  }
  return "?";
}
size_t dt_size(DT t) {
  switch (t) {
    case DT::f64:
    case DT::i64:
      return 8;
    case DT::f32:
    case DT::i32:
      return 4;
    case DT::f16:
    case DT::bf16:
      return 2;
    case DT::u8:
      return 1;
  }
  return 4;
}
bool dt_is_float(DT t) { return t == DT::f32 || t == DT::f64 || t == DT::f16 || t == DT::bf16; }
const std::vector<DT>& float_dtypes() {
  static const std::vector<DT> all{DT::f32, DT::f64, DT::f16, DT::bf16};
  return all;
}

namespace {
uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// IEEE binary16, round to nearest even.
uint16_t f32_to_f16(float value) {
  const uint32_t f = f32_bits(value);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const uint32_t abs = f & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u)
    return static_cast<uint16_t>(sign | (abs > 0x7F800000u ? 0x7E00u : 0x7C00u));
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to inf
  if (abs < 0x38800000u) {  // below the smallest normal half: subnormal units of 2^-24
    const float a = bits_f32(abs);
    const uint32_t m = static_cast<uint32_t>(std::nearbyint(a * 16777216.0f));
    return static_cast<uint16_t>(sign | m);
  }
  uint32_t r = abs + 0xFFFu + ((abs >> 13) & 1u);
  r -= 0x38000000u;  // exponent bias 127 -> 15
  return static_cast<uint16_t>(sign | (r >> 13));
}
float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return bits_f32(sign | 0x7F800000u | (mant << 13));
  return bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}
uint16_t f32_to_bf16(float value) {
  const uint32_t u = f32_bits(value);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
float bf16_to_f32(uint16_t h) { return bits_f32(static_cast<uint32_t>(h) << 16); }

void encode(double v, DT t, uint8_t* dst) {
  switch (t) {
    case DT::f32: {
      const float f = static_cast<float>(v);
      std::memcpy(dst, &f, 4);
      break;
    }
    case DT::f64:
      std::memcpy(dst, &v, 8);
      break;
    case DT::f16: {
      const uint16_t h = f32_to_f16(static_cast<float>(v));
      std::memcpy(dst, &h, 2);
      break;
    }
    case DT::bf16: {
      const uint16_t h = f32_to_bf16(static_cast<float>(v));
      std::memcpy(dst, &h, 2);
      break;
    }
    case DT::i64: {
      const int64_t i = static_cast<int64_t>(v);
      std::memcpy(dst, &i, 8);
      break;
    }
    case DT::i32: {
      const int32_t i = static_cast<int32_t>(v);
      std::memcpy(dst, &i, 4);
      break;
    }
    case DT::u8:
      *dst = static_cast<uint8_t>(v);
      break;
  }
}
double decode(const uint8_t* src, DT t) {
  switch (t) {
    case DT::f32: {
      float f;
      std::memcpy(&f, src, 4);
      return f;
    }
    case DT::f64: {
      double d;
      std::memcpy(&d, src, 8);
      return d;
    }
    case DT::f16: {
      uint16_t h;
      std::memcpy(&h, src, 2);
      return f16_to_f32(h);
    }
    case DT::bf16: {
      uint16_t h;
      std::memcpy(&h, src, 2);
      return bf16_to_f32(h);
    }
    case DT::i64: {
      int64_t i;
      std::memcpy(&i, src, 8);
      return static_cast<double>(i);
    }
    case DT::i32: {
      int32_t i;
      std::memcpy(&i, src, 4);
      return i;
    }
    case DT::u8:
      return *src;
  }
  return 0;
}
}  // namespace

double quantize(double v, DT t) {
  uint8_t buf[8];
  encode(v, t, buf);
  return decode(buf, t);
}

// ---- tensors --------------------------------------------------------------------------------
TensorSpec tensor(std::vector<int64_t> shape, std::vector<double> data) {
  TensorSpec t;
  t.shape = std::move(shape);
  t.data = std::move(data);
  return t;
}
TensorSpec int_tensor(DT dtype, std::vector<int64_t> shape, std::vector<double> data) {
  TensorSpec t = tensor(std::move(shape), std::move(data));
  t.follows_case_dtype = false;
  t.dtype = dtype;
  t.exact = true;
  return t;
}
TensorSpec absent_tensor() {
  TensorSpec t;
  t.absent = true;
  return t;
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

OpCall quantized(const OpCall& call, DT dtype) {
  OpCall q = call;
  auto round_all = [dtype](TensorSpec& t) {
    const DT d = t.follows_case_dtype ? dtype : t.dtype;
    for (double& v : t.data) v = quantize(v, d);
  };
  for (auto& t : q.inputs) round_all(t);
  for (auto& t : q.outputs) round_all(t);
  return q;
}

// ---- devices --------------------------------------------------------------------------------
namespace {
std::vector<std::unique_ptr<Device>>& device_list() {
  static std::vector<std::unique_ptr<Device>> list;
  return list;
}
Device& ref_dev() {
  static Device d;
  return d;
}

std::vector<nnp_load_record> load_records() {
  size_t n = 0;
  std::vector<nnp_load_record> out;
  if (nnp_get_load_records(nullptr, &n) != NNP_STATUS_OK) return out;
  out.resize(n);
  for (auto& r : out) {
    std::memset(&r, 0, sizeof(r));
    r.struct_size = sizeof(r);
  }
  if (nnp_get_load_records(out.data(), &n) != NNP_STATUS_OK) out.clear();
  out.resize(std::min(n, out.size()));
  return out;
}

// Looks up "name" or "name:i" and fills d.
void open_device(Device& d, const std::string& name) {
  std::string dev_name = name.find(':') == std::string::npos ? name + ":0" : name;
  d.name = dev_name;
  d.plugin = name.substr(0, name.find(':'));
  nnp_device* dev = nullptr;
  const nnp_status s = nnp_get_device(dev_name.c_str(), &dev);
  if (s == NNP_STATUS_UNAVAILABLE) {
    d.reason = nnp_last_error_message();
    return;
  }
  if (s != NNP_STATUS_OK) {
    d.failed = true;
    d.reason = std::string(nnp_status_string(s)) + ": " + nnp_last_error_message();
    for (const auto& r : load_records()) {
      if (r.name && d.plugin == r.name && r.state != NNP_LOAD_LOADED && r.reason)
        d.reason +=
            std::string(" (load record: ") + (r.path ? r.path : "?") + ": " + r.reason + ")";
    }
    return;
  }
  d.dev = dev;
  for (const auto& r : load_records()) {
    if (r.state == NNP_LOAD_LOADED && r.name && d.plugin == r.name) {
      d.plugin_version = r.plugin_version ? r.plugin_version : "";
      d.plugin_path = r.path ? r.path : "";
    }
  }
  if (nnp_device_get_dldevice(dev, &d.dl) != NNP_STATUS_OK) {
    d.failed = true;
    d.reason = std::string("nnp_device_get_dldevice failed: ") + nnp_last_error_message();
    return;
  }
  if (nnp_stream_create(dev, &d.stream) != NNP_STATUS_OK) {
    d.failed = true;
    d.reason = std::string("nnp_stream_create failed: ") + nnp_last_error_message();
    return;
  }
  d.available = true;
}
}  // namespace

Device& reference_device() { return ref_dev(); }

std::vector<Device*> backends_under_test() {
  std::vector<Device*> out;
  for (auto& d : device_list()) out.push_back(d.get());
  return out;
}

void release_devices() {
  std::vector<Device*> all = backends_under_test();
  all.push_back(&ref_dev());
  for (Device* d : all) {
    if (d->stream) nnp_stream_destroy(d->stream);
    d->stream = nullptr;
    d->available = false;
  }
}

bool setup_devices() {
  Options& o = options();
  std::vector<std::pair<std::string, std::string>> wanted;  // (label, device name)
  for (const auto& path : o.plugins) {
    nnp_plugin* p = nullptr;
    const nnp_status s = nnp_load_plugin(path.c_str(), &p);
    if (s != NNP_STATUS_OK) {
      auto d = std::make_unique<Device>();
      d->label = path;
      d->name = path;
      d->plugin = path;
      d->failed = true;
      d->reason =
          std::string("nnp_load_plugin: ") + nnp_status_string(s) + ": " + nnp_last_error_message();
      device_list().push_back(std::move(d));
      continue;
    }
    wanted.emplace_back(path, nnp_plugin_name(p));
  }
  for (const auto& b : o.backends) wanted.emplace_back(b, b);
  if (o.plugins.empty() && o.backends.empty()) {
    nnp_load_default_plugins();
    for (const auto& r : load_records()) {
      if (r.state != NNP_LOAD_LOADED || !r.name || o.reference == r.name) continue;
      wanted.emplace_back(r.name, r.name);
    }
  }
  for (const auto& [label, name] : wanted) {
    auto d = std::make_unique<Device>();
    d->label = label;
    open_device(*d, name);
    device_list().push_back(std::move(d));
  }
  Device& ref = ref_dev();
  ref.label = o.reference;
  open_device(ref, o.reference);
  if (!ref.available) {
    std::fprintf(stderr, "nnplug-conformance: the reference '%s' is not usable: %s\n",
                 o.reference.c_str(), ref.reason.c_str());
    return false;
  }
  return true;
}

// ---- guarded device buffers -------------------------------------------------------------------
namespace {
constexpr size_t kGuard = 256;  // bytes before and after every tensor
uint8_t guard_byte(size_t i) { return static_cast<uint8_t>(0xA5u ^ (i * 7u)); }
constexpr uint8_t kOutputFill = 0xFF;  // NaN for floats: an element the op forgets stays NaN

struct Buffer {
  Device* dev = nullptr;
  void* base = nullptr;
  size_t interior = 0;         // bytes between the guards
  std::vector<uint8_t> image;  // what was uploaded (guards + interior)
  std::vector<uint8_t> after;  // downloaded after the op
  ~Buffer() {
    if (base) nnp_free(dev->dev, base);
  }
};

int64_t extent_elems(const TensorSpec& t) {
  const int64_t n = numel(t.shape);
  if (n <= 0) return 0;
  if (t.strides.empty()) return n;
  int64_t e = 1;
  for (size_t i = 0; i < t.shape.size(); ++i) e += (t.shape[i] - 1) * t.strides[i];
  return e;
}
// Element offsets (in elements) of the row-major logical order.
std::vector<int64_t> element_offsets(const TensorSpec& t) {
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

std::string upload(Buffer& b, Device& d, const TensorSpec& t, DT dt, bool is_output) {
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

std::string download(Buffer& b) {
  b.after.assign(b.image.size(), 0);
  const nnp_status s = nnp_memcpy(nullptr, b.after.data(), b.dev->dev, b.base, b.after.size());
  if (s != NNP_STATUS_OK)
    return std::string("nnp_memcpy (download) failed: ") + nnp_last_error_message();
  return {};
}

bool guards_intact(const Buffer& b, std::string* where) {
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

std::vector<double> extract(const Buffer& b, const TensorSpec& t, DT dt) {
  const auto off = element_offsets(t);
  std::vector<double> out(off.size());
  const size_t es = dt_size(dt);
  for (size_t k = 0; k < off.size(); ++k)
    out[k] = decode(b.after.data() + kGuard + static_cast<size_t>(off[k]) * es, dt);
  return out;
}

void make_dltensor(DLTensor& t, const Buffer& b, const TensorSpec& s, DT dt, Device& d) {
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

static DT spec_dtype(const TensorSpec& t, DT case_dtype) {
  return t.follows_case_dtype ? case_dtype : t.dtype;
}

RunResult run_op(Device& d, const OpCall& call, DT dtype, nnp_stream* stream,
                 const Mutation& mutate) {
  RunResult res;
  if (!stream) stream = d.stream;
  const size_t ni = call.inputs.size(), no = call.outputs.size();
  std::vector<Buffer> in_buf(ni), out_buf(no);
  RawCall raw;
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
    const TensorSpec& t = call.inputs[i];
    if (t.absent) continue;
    const std::string e = upload(in_buf[i], d, t, spec_dtype(t, dtype), false);
    if (!e.empty()) return fail(e);
    make_dltensor(raw.in[i], in_buf[i], t, spec_dtype(t, dtype), d);
  }
  for (size_t i = 0; i < no; ++i) {
    const TensorSpec& t = call.outputs[i];
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
  nnp_status s = nnp_op_execute(stream, raw.kind, raw.params, raw.in_ptrs.size(),
                                raw.in_ptrs.data(), raw.out_ptrs.size(), raw.out_ptrs.data());
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
    const TensorSpec& t = call.outputs[i];
    if (t.absent) continue;
    const Buffer& b = t.alias_of >= 0 ? in_buf[static_cast<size_t>(t.alias_of)] : out_buf[i];
    std::string where;
    if (!guards_intact(b, &where))
      res.problems.push_back("output " + std::to_string(i) + ": " + where);
    if (b.after != b.image) res.outputs_untouched = false;
    res.outputs[i] = extract(b, t, spec_dtype(t, dtype));
  }
  return res;
}

nnp_status op_supported(Device& d, const OpCall& call, DT dtype, std::string* reason) {
  std::vector<DLTensor> in(call.inputs.size()), out(call.outputs.size());
  std::vector<const DLTensor*> ip, op;
  auto fill = [&](DLTensor& t, const TensorSpec& s) {
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
    const TensorSpec& s = call.outputs[i];
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

std::vector<std::vector<double>> reference_outputs(const OpCall& call, DT dt) {
  const RunResult r = run_op(reference_device(), quantized(call, dt), DT::f64);
  if (r.status != NNP_STATUS_OK) return {};
  std::vector<std::vector<double>> out = r.outputs;
  for (size_t k = 0; k < out.size(); ++k) {
    const TensorSpec& t = call.outputs[k];
    for (double& e : out[k]) e = quantize(e, t.follows_case_dtype ? dt : t.dtype);
  }
  return out;
}

// ---- comparison -----------------------------------------------------------------------------
Comparison compare_nmse(const std::vector<double>& got, const std::vector<double>& want,
                        double threshold) {
  Comparison c;
  if (got.size() != want.size()) {
    c.ok = false;
    c.error = std::numeric_limits<double>::infinity();
    c.detail = "size " + std::to_string(got.size()) + " != " + std::to_string(want.size());
    return c;
  }
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double a = got[i], b = want[i];
    if (std::isnan(b)) {
      if (!std::isnan(a) && c.ok) {
        c.ok = false;
        c.detail =
            "element " + std::to_string(i) + ": got " + std::to_string(a) + ", reference NaN";
      }
      continue;
    }
    if (std::isnan(a)) {
      if (c.ok) {
        c.ok = false;
        c.detail = "element " + std::to_string(i) + ": NaN (reference " + std::to_string(b) + ")";
      }
      continue;
    }
    if (std::isinf(a) || std::isinf(b)) {
      if (a != b && c.ok) {
        c.ok = false;
        c.detail = "element " + std::to_string(i) + ": got " + std::to_string(a) + ", reference " +
                   std::to_string(b) + " (Inf must match)";
      }
      continue;
    }
    num += (a - b) * (a - b);
    den += b * b;
  }
  c.error = num / std::max(den, 1e-30);
  if (!c.ok && c.error == 0) c.error = std::numeric_limits<double>::infinity();
  if (c.ok && !(c.error <= threshold)) {
    c.ok = false;
    size_t worst = 0;
    double worst_diff = -1;
    for (size_t i = 0; i < got.size(); ++i) {
      const double diff = std::fabs(got[i] - want[i]);
      if (std::isfinite(diff) && diff > worst_diff) {
        worst_diff = diff;
        worst = i;
      }
    }
    std::ostringstream os;
    os << "NMSE " << c.error << " > " << threshold << " (largest difference at element " << worst
       << ": got " << got[worst] << ", reference " << want[worst] << ")";
    c.detail = os.str();
  }
  return c;
}

Comparison compare_exact(const std::vector<double>& got, const std::vector<double>& want) {
  Comparison c;
  if (got.size() != want.size()) {
    c.ok = false;
    c.error = std::numeric_limits<double>::infinity();
    c.detail = "size mismatch";
    return c;
  }
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool same = got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i]));
    if (!same) {
      if (bad == 0)
        c.detail = "element " + std::to_string(i) + ": got " + std::to_string(got[i]) +
                   ", reference " + std::to_string(want[i]);
      ++bad;
    }
  }
  c.error = static_cast<double>(bad);
  c.ok = bad == 0;
  if (!c.ok) c.detail = std::to_string(bad) + " mismatching elements; first " + c.detail;
  return c;
}

// ---- tolerances -----------------------------------------------------------------------------
namespace {
std::vector<std::tuple<std::string, std::string, double>>& tolerance_rules() {
  static std::vector<std::tuple<std::string, std::string, double>> rules{
      {"*", "float64", 1e-20},
      {"*", "float32", 1e-9},
      {"*", "float16", 1e-5},
      {"*", "bfloat16", 1e-4},
      {"gradient", "float64", 1e-6}};
  return rules;
}
bool read_tolerance_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) {
    std::fprintf(stderr, "nnplug-conformance: cannot read tolerances file %s\n", path.c_str());
    return false;
  }
  std::string line;
  int lineno = 0;
  while (std::getline(f, line)) {
    ++lineno;
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream is(line);
    std::string op, dtype, value;
    if (!(is >> op)) continue;
    char* end = nullptr;
    double v = 0;
    if (is >> dtype >> value) v = std::strtod(value.c_str(), &end);
    if (dtype.empty() || !end || *end != '\0' || !(v >= 0)) {
      std::fprintf(stderr, "%s:%d: expected 'op dtype nmse'\n", path.c_str(), lineno);
      return false;
    }
    tolerance_rules().emplace_back(op, dtype, v);
  }
  return true;
}
}  // namespace

bool load_tolerances() {
  bool ok = true;
  const std::string def = data_dir() + "/tolerances.txt";
  struct stat st;
  if (stat(def.c_str(), &st) == 0) ok = read_tolerance_file(def) && ok;
  for (const auto& f : options().tolerance_files) ok = read_tolerance_file(f) && ok;
  return ok;
}

double tolerance(const std::string& op, const std::string& dtype) {
  double best = -1;
  int best_rank = -1;
  // Later rules win among equally specific ones; an exact op beats '*'.
  for (const auto& [o, d, v] : tolerance_rules()) {
    if ((o != "*" && o != op) || (d != "*" && d != dtype)) continue;
    const int rank = (o != "*" ? 2 : 0) + (d != "*" ? 1 : 0);
    if (rank >= best_rank) {
      best_rank = rank;
      best = v;
    }
  }
  return best < 0 ? 1e-9 : best;
}
double tolerance(const std::string& op, DT dtype) { return tolerance(op, dt_name(dtype)); }

// ---- random data ----------------------------------------------------------------------------
Rng::Rng(const std::string& key) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the key, mixed with the seed
  for (unsigned char ch : key) h = (h ^ ch) * 1099511628211ull;
  std::seed_seq seq{static_cast<uint32_t>(h), static_cast<uint32_t>(h >> 32),
                    static_cast<uint32_t>(options().seed),
                    static_cast<uint32_t>(options().seed >> 32)};
  eng_.seed(seq);
}
double Rng::uniform(double lo, double hi) {
  return lo + (hi - lo) * (static_cast<double>(eng_() >> 11) * 0x1.0p-53);
}
int64_t Rng::integer(int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(eng_() % static_cast<uint64_t>(hi - lo + 1));
}
std::vector<double> Rng::uniform_vec(int64_t n, double lo, double hi) {
  std::vector<double> v(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (double& x : v) x = uniform(lo, hi);
  return v;
}
std::vector<double> Rng::away_from_zero(int64_t n, double min_abs, double max_abs) {
  std::vector<double> v(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (double& x : v) x = uniform(min_abs, max_abs) * ((eng_() & 1) ? 1 : -1);
  return v;
}
std::vector<double> Rng::distinct(int64_t n, double spacing) {
  std::vector<double> v(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = (static_cast<double>(i) - static_cast<double>(v.size()) / 2) * spacing;
  std::shuffle(v.begin(), v.end(), eng_);
  return v;
}

// ---- case files -----------------------------------------------------------------------------
int64_t Case::i(const std::string& k, int64_t def) const {
  auto it = kv.find(k);
  if (it == kv.end() || it->second.empty()) return def;
  return std::strtoll(it->second.c_str(), nullptr, 10);
}
double Case::d(const std::string& k, double def) const {
  auto it = kv.find(k);
  if (it == kv.end() || it->second.empty()) return def;
  return std::strtod(it->second.c_str(), nullptr);
}
std::string Case::s(const std::string& k, const std::string& def) const {
  auto it = kv.find(k);
  return it == kv.end() ? def : it->second;
}
std::vector<int64_t> Case::dims(const std::string& k, std::vector<int64_t> def) const {
  auto it = kv.find(k);
  if (it == kv.end()) return def;
  std::vector<int64_t> out;
  if (it->second == "scalar" || it->second.empty()) return out;
  std::stringstream ss(it->second);
  std::string part;
  while (std::getline(ss, part, 'x')) out.push_back(std::strtoll(part.c_str(), nullptr, 10));
  return out;
}
std::vector<int64_t> Case::list(const std::string& k) const {
  std::vector<int64_t> out;
  auto it = kv.find(k);
  if (it == kv.end()) return out;
  std::stringstream ss(it->second);
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (!part.empty()) out.push_back(std::strtoll(part.c_str(), nullptr, 10));
  }
  return out;
}

Case parse_case(const std::string& line) {
  Case c;
  std::istringstream is(line);
  std::string tok;
  std::vector<std::string> toks;
  while (is >> tok) {
    toks.push_back(tok);
    const auto eq = tok.find('=');
    if (eq != std::string::npos) {
      c.kv[tok.substr(0, eq)] = tok.substr(eq + 1);
      continue;
    }
    size_t p = 0;
    while (p < tok.size() && (std::islower(static_cast<unsigned char>(tok[p])) || tok[p] == '_'))
      ++p;
    c.kv[tok.substr(0, p)] = tok.substr(p);
  }
  c.text = join(toks, " ");
  return c;
}

namespace {
bool is_dir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool is_file(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
std::string exe_dir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}
}  // namespace

std::string data_dir() {
  static const std::string dir = [] {
    if (const char* env = std::getenv("NNPLUG_CONFORMANCE_DATA"); env && is_dir(env))
      return std::string(env);
    const std::string installed = exe_dir() + "/../share/nnplug/conformance";
    if (is_dir(installed + "/cases")) return installed;
#ifdef NNPLUG_CONFORMANCE_SOURCE_DIR
    if (is_dir(NNPLUG_CONFORMANCE_SOURCE_DIR "/cases"))
      return std::string(NNPLUG_CONFORMANCE_SOURCE_DIR);
#endif
    return installed;
  }();
  return dir;
}

std::vector<Case> load_cases(const std::string& family) {
  const std::string& sel = options().cases;
  std::vector<std::string> candidates;
  if (is_dir(sel)) {
    candidates.push_back(sel + "/" + family + ".txt");
  } else {
    candidates.push_back(data_dir() + "/cases/" + sel + "/" + family + ".txt");
    if (sel != "ci") candidates.push_back(data_dir() + "/cases/ci/" + family + ".txt");
  }
  std::vector<Case> out;
  for (const auto& path : candidates) {
    if (!is_file(path)) continue;
    std::ifstream f(path);
    std::string line;
    while (std::getline(f, line)) {
      const auto hash = line.find('#');
      if (hash != std::string::npos) line.resize(hash);
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      out.push_back(parse_case(line));
    }
    return out;
  }
  MESSAGE("no case file for '" << family << "' (looked for " << join(candidates, ", ") << ")");
  return out;
}

// ---- report ---------------------------------------------------------------------------------
namespace {
std::mutex& report_mutex() {
  static std::mutex m;
  return m;
}
std::vector<ReportEntry>& entries() {
  static std::vector<ReportEntry> e;
  return e;
}
}  // namespace

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::pass:
      return "pass";
    case Outcome::fail:
      return "fail";
    case Outcome::unsupported:
      return "unsupported";
    case Outcome::no_device:
      return "no_device";
  }
  return "?";
}

void report(const ReportEntry& e) {
  std::lock_guard<std::mutex> lock(report_mutex());
  entries().push_back(e);
}

bool write_report(const std::string& path) {
  using nlohmann::json;
  json j;
  j["tool"] = "nnplug-conformance";
  j["seed"] = options().seed;
  j["cases"] = options().cases;
  j["nnplug_version"] = nnp_version_string();
  j["abi_version"] =
      std::to_string(NNP_ABI_VERSION_MAJOR) + "." + std::to_string(NNP_ABI_VERSION_MINOR);
  json backends = json::array();
  auto describe = [](const Device& d) {
    json b;
    b["label"] = d.label;
    b["device"] = d.name;
    b["plugin"] = d.plugin;
    if (!d.plugin_version.empty()) b["plugin_version"] = d.plugin_version;
    if (!d.plugin_path.empty()) b["plugin_path"] = d.plugin_path;
    b["status"] = d.available ? "available" : d.failed ? "failed" : "no_device";
    if (!d.reason.empty()) b["reason"] = d.reason;
    return b;
  };
  for (const Device* d : backends_under_test()) backends.push_back(describe(*d));
  j["backends"] = backends;
  j["reference"] = describe(reference_device());
  json results = json::array();
  std::map<std::string, std::map<std::string, int>> summary;
  {
    std::lock_guard<std::mutex> lock(report_mutex());
    for (const auto& e : entries()) {
      json r;
      r["backend"] = e.backend;
      r["op"] = e.op;
      r["dtype"] = e.dtype;
      r["case"] = e.case_name;
      r["status"] = outcome_name(e.outcome);
      r["error"] = std::isfinite(e.error) ? json(e.error) : json(nullptr);
      r["threshold"] = e.threshold;
      if (!e.message.empty()) r["message"] = e.message;
      results.push_back(r);
      summary[e.backend][outcome_name(e.outcome)]++;
    }
  }
  j["results"] = results;
  j["summary"] = summary;
  std::ofstream f(path);
  if (!f) {
    std::fprintf(stderr, "nnplug-conformance: cannot write report %s\n", path.c_str());
    return false;
  }
  f << j.dump(1) << "\n";
  return static_cast<bool>(f);
}

bool write_markdown_report(const std::string& path) {
  struct Cell {
    int pass = 0, fail = 0, unsupported = 0, no_device = 0;
    double worst = 0;
  };
  const std::vector<std::string> dtypes{"float32", "float64", "float16", "bfloat16", "*"};
  std::map<std::pair<std::string, std::string>, std::map<std::string, Cell>> table;
  {
    std::lock_guard<std::mutex> lock(report_mutex());
    for (const auto& e : entries()) {
      Cell& c = table[{e.backend, e.op}][e.dtype];
      switch (e.outcome) {
        case Outcome::pass:
          ++c.pass;
          break;
        case Outcome::fail:
          ++c.fail;
          break;
        case Outcome::unsupported:
          ++c.unsupported;
          break;
        case Outcome::no_device:
          ++c.no_device;
          break;
      }
      if (e.outcome != Outcome::unsupported && std::isfinite(e.error))
        c.worst = std::max(c.worst, e.error);
    }
  }
  std::ofstream f(path);
  if (!f) {
    std::fprintf(stderr, "nnplug-conformance: cannot write %s\n", path.c_str());
    return false;
  }
  f << "# nnplug-conformance report\n\n"
    << "seed " << options().seed << ", cases " << options().cases << ", nnplug "
    << nnp_version_string() << ", reference " << reference_device().name << "\n\n"
    << "Cells: passed/run (worst error: NMSE, or relative error for gradients); "
       "**FAIL n** = failed cases; unsupported = declared unsupported by the backend.\n\n"
    << "| backend | op | float32 | float64 | float16 | bfloat16 | other |\n"
    << "|---|---|---|---|---|---|---|\n";
  for (const auto& [key, cells] : table) {
    f << "| " << key.first << " | " << key.second << " |";
    for (const auto& dt : dtypes) {
      auto it = cells.find(dt);
      std::ostringstream cell;
      if (dt == "*") {  // entries that are not per float dtype (errors, threads, no device)
        Cell sum;
        for (const auto& [name, c] : cells) {
          if (std::find(dtypes.begin(), dtypes.end(), name) != dtypes.end()) continue;
          sum.pass += c.pass;
          sum.fail += c.fail;
          sum.no_device += c.no_device;
        }
        if (it != cells.end()) {
          sum.pass += it->second.pass;
          sum.fail += it->second.fail;
          sum.no_device += it->second.no_device;
        }
        if (sum.no_device)
          cell << "no device";
        else if (sum.fail)
          cell << "**FAIL " << sum.fail << "**";
        else if (sum.pass)
          cell << sum.pass << "/" << sum.pass;
      } else if (it != cells.end()) {
        const Cell& c = it->second;
        const int run = c.pass + c.fail;
        if (c.fail)
          cell << "**FAIL " << c.fail << "** of " << run;
        else if (run)
          cell << c.pass << "/" << run << " (" << std::setprecision(2) << c.worst << ")";
        else if (c.unsupported)
          cell << "unsupported";
      }
      f << " " << cell.str() << " |";
    }
    f << "\n";
  }
  return static_cast<bool>(f);
}

void print_summary() {
  std::fflush(stdout);  // runner lines go to stderr: stdout stays clean for -r=junit / -r=xml
  std::lock_guard<std::mutex> lock(report_mutex());
  std::map<std::string, std::map<Outcome, int>> counts;
  // Unsupported cases, grouped by backend and dtype: the ops and one reason.
  std::map<std::string, std::pair<std::set<std::string>, std::string>> unsupported;
  for (const auto& e : entries()) {
    counts[e.backend][e.outcome]++;
    if (e.outcome == Outcome::unsupported) {
      auto& u = unsupported[e.backend + " " + e.dtype];
      if (u.first.empty()) u.second = e.message;
      u.first.insert(e.op);
    }
  }
  for (const auto& [key, u] : unsupported) {
    std::vector<std::string> ops(u.first.begin(), u.first.end());
    std::fprintf(stderr, "[nnplug-conformance] unsupported: %s: %zu ops (%s); e.g. %s\n",
                 key.c_str(), ops.size(), join(ops, ", ").c_str(), u.second.c_str());
  }
  for (const Device* d : backends_under_test()) {
    if (!d->available)
      std::fprintf(stderr, "[nnplug-conformance] %s: %s: %s\n", d->label.c_str(),
                   d->failed ? "FAILED" : "no device", d->reason.c_str());
  }
  for (auto& [backend, c] : counts) {
    if (c[Outcome::no_device] > 0 && c[Outcome::pass] + c[Outcome::fail] == 0) continue;
    std::fprintf(stderr, "[nnplug-conformance] %s: %d passed, %d failed, %d unsupported\n",
                 backend.c_str(), c[Outcome::pass], c[Outcome::fail], c[Outcome::unsupported]);
  }
}

// ---- numerics -------------------------------------------------------------------------------
void check_numerics(const std::string& op, const std::string& case_text, const OpCall& call,
                    const NumericsOptions& opt) {
  check_numerics_fn(
      op, case_text, [&call](DT) { return call; }, opt);
}

void check_numerics_fn(const std::string& op, const std::string& case_text,
                       const std::function<OpCall(DT)>& make, const NumericsOptions& opt) {
  Device& ref = reference_device();
  for (Device* b : backends_under_test()) {
    if (!b->available) continue;
    for (DT dt : opt.dtypes) {
      const std::string cname = op + " " + case_text + " " + dt_short(dt);
      if (!case_selected(cname)) continue;
      ReportEntry e{b->name, op, dt_name(dt), cname, Outcome::pass, 0, tolerance(op, dt), ""};
      const OpCall call = quantized(make(dt), dt);
      std::string reason;
      const nnp_status s = op_supported(*b, call, dt, &reason);
      if (s == NNP_STATUS_UNSUPPORTED) {
        // Executing it anyway must answer UNSUPPORTED too, with a message, touching nothing.
        const RunResult u = run_op(*b, call, dt);
        if (u.status != NNP_STATUS_UNSUPPORTED || u.message.empty() || !u.outputs_untouched ||
            !u.problems.empty()) {
          e.outcome = Outcome::fail;
          e.message =
              std::string("declared unsupported (") + reason + "), but nnp_op_execute " +
              (u.status != NNP_STATUS_UNSUPPORTED
                   ? std::string("returned ") + nnp_status_string(u.status)
               : u.message.empty() ? std::string("gave no message")
                                   : std::string("modified memory") +
                                         (u.problems.empty() ? "" : ": ") + join(u.problems, "; "));
          report(e);
          CHECK_MESSAGE(false, b->name << ": " << cname << ": " << e.message);
          continue;
        }
        e.outcome = Outcome::unsupported;
        e.message = reason;
        report(e);
        continue;
      }
      if (s != NNP_STATUS_OK) {
        e.outcome = Outcome::fail;
        e.message = std::string("nnp_op_supported: ") + nnp_status_string(s) + ": " + reason;
        report(e);
        CHECK_MESSAGE(false, b->name << ": " << cname << ": " << e.message);
        continue;
      }
      // The reference computes in dt, or in float32 from the same (rounded) values.
      DT rdt = dt;
      std::string ref_reason;
      if (op_supported(ref, call, dt, &ref_reason) != NNP_STATUS_OK) {
        rdt = DT::f32;
        std::string r2;
        if ((dt != DT::f16 && dt != DT::bf16) ||
            op_supported(ref, call, rdt, &r2) != NNP_STATUS_OK) {
          e.outcome = Outcome::unsupported;
          e.message = "the reference cannot check this: " + ref_reason;
          report(e);
          continue;
        }
      }
      const RunResult got = run_op(*b, call, dt);
      const RunResult want = run_op(ref, call, rdt);
      std::vector<std::string> problems = got.problems;
      if (got.status == NNP_STATUS_UNSUPPORTED) {
        // Declared supported but refused at execution: that is a failure.
        problems.push_back("nnp_op_supported said OK but execution returned unsupported: " +
                           got.message);
      } else if (got.status != NNP_STATUS_OK) {
        problems.push_back(std::string("execution failed: ") + nnp_status_string(got.status) +
                           ": " + got.message);
      }
      if (want.status != NNP_STATUS_OK || !want.problems.empty()) {
        problems.push_back("reference failed: " + want.message + join(want.problems, "; "));
      }
      double worst = 0;
      if (got.status == NNP_STATUS_OK && want.status == NNP_STATUS_OK) {
        for (size_t k = 0; k < call.outputs.size(); ++k) {
          const TensorSpec& t = call.outputs[k];
          if (t.absent) continue;
          const Comparison c = t.exact ? compare_exact(got.outputs[k], want.outputs[k])
                                       : compare_nmse(got.outputs[k], want.outputs[k], e.threshold);
          worst = std::max(worst, c.error);
          if (!c.ok) problems.push_back("output " + std::to_string(k) + ": " + c.detail);
        }
      }
      e.error = worst;
      if (!problems.empty()) {
        e.outcome = Outcome::fail;
        e.message = join(problems, "; ");
      }
      report(e);
      const std::string rerun =
          std::string("nnplug-conformance ") +
          (b->label.find('/') != std::string::npos ? "--plugin " : "--backend ") + b->label +
          " --seed " + std::to_string(options().seed) + " --cases " + options().cases +
          " --filter '" + cname + "'";
      CHECK_MESSAGE(problems.empty(),
                    b->name << ": " << cname << ": " << e.message << "\n  re-run: " << rerun);
    }
  }
}

// ---- gradients ------------------------------------------------------------------------------
ReportEntry evaluate_gradient(const GradientCheck& g) {
  Device& ref = reference_device();
  const DT dt = DT::f64;
  const std::string op = g.name;
  const std::string cname = g.name + " " + g.case_text + " f64";
  ReportEntry e{ref.name + " (gradient)",  op, "float64", cname, Outcome::pass, 0,
                tolerance("gradient", dt), ""};
  std::string reason;
  if (op_supported(ref, g.forward, dt, &reason) != NNP_STATUS_OK) {
    e.outcome = Outcome::unsupported;
    e.message = reason;
    return e;
  }
  const std::vector<int> loss_outputs =
      g.loss_outputs.empty() ? std::vector<int>{0} : g.loss_outputs;
  const RunResult f0 = run_op(ref, g.forward, dt);
  if (f0.status != NNP_STATUS_OK || !f0.problems.empty()) {
    e.outcome = Outcome::fail;
    e.message = std::string("forward failed: ") + f0.message + join(f0.problems, "; ");
    return e;
  }
  Rng rng("gradient " + cname);
  std::vector<std::vector<double>> r(f0.outputs.size());
  for (int k : loss_outputs)
    r[static_cast<size_t>(k)] =
        rng.uniform_vec(static_cast<int64_t>(f0.outputs[static_cast<size_t>(k)].size()), -1, 1);
  const OpCall bwd = g.backward(g.forward, f0.outputs, r);
  const RunResult b0 = run_op(ref, bwd, dt);
  if (b0.status != NNP_STATUS_OK || !b0.problems.empty()) {
    e.outcome = Outcome::fail;
    e.message = std::string("backward failed: ") + b0.message + join(b0.problems, "; ");
    return e;
  }
  auto loss = [&](const OpCall& c, std::string* err) {
    const RunResult f = run_op(ref, c, dt);
    double L = 0;
    if (f.status != NNP_STATUS_OK || f.outputs.size() != f0.outputs.size()) {
      *err = f.message.empty() ? "forward failed" : f.message;
      return L;
    }
    for (int k : loss_outputs) {
      const auto& y = f.outputs[static_cast<size_t>(k)];
      for (size_t i = 0; i < y.size(); ++i) L += y[i] * r[static_cast<size_t>(k)][i];
    }
    return L;
  };
  double num2 = 0, den2 = 0;
  std::string first_bad, err;
  for (const auto& [in_idx, out_idx] : g.wrt) {
    const auto& x = g.forward.inputs[static_cast<size_t>(in_idx)].data;
    std::vector<size_t> coords(x.size());
    std::iota(coords.begin(), coords.end(), 0);
    std::shuffle(coords.begin(), coords.end(), rng.engine());
    if (coords.size() > static_cast<size_t>(g.max_coords))
      coords.resize(static_cast<size_t>(g.max_coords));
    const auto& analytic = b0.outputs[static_cast<size_t>(out_idx)];
    if (analytic.size() != x.size()) {
      e.outcome = Outcome::fail;
      e.message = "backward output " + std::to_string(out_idx) + " has " +
                  std::to_string(analytic.size()) + " elements, forward input " +
                  std::to_string(in_idx) + " has " + std::to_string(x.size());
      return e;
    }
    for (size_t i : coords) {
      OpCall plus = g.forward, minus = g.forward;
      plus.inputs[static_cast<size_t>(in_idx)].data[i] += g.step;
      minus.inputs[static_cast<size_t>(in_idx)].data[i] -= g.step;
      const double numeric = (loss(plus, &err) - loss(minus, &err)) / (2 * g.step);
      const double a = analytic[i];
      num2 += (a - numeric) * (a - numeric);
      den2 += std::max(a * a, numeric * numeric);
      if (first_bad.empty() && std::fabs(a - numeric) > 1e-4 * std::max(1.0, std::fabs(numeric))) {
        std::ostringstream os;
        os << "input " << in_idx << " element " << i << ": backward " << a << ", finite difference "
           << numeric;
        first_bad = os.str();
      }
    }
  }
  e.error = std::sqrt(num2 / std::max(den2, 1e-30));
  bool ok = err.empty() && e.error <= e.threshold;
  if (!ok) {
    e.outcome = Outcome::fail;
    std::ostringstream os;
    os << "relative error " << e.error << " > " << e.threshold;
    if (!first_bad.empty()) os << "; " << first_bad;
    if (!err.empty()) os << "; forward failed: " << err;
    e.message = os.str();
  }
  return e;
}

void check_gradient(const GradientCheck& g) {
  if (!case_selected(g.name + " " + g.case_text + " f64")) return;
  const ReportEntry e = evaluate_gradient(g);
  report(e);
  CHECK_MESSAGE(e.outcome != Outcome::fail, e.case_name << ": " << e.message);
}

std::vector<OpTemplate>& op_templates() {
  static std::vector<OpTemplate> t;
  return t;
}

}  // namespace conf
