// libnnplug-comm-mpi.so — the "mpi" transport of nnplug's communicators
// (nnplug_comm_plugin.h), on the MPI C library it was built against.
//
// Memory: NNP_COMM_MEMORY_HOST. libnnplug has drained the stream and hands over host tensors
// (the caller's own on cpu and reference devices, staged copies on sim), so every collective
// is one blocking MPI call, complete when comm_execute returns. Calls come validated (dtype,
// shapes, aliasing, root); the few facts MPI needs are checked again here, cheaply.
//
// Mapping: all_reduce -> MPI_Allreduce(MPI_IN_PLACE) on y, on every rank (MPI wants
// MPI_IN_PLACE at all processes or none; a rank whose y is not its x first copies x into y);
// MEAN is SUM then y *= 1/size in the tensor's dtype. broadcast -> MPI_Bcast on y (the root
// first copies x into y). all_gather -> MPI_Allgather. MPI counts are int: all_reduce and broadcast
// run in pieces of at most INT_MAX elements (elementwise, so the pieces are independent),
// all_gather sends one element of a contiguous derived datatype per rank. NNPLUG_MPI_MAX_COUNT
// lowers that limit, so tests reach these paths with small tensors.
//
// State: each communicator owns an MPI_Comm_dup of the application's communicator, with
// MPI_ERRORS_RETURN, so nnplug's traffic never matches the application's messages and an MPI
// error becomes NNP_STATUS_DEVICE_ERROR with MPI_Error_string instead of ending the job.
//
// Threads: MPI must provide MPI_THREAD_SERIALIZED at least, as libnnplug may call a
// communicator from any thread (one at a time). Below MPI_THREAD_MULTIPLE the plugin also
// serialises its own MPI calls across communicators with one mutex, so two communicators used
// from two threads never call MPI at once; their collectives must then be issued in the same
// order on every rank (each blocks in MPI while holding the mutex).
#include <mpi.h>

#include <nnplug/kit/error.hpp>
#include <nnplug/kit/plugin.hpp>
#include <nnplug/kit/tensor.hpp>
#include <nnplug/nnplug_comm_plugin.h>
#include <nnplug/nnplug_version.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

namespace {

using nnp::fail;
using nnp::format;
using nnp::guard;

// ------------------------------------------------------------------------------ settings --
// The most elements one MPI call carries: INT_MAX (MPI's counts are int), or less with
// NNPLUG_MPI_MAX_COUNT (read once, when libnnplug opens the plugin).
int64_t g_max_count = INT_MAX;

void read_settings() {
  g_max_count = INT_MAX;
  const char* env = secure_getenv("NNPLUG_MPI_MAX_COUNT");
  if (env == nullptr || *env == '\0') return;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(env, &end, 10);
  if (errno != 0 || end == env || *end != '\0' || v < 1 || v > INT_MAX) {
    nnp::host_log(NNP_LOG_WARNING,
                  format("ignoring NNPLUG_MPI_MAX_COUNT='%s' (expected an integer in "
                         "[1, %d])",
                         env, INT_MAX));
    return;
  }
  g_max_count = v;
}

// "Open MPI v4.1.4, package: ..., May 26, 2022": the first line of MPI_Get_library_version,
// which MPI allows before MPI_Init.
const std::string& library_version() {
  static const std::string version = [] {
    char text[MPI_MAX_LIBRARY_VERSION_STRING + 1] = {};
    int length = 0;
    if (MPI_Get_library_version(text, &length) != MPI_SUCCESS) return std::string("MPI");
    std::string s(text, static_cast<size_t>(length > 0 ? length : 0));
    s = s.substr(0, s.find_first_of("\r\n"));
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\0')) s.pop_back();
    return s.empty() ? std::string("MPI") : s;
  }();
  return version;
}

// The library's name and version alone: "Open MPI v4.1.4".
std::string library_name() {
  const std::string& v = library_version();
  return v.substr(0, v.find(','));
}

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE:
      return "MPI_THREAD_MULTIPLE";
    default:
      return "an unknown level";
  }
}

// ------------------------------------------------------------------------ MPI errors --
std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING + 1] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS || length <= 0)
    return format("MPI error code %d", code);
  return std::string(text, static_cast<size_t>(length));
}

// Turns an MPI return code into NNP_STATUS_DEVICE_ERROR: "<op>: <call> failed: <MPI's text>".
inline void check_mpi(int code, const char* op, const char* call) {
  if (code != MPI_SUCCESS)
    fail(NNP_STATUS_DEVICE_ERROR,
         format("%s: %s failed: %s", op, call, mpi_error_text(code).c_str()));
}

