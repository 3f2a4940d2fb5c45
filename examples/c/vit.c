/*
 * vit.c — train's small Vision Transformer on nnplug ops, the `vit` of the PyTorch yardstick
 * (bench/torch_models.py in the project's shared benchmarks; Dosovitskiy et al., "An image is
 * worth 16x16 words", ICLR 2021):
 *   7x7 patches of the 28x28 image (16 tokens of 49 pixels: a transpose, no copy loop) ->
 *   Linear(49, 64); a learned class token first and learned position embeddings (17 x 64,
 *   normal with std 0.02); 4 pre-norm blocks
 *     x = x + Dropout(0.1)(Proj(Attention(LayerNorm(x))))     4 heads of 16, scale 1/4
 *     x = x + Dropout(0.1)(Linear(128, 64)(GELU(Linear(64, 128)(LayerNorm(x)))))  exact GELU
 *   then LayerNorm of the class token -> Linear(64, 10). LayerNorm eps 1e-5; Linear weights
 *   Glorot uniform (the q, k and v projections with the fans of PyTorch's one [192, 64] qkv
 *   weight), biases zero; 139 018 parameters.
 * The attention is nnplug's fused op (NNP_OP_ATTENTION_*) on the rank-3 layout [B, T, H*D],
 * which is what the q/k/v Linear layers produce and the output projection reads. The class
 * token and the patch embeddings are placed into the token sequence, and the class token read
 * back, with strided NNP_OP_COPY calls (views, no concat buffers). Plain C11.
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "cli.h"
#include "layers.h"
#include "model.h"

enum {
  kPatch = 7,
  kSide = 28 / kPatch,       /* 4 patches per side */
  kPatches = kSide * kSide,  /* 16 */
  kPixels = kPatch * kPatch, /* 49 */
  kTokens = kPatches + 1,    /* 17: the class token first */
  kDim = 64,
  kHeads = 4,
  kHidden = 128,
  kDepth = 4,
};
static const double kDrop = 0.1;

typedef struct vit_block {
  param *ln1s, *ln1b, *qw, *qb, *kw, *kb, *vw, *vb, *projw, *projb;
  param *ln2s, *ln2b, *fc1w, *fc1b, *fc2w, *fc2b;
  /* saved for backward, [max_batch * kTokens, ...] */
  float *h_in, *y1, *mean1, *inv1, *q, *k, *v, *a, *lse, *h_mid, *y2, *mean2, *inv2, *f1, *g;
} vit_block;

struct vit_state {
  param *embw, *embb, *cls, *pos, *lns, *lnb, *headw, *headb;
  vit_block blk[kDepth];
  float *patches, *emb, *h_out, *cls_tok, *z, *zmean, *zinv, *o; /* forward */
  float *dh, *dtmp, *d64, *d128, *dq, *dk, *dv, *da, *dz, *dcls; /* backward */
};

static const nnp_activation_params kGelu = {sizeof(nnp_activation_params), NNP_ACTIVATION_GELU_ERF,
                                            0, 0.0};

static float* rows_alloc(net* nt, int64_t per_row) {
  return dev_alloc(nt, (size_t)nt->max_batch * (size_t)per_row * sizeof(float));
}

