/*
 * nnplug_types.h — types shared by the public API (nnplug.h) and the plugin ABI
 * (nnplug_plugin.h): the status codes, the export macro and the device properties.
 *
 * ABI rules (docs/abi.md): every enumerator has an explicit value that is never reused;
 * 0 means "undefined" so that a zero-initialised struct fails validation; struct fields
 * that hold enumerators are int32_t; every struct that crosses the boundary starts with
 * `size_t struct_size` and only ever grows at its end.
 *
 * This header is C99 and C++ compatible.
 */
#ifndef NNPLUG_TYPES_H_
#define NNPLUG_TYPES_H_

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

/* DLTensor with byte_offset and kDLBfloat: dlpack 0.6 (DLPACK_VERSION 60) or newer; 1.x keeps
   DLTensor's layout and names its version DLPACK_MAJOR_VERSION. */
#if !defined(DLPACK_MAJOR_VERSION) && (!defined(DLPACK_VERSION) || DLPACK_VERSION < 60)
#error "nnplug needs dlpack/dlpack.h version 0.6 or newer"
#endif

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define NNP_HELPER_EXPORT __declspec(dllexport)
#define NNP_HELPER_IMPORT __declspec(dllimport)
#else
#define NNP_HELPER_EXPORT __attribute__((visibility("default")))
#define NNP_HELPER_IMPORT __attribute__((visibility("default")))
#endif

/** NNP_API marks the functions exported by libnnplug. */
#ifdef NNPLUG_BUILDING_LIBRARY
#define NNP_API NNP_HELPER_EXPORT
#else
#define NNP_API NNP_HELPER_IMPORT
#endif

/**
 * Status code returned by every nnplug function (public API and plugin ABI alike).
 * Values are explicit and never reused; 1000..1999 are reserved for vendor extensions.
 * The message that explains a failure is read with nnp_last_error_message().
 */
typedef enum nnp_status {
  NNP_STATUS_OK = 0,                  /**< success */
  NNP_STATUS_INVALID_ARGUMENT = 1,    /**< a NULL, out-of-range, mis-shaped or mistyped argument */
  NNP_STATUS_UNSUPPORTED = 2,         /**< valid request this backend does not implement */
  NNP_STATUS_OUT_OF_MEMORY = 3,       /**< host or device allocation failed */
  NNP_STATUS_NOT_FOUND = 4,           /**< no plugin, device or file of that name */
  NNP_STATUS_UNAVAILABLE = 5,         /**< the plugin loaded but its hardware/driver is absent */
  NNP_STATUS_ABI_MISMATCH = 6,        /**< plugin and host ABI versions or struct sizes disagree */
  NNP_STATUS_DEVICE_ERROR = 7,        /**< the device or its runtime reported a failure */
  NNP_STATUS_INTERNAL = 8,            /**< a bug: an unexpected exception or broken invariant */
  NNP_STATUS_LOAD_FAILED = 9,         /**< a shared library could not be opened or has no entry */
  NNP_STATUS_VENDOR_BASE = 1000,      /**< first value reserved for vendor extensions */
  NNP_STATUS_FORCE_INT32 = 0x7FFFFFFF /**< not a status: keeps the enum 32-bit */
} nnp_status;

/** Maximum tensor rank accepted by nnplug ops. */
#define NNP_MAX_DIMS 8

/** A communicator (ABI 1.3): one rank of a group of processes that run collective ops
    together, bound to one device of this process. Opaque; see nnplug.h, "communicators". */
typedef struct nnp_comm nnp_comm;

/** The transports of nnp_comm_create(). Value 0 is refused. */
typedef enum nnp_comm_transport {
  NNP_COMM_TRANSPORT_UNDEFINED = 0,
  NNP_COMM_TRANSPORT_SELF = 1,                /**< one rank, built into libnnplug; any device */
  NNP_COMM_TRANSPORT_MPI = 2,                 /**< libnnplug-comm-mpi.so; host-memory devices */
  NNP_COMM_TRANSPORT_NCCL = 3,                /**< libnnplug-comm-nccl.so; cuda devices */
  NNP_COMM_TRANSPORT_FORCE_INT32 = 0x7FFFFFFF /**< not a transport: keeps the enum 32-bit */
} nnp_comm_transport;

