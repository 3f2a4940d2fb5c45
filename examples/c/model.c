/*
 * model.c — train's two networks, the Keras "mlp" and "cnn" examples, on nnplug ops: the
 * parameters (Glorot-uniform init from the seed, Adam moments), the activation buffers, forward,
 * loss and backward, and the Adam step. Plain C11.
 */
#define _POSIX_C_SOURCE 200809L
#include "model.h"

#include "layers.h"

#include <math.h>
#include <string.h>

#include "cli.h"

/* --------------------------------------------------------------------------- the PRNG -- */

/* splitmix64 (Steele, Lea, Flood 2014): init and shuffling; dropout uses nnplug's Philox. */
uint64_t rng_next(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* ------------------------------------------------------------------------------ model -- */

void* dev_alloc(net* nt, size_t bytes) {
  void* p = NULL;
  CHECK(nnp_malloc(nt->dev, bytes, &p));
  if (nt->n_allocations == (int)(sizeof nt->allocations / sizeof nt->allocations[0]))
    die("internal: too many allocations");
  nt->allocations[nt->n_allocations++] = p;
  return p;
}

/* A Keras-example parameter: Glorot uniform with these fans; biases (fan 0) draw from the
   stream too and come out zero, which keeps the weights' draws where they always were. */
static void keras_param(net* nt, const char* name, int ndim, const int64_t* shape, int fan_in,
                        int fan_out, uint64_t* rng) {
  add_param(nt, name, ndim, shape, INIT_GLOROT, fan_in, fan_out, rng);
}

static const nnp_conv2d_params kConv = {.struct_size = sizeof(nnp_conv2d_params),
                                        .stride_h = 1,
                                        .stride_w = 1,
                                        .dilation_h = 1,
                                        .dilation_w = 1,
                                        .groups = 1}; /* no padding */
/* The forward of the same convolution with its ReLU fused (ABI 1.7): y = max(conv + b, 0) in one
   pass over y. Zeroed N-D params are ONNX's defaults: stride 1, no padding, dilation 1. */
static const nnp_conv_params kConvRelu = {
    .struct_size = sizeof(nnp_conv_params), .has_clip_min = 1, .clip_min = 0.0};
static const nnp_pool2d_params kPool = {.struct_size = sizeof(nnp_pool2d_params),
                                        .mode = NNP_POOL_MAX,
                                        .window_h = 2,
                                        .window_w = 2,
                                        .stride_h = 2,
                                        .stride_w = 2};

/* The side of the square output 0 of a conv or pool on a [n, c, side, side] input (and a
   [k, c, r, r] filter for conv): the library's own shape rule, not a formula of ours. */
static int64_t out_side(int32_t kind, const void* params, int64_t c, int64_t side, int64_t k) {
  tview x, w;
  const DLTensor* in[3] = {F32(&x, NULL, 1, c, side, side), F32(&w, NULL, k, c, 3, 3), NULL};
  nnp_shape out;
  CHECK(nnp_op_infer_shapes(kind, params, kind == NNP_OP_CONV2D_FORWARD ? 3 : 1, in, 1, &out));
  return out.dims[2];
}

void build_net(net* nt, model_kind model, int64_t max_batch, uint64_t seed) {
  uint64_t rng = seed ^ 0x6E6E706C75670001ull; /* a stream of its own for the weights */
  nt->model = model;
  nt->cnn = model == MODEL_CNN;
  nt->max_batch = max_batch;
  nt->seed = seed;
  const size_t B = (size_t)max_batch, F = sizeof(float);
  if (model == MODEL_VIT) {
    vit_build(nt, &rng);
  } else if (model == MODEL_MLP) {
    keras_param(nt, "dense1.w", 2, (int64_t[]){784, 512}, 784, 512, &rng);
    keras_param(nt, "dense1.b", 1, (int64_t[]){512}, 0, 0, &rng);
    keras_param(nt, "dense2.w", 2, (int64_t[]){512, 512}, 512, 512, &rng);
    keras_param(nt, "dense2.b", 1, (int64_t[]){512}, 0, 0, &rng);
    keras_param(nt, "dense3.w", 2, (int64_t[]){512, 10}, 512, 10, &rng);
    keras_param(nt, "dense3.b", 1, (int64_t[]){10}, 0, 0, &rng);
    nt->a1 = dev_alloc(nt, B * 512 * F);
    nt->a2 = dev_alloc(nt, B * 512 * F);
    nt->da1 = dev_alloc(nt, B * 512 * F);
    nt->da2 = dev_alloc(nt, B * 512 * F);
  } else {
    nt->h1 = out_side(NNP_OP_CONV2D_FORWARD, &kConv, 1, 28, 32);
    nt->h2 = out_side(NNP_OP_CONV2D_FORWARD, &kConv, 32, nt->h1, 64);
    nt->hp = out_side(NNP_OP_POOL2D_FORWARD, &kPool, 64, nt->h2, 0);
    nt->flat = 64 * nt->hp * nt->hp;
    keras_param(nt, "conv1.w", 4, (int64_t[]){32, 1, 3, 3}, 1 * 9, 32 * 9, &rng);
    keras_param(nt, "conv1.b", 1, (int64_t[]){32}, 0, 0, &rng);
    keras_param(nt, "conv2.w", 4, (int64_t[]){64, 32, 3, 3}, 32 * 9, 64 * 9, &rng);
    keras_param(nt, "conv2.b", 1, (int64_t[]){64}, 0, 0, &rng);
    keras_param(nt, "dense1.w", 2, (int64_t[]){nt->flat, 128}, nt->flat, 128, &rng);
    keras_param(nt, "dense1.b", 1, (int64_t[]){128}, 0, 0, &rng);
    keras_param(nt, "dense2.w", 2, (int64_t[]){128, 10}, 128, 10, &rng);
    keras_param(nt, "dense2.b", 1, (int64_t[]){10}, 0, 0, &rng);
    nt->c1 = dev_alloc(nt, B * 32 * nt->h1 * nt->h1 * F);
    nt->dc1 = dev_alloc(nt, B * 32 * nt->h1 * nt->h1 * F);
    nt->c2 = dev_alloc(nt, B * 64 * nt->h2 * nt->h2 * F);
    nt->dc2 = dev_alloc(nt, B * 64 * nt->h2 * nt->h2 * F);
    nt->pool = dev_alloc(nt, B * nt->flat * F);
    nt->drop = dev_alloc(nt, B * nt->flat * F);
    nt->ddrop = dev_alloc(nt, B * nt->flat * F);
    nt->fc = dev_alloc(nt, B * 128 * F);
    nt->dfc = dev_alloc(nt, B * 128 * F);
  }
  nt->x = dev_alloc(nt, B * IMAGE_PIXELS * F);
  nt->logits = dev_alloc(nt, B * NUM_CLASSES * F);
  nt->dlogits = dev_alloc(nt, B * NUM_CLASSES * F);
  nt->labels = dev_alloc(nt, B * sizeof(int64_t));
  nt->loss = dev_alloc(nt, F);
  nt->dloss = dev_alloc(nt, F);
  nt->xc = nt->x;
  nt->logits_c = nt->logits;
  nt->dlogits_c = nt->dlogits;
  if (mixed_precision()) {
    nt->xc = dev_alloc(nt, B * IMAGE_PIXELS * ACT_BYTES);
    nt->logits_c = dev_alloc(nt, B * NUM_CLASSES * ACT_BYTES);
    nt->dlogits_c = dev_alloc(nt, B * NUM_CLASSES * ACT_BYTES);
  }
  alloc_parameters(nt);
  tview v;
  nnp_fill_params one = {sizeof one, 1.0};
  CHECK(nnp_fill(nt->s, &one, SCALAR_F32(&v, nt->dloss))); /* d(mean loss)/d(loss) = 1 */
}

size_t count_params(const net* nt) {
  size_t n = 0;
  for (int i = 0; i < nt->n_params; ++i) n += nt->p[i].numel;
  return n;
}

/* y[n, out] = x[n, in] · W[in, out] + b[out] */
static void dense_forward(net* nt, void* x, uint64_t x_off, int64_t n, const param* w,
                          const param* b, void* y) {
  tview a, bw, c, out;
  int64_t in = w->shape[0], outf = w->shape[1];
  nnp_gemm_params gp = {sizeof gp, 0, 0, 1.0, 1.0};
  CHECK(nnp_gemm(nt->s, &gp, ACTO(&a, x, x_off, n, in), ACT(&bw, w->wc, in, outf),
                 ACT(&c, b->wc, outf), ACT(&out, y, n, outf)));
}

/* dW = xᵀ·dy, db = Σ_rows dy, dx = dy·Wᵀ (dx may be NULL) */
static void dense_backward(net* nt, void* x, int64_t n, const param* w, const param* b, void* dy,
                           void* dx) {
  tview a, bb, out;
  int64_t in = w->shape[0], outf = w->shape[1];
  nnp_gemm_params gw = {sizeof gw, 1, 0, 1.0, 0.0};
  CHECK(nnp_gemm(nt->s, &gw, ACT(&a, x, n, in), ACT(&bb, dy, n, outf), NULL,
                 ACT(&out, w->gc, in, outf)));
  nnp_reduce_params rp = {
      .struct_size = sizeof rp, .op = NNP_REDUCE_SUM, .keepdims = 0, .n_axes = 1, .axes = {0}};
  CHECK(nnp_reduce(nt->s, &rp, ACT(&a, dy, n, outf), ACT(&out, b->gc, outf)));
  grad_ready(nt, w);
  grad_ready(nt, b);
  if (dx) {
    nnp_gemm_params gx = {sizeof gx, 0, 1, 1.0, 0.0};
    CHECK(nnp_gemm(nt->s, &gx, ACT(&a, dy, n, outf), ACT(&bb, w->wc, in, outf), NULL,
                   ACT(&out, dx, n, in)));
  }
}

static const nnp_activation_params kRelu = {sizeof(nnp_activation_params), NNP_ACTIVATION_RELU, 0,
                                            0.0};

static void relu_forward(net* nt, void* y, int64_t numel) { /* in place */
  tview a, b;
  CHECK(nnp_activation_forward(nt->s, &kRelu, ACT(&a, y, numel), ACT(&b, y, numel)));
}

/* dy *= relu'(y), in place. y is the ReLU's output, possibly scaled by dropout afterwards:
   y > 0 exactly where the input was > 0 (or 0 where dropout already zeroed dy). */
static void relu_backward(net* nt, void* y, void* dy, int64_t numel) {
  tview a, b, c;
  CHECK(nnp_activation_backward(nt->s, &kRelu, ACT(&a, y, numel), ACT(&b, dy, numel),
                                ACT(&c, dy, numel)));
}

/* Forward pass of n images starting at byte `x_off` of `x` ([N, 784] float32); leaves the
   logits in nt->logits (float32). training = 1 applies dropout. Mixed precision: the weights
   and the images are cast to g_act first (nt->weights_c, nt->xc), the logits back at the end. */
void forward(net* nt, void* x, uint64_t x_off, int64_t n, int training) {
  param* p = nt->p;
  const int mixed = mixed_precision();
  if (mixed) {
    tview a, b;
    const int64_t nw = (int64_t)(nt->grads_bytes / sizeof(float));
    cast(nt, F32(&a, nt->weights, nw), ACT(&b, nt->weights_c, nw));
    cast(nt, F32O(&a, x, x_off, n, IMAGE_PIXELS), ACT(&b, nt->xc, n, IMAGE_PIXELS));
    x = nt->xc;
    x_off = 0;
  }
  if (nt->model == MODEL_VIT) {
    vit_forward(nt, x, x_off, n, training);
  } else if (nt->model == MODEL_MLP) {
    dense_forward(nt, x, x_off, n, &p[0], &p[1], nt->a1);
    relu_forward(nt, nt->a1, n * 512);
    if (training) dropout_forward(nt, 0, 0.2, nt->a1, nt->a1, n * 512, n);
    dense_forward(nt, nt->a1, 0, n, &p[2], &p[3], nt->a2);
    relu_forward(nt, nt->a2, n * 512);
    if (training) dropout_forward(nt, 1, 0.2, nt->a2, nt->a2, n * 512, n);
    dense_forward(nt, nt->a2, 0, n, &p[4], &p[5], nt->logits_c);
  } else {
    tview a, b, c, d;
    CHECK(nnp_conv_forward(nt->s, &kConvRelu, ACTO(&a, x, x_off, n, 1, 28, 28),
                           ACT(&b, p[0].wc, 32, 1, 3, 3), ACT(&c, p[1].wc, 32),
                           ACT(&d, nt->c1, n, 32, nt->h1, nt->h1)));
    CHECK(nnp_conv_forward(nt->s, &kConvRelu, ACT(&a, nt->c1, n, 32, nt->h1, nt->h1),
                           ACT(&b, p[2].wc, 64, 32, 3, 3), ACT(&c, p[3].wc, 64),
                           ACT(&d, nt->c2, n, 64, nt->h2, nt->h2)));
    CHECK(nnp_pool2d_forward(nt->s, &kPool, ACT(&a, nt->c2, n, 64, nt->h2, nt->h2),
                             ACT(&b, nt->pool, n, 64, nt->hp, nt->hp)));
    float* flat = nt->pool; /* [n, flat]: NCHW flattened as torch's nn.Flatten */
    if (training) {
      dropout_forward(nt, 0, 0.25, nt->pool, nt->drop, n * nt->flat, n);
      flat = nt->drop;
    }
    dense_forward(nt, flat, 0, n, &p[4], &p[5], nt->fc);
    relu_forward(nt, nt->fc, n * 128);
    if (training) dropout_forward(nt, 1, 0.5, nt->fc, nt->fc, n * 128, n);
    dense_forward(nt, nt->fc, 0, n, &p[6], &p[7], nt->logits_c);
  }
  if (mixed) {
    tview a, b;
    cast(nt, ACT(&a, nt->logits_c, n, NUM_CLASSES), F32(&b, nt->logits, n, NUM_CLASSES));
  }
}

/* The gradients of a cnn conv layer's (kConv) 3x3 filter pw [co, ci, 3, 3] and bias pb [co],
   from its input x [n, ci, hx, hx] and its output's gradient dy [n, co, hy, hy]; both are then
   ready (grad_ready). The bias gradient sums db [n, co, hb, hb]: dy itself, or a tensor with the
   same channel sums. */
static void conv_backward_params(net* nt, int64_t n, void* x, int64_t ci, int64_t hx, void* dy,
                                 int64_t co, int64_t hy, void* db, int64_t hb, param* pw,
                                 param* pb) {
  tview a, b, c;
  CHECK(nnp_conv2d_backward_filter(nt->s, &kConv, ACT(&a, x, n, ci, hx, hx),
                                   ACT(&b, dy, n, co, hy, hy), ACT(&c, pw->gc, co, ci, 3, 3)));
  CHECK(nnp_conv2d_backward_bias(nt->s, ACT(&a, db, n, co, hb, hb), ACT(&b, pb->gc, co)));
  grad_ready(nt, pw);
  grad_ready(nt, pb);
}

/* Loss of the batch in nt->logits against nt->labels, then gradients of every parameter.
   The loss runs in float32 on the float32 logits; in mixed precision its gradient is cast to
   g_act (nt->dlogits_c) for the layers, and their gradients (nt->grads_c) back to float32 at
   the end. */
void loss_and_backward(net* nt, int64_t n) {
  tview a, b, c, d;
  const int mixed = mixed_precision();
  nnp_softmax_cross_entropy_params cp = {sizeof cp, NNP_REDUCTION_MEAN, 0, 0};
  CHECK(nnp_softmax_cross_entropy_forward(nt->s, &cp, F32(&a, nt->logits, n, NUM_CLASSES),
                                          I64(&b, nt->labels, n), SCALAR_F32(&c, nt->loss), NULL));
  CHECK(nnp_softmax_cross_entropy_backward(nt->s, &cp, F32(&a, nt->logits, n, NUM_CLASSES),
                                           I64(&b, nt->labels, n), SCALAR_F32(&c, nt->dloss),
                                           F32(&d, nt->dlogits, n, NUM_CLASSES)));
  if (mixed) cast(nt, F32(&a, nt->dlogits, n, NUM_CLASSES), ACT(&b, nt->dlogits_c, n, NUM_CLASSES));
  param* p = nt->p;
  if (nt->model == MODEL_VIT) {
    vit_backward(nt, n);
  } else if (nt->model == MODEL_MLP) {
    dense_backward(nt, nt->a2, n, &p[4], &p[5], nt->dlogits_c, nt->da2);
    dropout_backward(nt, 1, nt->da2, nt->da2, n * 512);
    relu_backward(nt, nt->a2, nt->da2, n * 512);
    dense_backward(nt, nt->a1, n, &p[2], &p[3], nt->da2, nt->da1);
    dropout_backward(nt, 0, nt->da1, nt->da1, n * 512);
    relu_backward(nt, nt->a1, nt->da1, n * 512);
    dense_backward(nt, nt->xc, n, &p[0], &p[1], nt->da1, NULL);
  } else {
    dense_backward(nt, nt->fc, n, &p[6], &p[7], nt->dlogits_c, nt->dfc);
    dropout_backward(nt, 1, nt->dfc, nt->dfc, n * 128);
    relu_backward(nt, nt->fc, nt->dfc, n * 128);
    dense_backward(nt, nt->drop, n, &p[4], &p[5], nt->dfc, nt->ddrop);
    dropout_backward(nt, 0, nt->ddrop, nt->ddrop, n * nt->flat); /* now d(pool) */
    /* conv2's ReLU, on the pooled gradient: max pooling routes each window's gradient to its
       maximum, where ReLU's derivative is 1 exactly when the window's max (pool) is > 0, and
       every other position gets 0 either way; so d(pool) *= (pool > 0) before the routing
       gives what dc2 *= (c2 > 0) after it gives, on a tensor 4x smaller. For the same reason
       conv2's bias gradient (the sum of dc2 over each channel) is the sum of d(pool). */
    relu_backward(nt, nt->pool, nt->ddrop, n * nt->flat);
    CHECK(nnp_pool2d_backward(nt->s, &kPool, ACT(&a, nt->c2, n, 64, nt->h2, nt->h2),
                              ACT(&b, nt->pool, n, 64, nt->hp, nt->hp),
                              ACT(&c, nt->ddrop, n, 64, nt->hp, nt->hp),
                              ACT(&d, nt->dc2, n, 64, nt->h2, nt->h2)));
    conv_backward_params(nt, n, nt->c1, 32, nt->h1, nt->dc2, 64, nt->h2, nt->ddrop, nt->hp, &p[2],
                         &p[3]);
    CHECK(nnp_conv2d_backward_data(nt->s, &kConv, ACT(&a, nt->dc2, n, 64, nt->h2, nt->h2),
                                   ACT(&b, p[2].wc, 64, 32, 3, 3),
                                   ACT(&c, nt->dc1, n, 32, nt->h1, nt->h1)));
    relu_backward(nt, nt->c1, nt->dc1, n * 32 * nt->h1 * nt->h1);
    conv_backward_params(nt, n, nt->xc, 1, 28, nt->dc1, 32, nt->h1, nt->dc1, nt->h1, &p[0], &p[1]);
  }
  if (mixed && !nt->grad_ready) { /* with the hook, grad_ready cast each one already */
    const int64_t nw = (int64_t)(nt->grads_bytes / sizeof(float));
    cast(nt, ACT(&a, nt->grads_c, nw), F32(&b, nt->grads, nw));
  }
}

void adam_step(net* nt, double lr, int64_t step) {
  nnp_adam_params ap = {sizeof ap, lr, 0.9, 0.999, 1e-8, 0.0, step, 0, 0};
  tview st, one;
  if (nt->step) { /* graph mode: step += 1 on the device; Adam reads it there */
    const nnp_binary_params add = {sizeof add, NNP_BINARY_ADD, 0};
    CHECK(nnp_binary(nt->s, &add, F32(&st, nt->step, 1), F32(&one, nt->step_one, 1),
                     F32(&st, nt->step, 1)));
  }
  /* One update of every parameter: Adam is elementwise, and values, gradients and moments
     share one layout (alloc_parameters), so one call over the whole buffers gives each element
     what a call per parameter would, with one kernel launch instead of one per parameter. */
  tview g, w, m, v;
  const int64_t n = (int64_t)(nt->grads_bytes / sizeof(float));
  if (nt->step)
    CHECK(nnp_op_execute(nt->s, NNP_OP_ADAM_UPDATE, &ap, 2,
                         (const DLTensor* const[]){F32(&g, nt->grads, n), F32(&st, nt->step, 1)}, 3,
                         (const DLTensor* const[]){F32(&w, nt->weights, n), F32(&m, nt->adam_m, n),
                                                   F32(&v, nt->adam_v, n)}));
  else
    CHECK(nnp_adam_update(nt->s, &ap, F32(&g, nt->grads, n), F32(&w, nt->weights, n),
                          F32(&m, nt->adam_m, n), F32(&v, nt->adam_v, n)));
}
