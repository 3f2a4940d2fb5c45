// nnplug/kit/plugin.hpp — the plugin kit: what turns a C++ backend into an nnplug plugin.
//
//  - The C-to-C++ boundary: every extern "C" slot is `return nnp::guard([&] { ...; });` — the
//    body may throw nnp::error (status + message), std::bad_alloc or anything else; guard
//    turns each into a status and reports the message through the host's set_error.
//  - accept_host: the entry handshake (host struct size, ABI major) for nnp_plugin_get_api.
//  - op_call: the one op-call type (kind, params, tensors, stream, device): what an op kernel
//    receives, and what the conformance suite and the fuzzer make for each call they run.
//  - read_params<P>: the caller's params struct, whatever its struct_size.
//  - Kernel rows: a backend lists {kind, dtypes, kernel, check} rows in an op_rows table —
//    one array, or one op_row_list per kernel file (each file lists the rows of the kernels
//    it defines, so adding an op to a family edits that family's file only);
//    op_supported_slot / op_execute_slot serve the table's two op slots from those rows, with
//    one lookup, so the two can never disagree: a kind with no row, or a dtype a row does not
//    list, is UNSUPPORTED in both, with the reason.
//  - table(): a function table with the header fields filled; slots are assigned by name.
//
// Threading: g_host is written once by nnp_plugin_get_api before any other slot is called;
// everything else here is stateless. Each plugin is its own shared object, so the inline
// variable g_host is per plugin. Header-only; C++17.
#pragma once

#include <nnplug/kit/error.hpp>
#include <nnplug/kit/op_kinds.hpp>
#include <nnplug/kit/tensor.hpp>
#include <nnplug/nnplug_plugin.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <type_traits>

