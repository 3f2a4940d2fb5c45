/*
 * train.c — trains the Keras "mlp" or "cnn" example network, or a small Vision Transformer
 * ("vit"), on Fashion-MNIST with nnplug ops
 * only, on any backend. Plain C11; needs nnplug.h and zlib. This file holds main and the
 * training and evaluation loop (backend choice, progress, per-epoch lines and logs, the final
 * JSON line); cli.c parses the options, idx.c reads the data set, model.c holds the networks.
 *
 *   train --model mlp --epochs 5 --backend cpu
 *   train --model cnn --epochs 2 --backend auto --log runs.csv
 *
 * What it does, in order:
 *  - reads the four IDX gzip files (train/t10k images and labels), scales pixels to [0, 1]
 *    (x / 255, as the PyTorch yardstick scripts of the same models do), and copies them to the
 *    device once;
 *  - initialises the weights Glorot-uniform and the biases to zero from --seed (own PRNG);
 *  - each epoch draws a permutation from the seed and trains on batches of --batch images; the
 *    last partial batch is kept (60000 / 128 gives 469 steps, the last one of 96 images), as in
 *    the PyTorch yardstick. The batch gather runs on the device: the batch's indices are
 *    copied in one go and one gather op (ONNX Gather, axis 0) reads the images from the
 *    resident data set into the batch buffer (where the device does not implement gather,
 *    one device-to-device nnp_memcpy_async per image); the labels (8 bytes each) are gathered
 *    on the host into a staging buffer and copied in one go;
 *  - forward and backward are nnplug ops: GEMM (trans flags for the gradients), conv2d forward,
 *    backward-data, backward-filter, backward-bias, max-pool forward/backward, ReLU
 *    forward/backward, dropout forward/backward (Philox, a fresh counter offset per call),
 *    softmax cross-entropy forward/backward (mean), reduce-sum for dense bias gradients and
 *    one adam_update over every parameter (values, gradients and moments in one layout each);
 *  - after each epoch evaluates the test set (no dropout; its progress on stderr, as the
 *    training's) and prints loss, accuracies, seconds (training steps only) and images/s; ends
 *    with one JSON line of the results.
 * Train accuracy and loss are those of the training batches as they ran (dropout active), as
 * Keras reports them.
 *
 * Data-parallel (dist.c, docs/distributed.md): under mpirun, or with --distributed mpi, every
 * rank runs this same loop on its contiguous share of each global batch (and of the test set);
 * the gradients are summed across the ranks during backward, so every rank takes the same Adam
 * step; losses and counts are summed so that rank 0 prints and logs global figures.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nnplug/nnplug.h>

#include "cli.h"
#include "dist.h"
#include "idx.h"
#include "layers.h"
#include "model.h"

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* -------------------------------------------------------------------------- shuffling -- */

