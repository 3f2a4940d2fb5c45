/*
 * dist_mpi.h — the few MPI calls train makes itself (dist.c), behind a table that a separate
 * module, libnnplug-train-mpi.so (dist_mpi.c, linked with MPI), fills in. train links no MPI
 * library: it opens the module only for --distributed mpi (or when an MPI launcher started
 * it), so it starts on machines without MPI. The module lives next to the train executable;
 * NNPLUG_TRAIN_MPI_MODULE names another path.
 */
#ifndef NNPLUG_EXAMPLES_TRAIN_DIST_MPI_H
#define NNPLUG_EXAMPLES_TRAIN_DIST_MPI_H

#include <stddef.h>
#include <stdint.h>

#define DIST_MPI_MODULE_NAME "libnnplug-train-mpi.so"
#define DIST_MPI_API_SYMBOL "nnplug_train_mpi_api"
#define DIST_MPI_API_VERSION 1

typedef struct dist_mpi_api {
  int version; /* DIST_MPI_API_VERSION */
  /* MPI_Init_thread(MPI_THREAD_SERIALIZED) and the rank and size in MPI_COMM_WORLD. Returns 0,
     or -1 with a message in err (err_bytes long) and MPI not usable. */
  int (*init)(int* rank, int* size, char* err, size_t err_bytes);
  /* MPI_Allgather of n uint64 values per rank into all (size * n values). Returns 0 or -1. */
  int (*allgather_u64)(const uint64_t* mine, int n, uint64_t* all);
  void (*abort)(int status); /* MPI_Abort(MPI_COMM_WORLD, status) */
  void (*finalize)(void);    /* MPI_Finalize */
  /* The address of an MPI_Comm holding MPI_COMM_WORLD (nnp_comm_config.mpi_comm), valid after
     init for the life of the process. */
  void* (*world)(void);
} dist_mpi_api;

typedef const dist_mpi_api* (*dist_mpi_api_fn)(void);

#endif
