/*
 * nnplug.h — the public, stable C API of libnnplug.
 *
 * nnplug runs neural-network ops (nnplug_ops.h) on backends that are shared libraries loaded
 * at run time (plugins: reference, cpu, cuda, yours). One program, any backend.
 *
 * General rules for every function below:
 *  - Returns nnp_status; NNP_STATUS_OK (0) is success. On failure the calling thread's
 *    nnp_last_error_message() says why (naming the argument, expected and actual value),
 *    and outputs are left untouched.
 *  - Every function may also return NNP_STATUS_INTERNAL (a bug; please report it).
 *  - Handles (nnp_plugin*, nnp_device*, nnp_stream*, nnp_comm*, nnp_graph*) are opaque values
 *    owned by libnnplug, not addresses: never dereference or forge one. Devices and plugins live
 *    until nnp_shutdown(); streams until nnp_stream_destroy() or nnp_shutdown(); communicators
 *    until nnp_comm_destroy() or nnp_shutdown(); graphs until nnp_graph_destroy() or
 *    nnp_shutdown(). A handle that no longer names a live object (a
 *    destroyed stream or communicator; any handle from before nnp_shutdown(), also after the
 *    library was used again) is stale: it stays stale, whatever is created later, and every
 *    function refuses it, as it refuses a value that is no handle of the expected kind (a
 *    stream passed as a device, an arbitrary pointer): functions returning nnp_status return
 *    INVALID_ARGUMENT ("... is a stale nnp_stream handle", "... is not an nnp_device handle")
 *    and touch nothing; nnp_stream_device(), nnp_plugin_name(), nnp_comm_device() and
 *    nnp_comm_description() return NULL. Pointers from nnp_malloc() are addresses, not
 *    handles: see nnp_free().
 *  - Threads: every function is thread-safe, with these rules:
 *     - Calls on one stream are serialised: a stream may be used from several threads, and
 *       each call on it (nnp_op_execute, nnp_memcpy_async, nnp_stream_synchronize, ...) runs
 *       alone, in whichever order the threads reach it (a synchronize holds the stream until
 *       its work is done). Different streams run concurrently, on the same device too.
 *     - nnp_stream_destroy() waits for the call in flight on the stream; later calls with
 *       its handle are refused (stale).
 *     - nnp_shutdown() may run while other threads make calls: see there.
 *    Cost: about 10 ns per call (docs/abi.md section 9).
 *  - Strings returned by libnnplug are owned by it and live until nnp_shutdown() unless a
 *    function says otherwise.
 *
 * The stream and memory contract (every backend keeps it; docs/abi.md section 8a; the sim
 * backend checks host code against it):
 *  1. A stream is an in-order queue: work queued on it runs in order; different streams are
 *     unordered. nnp_stream_synchronize() returns when all work queued before it is done.
 *  2. nnp_op_execute() reads DLTensor structs, shapes, strides and params during the call
 *     only. The memory the tensors point to, and host buffers of nnp_memcpy_async(), must
 *     stay valid and unchanged (inputs) or unread (outputs) until the stream is synchronised.
 *  3. nnp_memcpy() is ordered after all work already queued on every stream of the devices
 *     involved (the CUDA legacy-stream rule) and is complete when it returns.
 *  4. Errors of queued work are returned by the stream's next nnp_stream_synchronize() (or
 *     nnp_stream_destroy()), once each; work queued after a failure may be skipped.
 *     nnp_memcpy() returns such an error too when it waited for the failed work.
 *  5. nnp_free() waits for the work queued on the device's streams, then frees.
 *  6. nnp_stream_destroy() and nnp_shutdown() wait for queued work before releasing anything.
 *
 * Environment variables (read at first use): NNPLUG_PLUGIN_PATH, NNPLUG_BACKEND, NNPLUG_LOG
 * (README.md has the table). They are read with secure_getenv: a set-uid or set-gid program
 * ignores them (docs/security.md).
 */
#ifndef NNPLUG_H_
#define NNPLUG_H_

