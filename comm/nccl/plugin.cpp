// plugin.cpp — libnnplug-comm-nccl.so: the nccl communication plugin (nnplug_comm_plugin.h).
// Collectives on cuda devices through NCCL, queued on the stream's cudaStream_t that libnnplug
// passes (memory NNP_COMM_MEMORY_DEVICE_STREAM). NCCL is opened at initialize
// (nccl_library.hpp); the plugin links neither NCCL nor the CUDA runtime nor libnnplug:
// libnnplug makes the rank's device current (through the cuda plugin's stream_get_native)
// before comm_create, where ncclCommInitRank takes the current device, and NCCL itself makes the
// communicator's device current for each collective.
//
// A rank that dies: NCCL reports what it detects (a broken connection, a peer's abort) as the
// communicator's asynchronous error. Every slot checks ncclCommGetAsyncError first; on an error
// the communicator is aborted (ncclCommAbort) and every later call returns DEVICE_ERROR saying
// so. A collective whose peer is gone but whose connection NCCL does not see fail may wait
// forever on the GPU: nnplug has no timeout of its own (docs/cuda-backend.md, "NCCL").
//
// Every slot runs inside nnp::guard: no exception leaves the plugin; errors reach the host's
// set_error (which prefixes "comm-nccl: ").
#include "nccl_library.hpp"

#include <nnplug/kit/plugin.hpp>
#include <nnplug/nnplug_comm_plugin.h>
#include <nnplug/nnplug_version.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

static_assert(sizeof(ncclUniqueId) == NNP_COMM_UNIQUE_ID_BYTES,
              "nnp_comm_unique_id holds an ncclUniqueId");

