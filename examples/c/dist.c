/*
 * dist.c — train's data-parallel training (dist.h, docs/distributed.md).
 *
 * Threads. The main thread runs forward, backward and Adam on the training stream (nt->s).
 * The communication thread owns a second stream of the same device (cs) and is the only thread
 * that issues collectives, or calls MPI at all, while it runs: the bucket all-reduces during
 * backward, and the few collectives outside the steps (the parameter broadcast, the loss and
 * accuracy sums, the final check), which the main thread hands it as jobs and waits for. MPI
 * therefore needs only MPI_THREAD_SERIALIZED. The main thread calls MPI itself only before the
 * thread starts (MPI_Init_thread, nnp_comm_create) and after it ends (nnp_comm_destroy,
 * MPI_Finalize), and MPI_Abort on a fatal error.
 *
 * A step. dist_begin_step resets the buckets. With overlap (dist_start), backward calls
 * grad_ready(i) as each parameter's gradient is written; when the last parameter of a bucket is
 * ready the main thread
 * synchronises the training stream (a no-op wait on the cpu and reference devices, whose ops
 * are complete when nnp_op_execute returns; it matters on devices with asynchronous streams)
 * and hands the bucket over. The communication thread all-reduces the buckets in bucket order,
 * the same order on every rank whatever order they became ready in, each with one SUM over
 * its range of the flat gradient buffer. dist_end_backward hands over what is left (without
 * overlap: every bucket) and waits for all of them. On a host-compute device (cpu) overlap is
 * off by default: the communication thread waits for the other ranks inside MPI, which polls,
 * on the core the backward pass needs; measured on 2 cores with 2 ranks x 1 thread, the cnn
 * trained 10-20% slower with overlap than with every bucket reduced after backward
 * (docs/distributed.md).
 *
 * Test hook (docs/distributed.md): NNPLUG_TRAIN_FAULT=RANK:STEP:KIND makes rank RANK, at
 * training step STEP, exit at once (KIND exit), fail an nnplug call (error) or all-reduce its
 * first bucket with one element fewer than the other ranks (mismatch).
 */
#define _POSIX_C_SOURCE 200809L
#include "dist.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dlfcn.h>

#include "dist_mpi.h"

#include "cli.h"
#include "layers.h"

enum { MAX_REDUCE = 64 };

typedef struct bucket {
  size_t offset, bytes; /* its range of nt->grads */
  int n_params;         /* how many parameters it holds */
  int pending;          /* parameters not ready yet this step (main thread) */
  int handed;           /* handed to the communication thread this step (mutex) */
} bucket;

typedef void (*job_fn)(struct dist_state* st, void* arg);

struct dist_state {
  dist* d;
  net* nt;
  nnp_comm* comm;
  nnp_stream* cs;  /* the communication thread's stream */
  double* scratch; /* device, MAX_REDUCE float64: dist_sum's buffer */
  bucket b[MAX_PARAMS];
  int n_buckets;
  int bucket_of[MAX_PARAMS];
  unsigned char ready[MAX_PARAMS]; /* parameter's gradient complete this step (main thread) */
  double dloss;                    /* the value in nt->dloss */
  char description[512];
  /* fault injection (NNPLUG_TRAIN_FAULT) */
  int fault_rank;
  long fault_step;
  char fault_kind[16];
  int mismatch_now; /* this step's first bucket short by one element (thread reads it) */
  /* shared with the thread, under mu */
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv; /* every change of the fields below is broadcast */
  int in_step;       /* buckets are being handed over */
  int next;          /* the next bucket the thread reduces */
  int done;          /* buckets reduced this step */
  job_fn job;        /* a job for the thread, NULL when none */
  void* job_arg;
  int stop;
};

#ifdef NNPLUG_EXAMPLE_HAVE_MPI
static const dist_mpi_api* g_mpi; /* libnnplug-train-mpi.so's table, once loaded */
static char g_rank_name[64];

/* Opens libnnplug-train-mpi.so (next to this executable, or NNPLUG_TRAIN_MPI_MODULE), which
   links MPI: train itself does not, so it starts where MPI is not installed. */
