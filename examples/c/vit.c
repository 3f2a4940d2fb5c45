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
 * back, with strided NNP_OP_COPY calls (views, no concat buffers).
 * Mixed precision (g_act bfloat16): every layer computes in g_act, the LayerNorms too, whose
 * mean and inv_std are float32 (the op table's accumulation rule, ABI 1.10: statistics and
 * sums in float32, as PyTorch's autocast runs layer_norm, with only the bfloat16 input, output
 * and parameters rounded). Plain C11.
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

/* [max_batch, per_row] float32 elements (enough for g_act's too). */
static float* rows_alloc(net* nt, int64_t per_row) {
  return dev_alloc(nt, (size_t)nt->max_batch * (size_t)per_row * sizeof(float));
}

/* A LayerNorm's scale or bias: ones or zeros. */
static param* ln_param(net* nt, const char* name, param_init init, uint64_t* rng) {
  return add_param(nt, name, 1, (int64_t[]){kDim}, init, 0, 0, rng);
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
    b->ln1s = ln_param(nt, "ln1.scale", INIT_ONE, rng);
    b->ln1b = ln_param(nt, "ln1.bias", INIT_ZERO, rng);
    /* PyTorch's qkv is one Linear(64, 192): its Glorot fans are 64 and 192. */
    b->qw = add_param(nt, "q.w", 2, (int64_t[]){kDim, kDim}, INIT_GLOROT, kDim, 3 * kDim, rng);
    b->kw = add_param(nt, "k.w", 2, (int64_t[]){kDim, kDim}, INIT_GLOROT, kDim, 3 * kDim, rng);
    b->vw = add_param(nt, "v.w", 2, (int64_t[]){kDim, kDim}, INIT_GLOROT, kDim, 3 * kDim, rng);
    b->qb = add_param(nt, "q.b", 1, d, INIT_ZERO, 0, 0, rng);
    b->kb = add_param(nt, "k.b", 1, d, INIT_ZERO, 0, 0, rng);
    b->vb = add_param(nt, "v.b", 1, d, INIT_ZERO, 0, 0, rng);
    b->projw = add_param(nt, "proj.w", 2, (int64_t[]){kDim, kDim}, INIT_GLOROT, kDim, kDim, rng);
    b->projb = add_param(nt, "proj.b", 1, d, INIT_ZERO, 0, 0, rng);
    b->ln2s = ln_param(nt, "ln2.scale", INIT_ONE, rng);
    b->ln2b = ln_param(nt, "ln2.bias", INIT_ZERO, rng);
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
  st->lns = ln_param(nt, "ln.scale", INIT_ONE, rng);
  st->lnb = ln_param(nt, "ln.bias", INIT_ZERO, rng);
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
  return make_strided(v, seq, (uint64_t)(t * kDim) * ACT_BYTES, (int64_t[]){n, count, kDim},
                      (int64_t[]){kTokens * kDim, kDim, 1}, 3);
}

static void copy(net* nt, const DLTensor* x, const DLTensor* y) { CHECK(nnp_copy(nt->s, x, y)); }

/* y = a + b, same shape [rows, kDim]; y may be a or b. */
static void add(net* nt, float* a, float* b, float* y, int64_t rows) {
  tview ta, tb, ty;
  nnp_binary_params bp = {.struct_size = sizeof bp, .op = NNP_BINARY_ADD};
  CHECK(nnp_binary(nt->s, &bp, ACT(&ta, a, rows, kDim), ACT(&tb, b, rows, kDim),
                   ACT(&ty, y, rows, kDim)));
}

/* LayerNorm over the last axis, eps 1e-5 (PyTorch's default) */
static const nnp_layer_norm_params kLn = {sizeof(nnp_layer_norm_params), -1, 0, 1e-5};

/* y = LayerNorm(x), x and y [rows, kDim] in g_act, mean and inv [rows, 1] float32 (in a
   bfloat16 call too: the op table's accumulation rule). */
static void ln_forward(net* nt, float* x, const param* s, const param* b, float* y, float* mean,
                       float* inv, int64_t rows) {
  tview tx, ts, tb, ty, tm, ti;
  CHECK(nnp_layer_norm_forward(nt->s, &kLn, ACT(&tx, x, rows, kDim), ACT(&ts, s->wc, kDim),
                               ACT(&tb, b->wc, kDim), ACT(&ty, y, rows, kDim),
                               F32(&tm, mean, rows, 1), F32(&ti, inv, rows, 1)));
}

