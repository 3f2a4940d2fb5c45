/*
 * cli.c — train's command line: option parsing (getopt_long), the usage text, and the error
 * exits shared by all of train's files (die, xmalloc, CHECK's fail_call). Plain C11.
 */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------------- error handling -- */

static const char* g_fatal_name = "train";
static void (*g_fatal_end)(int status) = NULL;

void set_fatal_exit(const char* name, void (*end)(int status)) {
  g_fatal_name = name ? name : "train";
  g_fatal_end = end;
}

static _Noreturn void fatal_exit(int status) {
  fflush(stderr);
  if (g_fatal_end) g_fatal_end(status);
  exit(status);
}

void fail_call(const char* call, const char* file, int line, nnp_status status) {
  const char* base = strrchr(file, '/');
  fprintf(stderr, "%s: error: %s\n  at %s:%d: %s: %s\n", g_fatal_name, call, base ? base + 1 : file,
          line, nnp_status_string(status), nnp_last_error_message());
  if (status == NNP_STATUS_OUT_OF_MEMORY)
    fprintf(stderr, "%s: the device is out of memory; try a smaller --batch\n", g_fatal_name);
  fatal_exit(1);
}

void die(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: error: ", g_fatal_name);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  fatal_exit(1);
}

FILE* open_log(const char* path, const char* mode, const char* flag) {
  FILE* f = fopen(path, mode);
  if (!f) die("cannot open %s %s: %s", flag, path, strerror(errno));
  if (setvbuf(f, NULL, _IOLBF, 0) != 0) die("cannot set up %s %s", flag, path);
  return f;
}

void write_log(FILE* f, const char* flag, const char* path, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const int n = vfprintf(f, fmt, ap);
  va_end(ap);
  if (n < 0 || fflush(f) != 0 || ferror(f))
    die("cannot write %s %s: %s", flag, path, strerror(errno));
}

void close_log(FILE* f, const char* flag, const char* path) {
  if (f == NULL) return;
  const int failed = ferror(f) || fflush(f) != 0;
  if (fclose(f) != 0 || failed) die("cannot write %s %s: %s", flag, path, strerror(errno));
}

void* xmalloc(size_t bytes) {
  void* p = malloc(bytes ? bytes : 1);
  if (!p) die("out of host memory (%zu bytes)", bytes);
  return p;
}

/* ---------------------------------------------------------------------------- options -- */

void usage(FILE* f) {
  fprintf(f,
          "usage: train [options]\n"
          "Trains the mlp, cnn or vit network on Fashion-MNIST with nnplug ops.\n\n"
          "  -m, --model mlp|cnn|vit  network (default mlp)\n"
          "  -b, --backend NAME       auto, cpu, cuda, reference, <plugin>[:<index>]\n"
          "                           (default: $NNPLUG_BACKEND, else auto)\n"
          "  -e, --epochs N           epochs (default 5)\n"
          "  -B, --batch N            batch size (default 128)\n"
          "      --lr X               Adam learning rate (default 1e-3)\n"
          "  -s, --seed N             seed of init, shuffling and dropout (default 1234)\n"
          "  -d, --data DIR           folder of the IDX .gz files\n"
          "                           (default /usr/share/datasets/fashion-mnist)\n"
          "  -l, --log FILE.csv       append one row per epoch: epoch,model,backend,\n"
          "                           train_loss,train_accuracy,test_accuracy,seconds,\n"
          "                           images_per_second,epochs (the planned count: a\n"
          "                           complete run's last row has epoch == epochs)\n"
          "      --loss-log FILE.csv  write the loss of every training step (epoch,step,loss)\n"
          "  -n, --limit N            train on the first N training images only\n"
          "      --test-limit N       evaluate on the first N test images only\n"
          "      --threads N          worker threads of the cpu backend, per process\n"
          "                           (sets NNPLUG_NUM_THREADS; default: all cores)\n"
          "      --distributed MODE   auto (default: mpi when started by mpirun, else none),\n"
          "                           none, mpi (data-parallel over the MPI ranks: the global\n"
          "                           --batch is split across them), or self (the distributed\n"
          "                           code path on one rank)\n"
          "      --bucket-kib N       gradient bucket size of distributed runs (default 256)\n"
          "      --overlap MODE       auto (default: on for devices whose ops run\n"
          "                           asynchronously, off for host-compute devices such as\n"
          "                           cpu), on (all-reduce each bucket during backward, as\n"
          "                           soon as it is ready) or off (all buckets after backward)\n"
          "      --graph              capture one full training step into a graph (nnplug.h,\n"
          "                           \"graphs\") after a first eager step, and launch it for\n"
          "                           every full batch (one process; needs the gather op)\n"
          "      --tf32               let float32 GEMMs and convolutions use TF32 tensor cores\n"
          "                           (NNP_STREAM_ATTR_ALLOW_TF32; devices that have them,\n"
          "                           e.g. cuda; default: exact float32)\n"
          "      --precision P        float32 (default) or bfloat16: mixed precision, with\n"
          "                           activations and every layer in bfloat16 and float32\n"
          "                           master weights, Adam and loss\n"
          "                           (devices with bfloat16 ops, e.g. cuda, sim)\n"
          "  -h, --help               this text\n");
}