#include <nnplug/nnplug_ops.h>
#include <nnplug/nnplug_plugin.h>
#include <nnplug/nnplug_types.h>
#include <nnplug/nnplug_version.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------------------------- versions -- */

/** Writes libnnplug's version as run (may differ from NNP_VERSION_* compiled in). Any
    pointer may be NULL. Thread-safe, never fails. */
NNP_API void nnp_get_version(int32_t* major, int32_t* minor, int32_t* patch);
/** libnnplug's version string, e.g. "0.1.0"; static storage. */
NNP_API const char* nnp_version_string(void);

/* ------------------------------------------------------------------------------- errors -- */

/** Static, never-NULL description of a status ("invalid argument"); unknown values give
    "unknown status". */
NNP_API const char* nnp_status_string(nnp_status status);
/** The message of the last failed nnplug call on this thread, or "" if none failed yet.
    Valid until the next nnplug call on this thread. Never NULL. */
NNP_API const char* nnp_last_error_message(void);
/** Static lower-case name of an op kind ("conv2d_forward"), or NULL if the kind is unknown to
    this libnnplug. Thread-safe, never fails. */
NNP_API const char* nnp_op_kind_name(int32_t op_kind);

/* ------------------------------------------------------------------------------ plugins -- */

/* Opaque handles (see "Handles" above): values to pass back, never to dereference. */
typedef struct nnp_plugin nnp_plugin; /**< a loaded plugin; lives until nnp_shutdown() */
typedef struct nnp_device nnp_device; /**< a device of a plugin; lives until nnp_shutdown() */
typedef struct nnp_stream nnp_stream; /**< an in-order queue on one device */

/** Outcome of one load candidate. */
typedef enum nnp_load_state {
  NNP_LOAD_UNDEFINED = 0,
  NNP_LOAD_LOADED = 1,    /**< accepted; its devices are listed (possibly zero) */
  NNP_LOAD_REJECTED = 2,  /**< opened but refused (ABI, table; initialize or device enumeration
                             failed or threw) */
  NNP_LOAD_FAILED = 3,    /**< could not be opened or was refused before opening (missing file,
                             not a regular ELF shared object of this host, truncated, writable
                             by others, missing dependency, no entry) */
  NNP_LOAD_DUPLICATE = 4, /**< same plugin name already loaded from an earlier candidate (in
                             default discovery: shadowed, printed as a warning) */
  NNP_LOAD_FORCE_INT32 = 0x7FFFFFFF /**< not a state: keeps the enum 32-bit */
} nnp_load_state;

/**
 * One load record per candidate library examined, in the order examined.
 * Strings are owned by libnnplug and live until nnp_shutdown().
 */
typedef struct nnp_load_record {
  size_t struct_size;         /**< in: sizeof(nnp_load_record) as compiled by the caller */
  const char* path;           /**< absolute path of the candidate */
  const char* name;           /**< plugin name ("" if unknown) */
  const char* plugin_version; /**< the plugin's version string ("" if unknown) */
  int32_t abi_version_major;  /**< the plugin's ABI major (-1 if unknown) */
  int32_t abi_version_minor;  /**< the plugin's ABI minor (-1 if unknown) */
  int32_t state;              /**< nnp_load_state */
  int32_t status;             /**< nnp_status of the load decision (OK when loaded) */
  const char* reason;         /**< why: the dlopen error, the ABI mismatch, "0 devices: ..." */
  int32_t n_devices;          /**< devices the plugin reports (0 if not loaded) */
  int32_t reserved0;          /**< ABI 1.1 (was padding): written as 0 */
} nnp_load_record;

/** Size of nnp_load_record as of ABI 1.0 and 1.1 (offsetof(last) + sizeof(last)). */
#define NNP_LOAD_RECORD_STRUCT_SIZE_1_0 (offsetof(nnp_load_record, n_devices) + sizeof(int32_t))
#define NNP_LOAD_RECORD_STRUCT_SIZE_1_1 (offsetof(nnp_load_record, reserved0) + sizeof(int32_t))
#define NNP_LOAD_RECORD_STRUCT_SIZE NNP_LOAD_RECORD_STRUCT_SIZE_1_1