void vit_build(net* nt, uint64_t* rng) {
  struct vit_state* st = xmalloc(sizeof *st);
  memset(st, 0, sizeof *st);
  nt->vit = st;
  st->embw =
      add_param(nt, "embed.w", 2, (int64_t[]){kDim, kPixels}, INIT_GLOROT, kPixels, kDim, rng);
  st->embb = add_param(nt, "embed.b", 1, (int64_t[]){kDim}, INIT_ZERO, 0, 0, rng);
  st->cls = add_param(nt, "cls", 3, (int64_t[]){1, 1, kDim}, INIT_ZERO, 0, 0, rng);
  st->pos = add_param(nt, "pos", 3, (int64_t[]){1, kTokens, kDim}, INIT_NORMAL_002, 0, 0, rng);
  for (int l = 0; l < kDepth; ++l) {
    vit_block* b = &st->blk[l];
    const int64_t d[1] = {kDim};
    b->ln1s = add_param(nt, "ln1.scale", 1, d, INIT_ONE, 0, 0, rng);
    b->ln1b = add_param(nt, "ln1.bias", 1, d, INIT_ZERO, 0, 0, rng);
    /* PyTorch's qkv is one Linear(64, 192): its Glorot fans are 64 and 192. */
    b->qw = add_param(nt, "q.w", 2, (int64_t[]){kDim, kDim}, INIT_GLOROT, kDim, 3 * kDim, rng);
    b->kw = add_param(nt, "k.w", 2, (int64_t[]){kDim, kDim}, INIT_GLOROT, kDim, 3 * kDim, rng);
    b->vw = add_param(nt, "v.w", 2, (int64_t[]){kDim, kDim}, INIT_GLOROT, kDim, 3 * kDim, rng);
    b->qb = add_param(nt, "q.b", 1, d, INIT_ZERO, 0, 0, rng);
    b->kb = add_param(nt, "k.b", 1, d, INIT_ZERO, 0, 0, rng);
    b->vb = add_param(nt, "v.b", 1, d, INIT_ZERO, 0, 0, rng);
    b->projw = add_param(nt, "proj.w", 2, (int64_t[]){kDim, kDim}, INIT_GLOROT, kDim, kDim, rng);
    b->projb = add_param(nt, "proj.b", 1, d, INIT_ZERO, 0, 0, rng);
    b->ln2s = add_param(nt, "ln2.scale", 1, d, INIT_ONE, 0, 0, rng);
    b->ln2b = add_param(nt, "ln2.bias", 1, d, INIT_ZERO, 0, 0, rng);
    b->fc1w =
        add_param(nt, "fc1.w", 2, (int64_t[]){kHidden, kDim}, INIT_GLOROT, kDim, kHidden, rng);
    b->fc1b = add_param(nt, "fc1.b", 1, (int64_t[]){kHidden}, INIT_ZERO, 0, 0, rng);
    b->fc2w =
        add_param(nt, "fc2.w", 2, (int64_t[]){kDim, kHidden}, INIT_GLOROT, kHidden, kDim, rng);
    b->fc2b = add_param(nt, "fc2.b", 1, d, INIT_ZERO, 0, 0, rng);
    b->h_in = rows_alloc(nt, kTokens * kDim);
    b->y1 = rows_alloc(nt, kTokens * kDim);
    b->mean1 = rows_alloc(nt, kTokens);
    b->inv1 = rows_alloc(nt, kTokens);
    b->q = rows_alloc(nt, kTokens * kDim);
    b->k = rows_alloc(nt, kTokens * kDim);
    b->v = rows_alloc(nt, kTokens * kDim);
    b->a = rows_alloc(nt, kTokens * kDim);
    b->lse = rows_alloc(nt, kHeads * kTokens);
    b->h_mid = rows_alloc(nt, kTokens * kDim);
    b->y2 = rows_alloc(nt, kTokens * kDim);
    b->mean2 = rows_alloc(nt, kTokens);
    b->inv2 = rows_alloc(nt, kTokens);
    b->f1 = rows_alloc(nt, kTokens * kHidden);
    b->g = rows_alloc(nt, kTokens * kHidden);
  }
  st->lns = add_param(nt, "ln.scale", 1, (int64_t[]){kDim}, INIT_ONE, 0, 0, rng);
  st->lnb = add_param(nt, "ln.bias", 1, (int64_t[]){kDim}, INIT_ZERO, 0, 0, rng);
  st->headw = add_param(nt, "head.w", 2, (int64_t[]){NUM_CLASSES, kDim}, INIT_GLOROT, kDim,
                        NUM_CLASSES, rng);
  st->headb = add_param(nt, "head.b", 1, (int64_t[]){NUM_CLASSES}, INIT_ZERO, 0, 0, rng);
  st->patches = rows_alloc(nt, kPatches * kPixels);
  st->emb = rows_alloc(nt, kPatches * kDim);
  st->h_out = rows_alloc(nt, kTokens * kDim);
  st->o = rows_alloc(nt, kTokens * kDim);
  st->cls_tok = rows_alloc(nt, kDim);
  st->z = rows_alloc(nt, kDim);
  st->zmean = rows_alloc(nt, 1);
  st->zinv = rows_alloc(nt, 1);
  st->dh = rows_alloc(nt, kTokens * kDim);
  st->dtmp = rows_alloc(nt, kTokens * kDim);
  st->d64 = rows_alloc(nt, kTokens * kDim);
  st->d128 = rows_alloc(nt, kTokens * kHidden);
  st->dq = rows_alloc(nt, kTokens * kDim);
  st->dk = rows_alloc(nt, kTokens * kDim);
  st->dv = rows_alloc(nt, kTokens * kDim);
  st->da = rows_alloc(nt, kTokens * kDim);
  st->dz = rows_alloc(nt, kDim);
  st->dcls = rows_alloc(nt, kDim);
}

