/*
 * dist_mpi.c — libnnplug-train-mpi.so: train's own MPI calls (dist_mpi.h), the only code of
 * train that links MPI. dist.c opens this module at run time for --distributed mpi.
 */
#include <mpi.h>
#include <stdio.h>

#include "dist_mpi.h"

static MPI_Comm g_world; /* MPI_COMM_WORLD, in a variable: nnp_comm_config takes its address */

static int mpi_init(int* rank, int* size, char* err, size_t err_bytes) {
  int provided = MPI_THREAD_SINGLE;
  if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    snprintf(err, err_bytes, "MPI_Init_thread failed");
    return -1;
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    snprintf(err, err_bytes,
             "this MPI gives thread level %d, below MPI_THREAD_SERIALIZED (%d), which the "
             "communication thread needs",
             provided, MPI_THREAD_SERIALIZED);
    return -1;
  }
  g_world = MPI_COMM_WORLD;
  MPI_Comm_rank(g_world, rank);
  MPI_Comm_size(g_world, size);
  return 0;
}

static int mpi_allgather_u64(const uint64_t* mine, int n, uint64_t* all) {
  return MPI_Allgather(mine, n, MPI_UINT64_T, all, n, MPI_UINT64_T, g_world) == MPI_SUCCESS ? 0
                                                                                            : -1;
}

static void mpi_abort(int status) { MPI_Abort(MPI_COMM_WORLD, status); }
static void mpi_finalize(void) { MPI_Finalize(); }
static void* mpi_world(void) { return &g_world; }

__attribute__((visibility("default"))) const dist_mpi_api* nnplug_train_mpi_api(void);
const dist_mpi_api* nnplug_train_mpi_api(void) {
  static const dist_mpi_api api = {DIST_MPI_API_VERSION, mpi_init, mpi_allgather_u64, mpi_abort,
                                   mpi_finalize,         mpi_world};
  return &api;
}