static const dist_mpi_api* load_mpi(void) {
  char path[4096];
  const char* env = getenv("NNPLUG_TRAIN_MPI_MODULE");
  if (env && *env) {
    snprintf(path, sizeof path, "%s", env);
  } else {
    const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0) die("--distributed mpi: cannot find this executable's folder (/proc/self/exe)");
    path[n] = '\0';
    char* slash = strrchr(path, '/');
    const size_t dir = slash ? (size_t)(slash - path) : 0;
    if (dir + 1 + strlen(DIST_MPI_MODULE_NAME) + 1 > sizeof path)
      die("--distributed mpi: this executable's path is too long");
    snprintf(path + dir, sizeof path - dir, "/%s", DIST_MPI_MODULE_NAME);
  }
  void* h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (!h)
    die("--distributed mpi: cannot load %s: %s (it links MPI: is MPI installed? Debian: "
        "apt-get install openmpi-bin)",
        path, dlerror());
  dist_mpi_api_fn fn = (dist_mpi_api_fn)dlsym(h, DIST_MPI_API_SYMBOL);
  const dist_mpi_api* api = fn ? fn() : NULL;
  if (!api || api->version != DIST_MPI_API_VERSION)
    die("--distributed mpi: %s is not train's MPI module of this build (no %s version %d)", path,
        DIST_MPI_API_SYMBOL, DIST_MPI_API_VERSION);
  return api;
}
#endif

/* The environment variable by which an MPI launcher announced this process, or NULL. */
static const char* launcher_variable(void) {
  static const char* const names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    const char* v = getenv(names[i]);
    if (v && *v) return names[i];
  }
  return NULL;
}

#ifndef NNPLUG_EXAMPLE_HAVE_MPI
/* The launcher's job size, or -1 when it does not say (PMIx gives only the rank). */
static long launcher_size(void) {
  const char* v = getenv("OMPI_COMM_WORLD_SIZE");
  if (!v || !*v) v = getenv("PMI_SIZE");
  return v && *v ? strtol(v, NULL, 10) : -1;
}
#endif

void dist_init(dist* d, const char* requested) {
  memset(d, 0, sizeof *d);
  d->mode = DIST_NONE;
  d->name = "none";
  d->size = 1;
  const char* launcher = launcher_variable();
  if (strcmp(requested, "self") == 0) {
    d->mode = DIST_SELF;
    d->name = "self";
  } else if (strcmp(requested, "mpi") == 0) {
    d->mode = DIST_MPI;
  } else if (strcmp(requested, "auto") == 0 && launcher) {
#ifdef NNPLUG_EXAMPLE_HAVE_MPI
    d->mode = DIST_MPI;
#else
    if (launcher_size() != 1)
      die("an MPI launcher started this process (%s is set), but this train was built without "
          "MPI, so every process would train alone: reconfigure with MPI installed (Debian: "
          "libopenmpi-dev), or pass --distributed none",
          launcher);
#endif
  }
  if (d->mode != DIST_MPI) return;
#ifdef NNPLUG_EXAMPLE_HAVE_MPI
  g_mpi = load_mpi();
  char err[256] = "";
  if (g_mpi->init(&d->rank, &d->size, err, sizeof err) != 0) die("%s", err);
  d->name = "mpi";
  snprintf(g_rank_name, sizeof g_rank_name, "train: rank %d of %d", d->rank, d->size);
  set_fatal_exit(g_rank_name, g_mpi->abort);
#else
  die("--distributed mpi: this train was built without MPI (CMake found no MPI for C, or "
      "NNPLUG_WITH_MPI=OFF; Debian: apt-get install libopenmpi-dev openmpi-bin, then "
      "reconfigure)");
#endif
}