// ------------------------------------------------------------------------------- state --
struct communicator {
  MPI_Comm comm = MPI_COMM_NULL;  // owned: the dup of the application's communicator
  int rank = 0;
  int size = 1;
  bool serialize = true;  // the thread level is below MPI_THREAD_MULTIPLE
  std::string description;
};

// Held around the plugin's MPI calls when MPI is not MPI_THREAD_MULTIPLE (see the top).
std::mutex g_mpi_mutex;

class mpi_lock {
 public:
  explicit mpi_lock(bool serialize) : lock_(g_mpi_mutex, std::defer_lock) {
    if (serialize) lock_.lock();
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

bool mpi_finalized() {
  int finalized = 0;
  return MPI_Finalized(&finalized) == MPI_SUCCESS && finalized != 0;
}

// Frees a derived datatype when it goes out of scope.
struct datatype_owner {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  datatype_owner() = default;
  datatype_owner(const datatype_owner&) = delete;
  datatype_owner& operator=(const datatype_owner&) = delete;
  ~datatype_owner() {
    if (type != MPI_DATATYPE_NULL) MPI_Type_free(&type);
  }
};

// ------------------------------------------------------------------------------- calls --
using nnp::kit::collective_name;

// The MPI datatype of a tensor's dtype, or UNSUPPORTED with the reason.
MPI_Datatype mpi_type(const DLDataType& dtype, const char* op) {
  if (nnp::is_f32(dtype)) return MPI_FLOAT;
  if (nnp::is_f64(dtype)) return MPI_DOUBLE;
  const std::string name = nnp::dtype_name(dtype);
  if (nnp::is_f16(dtype) || nnp::is_bf16(dtype))
    nnp::unsupported(
        format("%s: %s over MPI: MPI has no 16-bit floating-point type to reduce "
               "or carry; the mpi transport runs float32 and float64 (cast to "
               "float32 for the collective)",
               op, name.c_str()));
  nnp::unsupported(
      format("%s: %s over MPI: the mpi transport runs float32 and float64", op, name.c_str()));
}

// What comm_supported and comm_execute both check: the kind, the tensors, the dtype, the op.
struct checked_call {
  const char* op;
  const DLTensor* x;
  const DLTensor* y;
  MPI_Datatype type;
};

checked_call check_call(int32_t op_kind, const void* params, size_t n_inputs,
                        const DLTensor* const* inputs, size_t n_outputs,
                        const DLTensor* const* outputs) {
  const char* op = collective_name(op_kind);
  if (op == nullptr)
    nnp::unsupported(
        format("op kind %d is not a collective of the mpi transport", static_cast<int>(op_kind)));
  if (params == nullptr || n_inputs < 1 || inputs == nullptr || inputs[0] == nullptr ||
      n_outputs < 1 || outputs == nullptr || outputs[0] == nullptr)
    fail(NNP_STATUS_INVALID_ARGUMENT, format("%s: expected params, x and y", op));
  // libnnplug validated the rest (nnplug_comm_plugin.h): one dtype, y's shape, the params'
  // ranges (all_reduce's op, broadcast's root).
  checked_call c{op, inputs[0], outputs[0], MPI_DATATYPE_NULL};
  c.type = mpi_type(c.x->dtype, op);
  return c;
}

unsigned char* first_byte(const DLTensor& t) { return nnp::data_ptr<unsigned char>(t); }

template <typename T>
void scale(unsigned char* data, int64_t n, int size) {
  T* y = reinterpret_cast<T*>(data);
  const T factor = T(1) / static_cast<T>(size);
  for (int64_t i = 0; i < n; ++i) y[i] *= factor;
}

void all_reduce(const communicator& s, const checked_call& c, const void* params) {
  const auto p = nnp::read_params<nnp_all_reduce_params>(params);
  const MPI_Op op = p.op == NNP_REDUCE_MAX ? MPI_MAX : p.op == NNP_REDUCE_MIN ? MPI_MIN : MPI_SUM;
  const int64_t n = nnp::numel(*c.x);
  const size_t element = nnp::dtype_size(c.x->dtype);
  const unsigned char* x = first_byte(*c.x);
  unsigned char* y = first_byte(*c.y);
  // MPI_IN_PLACE on every rank: MPI wants it at all processes or at none, while each rank
  // decides for itself whether its y is its x. Out of place, x is first copied into y.
  if (x != y && n > 0) std::memcpy(y, x, static_cast<size_t>(n) * element);
  {
    mpi_lock lock(s.serialize);
    for (int64_t done = 0; done < n;) {
      const int count = static_cast<int>(std::min<int64_t>(n - done, g_max_count));
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, y + static_cast<size_t>(done) * element, count, c.type,
                              op, s.comm),
                "all_reduce", "MPI_Allreduce");
      done += count;
    }
  }
  if (p.op == NNP_REDUCE_MEAN && s.size > 1 && n > 0) {
    if (c.type == MPI_FLOAT)
      scale<float>(y, n, s.size);
    else
      scale<double>(y, n, s.size);
  }
}

