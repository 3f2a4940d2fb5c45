/*
 * nnplug_plugin.h — the plugin ABI: what a backend shared library exports and fills.
 *
 * A plugin is a shared library named libnnplug-<name>.so (<name> in [a-z0-9_]+) that exports
 * exactly one symbol, nnp_plugin_get_api, with C linkage. It must not link libnnplug: every
 * service it needs from the host (error reporting, logging) arrives in nnp_host_api.
 *
 * Versioning (docs/abi.md):
 *  - NNP_ABI_VERSION_MAJOR must match between host and plugin, or the plugin is rejected
 *    with NNP_STATUS_ABI_MISMATCH and a message naming both versions.
 *  - A different minor loads, in both directions. Each side checks the other's minor and
 *    struct_size before it uses a newer field or slot: a slot beyond the other side's
 *    struct_size does not exist, and an optional slot may be NULL.
 *  - Tables grow only at their end. Fields are never reordered, retyped or removed.
 *  - The host rejects a table whose struct_size is below NNP_PLUGIN_API_STRUCT_SIZE_1_0 or
 *    whose required slot is NULL (naming the slot); it never calls a NULL slot.
 *
 * Calling rules the host guarantees to plugins:
 *  - nnp_plugin_get_api is called once per process (until nnp_shutdown) under the host's
 *    registry lock; the returned table and its strings must stay valid until the plugin's
 *    shutdown slot returns (static storage is the usual choice).
 *  - op_supported/op_execute receive only calls that libnnplug has validated: kind known,
 *    tensor counts, ranks, shapes, dtypes, devices and params checked as nnplug_ops.h says.
 *    A plugin re-checks only what is specific to it (e.g. dtypes it does not implement).
 *  - A plugin built for an older minor never receives what came after it: an op kind, an
 *    enum value, a params field set to a non-default value, or a tensor an op gained later
 *    (ABI 1.4: adam_update's step and lr, dropout's step); the host answers UNSUPPORTED.
 *  - op_execute never receives a call whose outputs all have no elements (libnnplug asks
 *    op_supported instead): inputs may still have a huge dimension beside a 0, and outputs
 *    with elements computed from empty inputs (sums, NaN statistics) are the plugin's to write.
 *  - Calls on different streams may come from different threads at once; one stream is used
 *    by one thread at a time. Device/memory/stream slots may be called from any thread.
 *  - No C++ exception may leave any slot: wrap each entry and report through set_error.
 *
 * This header is C99 and C++ compatible.
 */
#ifndef NNPLUG_PLUGIN_H_
#define NNPLUG_PLUGIN_H_

#include <nnplug/nnplug_ops.h>
#include <nnplug/nnplug_types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* NNP_ABI_VERSION_MAJOR and NNP_ABI_VERSION_MINOR, the ABI version of this header (versioning
 * rules above, docs/abi.md's changelog), are defined in nnplug_ops.h, generated from the op
 * table's [abi] (api/ops/ops.toml): the op that needs a new minor bumps it there. */

/** Log levels for nnp_host_api.log. */
typedef enum nnp_log_level {
  NNP_LOG_UNDEFINED = 0,
  NNP_LOG_ERROR = 1,
  NNP_LOG_WARNING = 2,
  NNP_LOG_INFO = 3,
  NNP_LOG_DEBUG = 4,
  NNP_LOG_FORCE_INT32 = 0x7FFFFFFF /**< not a level: keeps the enum 32-bit */
} nnp_log_level;

/** Direction of a copy within one plugin's memory (nnp_plugin_api.memcpy). */
typedef enum nnp_memcpy_kind {
  NNP_MEMCPY_UNDEFINED = 0,
  NNP_MEMCPY_HOST_TO_DEVICE = 1,      /**< src: ordinary host memory, dst: this device */
  NNP_MEMCPY_DEVICE_TO_HOST = 2,      /**< src: this device, dst: ordinary host memory */
  NNP_MEMCPY_DEVICE_TO_DEVICE = 3,    /**< both on this device (or, for CPU plugins, both host) */
  NNP_MEMCPY_FORCE_INT32 = 0x7FFFFFFF /**< not a kind: keeps the enum 32-bit */
} nnp_memcpy_kind;

/** Stream attributes (nnp_stream_set_attribute in nnplug.h; the plugin's optional slot). */
typedef enum nnp_stream_attribute {
  NNP_STREAM_ATTR_UNDEFINED = 0,
  /** value 0 (default) or 1: allow TF32 tensor-core math for float32 GEMM and convolution
      (10-bit mantissa inputs). Ignored by backends without TF32. */
  NNP_STREAM_ATTR_ALLOW_TF32 = 1,
  NNP_STREAM_ATTR_FORCE_INT32 = 0x7FFFFFFF /**< not an attribute: keeps the enum 32-bit */
} nnp_stream_attribute;