/**
 * Loads the plugin at `path` (a file path; never searched). If a plugin of the same name is
 * already loaded, returns that one (and records a DUPLICATE if the path differs and the file
 * passes the checks made before dlopen).
 * `out` may be NULL. Thread-safe.
 * Returns OK, INVALID_ARGUMENT (NULL path), NOT_FOUND (no such file), LOAD_FAILED (refused
 * before dlopen: not a regular file, not an ELF shared object of this host, truncated, file or
 * folder writable by others; or dlopen or the entry symbol failed), ABI_MISMATCH, or the status
 * of a failed initialize.
 */
NNP_API nnp_status nnp_load_plugin(const char* path, nnp_plugin** out);

/**
 * Loads every plugin found on the default search path, once: first each directory of
 * NNPLUG_PLUGIN_PATH (':'-separated), then <dir of libnnplug>/nnplug/plugins. Never the
 * current directory. Candidates are files named libnnplug-<name>.so; the first of a name wins,
 * later ones get DUPLICATE records (printed as warnings). Idempotent and thread-safe; called
 * implicitly by device enumeration and lookup. Returns OK even if some candidates failed (see
 * nnp_get_load_records); INTERNAL only on a bug.
 */
NNP_API nnp_status nnp_load_default_plugins(void);

/**
 * Two-call enumeration of load records. If records is NULL, sets *n_records to the total.
 * Otherwise writes min(*n_records, total) records (each record's struct_size must be set by
 * the caller) and sets *n_records to the total. Returns OK or INVALID_ARGUMENT.
 */
NNP_API nnp_status nnp_get_load_records(nnp_load_record* records, size_t* n_records);

/** The plugin's name ("cpu"); owned by libnnplug, valid until nnp_shutdown(). A NULL, stale
    or foreign handle gives NULL. */
NNP_API const char* nnp_plugin_name(const nnp_plugin* plugin);

/* ------------------------------------------------------------------------------ devices -- */

/**
 * Two-call enumeration of all devices of all loaded plugins (loads defaults first). If
 * devices is NULL, sets *n_devices to the total; otherwise writes min(*n_devices, total)
 * handles and sets *n_devices to the total. Thread-safe. Returns OK or INVALID_ARGUMENT.
 */
NNP_API nnp_status nnp_get_devices(nnp_device** devices, size_t* n_devices);

/**
 * Finds a device by name (loads defaults first):
 *  - "<plugin>:<index>" (e.g. "cuda:0", "cpu:0"), or "<plugin>" meaning "<plugin>:0";
 *  - "auto": the device with the highest auto_priority (cuda > cpu > reference; a negative
 *    priority, as the sim backend's, is never chosen), unless the
 *    environment variable NNPLUG_BACKEND names a device, which then is looked up instead.
 * Returns OK; INVALID_ARGUMENT (NULL/empty name or out); NOT_FOUND (no plugin of that name; the
 * message lists the available ones); UNAVAILABLE (the plugin loaded but has no such device;
 * the message gives the plugin's reason, e.g. "no CUDA-capable device").
 */
NNP_API nnp_status nnp_get_device(const char* name, nnp_device** out);

/** Fills *props (props->struct_size must be set). Returns OK or INVALID_ARGUMENT. */
NNP_API nnp_status nnp_device_get_props(const nnp_device* device, nnp_device_props* props);

/** The DLPack device of tensors that live on `device` ({kDLCPU,0} for CPU devices). */
NNP_API nnp_status nnp_device_get_dldevice(const nnp_device* device, DLDevice* out);

/**
 * Asks whether `device` supports an op call as described (data pointers may be NULL).
 * Returns OK; UNSUPPORTED with a message (e.g. "float64 is not implemented by cpu");
 * INVALID_ARGUMENT if the description itself is invalid (see nnp_op_execute).
 */