/* ---------------------------------------------------------------------------- helpers -- */

/* Token t of every image of a [n, kTokens, kDim] sequence (count tokens from t) as a strided
   [n, count, kDim] view, for NNP_OP_COPY. */
static const DLTensor* tokens(tview* v, float* seq, int64_t n, int64_t t, int64_t count) {
  return make_strided(v, seq, (uint64_t)(t * kDim) * sizeof(float), (int64_t[]){n, count, kDim},
                      (int64_t[]){kTokens * kDim, kDim, 1}, 3);
}

static void copy(net* nt, const DLTensor* x, const DLTensor* y) { CHECK(nnp_copy(nt->s, x, y)); }

/* y = a + b, same shape [rows, kDim]; y may be a or b. */
static void add(net* nt, float* a, float* b, float* y, int64_t rows) {
  tview ta, tb, ty;
  nnp_binary_params bp = {.struct_size = sizeof bp, .op = NNP_BINARY_ADD};
  CHECK(nnp_binary(nt->s, &bp, F32(&ta, a, rows, kDim), F32(&tb, b, rows, kDim),
                   F32(&ty, y, rows, kDim)));
}

/* LayerNorm over the last axis, eps 1e-5 (PyTorch's default) */
static const nnp_layer_norm_params kLn = {sizeof(nnp_layer_norm_params), -1, 0, 1e-5};

static void ln_forward(net* nt, float* x, const param* s, const param* b, float* y, float* mean,
                       float* inv, int64_t rows) {
  tview tx, ts, tb, ty, tm, ti;
  CHECK(nnp_layer_norm_forward(nt->s, &kLn, F32(&tx, x, rows, kDim), F32(&ts, s->w, kDim),
                               F32(&tb, b->w, kDim), F32(&ty, y, rows, kDim),
                               F32(&tm, mean, rows, 1), F32(&ti, inv, rows, 1)));
}

static void ln_backward(net* nt, float* x, float* dy, const param* s, param* b, float* mean,
                        float* inv, float* dx, int64_t rows) {
  tview tx, tdy, ts, tm, ti, tdx, tds, tdb;
  CHECK(nnp_layer_norm_backward(nt->s, &kLn, F32(&tx, x, rows, kDim), F32(&tdy, dy, rows, kDim),
                                F32(&ts, s->w, kDim), F32(&tm, mean, rows, 1),
                                F32(&ti, inv, rows, 1), F32(&tdx, dx, rows, kDim),
                                F32(&tds, s->g, kDim), F32(&tdb, b->g, kDim)));
  grad_ready(nt, s);
  grad_ready(nt, b);
}

/* The gradients of a Linear layer's weight and bias are complete. */
static void linear_ready(net* nt, const param* w, const param* b) {
  grad_ready(nt, w);
  grad_ready(nt, b);
}

static nnp_attention_params attention_params(void) {
  nnp_attention_params ap;
  memset(&ap, 0, sizeof ap);
  ap.struct_size = sizeof ap;
  ap.q_num_heads = kHeads;
  ap.kv_num_heads = kHeads;
  return ap; /* scale 0: 1/sqrt(16) */
}

/* ---------------------------------------------------------------------------- forward -- */

