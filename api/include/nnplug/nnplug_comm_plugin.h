/*
 * nnplug_comm_plugin.h — the communication-plugin ABI (ABI 1.3): what a library that runs
 * collective ops over a transport (MPI, NCCL) exports and fills.
 *
 * A communication plugin is a shared library named libnnplug-comm-<transport>.so
 * (<transport> in [a-z0-9_]+, e.g. "mpi", "nccl") in the plugin folders, beside the device
 * plugins (whose discovery skips it: "comm-<transport>" is no plugin name). It exports exactly one
 * symbol, nnp_comm_plugin_get_api, with C linkage, and must not link libnnplug. libnnplug loads it
 * only when the application first creates a communicator of its transport (nnp_comm_create), with
 * the same checks as device plugins before dlopen (docs/security.md), so that processes that never
 * communicate never map MPI or NCCL. Versioning follows nnplug_plugin.h: the major must match,
 * tables grow at their end, each side checks the other's struct_size before using a newer slot.
 *
 * Division of labour:
 *  - libnnplug validates every collective call (params, shapes, dtypes, devices, that the
 *    communicator is live and bound to the stream's device) and keeps stream order:
 *      memory == NNP_COMM_MEMORY_HOST: libnnplug waits for the stream's queued work, and
 *        passes host tensors: the caller's own when the device's memory is host memory
 *        (kDLCPU), else host copies it stages through the device plugin's memcpy (sim);
 *        the call is complete when comm_execute returns;
 *      memory == NNP_COMM_MEMORY_DEVICE_STREAM: libnnplug passes the device's native stream
 *        (the device plugin's stream_get_native slot, e.g. a cudaStream_t) and the tensors
 *        as given; comm_execute queues the collective on that stream and returns.
 *  - The plugin runs the transport: it never sees nnp_comm handles, streams or devices of
 *    libnnplug, only its own communicator state (void*).
 *
 * Calling rules: comm_create and comm_destroy are collective over the ranks (every rank
 * calls them); one communicator's slots are called by one thread at a time, in the order the
 * application issued its collectives; different communicators may be used from different
 * threads at once. No C++ exception may leave a slot: report through host->set_error.
 *
 * This header is C99 and C++ compatible.
 */
#ifndef NNPLUG_COMM_PLUGIN_H_
#define NNPLUG_COMM_PLUGIN_H_

#include <nnplug/nnplug_ops.h>
#include <nnplug/nnplug_plugin.h>
#include <nnplug/nnplug_types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Which memory a communication plugin works on (nnp_comm_plugin_api.memory). */
typedef enum nnp_comm_memory {
  NNP_COMM_MEMORY_UNDEFINED = 0,
  NNP_COMM_MEMORY_HOST = 1,                /**< host pointers; the call is synchronous (MPI) */
  NNP_COMM_MEMORY_DEVICE_STREAM = 2,       /**< device pointers, queued on a native stream (NCCL) */
  NNP_COMM_MEMORY_FORCE_INT32 = 0x7FFFFFFF /**< not a kind: keeps the enum 32-bit */
} nnp_comm_memory;

/**
 * What libnnplug passes to comm_create: the application's nnp_comm_config and the device the
 * rank is bound to. Valid during the call only.
 */
typedef struct nnp_comm_plugin_create_args {
  size_t struct_size;             /**< sizeof as compiled by libnnplug */
  const nnp_comm_config* config;  /**< the application's config, struct_size checked */
  DLDevice device;                /**< the DLDevice of the rank's tensors */
  const char* device_name;        /**< e.g. "cpu:0", "cuda:1" */
  const char* device_plugin_name; /**< e.g. "cpu", "cuda" */
} nnp_comm_plugin_create_args;

#define NNP_COMM_PLUGIN_CREATE_ARGS_STRUCT_SIZE_1_3 \
  (offsetof(nnp_comm_plugin_create_args, device_plugin_name) + sizeof(const char*))

/** The function table a communication plugin fills. */
typedef struct nnp_comm_plugin_api {
  size_t struct_size;        /**< sizeof(nnp_comm_plugin_api) as compiled by the plugin */
  int32_t abi_version_major; /**< NNP_ABI_VERSION_MAJOR the plugin was built with */
  int32_t abi_version_minor; /**< NNP_ABI_VERSION_MINOR the plugin was built with (>= 3) */
  const char* transport;     /**< required; equals <transport> of libnnplug-comm-<t>.so */
  const char* version;       /**< required; the plugin's version and its library's, e.g.
                                  "0.1.0 (Open MPI v4.1.4)" */
  int32_t memory;            /**< required; nnp_comm_memory */
  int32_t device_type;       /**< DLDeviceType the plugin serves; 0: any device (HOST) */

  /** Optional. Called once after the table is accepted. A failure rejects the plugin. */
  nnp_status (*initialize)(void);
  /** Optional. Called by nnp_shutdown() after every communicator was destroyed. */
  void (*shutdown)(void);

  /** Optional (NULL: UNSUPPORTED). Writes a unique id for a new group (ncclGetUniqueId). */
  nnp_status (*get_unique_id)(nnp_comm_unique_id* id);
  /** Required. Creates this rank's communicator state; stores the rank and the number of
      ranks, and a description (static or owned by the state, valid until comm_destroy). */
  nnp_status (*comm_create)(const nnp_comm_plugin_create_args* args, void** comm, int32_t* rank,
                            int32_t* size, const char** description);
  /** Required. Destroys the state (collective). */
  nnp_status (*comm_destroy)(void* comm);
  /** Required. Returns OK if comm_execute would run this validated call, else UNSUPPORTED
      with the reason (e.g. "float16 over MPI"). Runs nothing; data may be NULL. */
  nnp_status (*comm_supported)(void* comm, int32_t op_kind, const void* params, size_t n_inputs,
                               const DLTensor* const* inputs, size_t n_outputs,
                               const DLTensor* const* outputs);
  /** Required. Runs (HOST) or queues on `native_stream` (DEVICE_STREAM) one validated
      collective: op_kind is NNP_OP_ALL_REDUCE, NNP_OP_BROADCAST or NNP_OP_ALL_GATHER, params
      its struct (its comm field is libnnplug's handle: ignore it). An output may be the
      same memory as input 0 (in place). native_stream is NULL for HOST plugins. */
  nnp_status (*comm_execute)(void* comm, void* native_stream, int32_t op_kind, const void* params,
                             size_t n_inputs, const DLTensor* const* inputs, size_t n_outputs,
                             const DLTensor* const* outputs);
} nnp_comm_plugin_api;

#define NNP_COMM_PLUGIN_API_STRUCT_SIZE_1_3 \
  (offsetof(nnp_comm_plugin_api, comm_execute) + sizeof(void (*)(void)))
#define NNP_COMM_PLUGIN_API_STRUCT_SIZE NNP_COMM_PLUGIN_API_STRUCT_SIZE_1_3

/** The name of the one symbol a communication plugin exports. */
#define NNP_COMM_PLUGIN_ENTRY_SYMBOL "nnp_comm_plugin_get_api"

/** The entry point: like nnp_plugin_get_api (nnplug_plugin.h), for the table above. */
typedef nnp_status (*nnp_comm_plugin_get_api_fn)(const nnp_host_api* host,
                                                 const nnp_comm_plugin_api** api);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NNPLUG_COMM_PLUGIN_H_ */
