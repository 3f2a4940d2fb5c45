/*
 * cli.h — train's command line: the options struct, their parsing and the usage text, and the
 * program's error exits (die, xmalloc, CHECK on every nnplug status). Plain C11.
 */
#ifndef NNPLUG_EXAMPLES_TRAIN_CLI_H
#define NNPLUG_EXAMPLES_TRAIN_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <nnplug/nnplug.h>

/* ---------------------------------------------------------------------------- options -- */

typedef struct options {
  const char* model;   /* "mlp", "cnn" or "vit" */
  const char* backend; /* device name for nnp_get_device */
  int epochs;
  int batch;
  double lr;
  uint64_t seed;
  const char* data_dir;
  const char* log_path;      /* per-epoch CSV, may be NULL */
  const char* loss_log_path; /* per-step CSV, may be NULL */
  long limit;                /* first N training images; 0 = all */
  long test_limit;           /* first N test images; 0 = all */
  int threads;               /* worker threads of the cpu backend (NNPLUG_NUM_THREADS); 0 = its
                                default */
  const char* distributed;   /* "auto", "none", "mpi" or "self" (dist.h) */
  long bucket_kib;           /* gradient bucket size of distributed runs, KiB */
  const char* overlap;       /* "auto", "on" or "off": bucket all-reduces during backward */
  int graph;                 /* 1: capture one training step into a graph and replay it */
  int tf32;                  /* 1: NNP_STREAM_ATTR_ALLOW_TF32 on the training stream */
  const char* precision;     /* "float32" or "bfloat16" (mixed precision, model.h's g_act) */
} options;

/* Prints the --help text to f. */
void usage(FILE* f);

/* Fills *o from argv and $NNPLUG_BACKEND; --help exits 0, a bad option exits 2 (usage on
   stderr), a bad value exits 1 with a message. */
void parse_options(int argc, char** argv, options* o);

/* --------------------------------------------------------------------- error handling -- */

/* Every nnplug call goes through CHECK: on failure it prints the call, the status and
   libnnplug's message, and exits with status 1. */
#define CHECK(call)                                                                          \
  do {                                                                                       \
    nnp_status check_status_ = (call);                                                       \
    if (check_status_ != NNP_STATUS_OK) fail_call(#call, __FILE__, __LINE__, check_status_); \
  } while (0)

/* CHECK's failure path: `file` is __FILE__ (only its last component is printed). */
_Noreturn void fail_call(const char* call, const char* file, int line, nnp_status status);

/* Prints "train: error: <message>" to stderr and exits with status 1. */
_Noreturn void die(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

/* How die() and fail_call() end a distributed run (dist.c): `name` replaces "train" at the
   start of their messages ("train: rank 1 of 2"), and `end` is called before exit(status)
   (MPI_Abort, which ends every rank and does not return). Either may be NULL (the default).
   Call from the main thread before other threads start. */
void set_fatal_exit(const char* name, void (*end)(int status));

/* Log files of the train example (--log, --loss-log). Line-buffered: every line reaches the
 * file in one write, so a run that is killed leaves whole lines. Every write, flush and close
 * is checked: a failure (a full disk, /dev/full) is fatal, with `flag` and `path` in the
 * message. close_log(NULL, ...) does nothing. */
FILE* open_log(const char* path, const char* mode, const char* flag);
void write_log(FILE* f, const char* flag, const char* path, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
void close_log(FILE* f, const char* flag, const char* path);

/* malloc that dies when the host is out of memory (never returns NULL, even for 0 bytes). */
void* xmalloc(size_t bytes);

#endif /* NNPLUG_EXAMPLES_TRAIN_CLI_H */