/** Size in bytes of a unique id (NCCL's ncclUniqueId is 128 bytes). */
#define NNP_COMM_UNIQUE_ID_BYTES 128

/** The rendezvous of a NCCL communicator: opaque bytes made by one rank, copied to all. */
typedef struct nnp_comm_unique_id {
  unsigned char bytes[NNP_COMM_UNIQUE_ID_BYTES];
} nnp_comm_unique_id;

/**
 * How to create one rank of a communicator (nnp_comm_create). Zero-initialise it, set
 * struct_size to sizeof(nnp_comm_config) and the fields of the transport:
 *  - SELF: nothing else (rank 0 of 1);
 *  - MPI: mpi_comm points to the caller's MPI_Comm (C: &comm, e.g. a variable holding
 *    MPI_COMM_WORLD; mpi4py: MPI._addressof(comm)). libnnplug duplicates it
 *    (MPI_Comm_dup, collective over its ranks), so the caller's communicator may be freed
 *    afterwards and nnplug's traffic never mixes with the caller's; rank and size are the
 *    MPI ones;
 *  - NCCL: unique_id (from nnp_comm_get_unique_id on one rank), rank in [0, size), size >= 1.
 */
typedef struct nnp_comm_config {
  size_t struct_size;                  /**< sizeof(nnp_comm_config) as compiled by the caller */
  int32_t transport;                   /**< nnp_comm_transport */
  int32_t rank;                        /**< NCCL: this process's rank; else ignored */
  int32_t size;                        /**< NCCL: the number of ranks; else ignored */
  int32_t reserved0;                   /**< must be 0 */
  const void* mpi_comm;                /**< MPI: address of an MPI_Comm; else ignored */
  const nnp_comm_unique_id* unique_id; /**< NCCL: the group's id; else ignored */
} nnp_comm_config;

#define NNP_COMM_CONFIG_STRUCT_SIZE_1_3 \
  (offsetof(nnp_comm_config, unique_id) + sizeof(const nnp_comm_unique_id*))
#define NNP_COMM_CONFIG_STRUCT_SIZE NNP_COMM_CONFIG_STRUCT_SIZE_1_3

/**
 * Properties of one device, filled by nnp_device_get_props() (and, on the plugin side, by
 * the plugin's get_device_props slot).
 *
 * The caller sets struct_size to sizeof(nnp_device_props) (or NNP_DEVICE_PROPS_STRUCT_SIZE
 * of the header it was compiled with); the callee writes only the fields that fit.
 * String pointers are owned by the plugin and stay valid until nnp_shutdown().
 */
typedef struct nnp_device_props {
  size_t struct_size;      /**< in: sizeof(nnp_device_props) as compiled by the caller */
  const char* name;        /**< canonical name "<plugin>:<index>", e.g. "cpu:0", "cuda:0" */
  const char* plugin_name; /**< the plugin's name, e.g. "cpu", "cuda", "reference" */
  const char* description; /**< human-readable, e.g. "NVIDIA H100 80GB HBM3" */
  int32_t device_type;     /**< DLDeviceType of the memory this device uses (kDLCPU, kDLCUDA) */
  int32_t device_id;       /**< DLDevice.device_id of tensors that live on this device */
  uint64_t memory_bytes;   /**< total memory in bytes (host RAM for CPU devices) */
  int32_t auto_priority;   /**< higher wins when "auto" picks a device: reference 0, cpu 100,
                                cuda 200; negative: never picked (sim -1) */
  int32_t num_threads;     /**< worker threads for CPU devices, multiprocessors for GPUs */
} nnp_device_props;

/** Size of nnp_device_props as of ABI 1.0. */
#define NNP_DEVICE_PROPS_STRUCT_SIZE_1_0 (offsetof(nnp_device_props, num_threads) + sizeof(int32_t))
/** Size of nnp_device_props as of this header (offsetof(last) + sizeof(last) = sizeof). */
#define NNP_DEVICE_PROPS_STRUCT_SIZE NNP_DEVICE_PROPS_STRUCT_SIZE_1_0

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NNPLUG_TYPES_H_ */
