/*
 * layers.h — what train's networks share (model.c: mlp and cnn; vit.c: the Vision
 * Transformer): DLTensor views built on the stack right before a call, device allocation and
 * parameter init, and the few layers every network uses (Linear in PyTorch's [out, in] weight
 * layout, dropout with Philox offsets). Plain C11.
 */
#ifndef NNPLUG_EXAMPLES_TRAIN_LAYERS_H
#define NNPLUG_EXAMPLES_TRAIN_LAYERS_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* A DLTensor with its own shape and stride storage. Build with F32()/I64() right before the
   call that reads it. */
typedef struct tview {
  DLTensor t;
  int64_t shape[NNP_MAX_DIMS];
  int64_t strides[NNP_MAX_DIMS];
} tview;

/* Fills *v (compact: strides NULL) and returns &v->t. */
const DLTensor* make_view(tview* v, void* data, uint64_t byte_offset, uint8_t code, uint8_t bits,
                          const int64_t* dims, int ndim);
/* The same in g_act with explicit element strides (for NNP_OP_COPY, the one op that takes
   them). */
const DLTensor* make_strided(tview* v, void* data, uint64_t byte_offset, const int64_t* dims,
                             const int64_t* strides, int ndim);

#define NDIMS(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
/* F32(&view, data, d0, d1, ...): compact float32 tensor; F32O adds a byte offset. */
#define F32(v, data, ...) \
  make_view(v, data, 0, kDLFloat, 32, (int64_t[]){__VA_ARGS__}, NDIMS(__VA_ARGS__))
#define F32O(v, data, off, ...) \
  make_view(v, data, off, kDLFloat, 32, (int64_t[]){__VA_ARGS__}, NDIMS(__VA_ARGS__))
#define I64(v, data, ...) \
  make_view(v, data, 0, kDLInt, 64, (int64_t[]){__VA_ARGS__}, NDIMS(__VA_ARGS__))
#define SCALAR_F32(v, data) make_view(v, data, 0, kDLFloat, 32, NULL, 0)
/* ACT(&view, data, d0, ...): a compact tensor in the activation dtype g_act (model.h); ACTO adds
   a byte offset. */
#define ACT(v, data, ...) \
  make_view(v, data, 0, g_act.code, g_act.bits, (int64_t[]){__VA_ARGS__}, NDIMS(__VA_ARGS__))
#define ACTO(v, data, off, ...) \
  make_view(v, data, off, g_act.code, g_act.bits, (int64_t[]){__VA_ARGS__}, NDIMS(__VA_ARGS__))
/* Bytes of one element of g_act. */
#define ACT_BYTES ((size_t)g_act.bits / 8)

/* Whether this run trains in mixed precision (g_act is not float32). */
int mixed_precision(void);

/* Uniform in [0, 1) with 53 bits, and a standard normal (Box-Muller), from splitmix64. */
double rng_uniform(uint64_t* state);
double rng_normal(uint64_t* state);

/* Sets numel floats at data to `value` on the stream; fill_act: numel elements of g_act. */
void fill(net* nt, void* data, size_t numel, double value);
void fill_act(net* nt, void* data, size_t numel, double value);

/* y[numel] = x[numel] converted to y's dtype (nnp_cast, rounding to nearest even): views x and
   y as given (byte offsets included). */
void cast(net* nt, const DLTensor* x, const DLTensor* y);

/* How add_param initialises the values. */
typedef enum { INIT_GLOROT, INIT_ZERO, INIT_ONE, INIT_NORMAL_002 } param_init;

/* Adds a parameter of `shape` (its device buffers: alloc_parameters; until then only its initial
   values exist, on the host); INIT_GLOROT
   draws uniform in +-sqrt(6 / (fan_in + fan_out)) (Glorot and Bengio 2010, Keras' and PyTorch's
   xavier_uniform_), INIT_NORMAL_002 normal with std 0.02. Returns the parameter. */
param* add_param(net* nt, const char* name, int ndim, const int64_t* shape, param_init init,
                 int fan_in, int fan_out, uint64_t* rng);

/* Lays out nt->grads, nt->weights, nt->adam_m and nt->adam_v (model.h), points every
   parameter's g, w, m and v into them, uploads the initial values; gradients and moments
   zeroed. In mixed precision also nt->weights_c and nt->grads_c and every parameter's wc and
   gc (model.h). build_net calls it once all parameters are added. */
void alloc_parameters(net* nt);

/* y[rows, out] = x[rows, in] W^T + b, W [out, in] (PyTorch's nn.Linear), all in g_act; w and
   b are the parameters' compute values (param.wc; b may be NULL). */
void linear_forward(net* nt, const void* x, int64_t rows, int64_t in, int64_t out, const void* w,
                    const void* b, void* y);
/* dW = dy^T x, db = sum over rows of dy (db may be NULL), and dx = dy W (dx may be NULL;
   accumulate = 1 adds to dx instead of overwriting it), all in g_act (param.wc, param.gc). */
void linear_backward(net* nt, const void* x, const void* dy, int64_t rows, int64_t in, int64_t out,
                     const void* w, void* dw, void* db, void* dx, int accumulate);

/* y = dropout(x) (x and y may be the same buffer, numel elements for n images) with a fresh
   Philox offset, params kept in slot k for dropout_backward. The offset advances by the
   whole global batch's elements (nt->batch_global), and a share of it (nt->batch_first) draws
   its images' masks where the whole batch would. */
void dropout_forward(net* nt, int k, double ratio, void* x, void* y, int64_t numel, int64_t n);
void dropout_backward(net* nt, int k, void* dy, void* dx, int64_t numel);

#endif /* NNPLUG_EXAMPLES_TRAIN_LAYERS_H */
