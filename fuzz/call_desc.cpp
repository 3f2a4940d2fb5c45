// call_desc.cpp — decoding a fuzz input into an op call, and the call's memory plan
// (call_desc.hpp; the format is in docs/fuzzing.md).
#include "call_desc.hpp"
#include "op_call.hpp"

#include <algorithm>
#include <cmath>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

namespace fuzz {
namespace {

constexpr DLDataType kF32{kDLFloat, 32, 1}, kF64{kDLFloat, 64, 1}, kF16{kDLFloat, 16, 1},
    kBF16{kDLBfloat, 16, 1};

// Reads the input front to back; past the end every byte is 0.
struct reader {
  const uint8_t* p;
  size_t n, i = 0;
  bool done() const { return i >= n; }
  uint8_t u8() { return i < n ? p[i++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
  uint32_t u32() { return u16() | (static_cast<uint32_t>(u16()) << 16); }
  uint64_t u64() { return u32() | (static_cast<uint64_t>(u32()) << 32); }
};

int64_t dim_value(uint8_t v) {
  static const int64_t special[16] = {-1,
                                      -2,
                                      std::numeric_limits<int64_t>::min(),
                                      std::numeric_limits<int64_t>::max(),
                                      int64_t{1} << 31,
                                      (int64_t{1} << 32) + 1,
                                      int64_t{1} << 62,
                                      std::numeric_limits<int32_t>::max(),
                                      3037000500,  // its square overflows int64
                                      int64_t{1} << 40,
                                      65536,
                                      1000000,
                                      -(int64_t{1} << 40),
                                      2,
                                      3,
                                      4};
  if (v < 128) return 1 + v % 8;
  if (v < 160) return 0;
  if (v < 224) return 9 + (v - 160);
  if (v < 240) return int64_t{1} << (v - 224 + 7);
  return special[v - 240];
}

int64_t stride_value(uint8_t v) {
  static const int64_t special[8] = {-1,
                                     -2,
                                     std::numeric_limits<int64_t>::min(),
                                     std::numeric_limits<int64_t>::max(),
                                     int64_t{1} << 40,
                                     int64_t{1} << 62,
                                     int64_t{1} << 31,
                                     -(int64_t{1} << 31)};
  if (v < 248) return v % 24;
  return special[v - 248];
}

uint64_t byte_offset_value(uint8_t v, size_t item) {
  static const uint64_t special[8] = {uint64_t{1} << 40,
                                      uint64_t{1} << 62,
                                      std::numeric_limits<uint64_t>::max() - 7,
                                      std::numeric_limits<uint64_t>::max(),
                                      uint64_t{1} << 20,
                                      uint64_t{1} << 63,
                                      4096,
                                      64};
  const uint64_t it = item == 0 ? 1 : item;
  if (v < 160) return (v % 16) * it;
  if (v < 248) return (v % 16) * it + 1 + v % 3;  // not a multiple of the element size
  return special[v - 248];
}

DLDataType dtype_value(uint8_t v, DLDataType float_dtype) {
  static const DLDataType list[20] = {
      {kDLFloat, 32, 1},    {kDLFloat, 64, 1},   {kDLFloat, 16, 1}, {kDLBfloat, 16, 1},
      {kDLInt, 64, 1},      {kDLUInt, 8, 1},     {kDLInt, 32, 1},   {kDLInt, 8, 1},
      {6, 8, 1} /* bool */, {kDLFloat, 32, 2},   {kDLFloat, 0, 1},  {kDLFloat, 12, 1},
      {kDLInt, 1, 1},       {kDLComplex, 64, 1}, {kDLFloat, 8, 1},  {200, 32, 1},
      {kDLUInt, 64, 1},     {kDLInt, 16, 1},     {kDLFloat, 32, 0}, {kDLBfloat, 32, 1}};
  if (v < 64) return float_dtype;
  return list[v % 20];
}

int32_t param_int_value(uint8_t v) {
  static const int32_t list[24] = {-1,
                                   0,
                                   1,
                                   2,
                                   3,
                                   4,
                                   5,
                                   7,
                                   8,
                                   9,
                                   -2,
                                   6,
                                   std::numeric_limits<int32_t>::max(),
                                   std::numeric_limits<int32_t>::min(),
                                   100,
                                   1 << 16,
                                   -100,
                                   16,
                                   31,
                                   32,
                                   63,
                                   64,
                                   1 << 30,
                                   -8};
  return list[v % 24];
}

double param_double_value(uint8_t v) {
  static const double list[20] = {0.0,
                                  1.0,
                                  -1.0,
                                  0.5,
                                  1e-5,
                                  std::numeric_limits<double>::quiet_NaN(),
                                  std::numeric_limits<double>::infinity(),
                                  -std::numeric_limits<double>::infinity(),
                                  1e308,
                                  3.5e38,
                                  65505.0,
                                  -0.0,
                                  0.999,
                                  2.0,
                                  1e-300,
                                  0.9,
                                  1e-8,
                                  65504.0,
                                  3.4e38,
                                  0.25};
  return list[v % 20];
}

int64_t param_int64_value(uint8_t v) {
  static const int64_t list[12] = {-100,
                                   -1,
                                   0,
                                   1,
                                   2,
                                   3,
                                   std::numeric_limits<int64_t>::max(),
                                   std::numeric_limits<int64_t>::min(),
                                   4,
                                   1 << 20,
                                   -2,
                                   5};
  return list[v % 12];
}

struct decoded_target {
  bool output;
  size_t index;
  bool ok;
};

// A target byte: < 128 an input, else an output (falling back to the other list if empty).
decoded_target target(const call_desc& c, uint8_t t) {
  bool output = t >= 128;
  if (output && c.out.empty()) output = false;
  if (!output && c.in.empty()) output = true;
  const size_t n = output ? c.out.size() : c.in.size();
  if (n == 0) return {false, 0, false};
  return {output, static_cast<size_t>(t % 128) % n, true};
}

tensor_spec& spec(call_desc& c, const decoded_target& d) {
  return d.output ? c.out[d.index] : c.in[d.index];
}
size_t flat_index(const call_desc& c, const decoded_target& d) {
  return d.output ? c.in.size() + d.index : d.index;
}

void set_rank(tensor_spec& t, int32_t r) {
  if (r >= 0 && r <= kShapeSlots)
    for (int d = std::max(t.ndim, 0); d < r; ++d) t.shape[d] = 1;
  t.ndim = r;
}

constexpr int kOpcodes = 18;

// One edit. Pass 1 edits params, the kind and the inputs' shapes and dtypes; pass 2 the
// outputs' shapes and dtypes, the counts and every layout (strides, offsets, aliasing, NULL).
void apply(call_desc& c, reader& r, int pass) {
  const uint8_t op = r.u8() % kOpcodes;
  auto shape_pass = [&](const decoded_target& d) { return (d.output ? 2 : 1) == pass; };
  switch (op) {
    case 0: {  // set one dimension
      const decoded_target d = target(c, r.u8());
      const uint8_t dim = r.u8(), v = r.u8();
      if (!d.ok || !shape_pass(d)) return;
      tensor_spec& t = spec(c, d);
      if (t.ndim > 0 && t.ndim <= kShapeSlots) t.shape[dim % t.ndim] = dim_value(v);
      return;
    }
    case 1: {  // set the rank
      const decoded_target d = target(c, r.u8());
      const uint8_t v = r.u8() % 12;
      if (!d.ok || !shape_pass(d)) return;
      set_rank(spec(c, d), v <= 8 ? v : v == 9 ? 9 : v == 10 ? 16 : -1);
      return;
    }
    case 2: {  // strides
      const decoded_target d = target(c, r.u8());
      const uint8_t m = r.u8();
      if (!d.ok || pass != 2) {
        if (m % 6 == 5) r.i += kShapeSlots / 2;  // the same bytes in both passes
        return;
      }
      tensor_spec& t = spec(c, d);
      t.smode = static_cast<strides_mode>(m % 6);
      t.broadcast_dim = static_cast<uint8_t>(m / 6);
      if (t.smode == strides_mode::arbitrary)
        for (int i = 0; i < kShapeSlots / 2; ++i) t.strides[i] = stride_value(r.u8());
      return;
    }
    case 3: {  // byte_offset, or (16 of the 256 values) a data pointer off by 1..7 bytes
      const decoded_target d = target(c, r.u8());
      const uint8_t v = r.u8();
      if (!d.ok || pass != 2) return;
      tensor_spec& t = spec(c, d);
      if (v >= 232 && v < 248)
        t.misalign = static_cast<uint8_t>(1 + v % 7);
      else
        t.byte_offset = byte_offset_value(v, item_size(t.dtype));
      return;
    }
    case 4: {  // dtype
      const decoded_target d = target(c, r.u8());
      const uint8_t v = r.u8();
      if (!d.ok || !shape_pass(d)) return;
      spec(c, d).dtype = dtype_value(v, c.float_dtype);
      return;
    }
    case 5: {  // aliasing: tensor t uses the buffer of tensor u
      const decoded_target d = target(c, r.u8()), u = target(c, r.u8());
      const uint8_t v = r.u8();
      if (!d.ok || !u.ok || pass != 2) return;
      const size_t ti = flat_index(c, d), ui = flat_index(c, u);
      if (ti == ui) return;
      tensor_spec& t = spec(c, d);
      t.alias_of = static_cast<int>(ui);
      t.alias_shift = v < 160 ? 0 : (v - 160) % 8 - 2;
      return;
    }
    case 6: {  // NULL data
      const decoded_target d = target(c, r.u8());
      if (d.ok && pass == 2) spec(c, d).null_data = true;
      return;
    }
    case 7: {  // absent (NULL entry)
      const decoded_target d = target(c, r.u8());
      if (d.ok && shape_pass(d)) spec(c, d).present = false;
      return;
    }
    case 8: {  // n_inputs / n_outputs
      const uint8_t which = r.u8(), v = r.u8();
      if (pass != 2) return;
      const size_t n = v % (kMaxArray + 1);
      (which & 1 ? c.n_out : c.n_in) = n;
      return;
    }
    case 9: {  // append a copy of a tensor (variadic inputs/outputs; counts)
      const decoded_target d = target(c, r.u8());
      if (!d.ok || !shape_pass(d)) return;
      std::vector<tensor_spec>& list = d.output ? c.out : c.in;
      if (list.size() >= kMaxArray) return;
      const tensor_spec copy = list[d.index];
      list.push_back(copy);
      (d.output ? c.n_out : c.n_in) = list.size();
      return;
    }
    case 10: {  // raw params bytes
      const uint8_t off = r.u8(), len = static_cast<uint8_t>(1u << (r.u8() % 4));
      const uint64_t v = r.u64();
      if (pass != 1 || c.params.size() <= 8) return;
      const size_t body = c.params.size() - 8;  // struct_size has its own edit
      const size_t at = 8 + off % body;
      for (size_t i = 0; i < len && at + i < c.params.size(); ++i)
        c.params[at + i] = static_cast<uint8_t>(v >> (8 * i));
      return;
    }
    case 11: {  // a params field as int32 / int64 / double, at an aligned offset
      const uint8_t off = r.u8(), kind = r.u8(), v = r.u8();
      if (pass != 1 || c.params.size() <= 8) return;
      const size_t body = c.params.size() - 8;
      if (kind % 3 == 0) {
        const size_t at = 8 + (off * 4u) % body;
        const int32_t x = param_int_value(v);
        if (at + 4 <= c.params.size()) std::memcpy(&c.params[at], &x, 4);
      } else {
        const size_t at = 8 + (off * 8u) % body;
        if (at + 8 > c.params.size()) return;
        if (kind % 3 == 1) {
          const double x = param_double_value(v);
          std::memcpy(&c.params[at], &x, 8);
        } else {
          const int64_t x = param_int64_value(v);
          std::memcpy(&c.params[at], &x, 8);
        }
      }
      return;
    }
    case 12: {  // struct_size
      const uint8_t v = r.u8();
      if (pass != 1) return;
      const uint64_t real = c.params.size();
      // real - 1 and real - 3 end inside the last field (every field is 4 or 8 bytes): refused.
      const uint64_t list[12] = {
          0,         8,       real - 4, real - 8,          real + 8,
          real + 64, v,       real / 2, uint64_t{1} << 40, std::numeric_limits<uint64_t>::max(),
          real - 1,  real - 3};
      c.struct_size_set = true;
      c.struct_size = list[v % 12];
      return;
    }
    case 13:  // NULL params
      if (pass == 1) c.params_null = true;
      return;
    case 14: {  // another kind (the params and tensors stay those of the example)
      const uint8_t v = r.u8();
      const uint32_t raw = r.u32();
      if (pass != 1) return;
      if (v < 200)
        c.kind = examples()[v % examples().size()].kind;
      else
        c.kind = static_cast<int32_t>(raw);
      return;
    }
    case 15: {  // the rank and shape of another tensor
      const decoded_target d = target(c, r.u8()), u = target(c, r.u8());
      if (!d.ok || !u.ok || !shape_pass(d)) return;
      const tensor_spec src = spec(c, u);
      tensor_spec& t = spec(c, d);
      t.ndim = src.ndim;
      std::memcpy(t.shape, src.shape, sizeof t.shape);
      return;
    }
    case 16: {  // data near the top of the address space (the extent must wrap)
      const decoded_target d = target(c, r.u8());
      if (d.ok && pass == 2) spec(c, d).wild = true;
      return;
    }
    case 17: {  // scale one dimension of every input by the same factor (keeps them agreeing)
      const uint8_t dim = r.u8(), v = r.u8();
      if (pass != 1) return;
      const int64_t f = 1 + v % 4;
      for (tensor_spec& t : c.in)
        if (t.ndim > 0 && t.ndim <= kShapeSlots) {
          const int k = dim % t.ndim;
          if (t.shape[k] > 0 && t.shape[k] < 4096) t.shape[k] *= f;
        }
      return;
    }
  }
}

void fill_shape(DLTensor& t, const tensor_spec& s, int64_t* shape) {
  std::memcpy(shape, s.shape, sizeof s.shape);
  t.ndim = s.ndim;
  t.shape = shape;
  t.dtype = s.dtype;
  t.device = DLDevice{kDLCPU, 0};
}

}  // namespace

const std::vector<conf::table_example>& examples() {
  static const std::vector<conf::table_example> v = conf::table_examples();
  return v;
}

bool inplace_output(int32_t kind, size_t output) {
  const conf::table_op* op = conf::find_table_op(kind);  // the outputs' `inplace`
  return op != nullptr && op->inplace(output);
}

size_t item_size(DLDataType t) {
  if (t.lanes != 1 || t.bits == 0 || t.bits % 8 != 0) return 0;
  return t.bits / 8u;
}

std::vector<uint8_t> seed_input(size_t example, uint8_t flags) {
  return {static_cast<uint8_t>(example), flags, 0, 0};
}

call_desc decode(const uint8_t* data, size_t size) {
  reader r{data, size};
  const std::vector<conf::table_example>& ex = examples();
  call_desc c;
  c.example = r.u8() % ex.size();
  const uint8_t flags = r.u8();
  const uint8_t f = flags & 7;
  c.float_dtype = f == 5 ? kF64 : f == 6 ? kF16 : f == 7 ? kBF16 : kF32;
  c.value_mode = (flags >> 3) & 3;
  c.int_mode = (flags >> 5) & 3;
  c.infer = (flags & 0x80) == 0;
  c.seed = r.u16();

  const conf::table_example& e = ex[c.example];
  c.kind = e.kind;
  c.params = e.params;
  c.params_null = e.params.empty();
  auto make = [&](const conf::table_tensor& t) {
    tensor_spec s;
    s.ndim = static_cast<int32_t>(t.shape.size());
    for (size_t d = 0; d < t.shape.size() && d < kShapeSlots; ++d) s.shape[d] = t.shape[d];
    s.dtype = conf::table_dtype(t.dtype, c.float_dtype);
    return s;
  };
  for (const conf::table_tensor& t : e.in) c.in.push_back(make(t));
  for (const conf::table_tensor& t : e.out) c.out.push_back(make(t));
  c.n_in = c.in.size();
  c.n_out = c.out.size();

  const size_t commands = r.i;
  while (!r.done()) apply(c, r, 1);

  // Output shapes from the library's own shape rules, so that most edited calls stay valid.
  if (c.infer && !c.out.empty()) {
    std::vector<DLTensor> tin(c.in.size());
    std::vector<std::unique_ptr<int64_t[]>> shapes;
    std::vector<const DLTensor*> ptrs;
    for (size_t i = 0; i < c.in.size(); ++i) {
      shapes.emplace_back(new int64_t[kShapeSlots]);
      fill_shape(tin[i], c.in[i], shapes.back().get());
      ptrs.push_back(c.in[i].present ? &tin[i] : nullptr);
    }
    std::vector<uint8_t> pb = params_buffer(c);
    std::unique_ptr<uint8_t[]> params;
    if (!c.params_null && !pb.empty()) {
      params.reset(new uint8_t[pb.size()]);
      std::memcpy(params.get(), pb.data(), pb.size());
    }
    std::vector<nnp_shape> out(c.out.size());
    const nnp::kit::op_call call =
        conf::make_op_call(c.kind, params.get(), ptrs.size(), ptrs.data(), out.size(), nullptr);
    if (conf::infer_shapes(call, out.data()) == NNP_STATUS_OK) {
      for (size_t i = 0; i < c.out.size(); ++i) {
        tensor_spec& t = c.out[i];
        t.ndim = out[i].ndim;
        for (int d = 0; d < NNP_MAX_DIMS; ++d) t.shape[d] = out[i].dims[d];
        if (out[i].dtype.bits != 0) t.dtype = out[i].dtype;
      }
    }
  }

  r.i = commands;
  while (!r.done()) apply(c, r, 2);
  return c;
}

std::vector<uint8_t> params_buffer(const call_desc& c) {
  if (c.params_null || c.params.empty()) return {};
  const uint64_t real = c.params.size();
  uint64_t size = c.struct_size_set ? c.struct_size : real;
  // A lying struct_size larger than any struct: the buffer holds every struct (the call's kind
  // may be another op's, whose struct is larger) and a tail; the callee reads only the fields
  // it knows.
  constexpr uint64_t kLargestStruct = 512;
  uint64_t alloc =
      size > kMaxParamsBytes ? std::max(real, kLargestStruct) + 64 : std::max<uint64_t>(size, 8);
  std::vector<uint8_t> b(alloc, 0);
  std::memcpy(b.data(), c.params.data(), std::min<uint64_t>(alloc, real));
  std::memcpy(b.data(), &size, sizeof size);
  return b;
}

call_plan plan(const call_desc& c) {
  call_plan p;
  const size_t nt = c.n_tensors();
  p.tensors.resize(nt);
  using u128 = unsigned __int128;
  auto has_data = [&](size_t i) { return c.tensor(i).present && !c.tensor(i).null_data; };
  // Buffers: one per tensor, except that an alias shares the buffer of the tensor at the end
  // of its alias chain (at that tensor's byte_offset plus the shift, in its own elements).
  std::vector<size_t> root(nt);
  for (size_t i = 0; i < nt; ++i) {
    size_t r = i;
    for (size_t step = 0; step <= nt && c.tensor(r).alias_of >= 0; ++step)
      r = static_cast<size_t>(c.tensor(r).alias_of) % nt;
    if (c.tensor(r).alias_of >= 0 || !has_data(r)) r = i;  // a cycle, or nothing to share
    root[i] = r;
    tensor_plan& tp = p.tensors[i];
    tp.byte_offset = c.tensor(i).byte_offset;
    if (r != i) {
      const size_t item = std::max<size_t>(item_size(c.tensor(i).dtype), 1);
      const __int128 off =
          static_cast<__int128>(c.tensor(r).byte_offset) +
          static_cast<__int128>(c.tensor(i).alias_shift) * static_cast<__int128>(item);
      tp.byte_offset = off < 0 ? 0 : static_cast<uint64_t>(off);
    }
  }
  // The extent of each tensor: the bytes from its buffer's start that a valid description
  // spans; none for descriptions the library must refuse (invalid rank, dtype or dims,
  // overflowing counts, byte_offset not a multiple of the element size, a negative stride
  // over an extent > 1).
  for (size_t i = 0; i < nt; ++i) {
    const tensor_spec& s = c.tensor(i);
    tensor_plan& tp = p.tensors[i];
    if (!has_data(i)) continue;
    const size_t item = item_size(s.dtype);
    bool valid = item != 0 && s.ndim >= 0 && s.ndim <= NNP_MAX_DIMS;
    int64_t n = 1;
    for (int d = 0; valid && d < s.ndim; ++d)
      if (s.shape[d] < 0 || __builtin_mul_overflow(n, s.shape[d], &n)) valid = false;
    if (!valid) continue;
    tp.elements = n;
    if (n == 0) continue;
    int64_t st[kShapeSlots];
    strides_of(s, st);
    __int128 span = 1;  // in elements
    // A data pointer off the element size: the library must refuse it (nothing addressable).
    bool forward = tp.byte_offset % item == 0 && s.misalign % item == 0;
    for (int d = 0; d < s.ndim; ++d)
      if (s.shape[d] > 1) {
        if (st[d] < 0) forward = false;
        span += static_cast<__int128>(s.shape[d] - 1) * st[d];
      }
    if (!forward) continue;
    tp.addressable = true;
    tp.need = static_cast<u128>(s.misalign) + static_cast<u128>(tp.byte_offset) +
              static_cast<u128>(span) * item;
  }
  // Wild data only where data + byte_offset + extent must wrap: the library has to refuse.
  constexpr uint64_t kTop = ~uint64_t{0} - 63;
  for (size_t i = 0; i < nt; ++i) {
    tensor_plan& tp = p.tensors[i];
    if (has_data(i) && c.tensor(i).wild && root[i] == i && tp.addressable &&
        static_cast<u128>(kTop) + tp.need > ~uint64_t{0})
      tp.wild_data = reinterpret_cast<void*>(static_cast<uintptr_t>(kTop));
  }
  std::vector<int> buffer_of(nt, -1);
  for (size_t i = 0; i < nt; ++i) {
    tensor_plan& tp = p.tensors[i];
    if (!has_data(i) || tp.wild_data != nullptr) continue;
    const size_t owner = p.tensors[root[i]].wild_data != nullptr ? i : root[i];
    if (buffer_of[owner] < 0) {
      buffer_of[owner] = static_cast<int>(p.buffers.size());
      p.buffers.emplace_back();
    }
    tp.buffer = buffer_of[owner];
  }
  // Sizes, owners, and the limits.
  u128 total = 0;
  for (size_t i = 0; i < nt; ++i) {
    const tensor_plan& tp = p.tensors[i];
    if (tp.buffer < 0) continue;
    buffer_plan& b = p.buffers[static_cast<size_t>(tp.buffer)];
    if (tp.need > kMaxCallBytes) {
      p.executable = false;
      p.why_not = "a tensor spans more than the byte limit";
    } else if (static_cast<uint64_t>(tp.elements) > kMaxCallBytes) {
      // Zero strides: many elements over few bytes (the checks visit every element).
      p.executable = false;
      p.why_not = "a tensor has more elements than the byte limit";
      b.size = std::max<uint64_t>(b.size, static_cast<uint64_t>(tp.need));
    } else {
      b.size = std::max<uint64_t>(b.size, static_cast<uint64_t>(tp.need));
    }
    // In-place outputs are read too: they start with values, the same on both devices.
    const bool input = i < c.in.size() || inplace_output(c.kind, i - c.in.size());
    if (input && (b.owner < 0 || b.output_only)) b.owner = static_cast<int>(i);
    if (b.owner < 0) b.owner = static_cast<int>(i);
    if (input) b.output_only = false;
  }
  for (const buffer_plan& b : p.buffers) total += b.size;
  if (p.executable && total > kMaxCallBytes) {
    p.executable = false;
    p.why_not = "the buffers exceed the byte limit";
  }
  // Compute-heavy kinds (the table's `heavy`): sqrt of the product of the three largest
  // element counts estimates the multiply-adds (exact for GEMM: sqrt(MK * KN * MN)).
  const conf::table_op* op = conf::find_table_op(c.kind);
  if (op != nullptr && op->heavy) {
    std::vector<double> e;
    for (const tensor_plan& tp : p.tensors) e.push_back(static_cast<double>(tp.elements));
    std::sort(e.rbegin(), e.rend());
    e.resize(3, 1.0);
    if (p.executable && std::sqrt(e[0] * e[1] * std::max(e[2], 1.0)) > kMaxHeavyWork) {
      p.executable = false;
      p.why_not = "too much arithmetic";
    }
  }
  return p;
}

void strides_of(const tensor_spec& s, int64_t* st) {
  for (int d = 0; d < kShapeSlots; ++d) st[d] = 0;
  const int nd = std::min(std::max(s.ndim, 0), kShapeSlots);
  // Compact strides (saturating: invalid shapes only need some values).
  int64_t acc = 1;
  for (int d = nd - 1; d >= 0; --d) {
    st[d] = acc;
    const int64_t dim = s.shape[d] > 0 ? s.shape[d] : 1;
    if (__builtin_mul_overflow(acc, dim, &acc)) acc = std::numeric_limits<int64_t>::max();
  }
  switch (s.smode) {
    case strides_mode::null:
    case strides_mode::compact:
      break;
    case strides_mode::gaps:
      for (int d = 0; d < nd; ++d)
        if (__builtin_mul_overflow(st[d], 2, &st[d])) st[d] = std::numeric_limits<int64_t>::max();
      break;
    case strides_mode::reversed: {
      acc = 1;
      for (int d = 0; d < nd; ++d) {
        st[d] = acc;
        const int64_t dim = s.shape[d] > 0 ? s.shape[d] : 1;
        if (__builtin_mul_overflow(acc, dim, &acc)) acc = std::numeric_limits<int64_t>::max();
      }
      break;
    }
    case strides_mode::broadcast:
      if (nd > 0) st[s.broadcast_dim % nd] = 0;
      break;
    case strides_mode::arbitrary:
      for (int d = 0; d < kShapeSlots; ++d) st[d] = s.strides[d % (kShapeSlots / 2)];
      break;
  }
}

std::string dtype_str(DLDataType t) {
  const char* code = t.code == kDLFloat    ? "float"
                     : t.code == kDLBfloat ? "bfloat"
                     : t.code == kDLInt    ? "int"
                     : t.code == kDLUInt   ? "uint"
                                           : nullptr;
  char b[48];
  if (code != nullptr)
    std::snprintf(b, sizeof b, "%s%u", code, static_cast<unsigned>(t.bits));
  else
    std::snprintf(b, sizeof b, "code%u.%u", static_cast<unsigned>(t.code),
                  static_cast<unsigned>(t.bits));
  std::string s = b;
  if (t.lanes != 1) s += "x" + std::to_string(t.lanes);
  return s;
}

std::string describe(const call_desc& c, const call_plan& p) {
  std::string s;
  const char* name = nnp_op_kind_name(c.kind);
  s += "op " + std::string(name != nullptr ? name : "?") + " (kind " + std::to_string(c.kind) +
       ", example " + examples()[c.example].name + ")";
  if (c.params_null || c.params.empty()) {
    s += " params NULL";
  } else {
    const std::vector<uint8_t> pb = params_buffer(c);
    uint64_t size;
    std::memcpy(&size, pb.data(), sizeof size);
    s += " struct_size " + std::to_string(size) + " params";
    char hex[4];
    for (size_t i = 8; i < pb.size() && i < 8 + 256; ++i) {
      std::snprintf(hex, sizeof hex, "%s%02x", i % 8 == 0 ? " " : "", pb[i]);
      s += hex;
    }
  }
  s += "\n  n_inputs " + std::to_string(c.n_in) + " n_outputs " + std::to_string(c.n_out) +
       " values " + std::to_string(c.value_mode) + "/" + std::to_string(c.int_mode) + " seed " +
       std::to_string(c.seed) + (p.executable ? "" : " (not executed: " + p.why_not + ")");
  for (size_t i = 0; i < c.n_tensors(); ++i) {
    const tensor_spec& t = c.tensor(i);
    const tensor_plan& tp = p.tensors[i];
    const bool input = i < c.in.size();
    s += "\n  " + std::string(input ? "in" : "out") + std::to_string(input ? i : i - c.in.size()) +
         ": ";
    if (!t.present) {
      s += "NULL";
      continue;
    }
    s += dtype_str(t.dtype) + " [";
    for (int d = 0; d < std::min(std::max(t.ndim, 0), kShapeSlots); ++d)
      s += (d ? ", " : "") + std::to_string(t.shape[d]);
    s += "]" +
         std::string(t.ndim < 0 || t.ndim > kShapeSlots ? " ndim " + std::to_string(t.ndim) : "");
    if (t.smode != strides_mode::null) {
      int64_t st[kShapeSlots];
      strides_of(t, st);
      s += " strides [";
      for (int d = 0; d < std::min(std::max(t.ndim, 0), kShapeSlots); ++d)
        s += (d ? ", " : "") + std::to_string(st[d]);
      s += "]";
    }
    s += " byte_offset " + std::to_string(tp.byte_offset);
    if (t.null_data) s += " data NULL";
    if (tp.wild_data != nullptr) s += " data wild";
    if (tp.buffer >= 0)
      s += " buffer " + std::to_string(tp.buffer) + " (" +
           std::to_string(p.buffers[static_cast<size_t>(tp.buffer)].size) + " bytes)";
  }
  return s;
}

}  // namespace fuzz