/* The gradients of ln_forward's call with the same x. */
static void ln_backward(net* nt, float* x, float* dy, const param* s, param* b, float* mean,
                        float* inv, float* dx, int64_t rows) {
  tview tx, tdy, ts, tm, ti, tdx, tds, tdb;
  CHECK(nnp_layer_norm_backward(nt->s, &kLn, ACT(&tx, x, rows, kDim), ACT(&tdy, dy, rows, kDim),
                                ACT(&ts, s->wc, kDim), F32(&tm, mean, rows, 1),
                                F32(&ti, inv, rows, 1), ACT(&tdx, dx, rows, kDim),
                                ACT(&tds, s->gc, kDim), ACT(&tdb, b->gc, kDim)));
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
  CHECK(nnp_transpose(nt->s, &tp, ACTO(&a, x, x_off, n, kSide, kPatch, kSide, kPatch),
                      ACT(&b, st->patches, n, kSide, kSide, kPatch, kPatch)));
  linear_forward(nt, st->patches, n * kPatches, kPixels, kDim, st->embw->wc, st->embb->wc, st->emb);
  /* tokens: [class token, the 16 patch embeddings] + position embeddings */
  float* h = st->blk[0].h_in;
  copy(nt, make_strided(&a, st->cls->wc, 0, (int64_t[]){n, 1, kDim}, (int64_t[]){0, 0, 1}, 3),
       tokens(&b, h, n, 0, 1));
  copy(nt, ACT(&a, st->emb, n, kPatches, kDim), tokens(&b, h, n, 1, kPatches));
  nnp_binary_params bp = {.struct_size = sizeof bp, .op = NNP_BINARY_ADD};
  CHECK(nnp_binary(nt->s, &bp, ACT(&a, h, n, kTokens, kDim), ACT(&b, st->pos->wc, kTokens, kDim),
                   ACT(&c, h, n, kTokens, kDim)));
  const nnp_attention_params ap = attention_params();
  for (int l = 0; l < kDepth; ++l) {
    vit_block* k = &st->blk[l];
    float* out = l + 1 < kDepth ? st->blk[l + 1].h_in : st->h_out;
    ln_forward(nt, k->h_in, k->ln1s, k->ln1b, k->y1, k->mean1, k->inv1, rows);
    linear_forward(nt, k->y1, rows, kDim, kDim, k->qw->wc, k->qb->wc, k->q);
    linear_forward(nt, k->y1, rows, kDim, kDim, k->kw->wc, k->kb->wc, k->k);
    linear_forward(nt, k->y1, rows, kDim, kDim, k->vw->wc, k->vb->wc, k->v);
    /* softmax_lse is float32 in a float32 or 16-bit call (the op table's accumulation rule) */
    CHECK(nnp_attention_forward(nt->s, &ap, ACT(&a, k->q, n, kTokens, kDim),
                                ACT(&b, k->k, n, kTokens, kDim), ACT(&c, k->v, n, kTokens, kDim),
                                NULL, ACT(&d, k->a, n, kTokens, kDim),
                                F32(&e, k->lse, n, kHeads, kTokens)));
    linear_forward(nt, k->a, rows, kDim, kDim, k->projw->wc, k->projb->wc, st->o);
    if (training) dropout_forward(nt, 2 * l, kDrop, st->o, st->o, rows * kDim, n);
    add(nt, k->h_in, st->o, k->h_mid, rows);
    ln_forward(nt, k->h_mid, k->ln2s, k->ln2b, k->y2, k->mean2, k->inv2, rows);
    linear_forward(nt, k->y2, rows, kDim, kHidden, k->fc1w->wc, k->fc1b->wc, k->f1);
    CHECK(nnp_activation_forward(nt->s, &kGelu, ACT(&a, k->f1, rows * kHidden),
                                 ACT(&b, k->g, rows * kHidden)));
    linear_forward(nt, k->g, rows, kHidden, kDim, k->fc2w->wc, k->fc2b->wc, st->o);
    if (training) dropout_forward(nt, 2 * l + 1, kDrop, st->o, st->o, rows * kDim, n);
    add(nt, k->h_mid, st->o, out, rows);
  }
  copy(nt, tokens(&a, st->h_out, n, 0, 1), ACT(&b, st->cls_tok, n, 1, kDim));
  ln_forward(nt, st->cls_tok, st->lns, st->lnb, st->z, st->zmean, st->zinv, n);
  linear_forward(nt, st->z, n, kDim, NUM_CLASSES, st->headw->wc, st->headb->wc, nt->logits_c);
}

/* --------------------------------------------------------------------------- backward -- */