/* Fisher–Yates with the splitmix64 of model.h. */
static void shuffle(uint32_t* perm, size_t n, uint64_t* state) {
  for (size_t i = n - 1; i > 0; --i) {
    size_t j = (size_t)(rng_next(state) % (uint64_t)(i + 1));
    uint32_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

/* ------------------------------------------------------------------------- progress -- */

/* Progress of one pass over batches, on stderr: a bar redrawn in place on a terminal, else a
   line every tenth of the steps. what is "step" (training, with the running loss) or "test"
   (the evaluation after the epoch; loss < 0: none to show). */
static void progress(int tty, int epoch, int epochs, const char* what, size_t step, size_t steps,
                     double loss, double elapsed) {
  const int training = strcmp(what, "step") == 0;
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
    fprintf(stderr, "\repoch %d/%d%s [%s] %zu/%zu", epoch, epochs, training ? "" : " test", bar,
            step, steps);
    if (loss >= 0.0) fprintf(stderr, " loss %.4f", loss);
    fprintf(stderr, "  %.1fs eta %.0fs ", elapsed, eta);
    if (step == steps) fprintf(stderr, "\r%*s\r", 90, "");
  } else {
    size_t every = steps >= 10 ? steps / 10 : 1;
    if (step % every == 0 || step == steps) {
      fprintf(stderr, "epoch %d/%d %s %zu/%zu", epoch, epochs, what, step, steps);
      if (loss >= 0.0) fprintf(stderr, " loss %.4f", loss);
      fprintf(stderr, " %.1fs\n", elapsed);
    }
  }
  fflush(stderr);
}

/* Where evaluate reports its progress (show: this rank prints it). */
typedef struct {
  int show, tty, epoch, epochs;
} eval_progress;

/* ------------------------------------------------------------------------- evaluation -- */

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

/* Correct predictions among the n_test images at test_x (device) with these labels (host);
   progress on stderr as it goes (pr). */
static size_t evaluate(net* nt, float* test_x, const uint8_t* labels, size_t n_test,
                       float* host_logits, eval_progress pr) {
  size_t correct = 0;
  const size_t steps = (n_test + (size_t)nt->max_batch - 1) / (size_t)nt->max_batch;
  const double t0 = now_seconds();
  for (size_t start = 0; start < n_test; start += (size_t)nt->max_batch) {
    size_t n = n_test - start < (size_t)nt->max_batch ? n_test - start : (size_t)nt->max_batch;
    forward(nt, test_x, (uint64_t)(start * IMAGE_PIXELS * sizeof(float)), (int64_t)n, 0);
    CHECK(nnp_stream_synchronize(nt->s));
    CHECK(nnp_memcpy(NULL, host_logits, nt->dev, nt->logits, n * NUM_CLASSES * sizeof(float)));
    correct += count_correct(host_logits, labels + start, NULL, n);
    if (pr.show)
      progress(pr.tty, pr.epoch, pr.epochs, "test", start / (size_t)nt->max_batch + 1, steps, -1.0,
               now_seconds() - t0);
  }
  return correct;
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

/* --precision bfloat16 needs a device that runs the bfloat16 GEMM, the float32 -> bfloat16
   cast and, for the vit, the bfloat16 LayerNorm (float32 statistics, ABI 1.10), checked before
   any buffer is allocated, so that an unsuitable device is a message rather than a failed
   call. */
static void use_bfloat16(net* nt, const char* device, model_kind model) {
  g_act = (DLDataType){kDLBfloat, 16, 1};
  tview a, b, y, x32, y32, lx, ls, ly, lm, li;
  const nnp_gemm_params gp = {sizeof gp, 0, 0, 1.0, 0.0};
  const nnp_layer_norm_params lp = {sizeof lp, -1, 0, 1e-5};
  const struct {
    const char* what;
    int32_t kind;
    const void* params;
    size_t n_in, n_out;
    const DLTensor *in[2], *out[3];
  } probes[] = {
      {"the bfloat16 GEMM",
       NNP_OP_GEMM,
       &gp,
       2,
       1,
       {ACT(&a, NULL, 2, 2), ACT(&b, NULL, 2, 2)},
       {ACT(&y, NULL, 2, 2)}},
      {"the float32 -> bfloat16 cast",
       NNP_OP_CAST,
       NULL,
       1,
       1,
       {F32(&x32, NULL, 2, 2)},
       {ACT(&y32, NULL, 2, 2)}},
      {"the bfloat16 LayerNorm",
       NNP_OP_LAYER_NORM_FORWARD,
       &lp,
       2,
       3,
       {ACT(&lx, NULL, 2, 2), ACT(&ls, NULL, 2)},
       {ACT(&ly, NULL, 2, 2), F32(&lm, NULL, 2, 1), F32(&li, NULL, 2, 1)}},
  };
  const size_t n_probes = sizeof probes / sizeof probes[0] - (model == MODEL_VIT ? 0 : 1);
  for (size_t i = 0; i < n_probes; ++i) {
    const nnp_status st =
        nnp_op_supported(nt->dev, probes[i].kind, probes[i].params, probes[i].n_in, probes[i].in,
                         probes[i].n_out, probes[i].out);
    if (st != NNP_STATUS_OK)
      die("--precision bfloat16: %s does not run %s (%s: %s); devices with bfloat16 ops: cuda, "
          "sim",
          device, probes[i].what, nnp_status_string(st), nnp_last_error_message());
  }
}

static const nnp_gather_params gather_params = {.struct_size = sizeof gather_params, .axis = 0};

/* Queues one training step on nt->s (the batch's indices are in dev_index, its labels in
   nt->labels): the batch gather, forward, loss and backward (with the gradient all-reduce of
   distributed runs), and the Adam step number global_step + 1. Graph mode captures exactly this. */
static void train_step(net* nt, dist* d, const options* o, float* train_x, size_t n_train,
                       int64_t* dev_index, int use_gather, int64_t global_step, size_t first,
                       size_t n_local, size_t n) {
  if (use_gather && n_local > 0) {
    tview gd, gi, gy;
    CHECK(nnp_gather(nt->s, &gather_params, F32(&gd, train_x, (int64_t)n_train, IMAGE_PIXELS),
                     I64(&gi, dev_index, (int64_t)n_local),
                     F32(&gy, nt->x, (int64_t)n_local, IMAGE_PIXELS)));
  }
  dist_begin_step(d, nt, global_step + 1, first, n_local, n);
  if (n_local > 0) {
    forward(nt, nt->x, 0, (int64_t)n_local, 1);
    loss_and_backward(nt, (int64_t)n_local);
  } else { /* more ranks than images in this batch: this rank adds zero gradients */
    fill(nt, nt->grads, nt->grads_bytes / sizeof(float), 0.0);
  }
  dist_end_backward(d, nt); /* every rank now holds the gradients of the whole batch */
  adam_step(nt, o->lr, global_step + 1);
}

/* ----------------------------------------------------------------------------- main -- */

int main(int argc, char** argv) {
  options o;
  parse_options(argc, argv, &o);
  if (o.threads > 0) { /* read by the cpu backend when it loads */
    char threads[16];
    snprintf(threads, sizeof threads, "%d", o.threads);
    if (setenv("NNPLUG_NUM_THREADS", threads, 1) != 0) die("cannot set NNPLUG_NUM_THREADS");
  }
  dist d;
  dist_init(&d, o.distributed);
  const int root = d.rank == 0; /* prints and writes the logs */

  /* Data first: a missing data set is the most likely mistake and needs no device. */
  dataset train = load_split(o.data_dir, "train", o.limit);
  dataset test = load_split(o.data_dir, "t10k", o.test_limit);
  const model_kind model = strcmp(o.model, "cnn") == 0   ? MODEL_CNN
                           : strcmp(o.model, "vit") == 0 ? MODEL_VIT
                                                         : MODEL_MLP;
  {
    uint64_t lr_bits = 0;
    memcpy(&lr_bits, &o.lr, sizeof lr_bits);
    const dist_setting settings[] = {
        {"--model", (uint64_t)model},
        {"--batch", (uint64_t)o.batch},
        {"--seed", o.seed},
        {"--epochs", (uint64_t)o.epochs},
        {"--lr (its bits)", lr_bits},
        {"--bucket-kib", (uint64_t)o.bucket_kib},
        {"the training set size (--limit, --data)", (uint64_t)train.n},
        {"the test set size (--test-limit, --data)", (uint64_t)test.n},
    };
    dist_check_agreement(&d, settings, (int)(sizeof settings / sizeof settings[0]));
  }

  net nt;
  memset(&nt, 0, sizeof nt);
  nt.dev = open_device(o.backend);
  nnp_device_props props = {.struct_size = sizeof props};
  CHECK(nnp_device_get_props(nt.dev, &props));
  CHECK(nnp_device_get_dldevice(nt.dev, &g_dldevice));
  CHECK(nnp_stream_create(nt.dev, &nt.s));
  if (o.tf32) {
    const nnp_status st = nnp_stream_set_attribute(nt.s, NNP_STREAM_ATTR_ALLOW_TF32, 1);
    if (st != NNP_STATUS_OK)
      die("--tf32: %s does not take NNP_STREAM_ATTR_ALLOW_TF32: %s: %s", props.name,
          nnp_status_string(st), nnp_last_error_message());
  }

  if (strcmp(o.precision, "bfloat16") == 0) use_bfloat16(&nt, props.name, model);

  /* max_batch: the global batch; each rank holds buffers for its largest share of it. */
  int64_t max_batch = o.batch;
  if ((size_t)max_batch > train.n && train.n > 0) max_batch = (int64_t)train.n;
  size_t share_first = 0, share_max = 0;
  dist_shard((size_t)max_batch, 0, d.size, &share_first, &share_max);
  build_net(&nt, model, share_max > 0 ? (int64_t)share_max : 1, o.seed);
  dist_start(&d, &nt, (size_t)o.bucket_kib * 1024, o.overlap);

  /* The training set lives on the device for the whole run (every rank may need any image:
     the permutation is global); of the test set, this rank's share. */
  const size_t img_bytes = IMAGE_PIXELS * sizeof(float);
  size_t test_first = 0, test_n = 0;
  dist_shard(test.n, d.rank, d.size, &test_first, &test_n);
  float* train_x = dev_alloc(&nt, train.n * img_bytes);
  float* test_x = dev_alloc(&nt, (test_n ? test_n : 1) * img_bytes);
  CHECK(nnp_memcpy(nt.dev, train_x, NULL, train.images, train.n * img_bytes));
  if (test_n > 0)
    CHECK(nnp_memcpy(nt.dev, test_x, NULL, test.images + test_first * IMAGE_PIXELS,
                     test_n * img_bytes));
  free(train.images);
  free(test.images);

  const size_t steps = (train.n + (size_t)max_batch - 1) / (size_t)max_batch;
  const size_t last = train.n - (steps - 1) * (size_t)max_batch;
  if (root) {
    printf("nnplug %s: device %s (%s), model %s (%zu parameters)\n", nnp_version_string(),
           props.name, props.description, o.model, count_params(&nt));
    printf("%zu training / %zu test images, batch %" PRId64
           ", %zu steps per epoch (last batch %zu"
           " images), Adam lr %g, seed %" PRIu64 "\n",
           train.n, test.n, max_batch, steps, last, o.lr, o.seed);
    if (mixed_precision())
      printf(
          "mixed precision: bfloat16 activations, GEMMs and convolutions; float32 master "
          "weights, Adam, LayerNorm and loss\n");
    if (d.mode != DIST_NONE) printf("%s\n", dist_describe(&d));
    fflush(stdout);
  }

  /* The epoch log (appended to) names the planned epoch count on every row: a run is complete
   * when its last row has epoch == epochs. An existing file must have this header. */
  static const char epoch_header[] =
      "epoch,model,backend,train_loss,train_accuracy,test_accuracy,seconds,images_per_second,"
      "epochs\n";
  FILE* log = NULL;
  if (o.log_path && root) {
    char first[sizeof epoch_header + 1] = "";
    struct stat st; /* the header of an existing regular file (not of /dev/null, a pipe, ...) */
    FILE* probe = stat(o.log_path, &st) == 0 && S_ISREG(st.st_mode) ? fopen(o.log_path, "r") : NULL;
    if (probe) {
      if (!fgets(first, sizeof first, probe)) first[0] = '\0';
      fclose(probe);
    }
    if (first[0] != '\0' && strcmp(first, epoch_header) != 0)
      die("--log %s has another header than this program writes (%.*s); use a new file", o.log_path,
          (int)strcspn(first, "\n"), first);
    log = open_log(o.log_path, "a", "--log");
    if (first[0] == '\0') write_log(log, "--log", o.log_path, "%s", epoch_header);
  }
  FILE* loss_log = NULL;
  if (o.loss_log_path && root) {
    loss_log = open_log(o.loss_log_path, "w", "--loss-log");
    write_log(loss_log, "--loss-log", o.loss_log_path, "epoch,step,loss\n");
  }

  uint32_t* perm = xmalloc(train.n * sizeof *perm);
  for (size_t i = 0; i < train.n; ++i) perm[i] = (uint32_t)i;
  int64_t* host_labels = xmalloc((size_t)nt.max_batch * sizeof *host_labels);
  /* The batch's images: one gather op from the resident training set, its int64 indices
     copied in one go, where the device implements gather for this call; else one
     device-to-device copy per image. */
  int64_t* host_index = xmalloc((size_t)nt.max_batch * sizeof *host_index);
  int64_t* dev_index = dev_alloc(&nt, (size_t)nt.max_batch * sizeof *dev_index);
  int use_gather = 0;
  if (train.n > 0) {
    tview gd, gi, gy;
    use_gather = nnp_op_supported(
                     nt.dev, NNP_OP_GATHER, &gather_params, 2,
                     (const DLTensor* const[]){F32(&gd, train_x, (int64_t)train.n, IMAGE_PIXELS),
                                               I64(&gi, dev_index, nt.max_batch)},
                     1, (const DLTensor* const[]){F32(&gy, nt.x, nt.max_batch, IMAGE_PIXELS)}) ==
                 NNP_STATUS_OK;
  }
  float* host_logits = xmalloc((size_t)nt.max_batch * NUM_CLASSES * sizeof *host_logits);
  uint64_t shuffle_rng = o.seed ^ 0x53687566666C6521ull;
  const int tty = isatty(fileno(stderr));
  double train_seconds = 0.0, last_epoch_seconds = 0.0, final_loss = NAN, test_acc = NAN;
  int64_t global_step = 0;

  /* --graph: the first step runs eagerly (it warms up what the backend caches per shape, and
     measures the Philox counters a step draws); the next full step is captured into a graph,
     which is launched for every full batch after it. The batch's indices and labels are copied
     into the same device buffers before each launch; the last partial batch runs eagerly. */
  nnp_graph* graph = NULL;
  if (o.graph) {
    if (d.mode != DIST_NONE)
      die("--graph trains in one process: the distributed step is not captured (run without "
          "mpirun, or with --distributed none)");
    if (!use_gather)
      die("--graph needs the gather op on %s: the batch is assembled inside the graph", props.name);
    nt.step = dev_alloc(&nt, sizeof(float));
    nt.step_one = dev_alloc(&nt, sizeof(float));
    const float zero = 0.0f, one = 1.0f;
    CHECK(nnp_memcpy(nt.dev, nt.step, NULL, &zero, sizeof zero));
    CHECK(nnp_memcpy(nt.dev, nt.step_one, NULL, &one, sizeof one));
  }

  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    shuffle(perm, train.n, &shuffle_rng);
    double loss_sum = 0.0;
    size_t correct = 0;
    double t0 = now_seconds();
    for (size_t step = 0; step < steps; ++step) {
      const size_t start = step * (size_t)max_batch;
      const size_t n = step + 1 < steps ? (size_t)max_batch : last; /* the global batch */
      size_t first = 0, n_local = n;                                /* this rank's share of it */
      dist_shard(n, d.rank, d.size, &first, &n_local);
      const uint32_t* idx = perm + start + first;
      if (nt.step) nt.dropout_offset = 0; /* graph mode: the step's own counters (layers.c) */
      for (size_t i = 0; i < n_local; ++i) {
        if (use_gather)
          host_index[i] = (int64_t)idx[i];
        else
          CHECK(nnp_memcpy_async(nt.s, nt.dev, (char*)nt.x + i * img_bytes, nt.dev,
                                 (char*)train_x + (size_t)idx[i] * img_bytes, img_bytes));
        host_labels[i] = train.labels[idx[i]];
      }
      if (use_gather && n_local > 0)
        CHECK(nnp_memcpy_async(nt.s, nt.dev, dev_index, NULL, host_index,
                               n_local * sizeof *host_index));
      CHECK(
          nnp_memcpy_async(nt.s, nt.dev, nt.labels, NULL, host_labels, n_local * sizeof(int64_t)));
      const int full = n_local == (size_t)nt.max_batch;
      if (o.graph && full && graph == NULL && global_step >= 1) {
        CHECK(nnp_stream_begin_capture(nt.s));
        train_step(&nt, &d, &o, train_x, train.n, dev_index, use_gather, global_step, first,
                   n_local, n);
        CHECK(nnp_stream_end_capture(nt.s, &graph));
      }
      if (graph != NULL && full)
        CHECK(nnp_graph_launch(graph, nt.s));
      else
        train_step(&nt, &d, &o, train_x, train.n, dev_index, use_gather, global_step, first,
                   n_local, n);
      ++global_step;
      if (nt.step && full && nt.dropout_per_step == 0) nt.dropout_per_step = nt.dropout_offset;
      CHECK(nnp_stream_synchronize(nt.s));
      float loss = 0.0f;
      size_t step_correct = 0;
      if (n_local > 0) {
        CHECK(nnp_memcpy(NULL, &loss, nt.dev, nt.loss, sizeof loss));
        CHECK(nnp_memcpy(NULL, host_logits, nt.dev, nt.logits,
                         n_local * NUM_CLASSES * sizeof(float)));
        step_correct = count_correct(host_logits, train.labels, idx, n_local);
      }
      /* Sums over the ranks (nothing to do in a single process): the loss of the whole batch
         is the mean of the shares' means weighted by their sizes. */
      double sums[2] = {(double)loss * (double)n_local, (double)step_correct};
      dist_sum(&d, sums, 2);
      const double step_loss = d.mode == DIST_NONE ? (double)loss : sums[0] / (double)n;
      if (n < (size_t)d.size) { /* a rank without images drew no dropout masks: catch up */
        double offset = (double)nt.dropout_offset;
        dist_max(&d, &offset, 1);
        nt.dropout_offset = (uint64_t)offset;
      }
      if (!isfinite(step_loss))
        die("the loss is %f at epoch %d step %zu; stopping", step_loss, epoch, step);
      loss_sum += sums[0];
      correct += (size_t)sums[1];
      if (loss_log)
        write_log(loss_log, "--loss-log", o.loss_log_path, "%d,%zu,%.9g\n", epoch, step + 1,
                  step_loss);
      if (root)
        progress(tty, epoch, o.epochs, "step", step + 1, steps, loss_sum / (double)(start + n),
                 now_seconds() - t0);
    }
    double seconds = now_seconds() - t0;
    train_seconds += seconds;
    last_epoch_seconds = seconds;
    final_loss = loss_sum / (double)train.n;
    double train_acc = (double)correct / (double)train.n;
    double test_correct[1] = {(double)evaluate(&nt, test_x, test.labels + test_first, test_n,
                                               host_logits,
                                               (eval_progress){root, tty, epoch, o.epochs})};
    dist_sum(&d, test_correct, 1);
    test_acc = test_correct[0] / (double)test.n;
    if (!root) continue;
    printf(
        "epoch %d/%d: train loss %.4f, train accuracy %.4f, test accuracy %.4f, %.2f s, %.0f "
        "images/s\n",
        epoch, o.epochs, final_loss, train_acc, test_acc, seconds, (double)train.n / seconds);
    fflush(stdout);
    if (log)
      write_log(log, "--log", o.log_path, "%d,%s,%s,%.6f,%.6f,%.6f,%.4f,%.1f,%d\n", epoch, o.model,
                props.plugin_name, final_loss, train_acc, test_acc, seconds,
                (double)train.n / seconds, o.epochs);
  }

  /* The replicas must have stayed identical: every parameter and Adam moment, bitwise. */
  const int checked = dist_check_identical(&d, &nt);
  if (root && checked > 0) {
    printf("%d tensors (parameters and Adam moments) are bitwise identical on all %d rank%s\n",
           checked, d.size, d.size == 1 ? "" : "s");
  }
  if (root) {
    printf(
        "{\"model\": \"%s\", \"backend\": \"%s\", \"device\": \"%s\", \"epochs\": %d, "
        "\"batch\": %" PRId64
        ", \"train_seconds\": %.3f, \"images_per_second\": %.1f, "
        "\"test_accuracy\": %.4f, \"final_loss\": %.6f, \"ranks\": %d, "
        "\"distributed\": \"%s\", \"graph\": %s, \"tf32\": %s, \"precision\": \"%s\", "
        "\"last_epoch_seconds\": %.3f}\n",
        o.model, props.plugin_name, props.name, o.epochs, max_batch, train_seconds,
        (double)train.n * o.epochs / train_seconds, test_acc, final_loss, d.size, d.name,
        graph != NULL ? "true" : "false", o.tf32 ? "true" : "false", o.precision,
        last_epoch_seconds);
  }

  close_log(log, "--log", o.log_path);
  close_log(loss_log, "--loss-log", o.loss_log_path);
  free(perm);
  free(host_labels);
  free(host_index);
  free(host_logits);
  free(train.labels);
  free(test.labels);
  dist_stop(&d);
  CHECK(nnp_graph_destroy(graph));
  CHECK(nnp_stream_destroy(nt.s));
  for (int i = 0; i < nt.n_allocations; ++i) CHECK(nnp_free(nt.dev, nt.allocations[i]));
  free(nt.vit); /* the vit's host-side record of its buffers (NULL for mlp, cnn) */
  CHECK(nnp_shutdown());
  if (fflush(stdout) != 0 || ferror(stdout))
    die("cannot write the standard output: %s", strerror(errno));
  dist_finalize(&d);
  return 0;
}