namespace nnp {

// ---- host services -------------------------------------------------------------------------
// The host services of this plugin, stored by accept_host.
inline const nnp_host_api* g_host = nullptr;

inline void host_set_error(nnp_status status, const char* message) {
  if (g_host != nullptr && g_host->set_error != nullptr)
    g_host->set_error(g_host->host_context, status, message);
}
inline void host_log(nnp_log_level level, const std::string& message) {
  if (g_host != nullptr && g_host->log != nullptr)
    g_host->log(g_host->host_context, level, message.c_str());
}

// ---- the boundary --------------------------------------------------------------------------
// Runs body() and maps every exception to a status; body returns void or nnp_status.
template <typename F>
nnp_status guard(F&& body) noexcept {
  try {
    if constexpr (std::is_same_v<decltype(body()), void>) {
      body();
      return NNP_STATUS_OK;
    } else {
      return body();
    }
  } catch (const error& e) {
    host_set_error(e.status(), e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    host_set_error(NNP_STATUS_OUT_OF_MEMORY, "out of host memory");
    return NNP_STATUS_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    host_set_error(NNP_STATUS_INTERNAL, e.what());
    return NNP_STATUS_INTERNAL;
  } catch (...) {
    host_set_error(NNP_STATUS_INTERNAL, "unknown exception");
    return NNP_STATUS_INTERNAL;
  }
}

// Standard entry handshake: checks the host's struct size and major version, stores the host
// pointer, and hands out the table. Returns the status for nnp_plugin_get_api.
inline nnp_status accept_host(const nnp_host_api* host, const nnp_plugin_api* table,
                              const nnp_plugin_api** out) {
  if (host == nullptr || out == nullptr) return NNP_STATUS_INVALID_ARGUMENT;
  if (host->struct_size < NNP_HOST_API_STRUCT_SIZE_1_0) return NNP_STATUS_ABI_MISMATCH;
  g_host = host;
  if (host->abi_version_major != NNP_ABI_VERSION_MAJOR) {
    host_set_error(NNP_STATUS_ABI_MISMATCH,
                   format("plugin '%s' built for ABI %d.%d, host has ABI %d.%d", table->name,
                          NNP_ABI_VERSION_MAJOR, NNP_ABI_VERSION_MINOR, host->abi_version_major,
                          host->abi_version_minor)
                       .c_str());
    g_host = nullptr;
    return NNP_STATUS_ABI_MISMATCH;
  }
  *out = table;
  return NNP_STATUS_OK;
}

// Defines the plugin's entry point, nnp_plugin_get_api, handing out `table` (an
// nnp_plugin_api with static storage) through accept_host. Use once, at namespace scope.
#define NNP_KIT_PLUGIN_ENTRY(table)                                                     \
  NNP_PLUGIN_ENTRY nnp_status nnp_plugin_get_api(const nnp_host_api* nnp_kit_host_,     \
                                                 const nnp_plugin_api** nnp_kit_api_) { \
    return ::nnp::accept_host(nnp_kit_host_, &(table), nnp_kit_api_);                   \
  }

// ---- params --------------------------------------------------------------------------------
// Copies the caller's params struct into a zero-initialised P, reading only the bytes that
// fit in both (the caller's struct_size may be smaller or larger than ours). NULL params give
// an all-zero struct (ops whose params may be NULL do not read them).
template <typename P>
P read_params(const void* params) {
  P p{};
  if (params != nullptr) {
    size_t size = 0;
    std::memcpy(&size, params, sizeof size);
    std::memcpy(&p, params, std::min(size, sizeof(P)));
  }
  p.struct_size = sizeof(P);
  return p;
}

// Writes props->field = value only if the caller's struct is large enough to hold it.
#define NNP_KIT_SET_PROP(props, field, value)                                               \
  do {                                                                                      \
    if ((props)->struct_size >= offsetof(nnp_device_props, field) + sizeof((props)->field)) \
      (props)->field = (value);                                                             \
  } while (0)

namespace kit {

// ---- one op call ---------------------------------------------------------------------------
// What a kernel receives: a call libnnplug has validated (nnplug_ops.h), plus where it runs.
struct op_call {
  int32_t kind;
  const void* params;
  size_t n_inputs;
  const DLTensor* const* inputs;
  size_t n_outputs;
  const DLTensor* const* outputs;
  void* stream;    // the plugin's stream (op_execute); nullptr in op_supported
  int32_t device;  // the device index (op_supported); -1 in op_execute (see the stream)

  // Input / output i, or nullptr when absent (optional tensor or short array).
  const DLTensor* in(size_t i) const { return i < n_inputs ? inputs[i] : nullptr; }
  const DLTensor* out(size_t i) const { return i < n_outputs ? outputs[i] : nullptr; }
  template <typename P>
  P params_as() const {
    return read_params<P>(params);
  }
  // The same call with other params (e.g. a 2-D op's as its N-D op's; `p` must outlive it).
  op_call with_params(const void* p) const {
    op_call r = *this;
    r.params = p;
    return r;
  }
};

// ---- dtype sets of rows --------------------------------------------------------------------
enum dtype_bits : uint32_t {
  f16 = 1u << 0,
  bf16 = 1u << 1,
  f32 = 1u << 2,
  f64 = 1u << 3,
  // Data movement (copy, transpose): any dtype; the row's check narrows element sizes.
  any = 1u << 4,
};
constexpr uint32_t all_floats = f16 | bf16 | f32 | f64;

// The dtype a row is matched on: the first floating-point operand of the call (int64 labels
// and uint8 masks are fixed by the op table and not matched); `any` when there is none.
inline uint32_t call_dtype(const op_call& c, DLDataType* dt = nullptr) {
  auto bit_of = [](const DLDataType& t) -> uint32_t {
    if (is_f32(t)) return f32;
    if (is_f64(t)) return f64;
    if (is_f16(t)) return f16;
    if (is_bf16(t)) return bf16;
    return 0;
  };
  for (size_t i = 0; i < c.n_inputs + c.n_outputs; ++i) {
    const DLTensor* t = i < c.n_inputs ? c.in(i) : c.out(i - c.n_inputs);
    if (t != nullptr && is_float_dtype(t->dtype)) {
      if (dt != nullptr) *dt = t->dtype;
      return bit_of(t->dtype);
    }
  }
  if (dt != nullptr && c.in(0) != nullptr) *dt = c.in(0)->dtype;
  return any;
}

inline std::string dtype_set_string(uint32_t bits) {
  std::string s;
  const std::pair<uint32_t, const char*> names[] = {
      {f32, "float32"}, {f64, "float64"}, {f16, "float16"}, {bf16, "bfloat16"}, {any, "any"}};
  for (const auto& [bit, name] : names)
    if (bits & bit) s += (s.empty() ? "" : ", ") + std::string(name);
  return s;
}

// ---- kernel rows ---------------------------------------------------------------------------
struct op_row {
  int32_t kind;                    // nnp_op_kind
  uint32_t dtypes;                 // dtype_bits the kernel implements
  void (*kernel)(const op_call&);  // runs the call (op_execute); throws nnp::error
  // Optional: throws UNSUPPORTED for calls of a listed dtype the kernel still cannot run
  // (e.g. cast pairs, element sizes); called by both op slots. nullptr: none.
  void (*check)(const op_call&) = nullptr;
};

// The rows of one kernel file (a family: convolution, pooling, ...), defined beside its kernels:
//   const nnp::kit::op_row kPoolRows[] = {{NNP_OP_POOL_FORWARD, f32, pool_forward}, ...};
//   extern const nnp::kit::op_row_list pool_rows = nnp::kit::row_list(kPoolRows);
struct op_row_list {
  const op_row* rows;
  size_t n_rows;
};
template <size_t N>
constexpr op_row_list row_list(const op_row (&rows)[N]) {
  return op_row_list{rows, N};
}

// A backend's op table: its name (for messages), its rows — one array (rows, n_rows) or the
// row lists of its kernel files (lists, n_lists); the first row of a kind wins — and how it
// checks a device index.
struct op_rows {
  const char* backend;
  const op_row* rows;
  size_t n_rows;
  void (*check_device)(int32_t index);  // throws INVALID_ARGUMENT for a bad index
  const op_row_list* const* lists = nullptr;
  size_t n_lists = 0;

  // The row of `kind`, or nullptr.
  const op_row* row_of(int32_t kind) const {
    for (size_t i = 0; i < n_rows; ++i)
      if (rows[i].kind == kind) return &rows[i];
    for (size_t l = 0; l < n_lists; ++l)
      for (size_t i = 0; i < lists[l]->n_rows; ++i)
        if (lists[l]->rows[i].kind == kind) return &lists[l]->rows[i];
    return nullptr;
  }

  // The row that runs `c`, or UNSUPPORTED with the reason: the one lookup behind both op slots.
  const op_row& find(const op_call& c) const {
    const op_row* row = row_of(c.kind);
    if (row == nullptr)
      unsupported(format("op kind %d is not implemented by the %s backend", c.kind, backend));
    DLDataType dt{};
    const uint32_t bit = call_dtype(c, &dt);
    if ((row->dtypes & bit) == 0 && !(row->dtypes & any))
      unsupported(
          format("dtype %s is not implemented by the %s backend for this op "
                 "(implemented: %s)",
                 dtype_name(dt).c_str(), backend, dtype_set_string(row->dtypes).c_str()));
    if (row->check != nullptr) row->check(c);
    return *row;
  }
};

template <size_t N>
constexpr op_rows make_op_rows(const char* backend, const op_row (&rows)[N],
                               void (*check_device)(int32_t)) {
  return op_rows{backend, rows, N, check_device};
}
// The table of a backend whose kernel files each define an op_row_list.
template <size_t N>
constexpr op_rows make_op_rows(const char* backend, const op_row_list* const (&lists)[N],
                               void (*check_device)(int32_t)) {
  return op_rows{backend, nullptr, 0, check_device, lists, N};
}

// The two op slots of a plugin with the op table `R` (an op_rows with static storage).
template <const op_rows& R>
nnp_status op_supported_slot(int32_t index, int32_t kind, const void* params, size_t n_inputs,
                             const DLTensor* const* inputs, size_t n_outputs,
                             const DLTensor* const* outputs) {
  return guard([&] {
    R.check_device(index);
    R.find(op_call{kind, params, n_inputs, inputs, n_outputs, outputs, nullptr, index});
  });
}
template <const op_rows& R>
nnp_status op_execute_slot(void* stream, int32_t kind, const void* params, size_t n_inputs,
                           const DLTensor* const* inputs, size_t n_outputs,
                           const DLTensor* const* outputs) {
  return guard([&] {
    if (stream == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "stream is NULL");
    const op_call c{kind, params, n_inputs, inputs, n_outputs, outputs, stream, -1};
    R.find(c).kernel(c);
  });
}

// ---- the function table ------------------------------------------------------------------
// A table with struct_size, ABI version, name and version filled and every slot NULL; the
// plugin assigns its slots by name (t.mem_alloc = ...), so a reader sees which function fills
// which slot.
inline nnp_plugin_api table(const char* name, const char* version) {
  nnp_plugin_api t{};
  t.struct_size = sizeof(nnp_plugin_api);
  t.abi_version_major = NNP_ABI_VERSION_MAJOR;
  t.abi_version_minor = NNP_ABI_VERSION_MINOR;
  t.name = name;
  t.version = version;
  return t;
}

// The six memory and stream slots every device plugin fills (nnplug_plugin.h), in one call.
inline void set_memory_slots(nnp_plugin_api& t, decltype(t.mem_alloc) mem_alloc,
                             decltype(t.mem_free) mem_free, decltype(t.stream_create) stream_create,
                             decltype(t.stream_destroy) stream_destroy,
                             decltype(t.stream_synchronize) stream_synchronize,
                             decltype(t.memcpy_async) memcpy_async) {
  t.mem_alloc = mem_alloc;
  t.mem_free = mem_free;
  t.stream_create = stream_create;
  t.stream_destroy = stream_destroy;
  t.stream_synchronize = stream_synchronize;
  t.memcpy_async = memcpy_async;
}

// The four graph slots of ABI 1.4 (all or none: nnplug_plugin.h), in one call.
inline void set_graph_slots(nnp_plugin_api& t, decltype(t.stream_begin_capture) begin_capture,
                            decltype(t.stream_end_capture) end_capture,
                            decltype(t.graph_launch) launch, decltype(t.graph_destroy) destroy) {
  t.stream_begin_capture = begin_capture;
  t.stream_end_capture = end_capture;
  t.graph_launch = launch;
  t.graph_destroy = destroy;
}

// The name of a collective op kind (all_reduce, broadcast, all_gather: the table's
// `collective`, op_kinds.hpp), or NULL for any other kind: for communication plugins' messages
// (nnplug_comm_plugin.h).
inline const char* collective_name(int32_t op_kind) {
  const op_kind_info* k = find_op_kind(op_kind);
  return k != nullptr && k->collective ? k->name : nullptr;
}

}  // namespace kit
}  // namespace nnp
