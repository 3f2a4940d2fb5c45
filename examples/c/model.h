/*
 * model.h — train's three networks on nnplug ops: the Keras "mlp" and "cnn" examples
 * (model.c) and a small Vision Transformer "vit" (vit.c); the parameters and activation buffers
 * on the device, forward, loss and backward, the Adam step, and the splitmix64 PRNG of weight
 * init and shuffling. Plain C11.
 */
#ifndef NNPLUG_EXAMPLES_TRAIN_MODEL_H
#define NNPLUG_EXAMPLES_TRAIN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include <nnplug/nnplug.h>

#include "idx.h"

/* splitmix64 (Steele, Lea, Flood 2014): init and shuffling; dropout uses nnplug's Philox. */
uint64_t rng_next(uint64_t* state);

/* The training device's DLPack device: set it (nnp_device_get_dldevice) before build_net. */
extern DLDevice g_dldevice;

/* The dtype of activations, their gradients and the compute copies of weights and gradients
   (train --precision): float32 (the default), or bfloat16 for mixed precision, where the
   parameters, their gradients and Adam stay float32 (the master copies) and each step casts
   the weights to bfloat16 before forward and the gradients back to float32 after backward.
   Set it before build_net. */
extern DLDataType g_act;

#define MAX_PARAMS 96

typedef struct param {
  const char* name;
  int ndim;
  int64_t shape[4];
  size_t numel;
  float *w, *g, *m, *v; /* device: value, gradient, Adam moments (alloc_parameters) */
  size_t g_offset;      /* the byte offset of w, g, m and v in net.weights, grads, adam_m, adam_v */
  /* device: the value and gradient the layers compute with, in g_act: w and g themselves in a
     float32 run; in mixed precision, the parameter's place in net.weights_c and net.grads_c */
  void *wc, *gc;
  float* init; /* host: the initial values until alloc_parameters uploads them */
} param;

typedef enum model_kind { MODEL_MLP, MODEL_CNN, MODEL_VIT } model_kind;

struct vit_state; /* vit.c */

typedef struct net {
  nnp_device* dev;
  nnp_stream* s;
  model_kind model;
  int cnn; /* model == MODEL_CNN */
  int64_t max_batch;
  param p[MAX_PARAMS];
  int n_params;
  /* activations and their gradients, [max_batch, ...] on the device */
  float *x, *logits, *dlogits; /* x: the gathered training batch; logits and dlogits float32 */
  /* the batch, logits and their gradient in g_act: x, logits and dlogits themselves in a
     float32 run; in mixed precision, forward casts the batch into xc and the logits out of
     logits_c, and loss_and_backward casts dlogits into dlogits_c */
  void *xc, *logits_c, *dlogits_c;
  float *a1, *a2, *da1, *da2;   /* mlp: hidden layers */
  float *c1, *c2, *pool, *drop; /* cnn: conv1, conv2 (after ReLU), max-pool, its dropout */
  /* cnn: the side of conv1's, conv2's and the pool's square outputs (26, 24, 12 for 28x28
     images), from nnp_op_infer_shapes, and the flattened pool size (64 * hp * hp = 9216) */
  int64_t h1, h2, hp, flat;
  float *fc, *dfc, *ddrop, *dc2, *dc1;
  int64_t* labels; /* device [max_batch] */
  float *loss, *dloss;
  struct vit_state* vit; /* MODEL_VIT: its activations */
  void* allocations[512];
  int n_allocations;
  uint64_t seed;
  uint64_t dropout_offset;           /* next Philox counter offset (units of 4 elements) */
  nnp_dropout_params drop_params[8]; /* this step's dropout calls, reused by backward */
  /* Every gradient lives in this one device buffer of grads_bytes, the parameters' in reverse
     order (the order backward completes them), each at a 256-byte aligned offset, padding
     zero: the distributed run all-reduces contiguous ranges of it (buckets, dist.c). The
     values and the Adam moments live in three more buffers of the same layout, so that one
     adam_update over all grads_bytes / 4 elements updates every parameter (the padding stays
     zero: its gradient and moments are zero). */
  void* grads;
  size_t grads_bytes;
  void *weights, *adam_m, *adam_v;
  /* Mixed precision: the compute copies of weights and grads in g_act, the same layout with
     elements of 2 bytes (grads_bytes / 4 of them). Forward casts weights into weights_c;
     backward casts grads_c back into grads. NULL in a float32 run. */
  void *weights_c, *grads_c;
  /* Called by backward as soon as parameter i's gradient is complete (NULL: not called).
     dist.c hands finished buckets to its communication thread from here. */
  void (*grad_ready)(void* ctx, int i);
  void* grad_ready_ctx;
  /* This step's batch as a share of a global batch (distributed runs): the images of the
     global batch before this process's share, and the global batch size; batch_global 0 (the
     default) means the batch is the whole one. Dropout draws each image's mask at its
     position in the global batch, so a split batch gets the masks of the whole one. */
  int64_t batch_first, batch_global;
  /* Graph mode (train --graph): the number of finished steps as a float32 [1] tensor on the
     device, and a constant 1 added to it once per step, inside the step. Adam reads its step
     count from it (ABI 1.4 `step` input) and each dropout call its Philox offset, offset +
     step * dropout_per_step (the counters one full step draws), so that a step captured once
     draws fresh masks and the right bias corrections at every launch. NULL otherwise. */
  float *step, *step_one;
  uint64_t dropout_per_step;
} net;

/* nnp_malloc on nt->dev, remembered in nt->allocations (the caller frees them at the end). */
void* dev_alloc(net* nt, size_t bytes);

/* Allocates and initialises the parameters (Glorot uniform from `seed`, zero biases and Adam
   moments) and the activation buffers for batches of up to max_batch images; nt->dev and
   nt->s must be set. */
void build_net(net* nt, model_kind model, int64_t max_batch, uint64_t seed);

/* The vit's parts of build_net, forward and loss_and_backward (vit.c). */
void vit_build(net* nt, uint64_t* rng);
void vit_forward(net* nt, void* x, uint64_t x_off, int64_t n, int training);
void vit_backward(net* nt, int64_t n);

/* Backward's hook: parameter p's gradient is complete (calls nt->grad_ready if set; in mixed
   precision it first casts p's g_act gradient into its float32 one, which the hook's buckets
   all-reduce). */
void grad_ready(net* nt, const param* p);

/* Number of scalar parameters. */
size_t count_params(const net* nt);

/* Forward pass of n images starting at byte `x_off` of `x` ([N, 784] float32); leaves the
   logits in nt->logits (float32). training = 1 applies dropout. */
void forward(net* nt, void* x, uint64_t x_off, int64_t n, int training);

/* Loss of the batch in nt->logits against nt->labels, then gradients of every parameter.
   The loss is the mean over the n images; its gradient is scaled by the value in nt->dloss
   (1 unless a distributed run weights this share of the global batch). */
void loss_and_backward(net* nt, int64_t n);

/* One Adam update of every parameter (step counts from 1). */
void adam_step(net* nt, double lr, int64_t step);

#endif /* NNPLUG_EXAMPLES_TRAIN_MODEL_H */