/**
 * Services the host gives a plugin. Valid from nnp_plugin_get_api until the plugin's
 * shutdown slot returns. All callbacks are thread-safe and never fail.
 */
typedef struct nnp_host_api {
  size_t struct_size;        /**< sizeof(nnp_host_api) as compiled by the host */
  int32_t abi_version_major; /**< the host's NNP_ABI_VERSION_MAJOR */
  int32_t abi_version_minor; /**< the host's NNP_ABI_VERSION_MINOR */
  void* host_context;        /**< pass back as the first argument of every callback */
  /** Records a message for the calling thread's nnp_last_error_message(). The plugin then
      returns `status` (the host keeps the message, prefixed with the plugin's name).
      `message` is copied; it may be freed after the call. */
  void (*set_error)(void* host_context, nnp_status status, const char* message);
  /** Emits a log line at `level` (nnp_log_level); shown when NNPLUG_LOG >= level. */
  void (*log)(void* host_context, int32_t level, const char* message);
} nnp_host_api;

#define NNP_HOST_API_STRUCT_SIZE_1_0 (offsetof(nnp_host_api, log) + sizeof(void (*)(void)))
#define NNP_HOST_API_STRUCT_SIZE NNP_HOST_API_STRUCT_SIZE_1_0

/**
 * The function table a plugin fills. Device indices run 0..n_devices-1. Streams are opaque
 * plugin pointers. Every slot returns nnp_status and reports its message through
 * host->set_error. Slots marked "required" must be non-NULL.
 */
typedef struct nnp_plugin_api {
  size_t struct_size;        /**< sizeof(nnp_plugin_api) as compiled by the plugin */
  int32_t abi_version_major; /**< NNP_ABI_VERSION_MAJOR the plugin was built with */
  int32_t abi_version_minor; /**< NNP_ABI_VERSION_MINOR the plugin was built with */
  const char* name;          /**< required; must equal <name> of libnnplug-<name>.so */
  const char* version;       /**< required; the plugin's own version, e.g. "0.1.0" */

  /** Optional. Called once after the table is accepted, before any other slot. Default: none.
      A failure rejects the plugin (its load record keeps the message). */
  nnp_status (*initialize)(void);
  /** Optional. Called once by nnp_shutdown() after every stream and allocation of this plugin
      was released. Default: none. */
  void (*shutdown)(void);

  /** Required. Number of devices; 0 is success and then `*reason` (static string, may be NULL
      otherwise) says why ("no CUDA driver", "no CUDA-capable device"). */
  nnp_status (*get_device_count)(int32_t* n_devices, const char** reason);
  /** Required. Fills props (the host sets props->struct_size) for device `index`. */
  nnp_status (*get_device_props)(int32_t index, nnp_device_props* props);

  /** Required. Allocates size_bytes (> 0) on device `index`, aligned to at least 64 bytes.
      Returns NNP_STATUS_OUT_OF_MEMORY on failure. */
  nnp_status (*mem_alloc)(int32_t index, size_t size_bytes, void** ptr);
  /** Required. Frees memory from mem_alloc on the same device. ptr is never NULL. */
  nnp_status (*mem_free)(int32_t index, void* ptr);

  /** Required. Creates an in-order stream on device `index`. */
  nnp_status (*stream_create)(int32_t index, void** stream);
  /** Required. Waits for the stream's work, then destroys it. */
  nnp_status (*stream_destroy)(void* stream);
  /** Required. Waits until all work queued on the stream is done; returns the first error of
      asynchronous work queued since the last synchronize. Must be thread-safe with respect
      to the stream's other slots: the host calls it from nnp_memcpy() and nnp_free() on any
      thread (docs/abi.md section 8a). */
  nnp_status (*stream_synchronize)(void* stream);
  /** Required. Copies size_bytes on the stream, in stream order, in the direction `kind`
      (nnp_memcpy_kind). Host memory may be pageable: the plugin stages it as needed and the
      host memory may be reused as soon as the stream is synchronised. */
  nnp_status (*memcpy_async)(void* stream, void* dst, const void* src, size_t size_bytes,
                             int32_t kind);

  /** Required. Returns OK if op_execute would run this (validated) call on device `index`,
      else NNP_STATUS_UNSUPPORTED with a message saying what is missing (e.g. "float64").
      Never runs anything; tensors' data may be NULL. */
  nnp_status (*op_supported)(int32_t index, int32_t op_kind, const void* params, size_t n_inputs,
                             const DLTensor* const* inputs, size_t n_outputs,
                             const DLTensor* const* outputs);
  /** Required. Queues the (validated) op on the stream. An unknown or unsupported op returns
      NNP_STATUS_UNSUPPORTED and touches nothing. */
  nnp_status (*op_execute)(void* stream, int32_t op_kind, const void* params, size_t n_inputs,
                           const DLTensor* const* inputs, size_t n_outputs,
                           const DLTensor* const* outputs);

  /** Optional. Sets a stream attribute (nnp_stream_attribute). Default when NULL: the host
      returns NNP_STATUS_UNSUPPORTED. */
  nnp_status (*stream_set_attribute)(void* stream, int32_t attribute, int64_t value);

  /* ---- ABI 1.3 (check struct_size before use) */
  /** Optional. Stores the stream's native handle (cuda: its cudaStream_t) in *native, for the
      communication plugins that queue work on it (nnplug_comm_plugin.h, DEVICE_STREAM) and,
      since ABI 1.6, for nnp_stream_get_native (the host checks `native` and the stream).
      The handle stays valid until stream_destroy. Default when NULL: such plugins cannot
      serve this device and nnp_stream_get_native returns UNSUPPORTED. */
  nnp_status (*stream_get_native)(void* stream, void** native);

  /* ---- ABI 1.4 (check struct_size before use) */
  /* Native graph capture (nnplug.h, "graphs"): optional, all four or none (the host uses them
     only when all four are set; without them libnnplug records the calls itself and a launch
     replays them through op_execute and memcpy_async). */
  /** Starts recording `stream`. The host calls it on a stream with no queued work (it has
      synchronised it), never on one already capturing. Until stream_end_capture, the host calls
      on that stream only op_execute (validated, supported calls), memcpy_async with
      NNP_MEMCPY_DEVICE_TO_DEVICE, stream_end_capture and stream_destroy (which must discard the
      capture). Those op_execute / memcpy_async calls record their work instead of running it. */
  nnp_status (*stream_begin_capture)(void* stream);
  /** Stops recording and stores the plugin's graph in *graph. On failure the capture is
      discarded and the stream is usable again (it always leaves capture mode). */
  nnp_status (*stream_end_capture)(void* stream, void** graph);
  /** Queues the graph's work on `stream` (of the device it was captured on, not capturing).
      The host never calls it twice at once for one graph. */
  nnp_status (*graph_launch)(void* graph, void* stream);
  /** Releases a graph. The host calls it once, after waiting for the device's streams. */
  nnp_status (*graph_destroy)(void* graph);
} nnp_plugin_api;

