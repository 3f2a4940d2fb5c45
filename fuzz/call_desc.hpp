// call_desc.hpp — the fuzz input format of nnplug-fuzz-op-execute: bytes -> the description of
// one op call, a call_desc (kind, params bytes, struct_size, tensor counts, and per tensor rank,
// shape, dtype, strides, byte_offset, aliasing, NULL data), and the call's memory plan (buffers
// sized by the real extent of every tensor the call describes). docs/fuzzing.md describes the
// format. The call itself, once bound to buffers, is the one op-call type nnp::kit::op_call
// (testing/op_call.hpp).
//
// The format is built for mutation: the first byte picks one of the op table's example calls
// (api/ops/ops.toml `example`, through testing/op_table_cases.hpp), which is valid as it
// stands; every later byte group is one independent edit of that call ("set dim 2 of tensor 1
// to 7", "make tensor 3 alias tensor 0", "set struct_size to sizeof - 4", ...). Output shapes
// are recomputed with nnp_op_infer_shapes() after the edits to inputs and params, so most
// edited calls stay valid; edits to outputs come after that.
#pragma once

#include <nnplug/nnplug.h>

#include "op_table_cases.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fuzz {

// Shape and strides arrays hold this many entries, so ranks up to 16 (invalid above
// NNP_MAX_DIMS) are still memory-safe to read.
constexpr int kShapeSlots = 16;
// Most bytes of tensor memory one call may need; a call whose valid description needs more is
// validated (nnp_op_supported, nnp_op_infer_shapes) but not executed.
constexpr uint64_t kMaxCallBytes = 1u << 20;
// Most multiply-adds (estimated) of one call of a compute-heavy kind (the table's `heavy`:
// GEMM, convolution, pooling, attention): keeps one execution well under a second under the
// sanitizers.
constexpr double kMaxHeavyWork = 1 << 22;
// Most tensor pointers in the inputs or outputs array (NNP_MAX_VARIADIC and a few more).
constexpr size_t kMaxArray = NNP_MAX_VARIADIC + 8;
// Params buffers are allocated with the claimed struct_size up to this many bytes.
constexpr uint64_t kMaxParamsBytes = 4096;

enum class strides_mode : uint8_t {
  null,       // strides = NULL
  compact,    // the compact row-major strides, spelled out
  gaps,       // compact strides times 2 (no overlap, not compact)
  reversed,   // column-major (no overlap, not compact unless rank <= 1)
  broadcast,  // compact with a 0 on one dimension (overlaps when that extent > 1)
  arbitrary,  // values from the input
};

struct tensor_spec {
  bool present = true;  // false: a NULL entry in the array (an absent optional tensor)
  int32_t ndim = 0;
  int64_t shape[kShapeSlots] = {};
  DLDataType dtype{kDLFloat, 32, 1};
  strides_mode smode = strides_mode::null;
  uint8_t broadcast_dim = 0;
  int64_t strides[kShapeSlots] = {};  // strides_mode::arbitrary
  uint64_t byte_offset = 0;
  int alias_of = -1;        // the tensor (index into all tensors) whose buffer this one shares
  int64_t alias_shift = 0;  // in elements, after that tensor's first element
  bool null_data = false;
  bool wild = false;     // data near the top of the address space (used only when it must wrap)
  uint8_t misalign = 0;  // bytes added to the buffer's address for data (1..7: unaligned loads)
};

struct call_desc {
  size_t example = 0;  // index into conf::table_examples()
  int32_t kind = 0;
  bool params_null = false;
  std::vector<uint8_t> params;  // the params struct's bytes (struct_size excluded: below)
  bool struct_size_set = false;
  uint64_t struct_size = 0;
  std::vector<tensor_spec> in, out;
  size_t n_in = 0, n_out = 0;  // counts passed; arrays padded with NULL entries up to these
  DLDataType float_dtype{kDLFloat, 32, 1};
  uint8_t value_mode = 0;  // 0 small dyadic, 1 wide dyadic, 2 small + specials, 3 wide + specials
  uint8_t int_mode = 0;    // 0 [0, 2), 1 [0, 4), 2 [-4, 8), 3 [0, 4) + extremes
  uint16_t seed = 0;
  bool infer = true;  // output shapes from nnp_op_infer_shapes after the input edits

  size_t n_tensors() const { return in.size() + out.size(); }
  tensor_spec& tensor(size_t i) { return i < in.size() ? in[i] : out[i - in.size()]; }
  const tensor_spec& tensor(size_t i) const { return i < in.size() ? in[i] : out[i - in.size()]; }
};

// The example calls, once.
const std::vector<conf::table_example>& examples();

// Decodes a fuzz input into a call (never fails: missing bytes read as 0).
call_desc decode(const uint8_t* data, size_t size);

// The seed input of an example: `example` with `flags` (the second byte: dtype and modes).
std::vector<uint8_t> seed_input(size_t example, uint8_t flags);

// The params buffer a call passes: struct_size in its first 8 bytes, then the struct's
// bytes; its length is the claimed struct_size (at least 8) up to kMaxParamsBytes. Empty for
// NULL params.
std::vector<uint8_t> params_buffer(const call_desc& c);

// The strides a tensor's description passes (compact ones for strides_mode::null).
void strides_of(const tensor_spec& s, int64_t* strides /* kShapeSlots entries */);

// The outputs api/ops/ops.toml marks `inplace = true` (read and written: running statistics,
// optimiser state), from the generated conf::table_ops(). They start with values rather than a
// sentinel.
bool inplace_output(int32_t kind, size_t output);

// Element size in bytes of a dtype the library accepts (one lane of whole bytes), else 0.
size_t item_size(DLDataType t);

// The memory plan of a call.
struct tensor_plan {
  int buffer = -1;  // -1: no buffer (absent, NULL data or wild)
  uint64_t byte_offset = 0;
  int64_t elements = 0;        // elements of a valid shape (0 when the shape is invalid)
  bool addressable = false;    // a description whose elements all lie in [0, need)
  unsigned __int128 need = 0;  // bytes from the buffer's start the description spans
  void* wild_data = nullptr;
};
struct buffer_plan {
  uint64_t size = 0;
  int owner = -1;           // the first input that uses it, else the first output
  bool output_only = true;  // used by outputs only: filled with a per-device sentinel
};
struct call_plan {
  std::vector<tensor_plan> tensors;  // by tensor index (inputs, then outputs)
  std::vector<buffer_plan> buffers;
  bool executable = true;  // within kMaxCallBytes and kMaxHeavyWork
  std::string why_not;
};
call_plan plan(const call_desc& c);

// One-line descriptions for failure reports and NNPLUG_FUZZ_VERBOSE.
std::string describe(const call_desc& c, const call_plan& p);
std::string dtype_str(DLDataType t);

}  // namespace fuzz