NNP_API nnp_status nnp_op_supported(const nnp_device* device, int32_t op_kind, const void* params,
                                    size_t n_inputs, const DLTensor* const* inputs,
                                    size_t n_outputs, const DLTensor* const* outputs);

/* ------------------------------------------------------------------------------- memory -- */

/**
 * Allocates size_bytes (> 0) of device memory, aligned to >= 64 bytes; *ptr is valid until
 * nnp_free() or nnp_shutdown(). Returns OK, INVALID_ARGUMENT, OUT_OF_MEMORY, DEVICE_ERROR.
 */
NNP_API nnp_status nnp_malloc(nnp_device* device, size_t size_bytes, void** ptr);

/** Frees memory from nnp_malloc on the same device; NULL ptr is a no-op. Waits first for the
    work queued on the device's streams (errors of that work stay with their streams), so
    memory still used by queued work may be freed. Returns OK or INVALID_ARGUMENT (ptr not
    allocated by nnp_malloc on this device, or already freed; a stale device). Memory is
    tracked by address: a pointer freed by nnp_shutdown() is refused as not allocated, unless
    a later nnp_malloc() returned the same address (then it is that allocation). */
NNP_API nnp_status nnp_free(nnp_device* device, void* ptr);

/**
 * Copies size_bytes from src to dst. A NULL device means ordinary host memory. Works between
 * host and device, within a device, and between devices of different plugins (staged through
 * host memory when there is no direct path).
 * With a stream (which must belong to dst_device or src_device), the copy is queued in that
 * stream's order and complete after nnp_stream_synchronize(); host buffers must stay valid
 * and unchanged until then (a cross-device copy synchronises the stream, then copies
 * synchronously). nnp_memcpy() is the synchronous form: it is ordered after all work already
 * queued on every stream of dst_device and src_device, and complete when it returns.
 * Returns OK, INVALID_ARGUMENT (NULL pointers with size > 0, stream of another device, a
 * pointer given with a NULL device that lies in a live nnp_malloc allocation of a device whose
 * memory the host cannot address), DEVICE_ERROR, OUT_OF_MEMORY (staging); nnp_memcpy() also
 * returns the error of queued work it waited for (then nothing is copied).
 */
NNP_API nnp_status nnp_memcpy_async(nnp_stream* stream, nnp_device* dst_device, void* dst,
                                    nnp_device* src_device, const void* src, size_t size_bytes);
NNP_API nnp_status nnp_memcpy(nnp_device* dst_device, void* dst, nnp_device* src_device,
                              const void* src, size_t size_bytes);

/* ------------------------------------------------------------------------------ streams -- */

/** Creates a stream on device. Returns OK, INVALID_ARGUMENT, OUT_OF_MEMORY, DEVICE_ERROR. */
NNP_API nnp_status nnp_stream_create(nnp_device* device, nnp_stream** stream);
/** Waits for the call in flight on the stream (another thread's) and for the stream's work,
    and destroys it; NULL is a no-op. Returns OK, the error of that work (the stream is
    destroyed anyway), or INVALID_ARGUMENT (stale or foreign handle: destroyed before, or
    released by nnp_shutdown). */
NNP_API nnp_status nnp_stream_destroy(nnp_stream* stream);
/** Waits until all work queued on the stream is done. Errors of asynchronous work queued
    since the last synchronize are returned here (DEVICE_ERROR, OUT_OF_MEMORY, ...), each
    once, oldest first. */
NNP_API nnp_status nnp_stream_synchronize(nnp_stream* stream);
/** The device a stream belongs to (NULL for a NULL, stale or foreign stream handle). */
NNP_API nnp_device* nnp_stream_device(const nnp_stream* stream);
/** Sets a stream attribute (nnp_stream_attribute, e.g. NNP_STREAM_ATTR_ALLOW_TF32).
    Returns OK, INVALID_ARGUMENT, UNSUPPORTED (the backend has no such attribute). */