void broadcast(const communicator& s, const checked_call& c, const void* params) {
  const auto p = nnp::read_params<nnp_broadcast_params>(params);
  const int64_t n = nnp::numel(*c.x);
  const size_t element = nnp::dtype_size(c.x->dtype);
  unsigned char* y = first_byte(*c.y);
  if (n == 0) return;
  if (s.rank == p.root) {
    const unsigned char* x = first_byte(*c.x);
    if (x != y) std::memcpy(y, x, static_cast<size_t>(n) * element);
  }
  mpi_lock lock(s.serialize);
  for (int64_t done = 0; done < n;) {
    const int count = static_cast<int>(std::min<int64_t>(n - done, g_max_count));
    check_mpi(MPI_Bcast(y + static_cast<size_t>(done) * element, count, c.type, p.root, s.comm),
              "broadcast", "MPI_Bcast");
    done += count;
  }
}

// A datatype of n consecutive elements of `element` for n above the count limit: q blocks of
// g_max_count elements (a vector) and the r left over, resized to n elements' extent so that
// MPI_Allgather places rank i's block at i * n elements.
void make_contiguous_type(int64_t n, MPI_Datatype element, datatype_owner* out) {
  const int64_t q = n / g_max_count, r = n % g_max_count;
  if (q > INT_MAX)
    fail(NNP_STATUS_UNSUPPORTED, format("all_gather: %lld elements per rank is more than the "
                                        "mpi transport can describe",
                                        static_cast<long long>(n)));
  static const char* const kOp = "all_gather";
  MPI_Aint lb = 0, extent = 0;
  check_mpi(MPI_Type_get_extent(element, &lb, &extent), kOp, "MPI_Type_get_extent");
  datatype_owner blocks, rest, joined;
  const int block = static_cast<int>(g_max_count);
  check_mpi(MPI_Type_vector(static_cast<int>(q), block, block, element, &blocks.type), kOp,
            "MPI_Type_vector");
  MPI_Datatype whole = blocks.type;
  if (r > 0) {
    check_mpi(MPI_Type_contiguous(static_cast<int>(r), element, &rest.type), kOp,
              "MPI_Type_contiguous");
    int lengths[2] = {1, 1};
    MPI_Aint displacements[2] = {0, static_cast<MPI_Aint>(q * g_max_count) * extent};
    MPI_Datatype types[2] = {blocks.type, rest.type};
    check_mpi(MPI_Type_create_struct(2, lengths, displacements, types, &joined.type), kOp,
              "MPI_Type_create_struct");
    whole = joined.type;
  }
  check_mpi(MPI_Type_create_resized(whole, 0, static_cast<MPI_Aint>(n) * extent, &out->type), kOp,
            "MPI_Type_create_resized");
  check_mpi(MPI_Type_commit(&out->type), kOp, "MPI_Type_commit");
}

void all_gather(const communicator& s, const checked_call& c) {
  const int64_t n = nnp::numel(*c.x);  // y has size * n (libnnplug's shape rule)
  if (n == 0) return;
  const unsigned char* x = first_byte(*c.x);
  unsigned char* y = first_byte(*c.y);
  mpi_lock lock(s.serialize);
  if (n <= g_max_count) {
    const int count = static_cast<int>(n);
    check_mpi(MPI_Allgather(x, count, c.type, y, count, c.type, s.comm), "all_gather",
              "MPI_Allgather");
    return;
  }
  datatype_owner rank_block;
  make_contiguous_type(n, c.type, &rank_block);
  check_mpi(MPI_Allgather(x, 1, rank_block.type, y, 1, rank_block.type, s.comm), "all_gather",
            "MPI_Allgather");
}

