/*
 * train.c — trains the Keras "mlp" or "cnn" example network on Fashion-MNIST with nnplug ops
 * only, on any backend (DESIGN.md §6). Plain C11; needs nnplug.h and zlib.
 *
 *   train --model mlp --epochs 5 --backend cpu
 *   train --model cnn --epochs 2 --backend auto --log runs.csv
 *
 * What it does, in order:
 *  - reads the four IDX gzip files (train/t10k images and labels), scales pixels to [0, 1]
 *    (x / 255, as the PyTorch yardstick in shared/bench does), and copies them to the device
 *    once;
 *  - initialises the weights Glorot-uniform and the biases to zero from --seed (own PRNG);
 *  - each epoch draws a permutation from the seed and trains on batches of --batch images; the
 *    last partial batch is kept (60000 / 128 gives 469 steps, the last one of 96 images), as in
 *    the PyTorch yardstick. The batch gather runs on the device: one device-to-device
 *    nnp_memcpy_async per image from the resident data set into the batch buffer; the labels
 *    (8 bytes each) are gathered on the host into a staging buffer and copied in one go;
 *  - forward and backward are nnplug ops: GEMM (trans flags for the gradients), conv2d forward,
 *    backward-data, backward-filter, backward-bias, max-pool forward/backward, ReLU
 *    forward/backward, dropout forward/backward (Philox, a fresh counter offset per call),
 *    softmax cross-entropy forward/backward (mean), reduce-sum for dense bias gradients and
 *    adam_update per parameter;
 *  - after each epoch evaluates the test set (no dropout) and prints loss, accuracies, seconds
 *    (training steps only) and images/s; ends with one JSON line of the results.
 * Train accuracy and loss are those of the training batches as they ran (dropout active), as
 * Keras reports them.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zlib.h>

#include <nnplug/nnplug.h>

/* --------------------------------------------------------------------- error handling -- */

/* Every nnplug call goes through CHECK: on failure it prints the call, the status and
   libnnplug's message, and exits with status 1. */