NNP_API nnp_status nnp_stream_set_attribute(nnp_stream* stream, int32_t attribute, int64_t value);
/**
 * ABI 1.6. Stores the backend's native handle of the stream in *native: the queue the stream's
 * work runs on (cuda: the cudaStream_t, on the stream's device), for ordering it against another
 * library's work with that backend's own events (docs/abi.md, "Native streams"). The handle
 * stays owned by the plugin and valid until nnp_stream_destroy() or nnp_shutdown(); work the
 * caller queues on it joins the stream's order (while the stream captures a graph, cuda records
 * it into the capture). Thread safety as the other stream calls (serialised per stream).
 * Returns OK; INVALID_ARGUMENT (native is NULL; NULL, stale or foreign stream handle: *native
 * untouched); UNSUPPORTED when the plugin has no native streams (no stream_get_native slot:
 * cpu, reference and sim, whose work runs inside each call or on their own threads).
 */
NNP_API nnp_status nnp_stream_get_native(nnp_stream* stream, void** native);

/* ---------------------------------------------------------------------------------- ops -- */

/**
 * Validates an op call (nnplug_ops.h: kind, counts, params, ranks, shapes, dtypes, devices,
 * NULL data, element-count overflow) and queues it on `stream`.
 * inputs/outputs are arrays of n_inputs/n_outputs tensor pointers; NULL entries mark absent
 * optional tensors. Tensors and params are read during the call only; the memory they point
 * to must stay valid until the stream is synchronised.
 * Returns OK; INVALID_ARGUMENT (outputs untouched); UNSUPPORTED (unknown kind, or a kind or
 * dtype the backend does not implement); OUT_OF_MEMORY; DEVICE_ERROR.
 */
NNP_API nnp_status nnp_op_execute(nnp_stream* stream, int32_t op_kind, const void* params,
                                  size_t n_inputs, const DLTensor* const* inputs, size_t n_outputs,
                                  const DLTensor* const* outputs);

/**
 * The shape (and dtype) of one op output, filled by nnp_op_infer_shapes(). 72 bytes, no
 * padding. Owned by the caller.
 */
typedef struct nnp_shape {
  int32_t ndim;               /**< rank, 0..NNP_MAX_DIMS */
  DLDataType dtype;           /**< the output's dtype; {0, 0, 0} = the caller's choice (cast) */
  int64_t dims[NNP_MAX_DIMS]; /**< dims[0..ndim); the rest 0 */
} nnp_shape;

/**
 * Infers the shapes and dtypes of an op's outputs from its inputs and params, with the rules
 * nnp_op_execute validates by (the same code: a shape it returns is the shape execute
 * accepts). Needs no device: data pointers and devices of `inputs` are not read.
 *   inputs:     as for nnp_op_execute (n_inputs entries, NULL for absent optional inputs)
 *   n_outputs:  how many outputs to infer (<= the op's output count; optional ones included)
 *   out_shapes: caller-owned array of n_outputs entries; written only on success
 * Returns OK; INVALID_ARGUMENT (bad inputs or params, as nnp_op_execute would say; message
 * set); UNSUPPORTED for an unknown kind or an output the inputs do not determine (fill's y,
 * conv2d_backward_data's dx, conv2d_backward_filter's dw: pass the shape you need).
 * Thread-safe; needs no loaded plugin.
 */
NNP_API nnp_status nnp_op_infer_shapes(int32_t op_kind, const void* params, size_t n_inputs,
                                       const DLTensor* const* inputs, size_t n_outputs,
                                       nnp_shape* out_shapes);

/* Typed wrappers, one per op kind: nnplug_op_wrappers.h (generated from the op table). */
#include <nnplug/nnplug_op_wrappers.h>