/** Size of the 1.0 table: the smallest struct_size the host accepts. */
#define NNP_PLUGIN_API_STRUCT_SIZE_1_0 \
  (offsetof(nnp_plugin_api, stream_set_attribute) + sizeof(void (*)(void)))
/** Size of the 1.3 table (with stream_get_native). */
#define NNP_PLUGIN_API_STRUCT_SIZE_1_3 \
  (offsetof(nnp_plugin_api, stream_get_native) + sizeof(void (*)(void)))
/** Size of the 1.4 table (with the graph slots). */
#define NNP_PLUGIN_API_STRUCT_SIZE_1_4 \
  (offsetof(nnp_plugin_api, graph_destroy) + sizeof(void (*)(void)))
#define NNP_PLUGIN_API_STRUCT_SIZE NNP_PLUGIN_API_STRUCT_SIZE_1_4

/** The name of the one symbol a plugin exports. */
#define NNP_PLUGIN_ENTRY_SYMBOL "nnp_plugin_get_api"

/**
 * The plugin entry point. `host` is valid until the plugin's shutdown slot returns.
 * On success stores the plugin's table in *api and returns NNP_STATUS_OK. A plugin may
 * return NNP_STATUS_ABI_MISMATCH (after host->set_error) if it cannot serve this host.
 */
typedef nnp_status (*nnp_plugin_get_api_fn)(const nnp_host_api* host, const nnp_plugin_api** api);

/** Plugins define their entry with this macro in front: NNP_PLUGIN_ENTRY nnp_status
    nnp_plugin_get_api(const nnp_host_api* host, const nnp_plugin_api** api) { ... } */
#ifdef __cplusplus
#define NNP_PLUGIN_ENTRY extern "C" NNP_HELPER_EXPORT
#else
#define NNP_PLUGIN_ENTRY NNP_HELPER_EXPORT
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NNPLUG_PLUGIN_H_ */