void dist_check_agreement(const dist* d, const dist_setting* settings, int n) {
  if (d->mode != DIST_MPI || d->size < 2 || n <= 0) return;
#ifdef NNPLUG_EXAMPLE_HAVE_MPI
  uint64_t* mine = malloc((size_t)n * sizeof *mine);
  uint64_t* all = malloc((size_t)n * (size_t)d->size * sizeof *all);
  if (!mine || !all) die("out of memory checking the ranks' settings");
  for (int i = 0; i < n; ++i) mine[i] = settings[i].value;
  if (g_mpi->allgather_u64(mine, n, all) != 0) die("MPI_Allgather of the ranks' settings failed");
  for (int i = 0; i < n; ++i)
    for (int r = 1; r < d->size; ++r)
      if (all[(size_t)r * (size_t)n + (size_t)i] != all[i])
        die("the ranks disagree on %s: rank 0 has %" PRIu64 ", rank %d has %" PRIu64
            " (every rank must get the same flags and data)",
            settings[i].name, all[i], r, all[(size_t)r * (size_t)n + (size_t)i]);
  free(mine);
  free(all);
#else
  (void)settings; /* mode mpi needs MPI: dist_init refused it */
#endif
}

void dist_shard(size_t n, int rank, int size, size_t* first, size_t* count) {
  const size_t r = (size_t)rank, s = (size_t)size, q = n / s, extra = n % s;
  *first = r * q + (r < extra ? r : extra);
  *count = q + (r < extra ? 1 : 0);
}

/* ------------------------------------------------------------ the communication thread -- */

static void reduce_bucket(struct dist_state* st, int i) {
  const bucket* b = &st->b[i];
  int64_t numel = (int64_t)(b->bytes / sizeof(float));
  if (i == 0 && st->mismatch_now) numel -= 1; /* the test hook: a call the others do not make */
  tview v;
  nnp_all_reduce_params p = {.struct_size = sizeof p, .comm = st->comm, .op = NNP_REDUCE_SUM};
  const DLTensor* t = F32(&v, (char*)st->nt->grads + b->offset, numel);
  CHECK(nnp_all_reduce(st->cs, &p, t, t));
  CHECK(nnp_stream_synchronize(st->cs));
}

static void* thread_main(void* arg) {
  struct dist_state* st = arg;
  pthread_mutex_lock(&st->mu);
  for (;;) {
    while (!st->stop && !st->job &&
           !(st->in_step && st->next < st->n_buckets && st->b[st->next].handed))
      pthread_cond_wait(&st->cv, &st->mu);
    if (st->stop) break;
    if (st->in_step && st->next < st->n_buckets && st->b[st->next].handed) {
      const int i = st->next;
      pthread_mutex_unlock(&st->mu);
      reduce_bucket(st, i);
      pthread_mutex_lock(&st->mu);
      st->next = i + 1;
      st->done += 1;
    } else {
      job_fn job = st->job;
      pthread_mutex_unlock(&st->mu);
      job(st, st->job_arg);
      pthread_mutex_lock(&st->mu);
      st->job = NULL;
    }
    pthread_cond_broadcast(&st->cv);
  }
  pthread_mutex_unlock(&st->mu);
  return NULL;
}

/* Runs job on the communication thread and waits for it (main thread, outside a step). */
static void run_job(struct dist_state* st, job_fn job, void* arg) {
  pthread_mutex_lock(&st->mu);
  st->job = job;
  st->job_arg = arg;
  pthread_cond_broadcast(&st->cv);
  while (st->job) pthread_cond_wait(&st->cv, &st->mu);
  pthread_mutex_unlock(&st->mu);
}

static void broadcast_job(struct dist_state* st, void* arg) {
  (void)arg;
  net* nt = st->nt;
  nnp_broadcast_params p = {.struct_size = sizeof p, .comm = st->comm, .root = 0};
  for (int i = 0; i < nt->n_params; ++i) {
    tview v;
    const DLTensor* t = F32(&v, nt->p[i].w, (int64_t)nt->p[i].numel);
    CHECK(nnp_broadcast(st->cs, &p, t, t));
  }
  CHECK(nnp_stream_synchronize(st->cs));
}

typedef struct reduce_arg {
  int32_t op;
  double* v;
  size_t n;
} reduce_arg;