/* ------------------------------------------------------------------------------- graphs -- */
/*
 * Graphs (ABI 1.4) record the work queued on a stream once and replay it with one call, as CUDA
 * graphs do: on cuda a replayed training step costs one launch instead of one per kernel, and on
 * every backend it skips libnnplug's validation. docs/graphs.md has the model and an example.
 *
 *   nnp_stream_begin_capture(s);            // from here, work queued on s is recorded, not run
 *   ... nnp_op_execute(s, ...), nnp_memcpy_async(s, dev, dst, dev, src, n) ...
 *   nnp_stream_end_capture(s, &g);          // s runs work again; g holds what was recorded
 *   for (...) { ...; nnp_graph_launch(g, s); }   // queues the recorded work on s, in order
 *   nnp_graph_destroy(g);
 *
 * What a graph holds:
 *  - Each op with its params, tensor descriptors (shapes, strides, dtypes) and data pointers as
 *    they were at capture, and each device-to-device copy with its pointers and size. A launch
 *    reads and writes the memory those pointers name as it is then: put a step's inputs into the
 *    same device buffers before each launch. Values that change every step (Adam's step count
 *    and learning rate, dropout's Philox offset) go in device tensors (adam_update's `step` and
 *    `lr`, dropout's `step` inputs), updated by ops inside the graph (binary ADD: step += 1).
 *  - Every buffer the graph uses must stay allocated while the graph may still be launched
 *    (until its last launch has run): libnnplug does not track them.
 *  - The stream attributes in force at capture (ALLOW_TF32) apply at every launch.
 *
 * While a stream captures (begin_capture returned OK, end_capture not yet called):
 *  - nnp_op_execute on it records the op after full validation: a call refused at capture is not
 *    recorded and leaves the capture going. Collectives cannot be captured (UNSUPPORTED).
 *  - nnp_memcpy_async on it records device-to-device copies within its device; copies from or to
 *    the host, or across devices, are refused (INVALID_ARGUMENT): copy host data into device
 *    buffers before the launch, outside the capture.
 *  - nnp_stream_synchronize, nnp_stream_set_attribute, nnp_graph_launch and a second
 *    nnp_stream_begin_capture on it are refused (INVALID_ARGUMENT). nnp_memcpy, nnp_free and
 *    nnp_graph_destroy do not wait for it (nothing of the capture is queued).
 *  - nnp_stream_destroy discards the capture.
 * Backends record natively where they can (cuda: cudaStreamBeginCapture in relaxed mode, a
 * cudaGraphExec per graph, launched with cudaGraphLaunch); for the others libnnplug records the
 * calls and a launch replays them through the plugin without validating them again. Either way
 * a launch computes what the recorded calls would compute (bitwise on the cpu, reference and sim
 * backends; tested by the conformance suite).
 */
typedef struct nnp_graph nnp_graph; /**< recorded stream work (handle, like nnp_stream) */

/**
 * Starts capturing `stream` (see above). First waits for the work already queued on it (its
 * errors stay pending for the stream's next nnp_stream_synchronize). Returns OK;
 * INVALID_ARGUMENT (NULL, stale or foreign handle; the stream is already capturing);
 * UNSUPPORTED (the backend cannot capture); OUT_OF_MEMORY; DEVICE_ERROR.
 */
NNP_API nnp_status nnp_stream_begin_capture(nnp_stream* stream);
/**
 * Ends the capture of `stream` and stores a new graph in *graph (owned by the caller: release it
 * with nnp_graph_destroy; nnp_shutdown releases it too). The stream runs work again either way:
 * on an error the capture is discarded and *graph is left untouched. A capture with no work
 * gives a graph whose launches do nothing. Returns OK; INVALID_ARGUMENT (bad handle, graph NULL,
 * the stream is not capturing); OUT_OF_MEMORY; DEVICE_ERROR (the backend could not build the
 * graph, e.g. an op failed while it was recorded).
 */