#define CHECK(call)                                                                \
  do {                                                                             \
    nnp_status check_status_ = (call);                                             \
    if (check_status_ != NNP_STATUS_OK) fail_call(#call, __LINE__, check_status_); \
  } while (0)

static void fail_call(const char* call, int line, nnp_status status) {
  fprintf(stderr, "train: error: %s\n  at train.c:%d: %s: %s\n", call, line,
          nnp_status_string(status), nnp_last_error_message());
  if (status == NNP_STATUS_OUT_OF_MEMORY)
    fprintf(stderr, "train: the device is out of memory; try a smaller --batch\n");
  exit(1);
}

static void die(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "train: error: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

static void* xmalloc(size_t bytes) {
  void* p = malloc(bytes ? bytes : 1);
  if (!p) die("out of host memory (%zu bytes)", bytes);
  return p;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---------------------------------------------------------------------------- options -- */

typedef struct options {
  const char* model;   /* "mlp" or "cnn" */
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
} options;

static void usage(FILE* f) {
  fprintf(f,
          "usage: train [options]\n"
          "Trains the mlp or cnn network on Fashion-MNIST with nnplug ops.\n\n"
          "  -m, --model mlp|cnn      network (default mlp)\n"
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
          "                           images_per_second\n"
          "      --loss-log FILE.csv  write the loss of every training step (epoch,step,loss)\n"
          "  -n, --limit N            train on the first N training images only\n"
          "      --test-limit N       evaluate on the first N test images only\n"
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

static void parse_options(int argc, char** argv, options* o) {
  const char* env_backend = getenv("NNPLUG_BACKEND");
  *o = (options){.model = "mlp",
                 .backend = (env_backend && *env_backend) ? env_backend : "auto",
                 .epochs = 5,
                 .batch = 128,
                 .lr = 1e-3,
                 .seed = 1234,
                 .data_dir = "/usr/share/datasets/fashion-mnist"};
  enum { OPT_LR = 256, OPT_LOSS_LOG, OPT_TEST_LIMIT };
  static const struct option longopts[] = {{"model", required_argument, NULL, 'm'},
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
  if (strcmp(o->model, "mlp") != 0 && strcmp(o->model, "cnn") != 0)
    die("--model must be mlp or cnn, got '%s'", o->model);
}

/* ---------------------------------------------------------------------- data (IDX gz) -- */

#define IMAGE_SIDE 28
#define IMAGE_PIXELS (IMAGE_SIDE * IMAGE_SIDE)
#define NUM_CLASSES 10

static uint32_t be32(const unsigned char b[4]) {
  return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
}

/* Reads exactly `bytes` from gz or dies naming the file and what was short. */
static void gz_read_exact(gzFile gz, const char* path, void* dst, size_t bytes, const char* what) {
  size_t done = 0;
  while (done < bytes) {
    size_t chunk = bytes - done > (1u << 30) ? (1u << 30) : bytes - done;
    int got = gzread(gz, (char*)dst + done, (unsigned)chunk);
    if (got < 0) {
      int errnum = 0;
      const char* msg = gzerror(gz, &errnum);
      die("%s: cannot read %s: %s (corrupt gzip?)", path, what, msg);
    }
    if (got == 0)
      die("%s: truncated: %s needs %zu bytes, the file ends after %zu", path, what, bytes, done);
    done += (size_t)got;
  }
}

/* Reads one IDX file (gzip or plain): checks its magic (0x0801 labels, 0x0803 images) and
   dimensions; returns the payload (uint8) and the item count. */
static uint8_t* read_idx(const char* dir, const char* file, uint32_t magic, size_t* count) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path)
    die("--data path too long");
  gzFile gz = gzopen(path, "rb");
  if (!gz)
    die("cannot open %s: %s\n  Install the data set with `apt-get install "
        "dataset-fashion-mnist`, or point --data at a folder with the four *-ubyte.gz files.",
        path, errno ? strerror(errno) : "gzopen failed");
  unsigned char header[16];
  const int ndims = magic == 0x803 ? 3 : 1;
  gz_read_exact(gz, path, header, 4 + 4 * (size_t)ndims, "the IDX header");
  uint32_t got_magic = be32(header);
  if (got_magic != magic)
    die("%s: not an IDX %s file: magic 0x%08" PRIx32 ", expected 0x%08" PRIx32, path,
        magic == 0x803 ? "image" : "label", got_magic, magic);
  size_t n = be32(header + 4);
  if (n == 0 || n > 10000000) die("%s: implausible item count %zu", path, n);
  size_t item = 1;
  if (ndims == 3) {
    uint32_t rows = be32(header + 8), cols = be32(header + 12);
    if (rows != IMAGE_SIDE || cols != IMAGE_SIDE)
      die("%s: images are %" PRIu32 "x%" PRIu32 ", expected 28x28", path, rows, cols);
    item = IMAGE_PIXELS;
  }
  uint8_t* data = xmalloc(n * item);
  gz_read_exact(gz, path, data, n * item, ndims == 3 ? "the pixel data" : "the label data");
  gzclose(gz);
  *count = n;
  return data;
}

typedef struct dataset {
  size_t n;
  float* images;   /* host, [n, 784] in [0, 1] */
  uint8_t* labels; /* host, [n] */
} dataset;

static dataset load_split(const char* dir, const char* split, long limit) {
  char name[64];
  size_t n_images = 0, n_labels = 0;
  snprintf(name, sizeof name, "%s-images-idx3-ubyte.gz", split);
  uint8_t* pixels = read_idx(dir, name, 0x803, &n_images);
  snprintf(name, sizeof name, "%s-labels-idx1-ubyte.gz", split);
  uint8_t* labels = read_idx(dir, name, 0x801, &n_labels);
  if (n_images != n_labels) die("%s/%s: %zu images but %zu labels", dir, split, n_images, n_labels);
  for (size_t i = 0; i < n_labels; ++i)
    if (labels[i] >= NUM_CLASSES)
      die("%s/%s-labels: label %u of item %zu is not in [0, 9]", dir, split, labels[i], i);
  size_t n = n_images;
  if (limit > 0 && (size_t)limit < n) n = (size_t)limit;
  dataset d = {n, xmalloc(n * IMAGE_PIXELS * sizeof(float)), labels};
  for (size_t i = 0; i < n * IMAGE_PIXELS; ++i) d.images[i] = (float)pixels[i] / 255.0f;
  free(pixels);
  return d;
}

/* --------------------------------------------------------------------------- the PRNG -- */

/* splitmix64 (Steele, Lea, Flood 2014): init and shuffling; dropout uses nnplug's Philox. */
static uint64_t rng_next(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static double rng_uniform(uint64_t* state) { /* [0, 1) with 53 bits */
  return (double)(rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
}
static void shuffle(uint32_t* perm, size_t n, uint64_t* state) { /* Fisher–Yates */
  for (size_t i = n - 1; i > 0; --i) {
    size_t j = (size_t)(rng_next(state) % (uint64_t)(i + 1));
    uint32_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

/* ------------------------------------------------------------------- tensor descriptors -- */

/* A DLTensor with its own shape storage. Build with F32()/I64() right before the call. */
typedef struct tview {
  DLTensor t;
  int64_t shape[NNP_MAX_DIMS];
} tview;

static DLDevice g_dldevice; /* the training device's DLPack device */

static const DLTensor* make_view(tview* v, void* data, uint64_t byte_offset, uint8_t code,
                                 uint8_t bits, const int64_t* dims, int ndim) {
  memset(v, 0, sizeof *v);
  for (int i = 0; i < ndim; ++i) v->shape[i] = dims[i];
  v->t.data = data;
  v->t.device = g_dldevice;
  v->t.ndim = ndim;
  v->t.dtype = (DLDataType){code, bits, 1};
  v->t.shape = v->shape;
  v->t.strides = NULL;
  v->t.byte_offset = byte_offset;
  return &v->t;
}
#define NDIMS(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
/* F32(&view, data, d0, d1, ...): compact float32 tensor; F32O adds a byte offset. */
#define F32(v, data, ...) \
  make_view(v, data, 0, kDLFloat, 32, (int64_t[]){__VA_ARGS__}, NDIMS(__VA_ARGS__))
#define F32O(v, data, off, ...) \
  make_view(v, data, off, kDLFloat, 32, (int64_t[]){__VA_ARGS__}, NDIMS(__VA_ARGS__))
#define I64(v, data, ...) \
  make_view(v, data, 0, kDLInt, 64, (int64_t[]){__VA_ARGS__}, NDIMS(__VA_ARGS__))
#define SCALAR_F32(v, data) make_view(v, data, 0, kDLFloat, 32, NULL, 0)

/* ------------------------------------------------------------------------------ model -- */

#define MAX_PARAMS 8

typedef struct param {
  const char* name;
  int ndim;
  int64_t shape[4];
  size_t numel;
  float *w, *g, *m, *v; /* device: value, gradient, Adam moments */
} param;

typedef struct net {
  nnp_device* dev;
  nnp_stream* s;
  int cnn;
  int64_t max_batch;
  param p[MAX_PARAMS];
  int n_params;
  /* activations and their gradients, [max_batch, ...] on the device */
  float *x, *logits, *dlogits;  /* x: the gathered training batch */
  float *a1, *a2, *da1, *da2;   /* mlp: hidden layers */
  float *c1, *c2, *pool, *drop; /* cnn: conv1, conv2 (after ReLU), max-pool, its dropout */
  float *fc, *dfc, *ddrop, *dc2, *dc1;
  int64_t* labels; /* device [max_batch] */
  float *loss, *dloss;
  void* allocations[64];
  int n_allocations;
  uint64_t seed;
  uint64_t dropout_offset;           /* next Philox counter offset (units of 4 elements) */
  nnp_dropout_params drop_params[2]; /* this step's two dropout calls, reused by backward */
} net;

static void* dev_alloc(net* nt, size_t bytes) {
  void* p = NULL;
  CHECK(nnp_malloc(nt->dev, bytes, &p));
  if (nt->n_allocations == (int)(sizeof nt->allocations / sizeof nt->allocations[0]))
    die("internal: too many allocations");
  nt->allocations[nt->n_allocations++] = p;
  return p;
}

static void zero(net* nt, void* data, size_t numel) {
  tview v;
  nnp_fill_params fp = {sizeof fp, 0.0};
  CHECK(nnp_fill(nt->s, &fp, F32(&v, data, (int64_t)numel)));
}

static void add_param(net* nt, const char* name, int ndim, const int64_t* shape, int fan_in,
                      int fan_out, uint64_t* rng) {
  param* p = &nt->p[nt->n_params++];
  p->name = name;
  p->ndim = ndim;
  p->numel = 1;
  for (int i = 0; i < ndim; ++i) {
    p->shape[i] = shape[i];
    p->numel *= (size_t)shape[i];
  }
  size_t bytes = p->numel * sizeof(float);
  p->w = dev_alloc(nt, bytes);
  p->g = dev_alloc(nt, bytes);
  p->m = dev_alloc(nt, bytes);
  p->v = dev_alloc(nt, bytes);
  zero(nt, p->m, p->numel);
  zero(nt, p->v, p->numel);
  zero(nt, p->g, p->numel);
  /* Glorot uniform (fans include the kernel area for convolutions); biases (fan 0) zero. */
  float* host = xmalloc(bytes);
  double limit = fan_in > 0 ? sqrt(6.0 / (double)(fan_in + fan_out)) : 0.0;
  for (size_t i = 0; i < p->numel; ++i) host[i] = (float)(limit * (2.0 * rng_uniform(rng) - 1.0));
  CHECK(nnp_memcpy(nt->dev, p->w, NULL, host, bytes));
  free(host);
}

static void build_net(net* nt, int cnn, int64_t max_batch, uint64_t seed) {
  uint64_t rng = seed ^ 0x6E6E706C75670001ull; /* a stream of its own for the weights */
  nt->cnn = cnn;
  nt->max_batch = max_batch;
  nt->seed = seed;
  const size_t B = (size_t)max_batch, F = sizeof(float);
  if (!cnn) {
    add_param(nt, "dense1.w", 2, (int64_t[]){784, 512}, 784, 512, &rng);
    add_param(nt, "dense1.b", 1, (int64_t[]){512}, 0, 0, &rng);
    add_param(nt, "dense2.w", 2, (int64_t[]){512, 512}, 512, 512, &rng);
    add_param(nt, "dense2.b", 1, (int64_t[]){512}, 0, 0, &rng);
    add_param(nt, "dense3.w", 2, (int64_t[]){512, 10}, 512, 10, &rng);
    add_param(nt, "dense3.b", 1, (int64_t[]){10}, 0, 0, &rng);
    nt->a1 = dev_alloc(nt, B * 512 * F);
    nt->a2 = dev_alloc(nt, B * 512 * F);
    nt->da1 = dev_alloc(nt, B * 512 * F);
    nt->da2 = dev_alloc(nt, B * 512 * F);
  } else {
    add_param(nt, "conv1.w", 4, (int64_t[]){32, 1, 3, 3}, 1 * 9, 32 * 9, &rng);
    add_param(nt, "conv1.b", 1, (int64_t[]){32}, 0, 0, &rng);
    add_param(nt, "conv2.w", 4, (int64_t[]){64, 32, 3, 3}, 32 * 9, 64 * 9, &rng);
    add_param(nt, "conv2.b", 1, (int64_t[]){64}, 0, 0, &rng);
    add_param(nt, "dense1.w", 2, (int64_t[]){9216, 128}, 9216, 128, &rng);
    add_param(nt, "dense1.b", 1, (int64_t[]){128}, 0, 0, &rng);
    add_param(nt, "dense2.w", 2, (int64_t[]){128, 10}, 128, 10, &rng);
    add_param(nt, "dense2.b", 1, (int64_t[]){10}, 0, 0, &rng);
    nt->c1 = dev_alloc(nt, B * 32 * 26 * 26 * F);
    nt->dc1 = dev_alloc(nt, B * 32 * 26 * 26 * F);
    nt->c2 = dev_alloc(nt, B * 64 * 24 * 24 * F);
    nt->dc2 = dev_alloc(nt, B * 64 * 24 * 24 * F);
    nt->pool = dev_alloc(nt, B * 9216 * F);
    nt->drop = dev_alloc(nt, B * 9216 * F);
    nt->ddrop = dev_alloc(nt, B * 9216 * F);
    nt->fc = dev_alloc(nt, B * 128 * F);
    nt->dfc = dev_alloc(nt, B * 128 * F);
  }
  nt->x = dev_alloc(nt, B * IMAGE_PIXELS * F);
  nt->logits = dev_alloc(nt, B * NUM_CLASSES * F);
  nt->dlogits = dev_alloc(nt, B * NUM_CLASSES * F);
  nt->labels = dev_alloc(nt, B * sizeof(int64_t));
  nt->loss = dev_alloc(nt, F);
  nt->dloss = dev_alloc(nt, F);
  tview v;
  nnp_fill_params one = {sizeof one, 1.0};
  CHECK(nnp_fill(nt->s, &one, SCALAR_F32(&v, nt->dloss))); /* d(mean loss)/d(loss) = 1 */
}

static size_t count_params(const net* nt) {
  size_t n = 0;
  for (int i = 0; i < nt->n_params; ++i) n += nt->p[i].numel;
  return n;
}

/* y[n, out] = x[n, in] · W[in, out] + b[out] */
static void dense_forward(net* nt, void* x, uint64_t x_off, int64_t n, const param* w,
                          const param* b, float* y) {
  tview a, bw, c, out;
  int64_t in = w->shape[0], outf = w->shape[1];
  nnp_gemm_params gp = {sizeof gp, 0, 0, 1.0, 1.0};
  CHECK(nnp_gemm(nt->s, &gp, F32O(&a, x, x_off, n, in), F32(&bw, w->w, in, outf),
                 F32(&c, b->w, outf), F32(&out, y, n, outf)));
}

/* dW = xᵀ·dy, db = Σ_rows dy, dx = dy·Wᵀ (dx may be NULL) */
static void dense_backward(net* nt, void* x, int64_t n, const param* w, const param* b, float* dy,
                           float* dx) {
  tview a, bb, out;
  int64_t in = w->shape[0], outf = w->shape[1];
  nnp_gemm_params gw = {sizeof gw, 1, 0, 1.0, 0.0};
  CHECK(nnp_gemm(nt->s, &gw, F32(&a, x, n, in), F32(&bb, dy, n, outf), NULL,
                 F32(&out, w->g, in, outf)));
  nnp_reduce_params rp = {
      .struct_size = sizeof rp, .op = NNP_REDUCE_SUM, .keepdims = 0, .n_axes = 1, .axes = {0}};
  CHECK(nnp_reduce(nt->s, &rp, F32(&a, dy, n, outf), F32(&out, b->g, outf)));
  if (dx) {
    nnp_gemm_params gx = {sizeof gx, 0, 1, 1.0, 0.0};
    CHECK(nnp_gemm(nt->s, &gx, F32(&a, dy, n, outf), F32(&bb, w->w, in, outf), NULL,
                   F32(&out, dx, n, in)));
  }
}

static const nnp_activation_params kRelu = {sizeof(nnp_activation_params), NNP_ACTIVATION_RELU, 0,
                                            0.0};

static void relu_forward(net* nt, float* y, int64_t numel) { /* in place */
  tview a, b;
  CHECK(nnp_activation_forward(nt->s, &kRelu, F32(&a, y, numel), F32(&b, y, numel)));
}

/* dy *= relu'(y), in place. y is the ReLU's output, possibly scaled by dropout afterwards:
   y > 0 exactly where the input was > 0 (or 0 where dropout already zeroed dy). */
static void relu_backward(net* nt, float* y, float* dy, int64_t numel) {
  tview a, b, c;
  CHECK(nnp_activation_backward(nt->s, &kRelu, F32(&a, y, numel), F32(&b, dy, numel),
                                F32(&c, dy, numel)));
}

/* y = dropout(x); x and y may be the same buffer. Draws a fresh Philox offset and remembers the
   params in slot `k` for the backward pass. */
static void dropout_forward(net* nt, int k, double ratio, float* x, float* y, int64_t numel) {
  nnp_dropout_params* dp = &nt->drop_params[k];
  *dp = (nnp_dropout_params){sizeof *dp, ratio, nt->seed, nt->dropout_offset};
  nt->dropout_offset += (uint64_t)(numel + 3) / 4;
  tview a, b;
  CHECK(nnp_dropout_forward(nt->s, dp, F32(&a, x, numel), F32(&b, y, numel), NULL));
}

static void dropout_backward(net* nt, int k, float* dy, float* dx, int64_t numel) {
  tview a, b;
  CHECK(nnp_dropout_backward(nt->s, &nt->drop_params[k], F32(&a, dy, numel), F32(&b, dx, numel)));
}

static const nnp_conv2d_params kConv = {sizeof(nnp_conv2d_params), 1, 1, 0, 0, 0, 0, 1, 1, 1};
static const nnp_pool2d_params kPool = {.struct_size = sizeof(nnp_pool2d_params),
                                        .mode = NNP_POOL_MAX,
                                        .window_h = 2,
                                        .window_w = 2,
                                        .stride_h = 2,
                                        .stride_w = 2};

/* Forward pass of n images starting at byte `x_off` of `x` ([N, 784] float32); leaves the
   logits in nt->logits. training = 1 applies dropout. */
static void forward(net* nt, void* x, uint64_t x_off, int64_t n, int training) {
  param* p = nt->p;
  if (!nt->cnn) {
    dense_forward(nt, x, x_off, n, &p[0], &p[1], nt->a1);
    relu_forward(nt, nt->a1, n * 512);
    if (training) dropout_forward(nt, 0, 0.2, nt->a1, nt->a1, n * 512);
    dense_forward(nt, nt->a1, 0, n, &p[2], &p[3], nt->a2);
    relu_forward(nt, nt->a2, n * 512);
    if (training) dropout_forward(nt, 1, 0.2, nt->a2, nt->a2, n * 512);
    dense_forward(nt, nt->a2, 0, n, &p[4], &p[5], nt->logits);
  } else {
    tview a, b, c, d;
    CHECK(nnp_conv2d_forward(nt->s, &kConv, F32O(&a, x, x_off, n, 1, 28, 28),
                             F32(&b, p[0].w, 32, 1, 3, 3), F32(&c, p[1].w, 32),
                             F32(&d, nt->c1, n, 32, 26, 26)));
    relu_forward(nt, nt->c1, n * 32 * 26 * 26);
    CHECK(nnp_conv2d_forward(nt->s, &kConv, F32(&a, nt->c1, n, 32, 26, 26),
                             F32(&b, p[2].w, 64, 32, 3, 3), F32(&c, p[3].w, 64),
                             F32(&d, nt->c2, n, 64, 24, 24)));
    relu_forward(nt, nt->c2, n * 64 * 24 * 24);
    CHECK(nnp_pool2d_forward(nt->s, &kPool, F32(&a, nt->c2, n, 64, 24, 24),
                             F32(&b, nt->pool, n, 64, 12, 12)));
    float* flat = nt->pool; /* [n, 9216]: NCHW flattened as torch's nn.Flatten */
    if (training) {
      dropout_forward(nt, 0, 0.25, nt->pool, nt->drop, n * 9216);
      flat = nt->drop;
    }
    dense_forward(nt, flat, 0, n, &p[4], &p[5], nt->fc);
    relu_forward(nt, nt->fc, n * 128);
    if (training) dropout_forward(nt, 1, 0.5, nt->fc, nt->fc, n * 128);
    dense_forward(nt, nt->fc, 0, n, &p[6], &p[7], nt->logits);
  }
}

/* Loss of the batch in nt->logits against nt->labels, then gradients of every parameter. */
static void loss_and_backward(net* nt, int64_t n) {
  tview a, b, c, d;
  nnp_softmax_cross_entropy_params cp = {sizeof cp, NNP_REDUCTION_MEAN, 0, 0};
  CHECK(nnp_softmax_cross_entropy_forward(nt->s, &cp, F32(&a, nt->logits, n, NUM_CLASSES),
                                          I64(&b, nt->labels, n), SCALAR_F32(&c, nt->loss), NULL));
  CHECK(nnp_softmax_cross_entropy_backward(nt->s, &cp, F32(&a, nt->logits, n, NUM_CLASSES),
                                           I64(&b, nt->labels, n), SCALAR_F32(&c, nt->dloss),
                                           F32(&d, nt->dlogits, n, NUM_CLASSES)));
  param* p = nt->p;
  if (!nt->cnn) {
    dense_backward(nt, nt->a2, n, &p[4], &p[5], nt->dlogits, nt->da2);
    dropout_backward(nt, 1, nt->da2, nt->da2, n * 512);
    relu_backward(nt, nt->a2, nt->da2, n * 512);
    dense_backward(nt, nt->a1, n, &p[2], &p[3], nt->da2, nt->da1);
    dropout_backward(nt, 0, nt->da1, nt->da1, n * 512);
    relu_backward(nt, nt->a1, nt->da1, n * 512);
    dense_backward(nt, nt->x, n, &p[0], &p[1], nt->da1, NULL);
  } else {
    dense_backward(nt, nt->fc, n, &p[6], &p[7], nt->dlogits, nt->dfc);
    dropout_backward(nt, 1, nt->dfc, nt->dfc, n * 128);
    relu_backward(nt, nt->fc, nt->dfc, n * 128);
    dense_backward(nt, nt->drop, n, &p[4], &p[5], nt->dfc, nt->ddrop);
    dropout_backward(nt, 0, nt->ddrop, nt->ddrop, n * 9216); /* now d(pool) */
    CHECK(nnp_pool2d_backward(nt->s, &kPool, F32(&a, nt->c2, n, 64, 24, 24),
                              F32(&b, nt->pool, n, 64, 12, 12), F32(&c, nt->ddrop, n, 64, 12, 12),
                              F32(&d, nt->dc2, n, 64, 24, 24)));
    relu_backward(nt, nt->c2, nt->dc2, n * 64 * 24 * 24);
    CHECK(nnp_conv2d_backward_filter(nt->s, &kConv, F32(&a, nt->c1, n, 32, 26, 26),
                                     F32(&b, nt->dc2, n, 64, 24, 24),
                                     F32(&c, p[2].g, 64, 32, 3, 3)));
    CHECK(nnp_conv2d_backward_bias(nt->s, F32(&a, nt->dc2, n, 64, 24, 24), F32(&b, p[3].g, 64)));
    CHECK(nnp_conv2d_backward_data(nt->s, &kConv, F32(&a, nt->dc2, n, 64, 24, 24),
                                   F32(&b, p[2].w, 64, 32, 3, 3), F32(&c, nt->dc1, n, 32, 26, 26)));
    relu_backward(nt, nt->c1, nt->dc1, n * 32 * 26 * 26);
    CHECK(nnp_conv2d_backward_filter(nt->s, &kConv, F32(&a, nt->x, n, 1, 28, 28),
                                     F32(&b, nt->dc1, n, 32, 26, 26),
                                     F32(&c, p[0].g, 32, 1, 3, 3)));
    CHECK(nnp_conv2d_backward_bias(nt->s, F32(&a, nt->dc1, n, 32, 26, 26), F32(&b, p[1].g, 32)));
  }
}

static void adam_step(net* nt, double lr, int64_t step) {
  nnp_adam_params ap = {sizeof ap, lr, 0.9, 0.999, 1e-8, 0.0, step, 0, 0};
  for (int i = 0; i < nt->n_params; ++i) {
    param* p = &nt->p[i];
    tview g, w, m, v;
    int64_t n = (int64_t)p->numel;
    CHECK(nnp_adam_update(nt->s, &ap, F32(&g, p->g, n), F32(&w, p->w, n), F32(&m, p->m, n),
                          F32(&v, p->v, n)));
  }
}

/* Number of rows of logits[n, 10] (host) whose argmax equals the label. */
static size_t count_correct(const float* logits, const uint8_t* labels, const uint32_t* index,
                            size_t n) {
  size_t correct = 0;
  for (size_t i = 0; i < n; ++i) {
    const float* row = logits + i * NUM_CLASSES;
    int best = 0;
    for (int k = 1; k < NUM_CLASSES; ++k)
      if (row[k] > row[best]) best = k;
    if (best == labels[index ? index[i] : i]) ++correct;
  }
  return correct;
}

static double evaluate(net* nt, float* test_x, const dataset* test, float* host_logits) {
  size_t correct = 0;
  for (size_t start = 0; start < test->n; start += (size_t)nt->max_batch) {
    size_t n = test->n - start < (size_t)nt->max_batch ? test->n - start : (size_t)nt->max_batch;
    forward(nt, test_x, (uint64_t)(start * IMAGE_PIXELS * sizeof(float)), (int64_t)n, 0);
    CHECK(nnp_stream_synchronize(nt->s));
    CHECK(nnp_memcpy(NULL, host_logits, nt->dev, nt->logits, n * NUM_CLASSES * sizeof(float)));
    correct += count_correct(host_logits, test->labels + start, NULL, n);
  }
  return (double)correct / (double)test->n;
}

/* ----------------------------------------------------------------------- backend choice -- */

/* Lists what the user could have typed: device names and the plugins behind them. */
static void print_available(FILE* f) {
  size_t n = 0;
  if (nnp_get_devices(NULL, &n) != NNP_STATUS_OK) return;
  nnp_device** devs = xmalloc((n ? n : 1) * sizeof *devs);
  if (nnp_get_devices(devs, &n) == NNP_STATUS_OK) {
    fprintf(f, "  available devices:");
    for (size_t i = 0; i < n; ++i) {
      nnp_device_props pr = {.struct_size = sizeof pr};
      if (nnp_device_get_props(devs[i], &pr) == NNP_STATUS_OK) fprintf(f, " %s", pr.name);
    }
    fprintf(f, "%s (and \"auto\")\n", n ? "" : " none");
  }
  free(devs);
  size_t nr = 0;
  if (nnp_get_load_records(NULL, &nr) != NNP_STATUS_OK || nr == 0) return;
  nnp_load_record* recs = xmalloc(nr * sizeof *recs);
  for (size_t i = 0; i < nr; ++i) recs[i] = (nnp_load_record){.struct_size = sizeof *recs};
  if (nnp_get_load_records(recs, &nr) == NNP_STATUS_OK) {
    fprintf(f, "  plugins:\n");
    for (size_t i = 0; i < nr; ++i)
      fprintf(f, "    %-10s %-9s %d device(s) %s%s%s\n", recs[i].name[0] ? recs[i].name : "?",
              recs[i].state == NNP_LOAD_LOADED     ? "loaded"
              : recs[i].state == NNP_LOAD_REJECTED ? "rejected"
              : recs[i].state == NNP_LOAD_FAILED   ? "failed"
                                                   : "duplicate",
              recs[i].n_devices, recs[i].path, recs[i].reason[0] ? ": " : "", recs[i].reason);
  }
  free(recs);
}

static nnp_device* open_device(const char* name) {
  nnp_device* dev = NULL;
  nnp_status st = nnp_get_device(name, &dev);
  if (st == NNP_STATUS_OK) return dev;
  char msg[2048];
  snprintf(msg, sizeof msg, "%s", nnp_last_error_message());
  if (st == NNP_STATUS_NOT_FOUND) {
    fprintf(stderr, "train: error: unknown backend '%s' (%s)\n", name, msg);
  } else if (st == NNP_STATUS_UNAVAILABLE) {
    fprintf(stderr, "train: error: backend '%s' has no usable device: %s\n", name, msg);
  } else {
    fprintf(stderr, "train: error: cannot open backend '%s': %s: %s\n", name, nnp_status_string(st),
            msg);
  }
  print_available(stderr);
  exit(1);
}

/* ------------------------------------------------------------------------- progress -- */

static void progress(int tty, int epoch, int epochs, size_t step, size_t steps, double loss,
                     double elapsed) {
  if (tty) {
    static double last_draw = 0.0; /* redraw at most 10 times a second, and at the end */
    double t = now_seconds();
    if (step != steps && step != 1 && t - last_draw < 0.1) return;
    last_draw = t;
    char bar[31];
    size_t fill = steps ? step * 30 / steps : 30;
    for (size_t i = 0; i < 30; ++i) bar[i] = i < fill ? '#' : '.';
    bar[30] = '\0';
    double eta = step ? elapsed * (double)(steps - step) / (double)step : 0.0;
    fprintf(stderr, "\repoch %d/%d [%s] %zu/%zu loss %.4f  %.1fs eta %.0fs ", epoch, epochs, bar,
            step, steps, loss, elapsed, eta);
    if (step == steps) fprintf(stderr, "\r%*s\r", 90, "");
  } else {
    size_t every = steps >= 10 ? steps / 10 : 1;
    if (step % every == 0 || step == steps)
      fprintf(stderr, "epoch %d/%d step %zu/%zu loss %.4f %.1fs\n", epoch, epochs, step, steps,
              loss, elapsed);
  }
  fflush(stderr);
}

/* ----------------------------------------------------------------------------- main -- */

int main(int argc, char** argv) {
  options o;
  parse_options(argc, argv, &o);

  /* Data first: a missing data set is the most likely mistake and needs no device. */
  dataset train = load_split(o.data_dir, "train", o.limit);
  dataset test = load_split(o.data_dir, "t10k", o.test_limit);

  net nt;
  memset(&nt, 0, sizeof nt);
  nt.dev = open_device(o.backend);
  nnp_device_props props = {.struct_size = sizeof props};
  CHECK(nnp_device_get_props(nt.dev, &props));
  CHECK(nnp_device_get_dldevice(nt.dev, &g_dldevice));
  CHECK(nnp_stream_create(nt.dev, &nt.s));

  const int cnn = strcmp(o.model, "cnn") == 0;
  int64_t max_batch = o.batch;
  if ((size_t)max_batch > train.n && train.n > 0) max_batch = (int64_t)train.n;
  build_net(&nt, cnn, max_batch, o.seed);

  /* The data set lives on the device for the whole run. */
  const size_t img_bytes = IMAGE_PIXELS * sizeof(float);
  float* train_x = dev_alloc(&nt, train.n * img_bytes);
  float* test_x = dev_alloc(&nt, test.n * img_bytes);
  CHECK(nnp_memcpy(nt.dev, train_x, NULL, train.images, train.n * img_bytes));
  CHECK(nnp_memcpy(nt.dev, test_x, NULL, test.images, test.n * img_bytes));
  free(train.images);
  free(test.images);

  const size_t steps = (train.n + (size_t)max_batch - 1) / (size_t)max_batch;
  const size_t last = train.n - (steps - 1) * (size_t)max_batch;
  printf("nnplug %s: device %s (%s), model %s (%zu parameters)\n", nnp_version_string(), props.name,
         props.description, o.model, count_params(&nt));
  printf("%zu training / %zu test images, batch %" PRId64
         ", %zu steps per epoch (last batch %zu"
         " images), Adam lr %g, seed %" PRIu64 "\n",
         train.n, test.n, max_batch, steps, last, o.lr, o.seed);
  fflush(stdout);

  FILE* log = NULL;
  if (o.log_path) {
    FILE* probe = fopen(o.log_path, "r");
    int fresh = probe == NULL;
    if (probe) {
      fseek(probe, 0, SEEK_END);
      fresh = ftell(probe) == 0;
      fclose(probe);
    }
    log = fopen(o.log_path, "a");
    if (!log) die("cannot open --log %s: %s", o.log_path, strerror(errno));
    if (fresh)
      fprintf(log,
              "epoch,model,backend,train_loss,train_accuracy,test_accuracy,seconds,"
              "images_per_second\n");
  }
  FILE* loss_log = NULL;
  if (o.loss_log_path) {
    loss_log = fopen(o.loss_log_path, "w");
    if (!loss_log) die("cannot open --loss-log %s: %s", o.loss_log_path, strerror(errno));
    fprintf(loss_log, "epoch,step,loss\n");
  }

  uint32_t* perm = xmalloc(train.n * sizeof *perm);
  for (size_t i = 0; i < train.n; ++i) perm[i] = (uint32_t)i;
  int64_t* host_labels = xmalloc((size_t)max_batch * sizeof *host_labels);
  float* host_logits = xmalloc((size_t)max_batch * NUM_CLASSES * sizeof *host_logits);
  uint64_t shuffle_rng = o.seed ^ 0x53687566666C6521ull;
  const int tty = isatty(fileno(stderr));
  double train_seconds = 0.0, final_loss = NAN, test_acc = NAN;
  int64_t global_step = 0;

  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    shuffle(perm, train.n, &shuffle_rng);
    double loss_sum = 0.0;
    size_t correct = 0;
    double t0 = now_seconds();
    for (size_t step = 0; step < steps; ++step) {
      const size_t start = step * (size_t)max_batch;
      const size_t n = step + 1 < steps ? (size_t)max_batch : last;
      const uint32_t* idx = perm + start;
      for (size_t i = 0; i < n; ++i) {
        CHECK(nnp_memcpy_async(nt.s, nt.dev, (char*)nt.x + i * img_bytes, nt.dev,
                               (char*)train_x + (size_t)idx[i] * img_bytes, img_bytes));
        host_labels[i] = train.labels[idx[i]];
      }
      CHECK(nnp_memcpy_async(nt.s, nt.dev, nt.labels, NULL, host_labels, n * sizeof(int64_t)));
      forward(&nt, nt.x, 0, (int64_t)n, 1);
      loss_and_backward(&nt, (int64_t)n);
      adam_step(&nt, o.lr, ++global_step);
      CHECK(nnp_stream_synchronize(nt.s));
      float loss = 0.0f;
      CHECK(nnp_memcpy(NULL, &loss, nt.dev, nt.loss, sizeof loss));
      CHECK(nnp_memcpy(NULL, host_logits, nt.dev, nt.logits, n * NUM_CLASSES * sizeof(float)));
      if (!isfinite(loss)) die("the loss is %f at epoch %d step %zu; stopping", loss, epoch, step);
      loss_sum += (double)loss * (double)n;
      correct += count_correct(host_logits, train.labels, idx, n);
      if (loss_log) fprintf(loss_log, "%d,%zu,%.9g\n", epoch, step + 1, loss);
      progress(tty, epoch, o.epochs, step + 1, steps, loss_sum / (double)(start + n),
               now_seconds() - t0);
    }
    double seconds = now_seconds() - t0;
    train_seconds += seconds;
    final_loss = loss_sum / (double)train.n;
    double train_acc = (double)correct / (double)train.n;
    test_acc = evaluate(&nt, test_x, &test, host_logits);
    printf(
        "epoch %d/%d: train loss %.4f, train accuracy %.4f, test accuracy %.4f, %.2f s, %.0f "
        "images/s\n",
        epoch, o.epochs, final_loss, train_acc, test_acc, seconds, (double)train.n / seconds);
    fflush(stdout);
    if (log) {
      fprintf(log, "%d,%s,%s,%.6f,%.6f,%.6f,%.4f,%.1f\n", epoch, o.model, props.plugin_name,
              final_loss, train_acc, test_acc, seconds, (double)train.n / seconds);
      fflush(log);
    }
  }

  printf(
      "{\"model\": \"%s\", \"backend\": \"%s\", \"device\": \"%s\", \"epochs\": %d, "
      "\"batch\": %" PRId64
      ", \"train_seconds\": %.3f, \"images_per_second\": %.1f, "
      "\"test_accuracy\": %.4f, \"final_loss\": %.6f}\n",
      o.model, props.plugin_name, props.name, o.epochs, max_batch, train_seconds,
      (double)train.n * o.epochs / train_seconds, test_acc, final_loss);

  if (log) fclose(log);
  if (loss_log) fclose(loss_log);
  free(perm);
  free(host_labels);
  free(host_logits);
  free(train.labels);
  free(test.labels);
  CHECK(nnp_stream_destroy(nt.s));
  for (int i = 0; i < nt.n_allocations; ++i) CHECK(nnp_free(nt.dev, nt.allocations[i]));
  CHECK(nnp_shutdown());
  return 0;
}