static void reduce_job(struct dist_state* st, void* arg) {
  reduce_arg* r = arg;
  nnp_device* dev = st->nt->dev;
  const size_t bytes = r->n * sizeof(double);
  CHECK(nnp_memcpy_async(st->cs, dev, st->scratch, NULL, r->v, bytes));
  tview v;
  const int64_t shape[1] = {(int64_t)r->n};
  const DLTensor* t = make_view(&v, st->scratch, 0, kDLFloat, 64, shape, 1);
  nnp_all_reduce_params p = {.struct_size = sizeof p, .comm = st->comm, .op = r->op};
  CHECK(nnp_all_reduce(st->cs, &p, t, t));
  CHECK(nnp_memcpy_async(st->cs, NULL, r->v, dev, st->scratch, bytes));
  CHECK(nnp_stream_synchronize(st->cs));
}

static void reduce(dist* d, int32_t op, double* v, size_t n) {
  if (d->mode == DIST_NONE || n == 0) return;
  if (n > MAX_REDUCE) die("internal: dist_sum of %zu values (at most %d)", n, MAX_REDUCE);
  reduce_arg r = {op, v, n};
  run_job(d->st, reduce_job, &r);
}

void dist_sum(dist* d, double* v, size_t n) { reduce(d, NNP_REDUCE_SUM, v, n); }
void dist_max(dist* d, double* v, size_t n) { reduce(d, NNP_REDUCE_MAX, v, n); }

/* ----------------------------------------------------------------------------- setup -- */

/* Backward's hook (nt->grad_ready): the main thread hands a bucket over once all its
   parameters are ready. */
static void on_grad_ready(void* ctx, int i) {
  struct dist_state* st = ctx;
  if (!st->in_step || st->ready[i]) return;
  st->ready[i] = 1;
  bucket* b = &st->b[st->bucket_of[i]];
  if (--b->pending > 0) return;
  /* The thread's stream must see the finished gradients: wait for the training stream. */
  CHECK(nnp_stream_synchronize(st->nt->s));
  pthread_mutex_lock(&st->mu);
  b->handed = 1;
  pthread_cond_broadcast(&st->cv);
  pthread_mutex_unlock(&st->mu);
}

/* DistributedDataParallel's rule: parameters in reverse order (the order of the gradient buffer,
   about the order backward completes them; alloc_parameters) join the open bucket, which
   closes once it holds `cap` bytes or more, so each bucket is one range of the buffer. */
static void make_buckets(struct dist_state* st, size_t cap) {
  net* nt = st->nt;
  st->n_buckets = 0;
  bucket* cur = NULL;
  for (int i = nt->n_params - 1; i >= 0; --i) {
    /* parameter i occupies [g_offset, end) of the flat buffer, padding included */
    const size_t end = i > 0 ? nt->p[i - 1].g_offset : nt->grads_bytes;
    if (!cur) {
      cur = &st->b[st->n_buckets++];
      *cur = (bucket){.offset = nt->p[i].g_offset, .bytes = 0, .n_params = 0};
    }
    cur->bytes += end - nt->p[i].g_offset;
    cur->n_params += 1;
    st->bucket_of[i] = (int)(cur - st->b);
    if (cur->bytes >= cap) cur = NULL;
  }
}

static void parse_fault(struct dist_state* st) {
  st->fault_rank = -1;
  const char* env = getenv("NNPLUG_TRAIN_FAULT");
  if (!env || !*env) return;
  if (sscanf(env, "%d:%ld:%15s", &st->fault_rank, &st->fault_step, st->fault_kind) != 3 ||
      (strcmp(st->fault_kind, "exit") != 0 && strcmp(st->fault_kind, "error") != 0 &&
       strcmp(st->fault_kind, "mismatch") != 0))
    die("NNPLUG_TRAIN_FAULT expects RANK:STEP:exit|error|mismatch, got '%s'", env);
}