// ------------------------------------------------------------------------------- slots --
nnp_status comm_create(const nnp_comm_plugin_create_args* args, void** comm, int32_t* rank,
                       int32_t* size, const char** description) {
  return guard([&] {
    static const char* const kOp = "nnp_comm_create";
    if (args == nullptr || comm == nullptr || rank == nullptr || size == nullptr ||
        description == nullptr || args->config == nullptr)
      fail(NNP_STATUS_INVALID_ARGUMENT, "comm_create: NULL argument");
    *comm = nullptr;
    if (args->config->mpi_comm == nullptr)
      fail(NNP_STATUS_INVALID_ARGUMENT, "config->mpi_comm is NULL (the address of an MPI_Comm)");
    int initialized = 0;
    check_mpi(MPI_Initialized(&initialized), kOp, "MPI_Initialized");
    if (mpi_finalized())
      fail(NNP_STATUS_INVALID_ARGUMENT,
           "MPI is finalised (MPI_Finalize was called): create communicators between "
           "MPI_Init_thread and MPI_Finalize");
    if (!initialized)
      fail(NNP_STATUS_INVALID_ARGUMENT,
           "MPI is not initialised: the application must call MPI_Init_thread(&argc, &argv, "
           "MPI_THREAD_SERIALIZED (or MPI_THREAD_MULTIPLE), &provided) before nnp_comm_create");
    int provided = MPI_THREAD_SINGLE;
    check_mpi(MPI_Query_thread(&provided), kOp, "MPI_Query_thread");
    if (provided < MPI_THREAD_SERIALIZED)
      fail(NNP_STATUS_INVALID_ARGUMENT,
           format("MPI provides %s; nnplug calls MPI from whichever thread uses a communicator "
                  "and needs MPI_THREAD_SERIALIZED at least: initialise MPI with "
                  "MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided) (not MPI_Init) "
                  "and check provided",
                  thread_level_name(provided)));
    MPI_Comm user = MPI_COMM_NULL;
    std::memcpy(&user, args->config->mpi_comm, sizeof user);
    if (user == MPI_COMM_NULL)
      fail(NNP_STATUS_INVALID_ARGUMENT, "config->mpi_comm points to MPI_COMM_NULL");

    auto state = std::make_unique<communicator>();
    state->serialize = provided < MPI_THREAD_MULTIPLE;
    mpi_lock lock(state->serialize);
    int inter = 0;
    check_mpi(MPI_Comm_test_inter(user, &inter), kOp, "MPI_Comm_test_inter");
    if (inter)
      fail(NNP_STATUS_INVALID_ARGUMENT,
           "config->mpi_comm is an intercommunicator; nnplug's collectives need an "
           "intracommunicator (MPI_Intercomm_merge)");
    // Errors of MPI_Comm_dup go to the application communicator's error handler.
    check_mpi(MPI_Comm_dup(user, &state->comm), kOp, "MPI_Comm_dup");
    struct free_on_failure {
      MPI_Comm* comm;
      ~free_on_failure() {
        if (comm != nullptr && *comm != MPI_COMM_NULL) MPI_Comm_free(comm);
      }
    } undo{&state->comm};
    check_mpi(MPI_Comm_set_errhandler(state->comm, MPI_ERRORS_RETURN), kOp,
              "MPI_Comm_set_errhandler");
    check_mpi(MPI_Comm_set_name(state->comm, "nnplug"), kOp, "MPI_Comm_set_name");
    check_mpi(MPI_Comm_rank(state->comm, &state->rank), kOp, "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(state->comm, &state->size), kOp, "MPI_Comm_size");
    state->description =
        format("%s, %d rank%s", library_name().c_str(), state->size, state->size == 1 ? "" : "s");
    if (g_max_count != INT_MAX)
      state->description +=
          format(", at most %lld elements per MPI call", static_cast<long long>(g_max_count));
    undo.comm = nullptr;
    *rank = state->rank;
    *size = state->size;
    *description = state->description.c_str();
    *comm = state.release();
  });
}

nnp_status comm_destroy(void* comm) {
  return guard([&] {
    std::unique_ptr<communicator> state(static_cast<communicator*>(comm));
    if (state == nullptr || state->comm == MPI_COMM_NULL) return;
    if (mpi_finalized()) {
      // Nothing may be called after MPI_Finalize; MPI released the communicator itself.
      nnp::host_log(NNP_LOG_DEBUG,
                    "MPI was finalised before the communicator was "
                    "destroyed; its MPI_Comm is not freed");
      return;
    }
    mpi_lock lock(state->serialize);
    check_mpi(MPI_Comm_free(&state->comm), "nnp_comm_destroy", "MPI_Comm_free");
  });
}

// The transport's kernel rows: one MPI collective per op kind. A kind without a row is
// UNSUPPORTED in both slots.
struct collective_row {
  int32_t kind;
  void (*run)(const communicator& s, const checked_call& c, const void* params);
};
const collective_row kRows[] = {
    {NNP_OP_ALL_REDUCE, all_reduce},
    {NNP_OP_BROADCAST, broadcast},
    {NNP_OP_ALL_GATHER,
     [](const communicator& s, const checked_call& c, const void*) { all_gather(s, c); }},
};

const collective_row& row_of(int32_t kind) {
  for (const collective_row& row : kRows)
    if (row.kind == kind) return row;
  nnp::unsupported(
      format("op kind %d is not a collective of the mpi transport", static_cast<int>(kind)));
}

nnp_status comm_supported(void* comm, int32_t op_kind, const void* params, size_t n_inputs,
                          const DLTensor* const* inputs, size_t n_outputs,
                          const DLTensor* const* outputs) {
  return guard([&] {
    if (comm == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "comm_supported: NULL communicator");
    check_call(op_kind, params, n_inputs, inputs, n_outputs, outputs);
    (void)row_of(op_kind);
  });
}

nnp_status comm_execute(void* comm, void* /*native_stream*/, int32_t op_kind, const void* params,
                        size_t n_inputs, const DLTensor* const* inputs, size_t n_outputs,
                        const DLTensor* const* outputs) {
  return guard([&] {
    if (comm == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "comm_execute: NULL communicator");
    const communicator& s = *static_cast<const communicator*>(comm);
    const checked_call c = check_call(op_kind, params, n_inputs, inputs, n_outputs, outputs);
    if (mpi_finalized())
      fail(NNP_STATUS_INVALID_ARGUMENT,
           format("%s: MPI is finalised (MPI_Finalize was called before the collective)", c.op));
    row_of(op_kind).run(s, c, params);
  });
}

nnp_status initialize() {
  return guard([] { read_settings(); });
}

const nnp_comm_plugin_api* table() {
  static const std::string version =
      std::string(NNP_VERSION_STRING) + " (" + library_version() + ")";
  static const nnp_comm_plugin_api api = [] {
    nnp_comm_plugin_api t{};
    t.struct_size = sizeof t;
    t.abi_version_major = NNP_ABI_VERSION_MAJOR;
    t.abi_version_minor = NNP_ABI_VERSION_MINOR;
    t.transport = "mpi";
    t.version = version.c_str();
    t.memory = NNP_COMM_MEMORY_HOST;
    t.device_type = 0;
    /* .initialize     = */ t.initialize = initialize;
    /* .shutdown       = */ t.shutdown = nullptr;
    /* .get_unique_id  = */ t.get_unique_id = nullptr;  // MPI: the application's MPI_Comm
    /* .comm_create    = */ t.comm_create = comm_create;
    /* .comm_destroy   = */ t.comm_destroy = comm_destroy;
    /* .comm_supported = */ t.comm_supported = comm_supported;
    /* .comm_execute   = */ t.comm_execute = comm_execute;
    return t;
  }();
  return &api;
}

}  // namespace

NNP_PLUGIN_ENTRY nnp_status nnp_comm_plugin_get_api(const nnp_host_api* host,
                                                    const nnp_comm_plugin_api** api) {
  if (host == nullptr || api == nullptr) return NNP_STATUS_INVALID_ARGUMENT;
  if (host->struct_size < NNP_HOST_API_STRUCT_SIZE_1_0) return NNP_STATUS_ABI_MISMATCH;
  nnp::g_host = host;
  return guard([&] {
    if (host->abi_version_major != NNP_ABI_VERSION_MAJOR || host->abi_version_minor < 3)
      fail(NNP_STATUS_ABI_MISMATCH,
           format("built for ABI %d.%d, needs a host of ABI %d.3 or later; the host "
                  "has ABI %d.%d",
                  NNP_ABI_VERSION_MAJOR, NNP_ABI_VERSION_MINOR, NNP_ABI_VERSION_MAJOR,
                  static_cast<int>(host->abi_version_major),
                  static_cast<int>(host->abi_version_minor)));
    *api = table();
  });
}