void vit_backward(net* nt, int64_t n) {
  struct vit_state* st = nt->vit;
  const int64_t rows = n * kTokens;
  tview a, b, c, d, e, f, g, h, i;
  linear_backward(nt, st->z, nt->dlogits_c, n, kDim, NUM_CLASSES, st->headw->wc, st->headw->gc,
                  st->headb->gc, st->dz, 0);
  linear_ready(nt, st->headw, st->headb);
  ln_backward(nt, st->cls_tok, st->dz, st->lns, st->lnb, st->zmean, st->zinv, st->dcls, n);
  /* d(sequence): the class token's gradient, zero elsewhere */
  fill_act(nt, st->dh, (size_t)(rows * kDim), 0.0);
  copy(nt, ACT(&a, st->dcls, n, 1, kDim), tokens(&b, st->dh, n, 0, 1));
  const nnp_attention_params ap = attention_params();
  for (int l = kDepth - 1; l >= 0; --l) {
    vit_block* k = &st->blk[l];
    /* MLP branch: dh is d(block output) */
    dropout_backward(nt, 2 * l + 1, st->dh, st->d64, rows * kDim);
    linear_backward(nt, k->g, st->d64, rows, kHidden, kDim, k->fc2w->wc, k->fc2w->gc, k->fc2b->gc,
                    st->d128, 0);
    linear_ready(nt, k->fc2w, k->fc2b);
    CHECK(nnp_activation_backward(nt->s, &kGelu, ACT(&a, k->f1, rows * kHidden),
                                  ACT(&b, st->d128, rows * kHidden),
                                  ACT(&c, st->d128, rows * kHidden)));
    linear_backward(nt, k->y2, st->d128, rows, kDim, kHidden, k->fc1w->wc, k->fc1w->gc, k->fc1b->gc,
                    st->d64, 0);
    linear_ready(nt, k->fc1w, k->fc1b);
    ln_backward(nt, k->h_mid, st->d64, k->ln2s, k->ln2b, k->mean2, k->inv2, st->dtmp, rows);
    add(nt, st->dh, st->dtmp, st->dh, rows); /* now d(h_mid) */
    /* attention branch */
    dropout_backward(nt, 2 * l, st->dh, st->d64, rows * kDim);
    linear_backward(nt, k->a, st->d64, rows, kDim, kDim, k->projw->wc, k->projw->gc, k->projb->gc,
                    st->da, 0);
    linear_ready(nt, k->projw, k->projb);
    CHECK(nnp_attention_backward(
        nt->s, &ap, ACT(&a, k->q, n, kTokens, kDim), ACT(&b, k->k, n, kTokens, kDim),
        ACT(&c, k->v, n, kTokens, kDim), NULL, ACT(&d, k->a, n, kTokens, kDim),
        ACT(&e, st->da, n, kTokens, kDim), F32(&f, k->lse, n, kHeads, kTokens),
        ACT(&g, st->dq, n, kTokens, kDim), ACT(&h, st->dk, n, kTokens, kDim),
        ACT(&i, st->dv, n, kTokens, kDim)));
    linear_backward(nt, k->y1, st->dq, rows, kDim, kDim, k->qw->wc, k->qw->gc, k->qb->gc, st->d64,
                    0);
    linear_backward(nt, k->y1, st->dk, rows, kDim, kDim, k->kw->wc, k->kw->gc, k->kb->gc, st->d64,
                    1);
    linear_backward(nt, k->y1, st->dv, rows, kDim, kDim, k->vw->wc, k->vw->gc, k->vb->gc, st->d64,
                    1);
    linear_ready(nt, k->qw, k->qb);
    linear_ready(nt, k->kw, k->kb);
    linear_ready(nt, k->vw, k->vb);
    ln_backward(nt, k->h_in, st->d64, k->ln1s, k->ln1b, k->mean1, k->inv1, st->dtmp, rows);
    add(nt, st->dh, st->dtmp, st->dh, rows); /* now d(h_in) */
  }
  /* tokens = [cls; patch embeddings] + pos: d(pos) sums over images; d(cls) is its token 0 */
  nnp_reduce_params rp = {
      .struct_size = sizeof rp, .op = NNP_REDUCE_SUM, .keepdims = 1, .n_axes = 1, .axes = {0}};
  CHECK(nnp_reduce(nt->s, &rp, ACT(&a, st->dh, n, kTokens, kDim),
                   ACT(&b, st->pos->gc, 1, kTokens, kDim)));
  copy(nt, ACT(&a, st->pos->gc, 1, 1, kDim), ACT(&b, st->cls->gc, 1, 1, kDim));
  grad_ready(nt, st->pos);
  grad_ready(nt, st->cls);
  copy(nt, tokens(&a, st->dh, n, 1, kPatches), ACT(&b, st->emb, n, kPatches, kDim));
  linear_backward(nt, st->patches, st->emb, n * kPatches, kPixels, kDim, st->embw->wc, st->embw->gc,
                  st->embb->gc, NULL, 0);
  linear_ready(nt, st->embw, st->embb);
}