NNP_API nnp_status nnp_stream_end_capture(nnp_stream* stream, nnp_graph** graph);
/**
 * Queues the graph's work on `stream`, which must belong to the device the graph was captured on
 * (any stream of it) and must not be capturing. The work runs in stream order as the recorded
 * calls would; its errors come back from the stream's next nnp_stream_synchronize, as any queued
 * work's. Launches of one graph are serialised by libnnplug (never two calls at once), but on
 * two streams their work may overlap on the device as the same ops queued eagerly would: order
 * such launches yourself. Returns OK; INVALID_ARGUMENT (bad handles; stream of another device;
 * stream capturing); OUT_OF_MEMORY; DEVICE_ERROR; with the cpu and reference backends, whose
 * streams run the work during the call, also what the first failing op returns.
 */
NNP_API nnp_status nnp_graph_launch(nnp_graph* graph, nnp_stream* stream);
/**
 * Waits for the work queued on the graph's device (as nnp_free does: errors stay pending on
 * their streams), then releases the graph; its handle becomes stale. NULL is a no-op. Returns OK
 * or INVALID_ARGUMENT (stale or foreign handle).
 */
NNP_API nnp_status nnp_graph_destroy(nnp_graph* graph);

/* ------------------------------------------------------------------------ communicators -- */
/*
 * Communicators (ABI 1.3) run data-parallel training across processes: one process (rank)
 * per device, gradients summed across ranks after each backward pass. A communicator binds
 * this rank to one device; the collective ops (NNP_OP_ALL_REDUCE, NNP_OP_BROADCAST,
 * NNP_OP_ALL_GATHER in nnplug_ops.h) take it in their params and run with nnp_op_execute()
 * on a stream of that device, like any op. docs/distributed.md describes the model.
 *
 * Transports. The collectives are done by the libraries the field uses, never by nnplug's own
 * transport:
 *  - "mpi": MPI, for devices whose memory is host memory (cpu, reference, sim). Implemented
 *    by the communication plugin libnnplug-comm-mpi.so, linked against the MPI library it
 *    was built with (Open MPI on Debian); the application initialises that same MPI itself
 *    (MPI_Init_thread with at least MPI_THREAD_SERIALIZED) and hands over a communicator.
 *  - "nccl": NCCL, for cuda devices. libnnplug-comm-nccl.so; the ranks agree on a unique
 *    id (rank 0 calls nnp_comm_get_unique_id and sends the bytes to the others, e.g. with
 *    MPI_Bcast or a file).
 *  - "self": a communicator of one rank, built into libnnplug, on any device: every
 *    collective is a copy (or nothing, in place). Single-process runs of distributed code.
 * Communication plugins (libnnplug-comm-<transport>.so) live beside the device plugins, in
 * <prefix>/lib/nnplug/plugins/ or a folder of NNPLUG_PLUGIN_PATH (device-plugin discovery
 * skips them), and are loaded only when a communicator of their transport is first created:
 * libnnplug, the device plugins and programs that never create one need neither MPI nor
 * NCCL. When the plugin or its library is missing, creation fails with NOT_FOUND or
 * LOAD_FAILED and a message that says what is missing and how to get it.
 *
 * Semantics shared by every transport:
 *  - Every rank of a communicator must issue the same collectives, in the same order, with
 *    the same op, params, dtype and element counts (all_gather: equal x shapes). A mismatch
 *    is the caller's error, as in MPI and NCCL. On a host-memory transport (mpi) each
 *    collective first compares its signature (op, dtype, shape) across the ranks, and a
 *    mismatch returns INVALID_ARGUMENT on every rank (one extra small collective per call),
 *    unless NNPLUG_COMM_CHECK=0 was in the environment when the communicator was created
 *    (nnp_comm_create reads it; later changes do not apply to that communicator); then, and
 *    on device transports (nccl), the transport's own behaviour applies (docs/distributed.md:
 *    an error, a crash inside the transport, or a hang).
 *  - Stream order: a collective starts after the work queued before it on its stream and
 *    later work on that stream sees its result. On devices with synchronous streams (cpu,
 *    reference) nnp_op_execute() returns when the collective is complete; on the sim device
 *    libnnplug first waits for the stream's queued work; on cuda the collective is queued
 *    on the CUDA stream (NCCL) and nnp_op_execute() returns at once.
 *  - A failed rank: MPI's error handling applies (Open MPI's mpirun ends every rank of the
 *    job when one exits abnormally); NCCL: docs/distributed.md.
 *  - Thread safety: a communicator may be used by one thread at a time (its collectives
 *    are ordered); different communicators from different threads at once.
 */