namespace nnp::nccl {
namespace {

// The table's version: "<nnplug> (NCCL <x.y.z>)" once initialize opened NCCL. libnnplug reads it
// after initialize (and only then prints it).
char g_version[96] = NNP_VERSION_STRING " (NCCL not opened yet)";

// One rank's communicator.
struct communicator {
  ncclComm_t comm = nullptr;  // NULL once aborted
  int32_t rank = 0, size = 0;
  int device_id = 0;
  std::string failed;  // why it was aborted, when it was
  std::string description;
};

// NCCL, or LOAD_FAILED with every place tried (only initialize can meet that: libnnplug drops a
// plugin whose initialize failed).
const library& opened() {
  const library& lib = nccl();
  if (lib.handle == nullptr)
    fail(NNP_STATUS_LOAD_FAILED,
         lib.reason + " (the Python wheel nvidia-nccl-cu13 installs it, in nvidia/nccl/lib)");
  return lib;
}

[[noreturn]] void nccl_failed(const library& lib, const char* what, const char* call,
                              ncclResult_t result, ncclComm_t comm) {
  fail(NNP_STATUS_DEVICE_ERROR,
       format("%s: %s failed: %s", what, call, error_text(lib, result, comm).c_str()));
}

ncclDataType_t nccl_type(const library& lib, const DLTensor& x, const char* op) {
  const DLDataType& t = x.dtype;
  if (t.lanes == 1 && t.code == kDLFloat && t.bits == 32) return ncclFloat32;
  if (t.lanes == 1 && t.code == kDLFloat && t.bits == 64) return ncclFloat64;
  if (t.lanes == 1 && t.code == kDLFloat && t.bits == 16) return ncclFloat16;
  if (is_bf16(t)) {
    if (!lib.at_least(2, 10))
      unsupported(format("%s: bfloat16 needs NCCL 2.10 or later; this process has NCCL %s", op,
                         lib.version.c_str()));
    return ncclBfloat16;
  }
  unsupported(
      format("%s: dtype %s is not supported over NCCL (float32, float64, float16, "
             "bfloat16)",
             op, dtype_name(t).c_str()));
}

ncclRedOp_t nccl_op(const library& lib, const void* params) {
  const auto p = read_params<nnp_all_reduce_params>(params);
  switch (p.op) {
    case NNP_REDUCE_SUM:
      return ncclSum;
    case NNP_REDUCE_MAX:
      return ncclMax;
    case NNP_REDUCE_MIN:
      return ncclMin;
    case NNP_REDUCE_MEAN:
      // ncclAvg came with NCCL 2.10; before it, a mean needs a kernel to scale the sum, which
      // this plugin (no CUDA code) does not have.
      if (!lib.at_least(2, 10))
        unsupported(
            format("all_reduce: MEAN needs ncclAvg, NCCL 2.10 or later; this process has "
                   "NCCL %s (use SUM and scale by 1/size)",
                   lib.version.c_str()));
      return ncclAvg;
    default:
      unsupported(format("all_reduce: op %d is not SUM, MEAN, MAX or MIN", static_cast<int>(p.op)));
  }
}

// One collective's operands, as comm_execute has checked them.
struct nccl_args {
  const library& lib;
  const void* x;
  void* y;  // x == y: in place
  size_t count;
  ncclDataType_t type;
  const void* params;
  ncclComm_t comm;
  cudaStream_t stream;
};

// The transport's kernel rows: one NCCL call per collective. A kind without a row is
// UNSUPPORTED in both slots.
struct collective_row {
  int32_t kind;
  const char* call;  // the NCCL function, for messages
  ncclResult_t (*run)(const nccl_args& a);
};
const collective_row kRows[] = {
    {NNP_OP_ALL_REDUCE, "ncclAllReduce",
     [](const nccl_args& a) {
       return a.lib.all_reduce(a.x, a.y, a.count, a.type, nccl_op(a.lib, a.params), a.comm,
                               a.stream);
     }},
    {NNP_OP_BROADCAST, "ncclBroadcast",
     [](const nccl_args& a) {
       return a.lib.broadcast(a.x, a.y, a.count, a.type,
                              read_params<nnp_broadcast_params>(a.params).root, a.comm, a.stream);
     }},
    // y = x of every rank in order
    {NNP_OP_ALL_GATHER, "ncclAllGather",
     [](const nccl_args& a) {
       return a.lib.all_gather(a.x, a.y, a.count, a.type, a.comm, a.stream);
     }},
};

// The row of a collective kind, or UNSUPPORTED.
const collective_row& row_of(int32_t kind) {
  for (const collective_row& row : kRows)
    if (row.kind == kind) return row;
  unsupported(
      format("op kind %d is not a collective of the nccl transport (all_reduce, "
             "broadcast, all_gather)",
             static_cast<int>(kind)));
}

// The op's name (the table's, nnplug/kit/op_kinds.hpp) for messages; UNSUPPORTED without a row.
const char* op_name(int32_t kind) {
  (void)row_of(kind);
  return nnp::kit::collective_name(kind);
}

// What every collective checks of its call: the op, x's dtype and layout; returns the NCCL type.
ncclDataType_t check_call(const library& lib, int32_t kind, const void* params, size_t n_inputs,
                          const DLTensor* const* inputs, size_t n_outputs,
                          const DLTensor* const* outputs) {
  const char* op = op_name(kind);
  if (n_inputs < 1 || inputs == nullptr || inputs[0] == nullptr || n_outputs < 1 ||
      outputs == nullptr || outputs[0] == nullptr)
    fail(NNP_STATUS_INVALID_ARGUMENT, format("%s: expected the tensors x and y", op));
  const ncclDataType_t type = nccl_type(lib, *inputs[0], op);
  if (!is_compact(*inputs[0]) || !is_compact(*outputs[0]))
    unsupported(format("%s: NCCL needs compact (row-major, contiguous) tensors", op));
  if (kind == NNP_OP_ALL_REDUCE) (void)nccl_op(lib, params);
  return type;
}

// Before every use of the communicator: an asynchronous error (a peer that died, a broken
// connection) aborts it; an aborted one is refused.
void check_alive(const library& lib, communicator& c, const char* what) {
  if (c.comm == nullptr)
    fail(NNP_STATUS_DEVICE_ERROR,
         format("%s: the NCCL communicator failed earlier and was aborted (%s); destroy it and "
                "create a new one on every rank",
                what, c.failed.c_str()));
  ncclResult_t async = ncclSuccess;
  const ncclResult_t r = lib.comm_get_async_error(c.comm, &async);
  if (r != ncclSuccess) nccl_failed(lib, what, "ncclCommGetAsyncError", r, c.comm);
  if (async == ncclSuccess || async == ncclInProgress) return;
  c.failed = error_text(lib, async, c.comm);
  lib.comm_abort(c.comm);
  c.comm = nullptr;
  fail(NNP_STATUS_DEVICE_ERROR,
       format("%s: the NCCL communicator reports an asynchronous error: %s (a peer process died "
              "or a connection failed); it was aborted (ncclCommAbort): destroy it and create a "
              "new one on every rank",
              what, c.failed.c_str()));
}

// ------------------------------------------------------------------------------------ slots --
nnp_status initialize() {
  return guard([] {
    const library& lib = opened();
    // The search logged where NCCL was found ("NCCL from ... (dynamic linker)").
    std::snprintf(g_version, sizeof g_version, "%s (NCCL %s)", NNP_VERSION_STRING,
                  lib.version.c_str());
  });
}

nnp_status get_unique_id(nnp_comm_unique_id* id) {
  return guard([&] {
    const library& lib = opened();
    if (id == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "get_unique_id: id is NULL");
    ncclUniqueId u;
    const ncclResult_t r = lib.get_unique_id(&u);
    if (r != ncclSuccess) nccl_failed(lib, "get_unique_id", "ncclGetUniqueId", r, nullptr);
    std::memcpy(id->bytes, &u, sizeof u);
  });
}

nnp_status comm_create(const nnp_comm_plugin_create_args* args, void** comm, int32_t* rank,
                       int32_t* size, const char** description) {
  return guard([&] {
    const library& lib = opened();
    if (args == nullptr || args->config == nullptr || args->config->unique_id == nullptr ||
        comm == nullptr || rank == nullptr || size == nullptr || description == nullptr)
      fail(NNP_STATUS_INVALID_ARGUMENT, "comm_create: an argument is NULL");
    const nnp_comm_config& cfg = *args->config;
    if (args->device.device_type != kDLCUDA)
      fail(NNP_STATUS_INVALID_ARGUMENT,
           format("comm_create: NCCL serves cuda devices; %s is not one",
                  args->device_name != nullptr ? args->device_name : "the device"));
    auto c = std::make_unique<communicator>();
    c->rank = cfg.rank;
    c->size = cfg.size;
    c->device_id = args->device.device_id;
    c->description = format("NCCL %s, %d rank%s, cuda:%d", lib.version.c_str(),
                            static_cast<int>(cfg.size), cfg.size == 1 ? "" : "s", c->device_id);
    ncclUniqueId id;
    std::memcpy(&id, cfg.unique_id->bytes, sizeof id);
    // On the current device, which libnnplug made the rank's; collective over the ranks.
    const ncclResult_t r = lib.comm_init_rank(&c->comm, cfg.size, id, cfg.rank);
    if (r != ncclSuccess) {
      c->comm = nullptr;
      fail(NNP_STATUS_DEVICE_ERROR,
           format("comm_create: ncclCommInitRank (rank %d of %d, cuda:%d) failed: %s",
                  static_cast<int>(cfg.rank), static_cast<int>(cfg.size), c->device_id,
                  error_text(lib, r, nullptr).c_str()));
    }
    int dev = -1;
    if (lib.comm_cu_device(c->comm, &dev) != ncclSuccess || dev != c->device_id) {
      lib.comm_abort(c->comm);
      fail(NNP_STATUS_INTERNAL,
           format("comm_create: NCCL made the communicator on CUDA device %d, not on cuda:%d "
                  "(the device was not current)",
                  dev, c->device_id));
    }
    *rank = c->rank;
    *size = c->size;
    *description = c->description.c_str();
    *comm = c.release();
  });
}

nnp_status comm_destroy(void* comm) {
  return guard([&] {
    std::unique_ptr<communicator> c(static_cast<communicator*>(comm));
    if (c == nullptr || c->comm == nullptr) return;  // aborted already, and reported then
    const library& lib = opened();
    ncclResult_t async = ncclSuccess;
    const ncclResult_t r = lib.comm_get_async_error(c->comm, &async);
    if (r == ncclSuccess && (async == ncclSuccess || async == ncclInProgress)) {
      const ncclResult_t d = lib.comm_destroy(c->comm);
      if (d != ncclSuccess) nccl_failed(lib, "comm_destroy", "ncclCommDestroy", d, nullptr);
      return;
    }
    const std::string why = error_text(lib, r != ncclSuccess ? r : async, c->comm);
    lib.comm_abort(c->comm);
    fail(NNP_STATUS_DEVICE_ERROR,
         format("comm_destroy: the NCCL communicator reports an error (%s); it was aborted "
                "(ncclCommAbort) instead of destroyed",
                why.c_str()));
  });
}

nnp_status comm_supported(void* /*comm: the call alone decides*/, int32_t op_kind,
                          const void* params, size_t n_inputs, const DLTensor* const* inputs,
                          size_t n_outputs, const DLTensor* const* outputs) {
  return guard(
      [&] { (void)check_call(opened(), op_kind, params, n_inputs, inputs, n_outputs, outputs); });
}

nnp_status comm_execute(void* comm, void* native_stream, int32_t op_kind, const void* params,
                        size_t n_inputs, const DLTensor* const* inputs, size_t n_outputs,
                        const DLTensor* const* outputs) {
  return guard([&] {
    const library& lib = opened();
    if (comm == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "comm_execute: comm is NULL");
    communicator& c = *static_cast<communicator*>(comm);
    const ncclDataType_t type =
        check_call(lib, op_kind, params, n_inputs, inputs, n_outputs, outputs);
    const char* op = op_name(op_kind);
    check_alive(lib, c, op);
    const auto stream = static_cast<cudaStream_t>(native_stream);
    const nccl_args args{lib,
                         data_ptr<const void>(*inputs[0]),
                         data_ptr<void>(*outputs[0]),
                         static_cast<size_t>(numel(*inputs[0])),
                         type,
                         params,
                         c.comm,
                         stream};
    const collective_row& row = row_of(op_kind);
    const ncclResult_t r = row.run(args);
    if (r != ncclSuccess) nccl_failed(lib, op, row.call, r, c.comm);
  });
}

// clang-format off
const nnp_comm_plugin_api kTable = {
    /* .struct_size       = */ sizeof(nnp_comm_plugin_api),
    /* .abi_version_major = */ NNP_ABI_VERSION_MAJOR,
    /* .abi_version_minor = */ NNP_ABI_VERSION_MINOR,
    /* .transport         = */ "nccl",
    /* .version           = */ g_version,
    /* .memory            = */ NNP_COMM_MEMORY_DEVICE_STREAM,
    /* .device_type       = */ kDLCUDA,
    /* .initialize        = */ initialize,
    /* .shutdown          = */ nullptr,
    /* .get_unique_id     = */ get_unique_id,
    /* .comm_create       = */ comm_create,
    /* .comm_destroy      = */ comm_destroy,
    /* .comm_supported    = */ comm_supported,
    /* .comm_execute      = */ comm_execute,
};
// clang-format on

}  // namespace
}  // namespace nnp::nccl

// The entry: the host's struct size and ABI major are checked as for device plugins
// (nnp::accept_host), then the table is handed out.
NNP_PLUGIN_ENTRY nnp_status nnp_comm_plugin_get_api(const nnp_host_api* host,
                                                    const nnp_comm_plugin_api** api) {
  if (host == nullptr || api == nullptr) return NNP_STATUS_INVALID_ARGUMENT;
  if (host->struct_size < NNP_HOST_API_STRUCT_SIZE_1_0) return NNP_STATUS_ABI_MISMATCH;
  nnp::g_host = host;
  if (host->abi_version_major != NNP_ABI_VERSION_MAJOR) {
    nnp::host_set_error(NNP_STATUS_ABI_MISMATCH,
                        nnp::format("comm plugin 'nccl' built for ABI %d.%d, host has ABI %d.%d",
                                    NNP_ABI_VERSION_MAJOR, NNP_ABI_VERSION_MINOR,
                                    host->abi_version_major, host->abi_version_minor)
                            .c_str());
    nnp::g_host = nullptr;
    return NNP_STATUS_ABI_MISMATCH;
  }
  *api = &nnp::nccl::kTable;
  return NNP_STATUS_OK;
}