void vit_forward(net* nt, void* x, uint64_t x_off, int64_t n, int training) {
  struct vit_state* st = nt->vit;
  const int64_t rows = n * kTokens;
  tview a, b, c, d, e;
  /* [n, 1, 28, 28] as [n, 4, 7, 4, 7] -> [n, 4, 4, 7, 7]: the 16 patches of 49 pixels. */
  nnp_transpose_params tp = {.struct_size = sizeof tp, .perm = {0, 1, 3, 2, 4}};
  CHECK(nnp_transpose(nt->s, &tp, F32O(&a, x, x_off, n, kSide, kPatch, kSide, kPatch),
                      F32(&b, st->patches, n, kSide, kSide, kPatch, kPatch)));
  linear_forward(nt, st->patches, n * kPatches, kPixels, kDim, st->embw->w, st->embb->w, st->emb);
  /* tokens: [class token, the 16 patch embeddings] + position embeddings */
  float* h = st->blk[0].h_in;
  copy(nt, make_strided(&a, st->cls->w, 0, (int64_t[]){n, 1, kDim}, (int64_t[]){0, 0, 1}, 3),
       tokens(&b, h, n, 0, 1));
  copy(nt, F32(&a, st->emb, n, kPatches, kDim), tokens(&b, h, n, 1, kPatches));
  nnp_binary_params bp = {.struct_size = sizeof bp, .op = NNP_BINARY_ADD};
  CHECK(nnp_binary(nt->s, &bp, F32(&a, h, n, kTokens, kDim), F32(&b, st->pos->w, kTokens, kDim),
                   F32(&c, h, n, kTokens, kDim)));
  const nnp_attention_params ap = attention_params();
  for (int l = 0; l < kDepth; ++l) {
    vit_block* k = &st->blk[l];
    float* out = l + 1 < kDepth ? st->blk[l + 1].h_in : st->h_out;
    ln_forward(nt, k->h_in, k->ln1s, k->ln1b, k->y1, k->mean1, k->inv1, rows);
    linear_forward(nt, k->y1, rows, kDim, kDim, k->qw->w, k->qb->w, k->q);
    linear_forward(nt, k->y1, rows, kDim, kDim, k->kw->w, k->kb->w, k->k);
    linear_forward(nt, k->y1, rows, kDim, kDim, k->vw->w, k->vb->w, k->v);
    CHECK(nnp_attention_forward(nt->s, &ap, F32(&a, k->q, n, kTokens, kDim),
                                F32(&b, k->k, n, kTokens, kDim), F32(&c, k->v, n, kTokens, kDim),
                                NULL, F32(&d, k->a, n, kTokens, kDim),
                                F32(&e, k->lse, n, kHeads, kTokens)));
    linear_forward(nt, k->a, rows, kDim, kDim, k->projw->w, k->projb->w, st->o);
    if (training) dropout_forward(nt, 2 * l, kDrop, st->o, st->o, rows * kDim, n);
    add(nt, k->h_in, st->o, k->h_mid, rows);
    ln_forward(nt, k->h_mid, k->ln2s, k->ln2b, k->y2, k->mean2, k->inv2, rows);
    linear_forward(nt, k->y2, rows, kDim, kHidden, k->fc1w->w, k->fc1b->w, k->f1);
    CHECK(nnp_activation_forward(nt->s, &kGelu, F32(&a, k->f1, rows * kHidden),
                                 F32(&b, k->g, rows * kHidden)));
    linear_forward(nt, k->g, rows, kHidden, kDim, k->fc2w->w, k->fc2b->w, st->o);
    if (training) dropout_forward(nt, 2 * l + 1, kDrop, st->o, st->o, rows * kDim, n);
    add(nt, k->h_mid, st->o, out, rows);
  }
  copy(nt, tokens(&a, st->h_out, n, 0, 1), F32(&b, st->cls_tok, n, 1, kDim));
  ln_forward(nt, st->cls_tok, st->lns, st->lnb, st->z, st->zmean, st->zinv, n);
  linear_forward(nt, st->z, n, kDim, NUM_CLASSES, st->headw->w, st->headb->w, nt->logits);
}

/* --------------------------------------------------------------------------- backward -- */

