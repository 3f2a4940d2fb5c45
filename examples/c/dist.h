/*
 * dist.h — train's data-parallel training, as PyTorch's DistributedDataParallel does it
 * (docs/distributed.md): one process (rank) per device, every global batch split across the
 * ranks, the gradients summed with nnplug's all_reduce in buckets while backward still runs,
 * by a communication thread on a second stream of the device. The MPI transport is compiled
 * in when CMake finds MPI (NNPLUG_EXAMPLE_HAVE_MPI); "self" runs the same code on one rank
 * without it. In mode "none" every function here does nothing. Plain C11 + POSIX threads.
 */
#ifndef NNPLUG_EXAMPLES_TRAIN_DIST_H
#define NNPLUG_EXAMPLES_TRAIN_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

typedef enum dist_mode { DIST_NONE, DIST_SELF, DIST_MPI } dist_mode;

struct dist_state; /* dist.c: the communicator, the thread, the buckets */

typedef struct dist {
  dist_mode mode;
  const char* name; /* "none", "self" or "mpi" */
  int rank, size;   /* 0 and 1 unless mode is DIST_MPI */
  struct dist_state* st;
} dist;

/* Picks the mode from --distributed ("auto": mpi when an MPI launcher started this process,
   i.e. OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK is set; else none) and, for mpi, calls
   MPI_Init_thread (MPI_THREAD_SERIALIZED) and makes die() and failed CHECKs name the rank and
   end the whole job with MPI_Abort. Dies when mpi is asked of a build without MPI. Call before
   any nnplug call. */
void dist_init(dist* d, const char* requested);

/* One setting every rank must share (a flag, or a size read from the data), as a number. */
typedef struct dist_setting {
  const char* name; /* as the message names it: "--batch", "the training set size" */
  uint64_t value;
} dist_setting;

/* mpi: gathers every rank's settings (one MPI_Allgather) and dies on every rank, naming the
   first setting that differs and the ranks' values, unless all ranks agree. Ranks that
   disagree on the model, batch or data size would otherwise make collectives of different
   sizes. Nothing in modes none and self. */
void dist_check_agreement(const dist* d, const dist_setting* settings, int n);

/* Rank `rank`'s contiguous share [*first, *first + *count) of n items: the first n % size
   ranks take one item more than the others. */
void dist_shard(size_t n, int rank, int size, size_t* first, size_t* count);

/* After build_net: the communicator on nt->dev (transport mpi, or self), the communication
   thread and its stream, the gradient buckets of about bucket_bytes over nt->grads (in
   reverse parameter order; a parameter larger than that is a bucket of its own), and rank 0's
   parameters broadcast to every rank. overlap "on" installs the backward hook
   (nt->grad_ready) that hands each bucket to the thread as soon as it is ready; "off" hands
   them all at dist_end_backward; "auto" is on for devices whose memory the host cannot address
   (their ops run asynchronously) and off for host-compute devices (cpu, reference), where the
   communication thread's wait inside MPI would take a core from the backward pass. */
void dist_start(dist* d, net* nt, size_t bucket_bytes, const char* overlap);

/* One line about the communicator and the buckets, for rank 0's banner ("" in mode none). */
const char* dist_describe(const dist* d);

/* Before the step's forward pass: this rank computes images [first, first + local) of a
   global batch of `global` (dropout masks and the loss weight local / global follow from
   it: the summed gradients are those of the whole batch's mean loss). `step` counts from 1
   over the run. */
void dist_begin_step(dist* d, net* nt, long step, size_t first, size_t local, size_t global);

/* After backward (or, for a rank without images this step, after zeroing nt->grads): hands
   the buckets not handed over yet to the communication thread and waits until every bucket
   is summed over the ranks. The optimizer step comes after. */
void dist_end_backward(dist* d, net* nt);

/* v[0..n) = the sum (dist_sum) or maximum (dist_max) of v over the ranks, in float64 (n <=
   64). Outside a step only. */
void dist_sum(dist* d, double* v, size_t n);
void dist_max(dist* d, double* v, size_t n);

/* Checks that every parameter and its Adam moments are bitwise identical on every rank (a
   checksum of each, all-reduced as maximum and minimum); dies naming the first that is not.
   Returns the number of tensors checked (0 in mode none). */
int dist_check_identical(dist* d, net* nt);

/* Stops the thread and destroys the stream and the communicator (before nnp_shutdown). */
void dist_stop(dist* d);

/* MPI_Finalize, after nnp_shutdown (mpi only). */
void dist_finalize(dist* d);

#endif /* NNPLUG_EXAMPLES_TRAIN_DIST_H */