void dist_start(dist* d, net* nt, size_t bucket_bytes, const char* overlap) {
  if (d->mode == DIST_NONE) return;
  struct dist_state* st = xmalloc(sizeof *st);
  memset(st, 0, sizeof *st);
  d->st = st;
  st->d = d;
  st->nt = nt;
  st->dloss = 1.0;
  parse_fault(st);

  nnp_comm_config cfg = {.struct_size = sizeof cfg, .transport = NNP_COMM_TRANSPORT_SELF};
#ifdef NNPLUG_EXAMPLE_HAVE_MPI
  if (d->mode == DIST_MPI) {
    cfg.transport = NNP_COMM_TRANSPORT_MPI;
    cfg.mpi_comm = g_mpi->world();
  }
#endif
  CHECK(nnp_comm_create(nt->dev, &cfg, &st->comm));
  int32_t rank = -1, size = -1;
  CHECK(nnp_comm_get_rank(st->comm, &rank, &size));
  if (rank != d->rank || size != d->size)
    die("internal: the communicator says rank %d of %d, MPI rank %d of %d", (int)rank, (int)size,
        d->rank, d->size);
  CHECK(nnp_stream_create(nt->dev, &st->cs));
  st->scratch = dev_alloc(nt, MAX_REDUCE * sizeof(double));
  make_buckets(st, bucket_bytes);
  DLDevice dl;
  CHECK(nnp_device_get_dldevice(nt->dev, &dl));
  const int during_backward =
      strcmp(overlap, "on") == 0 || (strcmp(overlap, "auto") == 0 && dl.device_type != kDLCPU);

  int n = snprintf(
      st->description, sizeof st->description,
      "distributed: %s, %d rank%s; %d gradient bucket%s (KiB:", nnp_comm_description(st->comm),
      d->size, d->size == 1 ? "" : "s", st->n_buckets, st->n_buckets == 1 ? "" : "s");
  for (int i = 0; i < st->n_buckets && n > 0 && (size_t)n < sizeof st->description; ++i)
    n += snprintf(st->description + n, sizeof st->description - (size_t)n, " %.1f",
                  (double)st->b[i].bytes / 1024.0);
  if (n > 0 && (size_t)n < sizeof st->description)
    snprintf(st->description + n, sizeof st->description - (size_t)n,
             "; cap %zu) all-reduced %s backward", bucket_bytes / 1024,
             during_backward ? "during" : "after");

  pthread_mutex_init(&st->mu, NULL);
  pthread_cond_init(&st->cv, NULL);
  if (pthread_create(&st->thread, NULL, thread_main, st) != 0)
    die("cannot start the communication thread");
  if (during_backward) { /* else dist_end_backward hands every bucket over */
    nt->grad_ready = on_grad_ready;
    nt->grad_ready_ctx = st;
  }

  /* Rank 0's initial parameters on every rank (the same seed gives the same ones already;
     DistributedDataParallel broadcasts them anyway, and so do we). */
  CHECK(nnp_stream_synchronize(nt->s));
  run_job(st, broadcast_job, NULL);
}

const char* dist_describe(const dist* d) { return d->st ? d->st->description : ""; }

/* ------------------------------------------------------------------------------ steps -- */

void dist_begin_step(dist* d, net* nt, long step, size_t first, size_t local, size_t global) {
  if (d->mode == DIST_NONE) return;
  struct dist_state* st = d->st;
  nt->batch_first = (int64_t)first;
  nt->batch_global = (int64_t)global;
  if (st->fault_rank == d->rank && st->fault_step == step) {
    fprintf(stderr, "train: rank %d of %d: NNPLUG_TRAIN_FAULT: %s at step %ld\n", d->rank, d->size,
            st->fault_kind, step);
    fflush(stderr);
    if (strcmp(st->fault_kind, "exit") == 0) _exit(3);
    if (strcmp(st->fault_kind, "error") == 0)
      CHECK(nnp_fill(nt->s, NULL, NULL)); /* refused: INVALID_ARGUMENT, the usual fatal path */
    st->mismatch_now = 1;
  } else {
    st->mismatch_now = 0;
  }
  /* The loss is the mean over this rank's images; weighting it by local / global makes the
     sum over the ranks the mean over the global batch (1 when the batch is not split). */
  const double w = global ? (double)local / (double)global : 1.0;
  if (local > 0 && w != st->dloss) {
    fill(nt, nt->dloss, 1, w);
    st->dloss = w;
  }
  memset(st->ready, 0, sizeof st->ready);
  pthread_mutex_lock(&st->mu);
  for (int i = 0; i < st->n_buckets; ++i) {
    st->b[i].pending = st->b[i].n_params;
    st->b[i].handed = 0;
  }
  st->next = 0;
  st->done = 0;
  st->in_step = 1;
  pthread_mutex_unlock(&st->mu);
}