void vit_backward(net* nt, int64_t n) {
  struct vit_state* st = nt->vit;
  const int64_t rows = n * kTokens;
  tview a, b, c, d, e, f, g, h, i;
  linear_backward(nt, st->z, nt->dlogits, n, kDim, NUM_CLASSES, st->headw->w, st->headw->g,
                  st->headb->g, st->dz, 0);
  linear_ready(nt, st->headw, st->headb);
  ln_backward(nt, st->cls_tok, st->dz, st->lns, st->lnb, st->zmean, st->zinv, st->dcls, n);
  /* d(sequence): the class token's gradient, zero elsewhere */
  fill(nt, st->dh, (size_t)(rows * kDim), 0.0);
  copy(nt, F32(&a, st->dcls, n, 1, kDim), tokens(&b, st->dh, n, 0, 1));
  const nnp_attention_params ap = attention_params();
  for (int l = kDepth - 1; l >= 0; --l) {
    vit_block* k = &st->blk[l];
    /* MLP branch: dh is d(block output) */
    dropout_backward(nt, 2 * l + 1, st->dh, st->d64, rows * kDim);
    linear_backward(nt, k->g, st->d64, rows, kHidden, kDim, k->fc2w->w, k->fc2w->g, k->fc2b->g,
                    st->d128, 0);
    linear_ready(nt, k->fc2w, k->fc2b);
    CHECK(nnp_activation_backward(nt->s, &kGelu, F32(&a, k->f1, rows * kHidden),
                                  F32(&b, st->d128, rows * kHidden),
                                  F32(&c, st->d128, rows * kHidden)));
    linear_backward(nt, k->y2, st->d128, rows, kDim, kHidden, k->fc1w->w, k->fc1w->g, k->fc1b->g,
                    st->d64, 0);
    linear_ready(nt, k->fc1w, k->fc1b);
    ln_backward(nt, k->h_mid, st->d64, k->ln2s, k->ln2b, k->mean2, k->inv2, st->dtmp, rows);
    add(nt, st->dh, st->dtmp, st->dh, rows); /* now d(h_mid) */
    /* attention branch */
    dropout_backward(nt, 2 * l, st->dh, st->d64, rows * kDim);
    linear_backward(nt, k->a, st->d64, rows, kDim, kDim, k->projw->w, k->projw->g, k->projb->g,
                    st->da, 0);
    linear_ready(nt, k->projw, k->projb);
    CHECK(nnp_attention_backward(
        nt->s, &ap, F32(&a, k->q, n, kTokens, kDim), F32(&b, k->k, n, kTokens, kDim),
        F32(&c, k->v, n, kTokens, kDim), NULL, F32(&d, k->a, n, kTokens, kDim),
        F32(&e, st->da, n, kTokens, kDim), F32(&f, k->lse, n, kHeads, kTokens),
        F32(&g, st->dq, n, kTokens, kDim), F32(&h, st->dk, n, kTokens, kDim),
        F32(&i, st->dv, n, kTokens, kDim)));
    linear_backward(nt, k->y1, st->dq, rows, kDim, kDim, k->qw->w, k->qw->g, k->qb->g, st->d64, 0);
    linear_backward(nt, k->y1, st->dk, rows, kDim, kDim, k->kw->w, k->kw->g, k->kb->g, st->d64, 1);
    linear_backward(nt, k->y1, st->dv, rows, kDim, kDim, k->vw->w, k->vw->g, k->vb->g, st->d64, 1);
    linear_ready(nt, k->qw, k->qb);
    linear_ready(nt, k->kw, k->kb);
    linear_ready(nt, k->vw, k->vb);
    ln_backward(nt, k->h_in, st->d64, k->ln1s, k->ln1b, k->mean1, k->inv1, st->dtmp, rows);
    add(nt, st->dh, st->dtmp, st->dh, rows); /* now d(h_in) */
  }
  /* tokens = [cls; patch embeddings] + pos: d(pos) sums over images; d(cls) is its token 0 */
  nnp_reduce_params rp = {
      .struct_size = sizeof rp, .op = NNP_REDUCE_SUM, .keepdims = 1, .n_axes = 1, .axes = {0}};
  CHECK(nnp_reduce(nt->s, &rp, F32(&a, st->dh, n, kTokens, kDim),
                   F32(&b, st->pos->g, 1, kTokens, kDim)));
  copy(nt, F32(&a, st->pos->g, 1, 1, kDim), F32(&b, st->cls->g, 1, 1, kDim));
  grad_ready(nt, st->pos);
  grad_ready(nt, st->cls);
  copy(nt, tokens(&a, st->dh, n, 1, kPatches), F32(&b, st->emb, n, kPatches, kDim));
  linear_backward(nt, st->patches, st->emb, n * kPatches, kPixels, kDim, st->embw->w, st->embw->g,
                  st->embb->g, NULL, 0);
  linear_ready(nt, st->embw, st->embb);
}
