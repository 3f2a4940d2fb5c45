/*
 * layers.c — the pieces train's networks share: tensor views, parameter init, Linear and
 * dropout (layers.h). Plain C11.
 */
#define _POSIX_C_SOURCE 200809L
#include "layers.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

DLDevice g_dldevice;                  /* the training device's DLPack device */
DLDataType g_act = {kDLFloat, 32, 1}; /* activations and compute copies (model.h) */

int mixed_precision(void) { return !(g_act.code == kDLFloat && g_act.bits == 32); }

double rng_uniform(uint64_t* state) { /* [0, 1) with 53 bits */
  return (double)(rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
}

double rng_normal(uint64_t* state) { /* Box-Muller: one normal per two uniforms */
  const double pi = 3.14159265358979323846;
  const double u1 = 1.0 - rng_uniform(state); /* (0, 1]: log is finite */
  const double u2 = rng_uniform(state);
  return sqrt(-2.0 * log(u1)) * cos(2.0 * pi * u2);
}

const DLTensor* make_view(tview* v, void* data, uint64_t byte_offset, uint8_t code, uint8_t bits,
                          const int64_t* dims, int ndim) {
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

const DLTensor* make_strided(tview* v, void* data, uint64_t byte_offset, const int64_t* dims,
                             const int64_t* strides, int ndim) {
  make_view(v, data, byte_offset, g_act.code, g_act.bits, dims, ndim);
  for (int i = 0; i < ndim; ++i) v->strides[i] = strides[i];
  v->t.strides = v->strides;
  return &v->t;
}

void fill(net* nt, void* data, size_t numel, double value) {
  tview v;
  nnp_fill_params fp = {sizeof fp, value};
  CHECK(nnp_fill(nt->s, &fp, F32(&v, data, (int64_t)numel)));
}

void fill_act(net* nt, void* data, size_t numel, double value) {
  tview v;
  nnp_fill_params fp = {sizeof fp, value};
  CHECK(nnp_fill(nt->s, &fp, ACT(&v, data, (int64_t)numel)));
}

void cast(net* nt, const DLTensor* x, const DLTensor* y) { CHECK(nnp_cast(nt->s, x, y)); }

param* add_param(net* nt, const char* name, int ndim, const int64_t* shape, param_init init,
                 int fan_in, int fan_out, uint64_t* rng) {
  if (nt->n_params == MAX_PARAMS) die("internal: more than %d parameters", MAX_PARAMS);
  param* p = &nt->p[nt->n_params++];
  p->name = name;
  p->ndim = ndim;
  p->numel = 1;
  for (int i = 0; i < ndim; ++i) {
    p->shape[i] = shape[i];
    p->numel *= (size_t)shape[i];
  }
  p->w = p->g = p->m = p->v = NULL; /* alloc_parameters, once every parameter is known */
  p->wc = p->gc = NULL;
  float* host = xmalloc(p->numel * sizeof(float));
  /* fan_in 0: the draws still happen and give 0 (Keras-example biases, model.c). */
  const double limit = fan_in > 0 ? sqrt(6.0 / (double)(fan_in + fan_out)) : 0.0;
  for (size_t i = 0; i < p->numel; ++i) {
    double value = 0.0;
    switch (init) {
      case INIT_GLOROT:
        value = limit * (2.0 * rng_uniform(rng) - 1.0);
        break;
      case INIT_ZERO:
        value = 0.0;
        break;
      case INIT_ONE:
        value = 1.0;
        break;
      case INIT_NORMAL_002:
        value = 0.02 * rng_normal(rng);
        break;
    }
    host[i] = (float)value;
  }
  p->init = host;
  return p;
}

void alloc_parameters(net* nt) {
  /* Every parameter, the last one first (the order backward completes them), each at a
     256-byte aligned offset (param.g_offset; cudaMalloc's alignment: every gradient a
     well-aligned tensor). In mixed precision the per-step casts cover the whole buffer. */
  const size_t align = 256;
  size_t bytes = 0;
  for (int i = nt->n_params - 1; i >= 0; --i) {
    nt->p[i].g_offset = bytes;
    bytes += (nt->p[i].numel * sizeof(float) + align - 1) / align * align;
  }
  const int mixed = mixed_precision();
  nt->grads_bytes = bytes;
  void** buffers[4] = {&nt->weights, &nt->grads, &nt->adam_m, &nt->adam_v};
  for (int k = 0; k < 4; ++k) {
    *buffers[k] = dev_alloc(nt, bytes);
    fill(nt, *buffers[k], bytes / sizeof(float), 0.0);
  }
  if (mixed) { /* elements of ACT_BYTES at the same element offsets */
    nt->weights_c = dev_alloc(nt, bytes / sizeof(float) * ACT_BYTES);
    nt->grads_c = dev_alloc(nt, bytes / sizeof(float) * ACT_BYTES);
    fill_act(nt, nt->grads_c, bytes / sizeof(float), 0.0); /* padding stays 0 */
  }
  for (int i = 0; i < nt->n_params; ++i) {
    param* p = &nt->p[i];
    p->w = (float*)(void*)((char*)nt->weights + p->g_offset);
    p->g = (float*)(void*)((char*)nt->grads + p->g_offset);
    p->m = (float*)(void*)((char*)nt->adam_m + p->g_offset);
    p->v = (float*)(void*)((char*)nt->adam_v + p->g_offset);
    p->wc = p->w;
    p->gc = p->g;
    if (mixed) {
      p->wc = (char*)nt->weights_c + p->g_offset / sizeof(float) * ACT_BYTES;
      p->gc = (char*)nt->grads_c + p->g_offset / sizeof(float) * ACT_BYTES;
    }
    CHECK(nnp_memcpy(nt->dev, p->w, NULL, p->init, p->numel * sizeof(float)));
    free(p->init);
    p->init = NULL;
  }
}

void grad_ready(net* nt, const param* p) {
  if (!nt->grad_ready) return;
  if (mixed_precision()) { /* the hook hands on float32 gradients */
    tview a, b;
    cast(nt, ACT(&a, p->gc, (int64_t)p->numel), F32(&b, p->g, (int64_t)p->numel));
  }
  nt->grad_ready(nt->grad_ready_ctx, (int)(p - nt->p));
}

void linear_forward(net* nt, const void* x, int64_t rows, int64_t in, int64_t out, const void* w,
                    const void* b, void* y) {
  tview a, bw, c, o;
  nnp_gemm_params gp = {sizeof gp, 0, 1, 1.0, b ? 1.0 : 0.0};
  CHECK(nnp_gemm(nt->s, &gp, ACT(&a, (void*)x, rows, in), ACT(&bw, (void*)w, out, in),
                 b ? ACT(&c, (void*)b, out) : NULL, ACT(&o, y, rows, out)));
}

void linear_backward(net* nt, const void* x, const void* dy, int64_t rows, int64_t in, int64_t out,
                     const void* w, void* dw, void* db, void* dx, int accumulate) {
  tview a, bb, c, o;
  nnp_gemm_params gw = {sizeof gw, 1, 0, 1.0, 0.0}; /* dW[out, in] = dy^T x */
  CHECK(nnp_gemm(nt->s, &gw, ACT(&a, (void*)dy, rows, out), ACT(&bb, (void*)x, rows, in), NULL,
                 ACT(&o, dw, out, in)));
  if (db) {
    nnp_reduce_params rp = {
        .struct_size = sizeof rp, .op = NNP_REDUCE_SUM, .keepdims = 0, .n_axes = 1, .axes = {0}};
    CHECK(nnp_reduce(nt->s, &rp, ACT(&a, (void*)dy, rows, out), ACT(&o, db, out)));
  }
  if (dx) { /* dx = dy W (+ dx) */
    nnp_gemm_params gx = {sizeof gx, 0, 0, 1.0, accumulate ? 1.0 : 0.0};
    CHECK(nnp_gemm(nt->s, &gx, ACT(&a, (void*)dy, rows, out), ACT(&bb, (void*)w, out, in),
                   accumulate ? ACT(&c, dx, rows, in) : NULL, ACT(&o, dx, rows, in)));
  }
}

void dropout_forward(net* nt, int k, double ratio, void* x, void* y, int64_t numel, int64_t n) {
  nnp_dropout_params* dp = &nt->drop_params[k];
  *dp = (nnp_dropout_params){
      .struct_size = sizeof *dp, .ratio = ratio, .seed = nt->seed, .offset = nt->dropout_offset};
  int64_t numel_global = numel;
  if (nt->batch_global > 0 && (nt->batch_first != 0 || nt->batch_global != n)) {
    /* A share of a global batch: element i of image j of the whole batch takes Philox counter
       offset + (j * per_image + i) / 4, lane (j * per_image + i) % 4 (nnplug_ops.h). The
       share starts at image batch_first, which is a whole counter when batch_first * per_image
       is a multiple of 4 (per_image is for every network here). */
    const int64_t per_image = n > 0 ? numel / n : 0;
    if (n <= 0 || per_image * n != numel || (nt->batch_first * per_image) % 4 != 0)
      die("internal: dropout of %" PRId64 " elements over %" PRId64
          " images cannot take the whole batch's masks",
          numel, n);
    dp->offset += (uint64_t)(nt->batch_first * per_image / 4);
    numel_global = per_image * nt->batch_global;
  }
  nt->dropout_offset += (uint64_t)(numel_global + 3) / 4;
  tview a, b, st;
  if (nt->step) { /* graph mode: the offset moves with the step count on the device */
    dp->offset_per_step = nt->dropout_per_step;
    CHECK(nnp_op_execute(nt->s, NNP_OP_DROPOUT_FORWARD, dp, 2,
                         (const DLTensor* const[]){ACT(&a, x, numel), F32(&st, nt->step, 1)}, 1,
                         (const DLTensor* const[]){ACT(&b, y, numel)}));
    return;
  }
  CHECK(nnp_dropout_forward(nt->s, dp, ACT(&a, x, numel), ACT(&b, y, numel), NULL));
}

void dropout_backward(net* nt, int k, void* dy, void* dx, int64_t numel) {
  tview a, b, st;
  if (nt->step) {
    CHECK(nnp_op_execute(nt->s, NNP_OP_DROPOUT_BACKWARD, &nt->drop_params[k], 2,
                         (const DLTensor* const[]){ACT(&a, dy, numel), F32(&st, nt->step, 1)}, 1,
                         (const DLTensor* const[]){ACT(&b, dx, numel)}));
    return;
  }
  CHECK(nnp_dropout_backward(nt->s, &nt->drop_params[k], ACT(&a, dy, numel), ACT(&b, dx, numel)));
}