static long parse_long(const char* flag, const char* text, long lo, long hi) {
  char* end = NULL;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || end == text || *end != '\0' || v < lo || v > hi)
    die("%s expects an integer in [%ld, %ld], got '%s'", flag, lo, hi, text);
  return v;
}

void parse_options(int argc, char** argv, options* o) {
  const char* env_backend = getenv("NNPLUG_BACKEND");
  *o = (options){.model = "mlp",
                 .backend = (env_backend && *env_backend) ? env_backend : "auto",
                 .epochs = 5,
                 .batch = 128,
                 .lr = 1e-3,
                 .seed = 1234,
                 .data_dir = "/usr/share/datasets/fashion-mnist",
                 .distributed = "auto",
                 .bucket_kib = 256,
                 .overlap = "auto",
                 .precision = "float32"};
  enum {
    OPT_LR = 256,
    OPT_LOSS_LOG,
    OPT_TEST_LIMIT,
    OPT_THREADS,
    OPT_DISTRIBUTED,
    OPT_BUCKET,
    OPT_OVERLAP,
    OPT_GRAPH,
    OPT_TF32,
    OPT_PRECISION
  };
  static const struct option longopts[] = {
      {"model", required_argument, NULL, 'm'},
      {"backend", required_argument, NULL, 'b'},
      {"epochs", required_argument, NULL, 'e'},
      {"batch", required_argument, NULL, 'B'},
      {"lr", required_argument, NULL, OPT_LR},
      {"seed", required_argument, NULL, 's'},
      {"data", required_argument, NULL, 'd'},
      {"log", required_argument, NULL, 'l'},
      {"loss-log", required_argument, NULL, OPT_LOSS_LOG},
      {"limit", required_argument, NULL, 'n'},
      {"test-limit", required_argument, NULL, OPT_TEST_LIMIT},
      {"threads", required_argument, NULL, OPT_THREADS},
      {"distributed", required_argument, NULL, OPT_DISTRIBUTED},
      {"bucket-kib", required_argument, NULL, OPT_BUCKET},
      {"overlap", required_argument, NULL, OPT_OVERLAP},
      {"graph", no_argument, NULL, OPT_GRAPH},
      {"tf32", no_argument, NULL, OPT_TF32},
      {"precision", required_argument, NULL, OPT_PRECISION},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "m:b:e:B:s:d:l:n:h", longopts, NULL)) != -1) {
    switch (c) {
      case 'm':
        o->model = optarg;
        break;
      case 'b':
        o->backend = optarg;
        break;
      case 'e':
        o->epochs = (int)parse_long("--epochs", optarg, 1, 100000);
        break;
      case 'B':
        o->batch = (int)parse_long("--batch", optarg, 1, 1 << 24);
        break;
      case 's':
        o->seed = (uint64_t)parse_long("--seed", optarg, 0, LONG_MAX);
        break;
      case 'd':
        o->data_dir = optarg;
        break;
      case 'l':
        o->log_path = optarg;
        break;
      case 'n':
        o->limit = parse_long("--limit", optarg, 1, LONG_MAX);
        break;
      case OPT_LOSS_LOG:
        o->loss_log_path = optarg;
        break;
      case OPT_TEST_LIMIT:
        o->test_limit = parse_long("--test-limit", optarg, 1, LONG_MAX);
        break;
      case OPT_THREADS:
        o->threads = (int)parse_long("--threads", optarg, 1, 4096);
        break;
      case OPT_DISTRIBUTED:
        o->distributed = optarg;
        break;
      case OPT_BUCKET:
        o->bucket_kib = parse_long("--bucket-kib", optarg, 1, 1L << 30);
        break;
      case OPT_OVERLAP:
        o->overlap = optarg;
        break;
      case OPT_GRAPH:
        o->graph = 1;
        break;
      case OPT_TF32:
        o->tf32 = 1;
        break;
      case OPT_PRECISION:
        if (strcmp(optarg, "float32") != 0 && strcmp(optarg, "bfloat16") != 0)
          die("--precision expects float32 or bfloat16, got '%s'", optarg);
        o->precision = optarg;
        break;
      case OPT_LR: {
        char* end = NULL;
        errno = 0;
        o->lr = strtod(optarg, &end);
        if (errno || end == optarg || *end != '\0' || !(o->lr > 0.0) || !isfinite(o->lr))
          die("--lr expects a positive number, got '%s'", optarg);
        break;
      }
      case 'h':
        usage(stdout);
        exit(0);
      default:
        usage(stderr);
        exit(2);
    }
  }
  if (optind < argc) die("unexpected argument '%s' (see --help)", argv[optind]);
  if (strcmp(o->model, "mlp") != 0 && strcmp(o->model, "cnn") != 0 && strcmp(o->model, "vit") != 0)
    die("--model must be mlp, cnn or vit, got '%s'", o->model);
  if (strcmp(o->distributed, "auto") != 0 && strcmp(o->distributed, "none") != 0 &&
      strcmp(o->distributed, "mpi") != 0 && strcmp(o->distributed, "self") != 0)
    die("--distributed must be auto, none, mpi or self, got '%s'", o->distributed);
  if (strcmp(o->overlap, "auto") != 0 && strcmp(o->overlap, "on") != 0 &&
      strcmp(o->overlap, "off") != 0)
    die("--overlap must be auto, on or off, got '%s'", o->overlap);
}