/* nnp_comm, nnp_comm_transport, nnp_comm_unique_id and nnp_comm_config: nnplug_types.h. */

/**
 * Creates this process's rank of a communicator bound to `device`. Collective over the ranks
 * for MPI and NCCL: every rank calls it (with its own device) before any returns.
 * *out lives until nnp_comm_destroy() or nnp_shutdown(). Thread-safe.
 * Returns OK, INVALID_ARGUMENT (NULL argument, unknown transport, struct_size too small,
 * reserved field set, rank/size out of range, MPI not initialised or below
 * MPI_THREAD_SERIALIZED, a transport that cannot serve this device: MPI on a device whose
 * memory is not host memory, NCCL on a device that is not cuda), NOT_FOUND (the transport's
 * communication plugin is not installed), LOAD_FAILED (it is installed but cannot be
 * loaded, e.g. libmpi or libnccl missing: the message names the library), ABI_MISMATCH,
 * OUT_OF_MEMORY, DEVICE_ERROR (the transport failed, with its message).
 */
NNP_API nnp_status nnp_comm_create(nnp_device* device, const nnp_comm_config* config,
                                   nnp_comm** out);

/**
 * Makes a unique id for a NCCL communicator (ncclGetUniqueId) on the rank that will share it;
 * `device` is that rank's cuda device. Returns OK, INVALID_ARGUMENT, NOT_FOUND, LOAD_FAILED,
 * UNSUPPORTED (a transport without unique ids), DEVICE_ERROR.
 */
NNP_API nnp_status nnp_comm_get_unique_id(nnp_device* device, int32_t transport,
                                          nnp_comm_unique_id* id);

/**
 * Destroys this rank of the communicator (collective for MPI: MPI_Comm_free). Waits for no
 * stream: synchronise the streams that ran its collectives first. Returns OK,
 * INVALID_ARGUMENT (NULL or stale handle), DEVICE_ERROR.
 */
NNP_API nnp_status nnp_comm_destroy(nnp_comm* comm);

/** This process's rank and the number of ranks. Returns OK or INVALID_ARGUMENT. */
NNP_API nnp_status nnp_comm_get_rank(const nnp_comm* comm, int32_t* rank, int32_t* size);

/** The device the communicator is bound to (NULL for a NULL or stale handle). */
NNP_API nnp_device* nnp_comm_device(const nnp_comm* comm);

/** The transport's name ("self", "mpi", "nccl") and its library's version, e.g.
    "mpi (Open MPI v4.1.4)"; owned by libnnplug, valid until the communicator is destroyed.
    NULL for a NULL or stale handle. */
NNP_API const char* nnp_comm_description(const nnp_comm* comm);

/* ----------------------------------------------------------------------------- shutdown -- */

/**
 * Destroys every communicator, stream and graph, frees every allocation, calls each plugin's
 * shutdown and unloads the plugins (communication plugins too), in that order; then clears the load
 * records. Handles from libnnplug become stale (refused by every function, see "Handles" above) and
 * its strings invalid. The library may be used again afterwards (it reloads); handles from before
 * stay stale. Other threads may be making calls meanwhile: nnp_shutdown() first waits for the calls
 * in flight (each stream's current call, and each call on a device or plugin), calls that arrive
 * while it runs wait for it to finish, and then find their handles stale. Memory from nnp_malloc()
 * is freed with the rest: host code still reading or writing it is the caller's race. Nothing in
 * libnnplug depends on static destructors: a program that never calls it leaks the plugins on
 * purpose at exit. Returns OK, or the first error a plugin's teardown reported (teardown
 * continues).
 */
NNP_API nnp_status nnp_shutdown(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NNPLUG_H_ */