void dist_end_backward(dist* d, net* nt) {
  if (d->mode == DIST_NONE) return;
  struct dist_state* st = d->st;
  for (int i = nt->n_params - 1; i >= 0; --i) on_grad_ready(st, i);
  pthread_mutex_lock(&st->mu);
  while (st->done < st->n_buckets) pthread_cond_wait(&st->cv, &st->mu);
  st->in_step = 0;
  pthread_mutex_unlock(&st->mu);
}

/* --------------------------------------------------------------------------- the end -- */

/* FNV-1a over the bytes, folded to 48 bits: exact in a float64. */
static double checksum(const void* data, size_t bytes) {
  const unsigned char* p = data;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return (double)((h ^ (h >> 48)) & ((1ull << 48) - 1));
}

int dist_check_identical(dist* d, net* nt) {
  if (d->mode == DIST_NONE) return 0;
  CHECK(nnp_stream_synchronize(nt->s));
  const int per = 3, n = nt->n_params * per; /* value, m, v of each parameter */
  double* hi = xmalloc((size_t)n * sizeof *hi);
  double* lo = xmalloc((size_t)n * sizeof *lo);
  size_t max_bytes = 0;
  for (int i = 0; i < nt->n_params; ++i)
    if (nt->p[i].numel * sizeof(float) > max_bytes) max_bytes = nt->p[i].numel * sizeof(float);
  float* host = xmalloc(max_bytes);
  for (int i = 0; i < nt->n_params; ++i) {
    const param* p = &nt->p[i];
    const float* parts[3] = {p->w, p->m, p->v};
    for (int k = 0; k < per; ++k) {
      CHECK(nnp_memcpy(NULL, host, nt->dev, parts[k], p->numel * sizeof(float)));
      hi[i * per + k] = checksum(host, p->numel * sizeof(float));
      lo[i * per + k] = -hi[i * per + k];
    }
  }
  free(host);
  for (int start = 0; start < n; start += MAX_REDUCE) {
    const size_t count = (size_t)(n - start < MAX_REDUCE ? n - start : MAX_REDUCE);
    dist_max(d, hi + start, count);
    dist_max(d, lo + start, count); /* max of -x: minus the minimum */
  }
  for (int j = 0; j < n; ++j)
    if (hi[j] != -lo[j])
      die("the ranks' %s of parameter %s differ after training (checksums from %.0f to %.0f): "
          "the replicas diverged",
          j % per == 0   ? "values"
          : j % per == 1 ? "Adam first moments"
                         : "Adam second moments",
          nt->p[j / per].name, -lo[j], hi[j]);
  free(hi);
  free(lo);
  return n;
}

void dist_stop(dist* d) {
  struct dist_state* st = d->st;
  if (!st) return;
  pthread_mutex_lock(&st->mu);
  st->stop = 1;
  pthread_cond_broadcast(&st->cv);
  pthread_mutex_unlock(&st->mu);
  pthread_join(st->thread, NULL);
  pthread_cond_destroy(&st->cv);
  pthread_mutex_destroy(&st->mu);
  st->nt->grad_ready = NULL;
  CHECK(nnp_stream_destroy(st->cs));
  CHECK(nnp_comm_destroy(st->comm));
  free(st);
  d->st = NULL;
}

void dist_finalize(dist* d) {
#ifdef NNPLUG_EXAMPLE_HAVE_MPI
  if (d->mode == DIST_MPI && g_mpi) g_mpi->finalize();
#else
  (void)d;
#endif
}
