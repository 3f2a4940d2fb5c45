/*
 * nnplug_ops.h — op kinds and their parameter structs (version 1), shared by the public API
 * and the plugin ABI.
 *
 * An op is data: a kind (int32_t, an nnp_op_kind value), a size-prefixed params struct, an
 * array of input tensors and an array of output tensors (DLTensor, dlpack 0.6). It runs with
 * nnp_op_execute() (nnplug.h) or a typed wrapper such as nnp_conv2d_forward().
 *
 * Conventions that hold for every op unless its block says otherwise:
 *  - Tensors are DLTensor. `data + byte_offset` is the first element. Strides are in elements;
 *    ops require compact row-major tensors (strides NULL or equal to the compact strides);
 *    NNP_OP_COPY alone accepts arbitrary strides. Rank <= NNP_MAX_DIMS; every dimension >= 0.
 *  - Layouts: activations NCHW, filters OIHW = [K, C/groups, R, S].
 *  - All floating-point operands of one call share one dtype: float32 on every backend,
 *    float64 on the reference, float16/bfloat16 where a backend says so (nnp_op_supported).
 *    Integer operands (class labels) are int64; masks are uint8.
 *  - Every tensor of a call lives on the device of the stream it runs on (host memory,
 *    kDLCPU, for every CPU device).
 *  - Outputs are overwritten, never accumulated into, and must not overlap inputs, except
 *    where a block says "may alias": then the output may be exactly the same memory (same
 *    data pointer, offset and shape) as that input.
 *  - An optional tensor is passed as a NULL pointer in the inputs/outputs array.
 *  - Params structs start with `size_t struct_size` = sizeof(struct) as compiled by the
 *    caller; a callee accepts any size >= the 1.0 size (NNP_*_PARAMS_STRUCT_SIZE_1_0) and
 *    reads only what fits.
 *  - Reductions and normalisations accumulate in at least float32 (double on the reference).
 * Where ONNX defines the op, semantics follow ONNX (opset 17); where it does not, the block
 * names its source. docs/ops.md has the formulas in full.
 */
#ifndef NNPLUG_OPS_H_
#define NNPLUG_OPS_H_

#include <nnplug/nnplug_types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Op kinds. Values are explicit and never reused; 0x10000 and up are for vendor ops. */
typedef enum nnp_op_kind {
  NNP_OP_UNDEFINED = 0,
  /* GEMM */
  NNP_OP_GEMM = 1,
  /* convolution */
  NNP_OP_CONV2D_FORWARD = 10,
  NNP_OP_CONV2D_BACKWARD_DATA = 11,
  NNP_OP_CONV2D_BACKWARD_FILTER = 12,
  NNP_OP_CONV2D_BACKWARD_BIAS = 13,
  /* pooling */
  NNP_OP_POOL2D_FORWARD = 20,
  NNP_OP_POOL2D_BACKWARD = 21,
  /* activation */
  NNP_OP_ACTIVATION_FORWARD = 30,
  NNP_OP_ACTIVATION_BACKWARD = 31,
  /* softmax / log-softmax */
  NNP_OP_SOFTMAX_FORWARD = 40,
  NNP_OP_SOFTMAX_BACKWARD = 41,
  /* loss */
  NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD = 50,
  NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD = 51,
  /* normalisation */
  NNP_OP_BATCH_NORM_FORWARD_TRAINING = 60,
  NNP_OP_BATCH_NORM_FORWARD_INFERENCE = 61,
  NNP_OP_BATCH_NORM_BACKWARD = 62,
  NNP_OP_LAYER_NORM_FORWARD = 65,
  NNP_OP_LAYER_NORM_BACKWARD = 66,
  /* dropout */
  NNP_OP_DROPOUT_FORWARD = 70,
  NNP_OP_DROPOUT_BACKWARD = 71,
  /* elementwise and data movement */
  NNP_OP_BINARY = 80,
  NNP_OP_SCALE = 81,
  NNP_OP_FILL = 82,
  NNP_OP_COPY = 83,
  NNP_OP_TRANSPOSE = 84,
  NNP_OP_CAST = 85,
  /* reduction */
  NNP_OP_REDUCE = 90,
  /* optimisers */
  NNP_OP_SGD_UPDATE = 100,
  NNP_OP_ADAM_UPDATE = 101,
  NNP_OP_VENDOR_BASE = 0x10000
} nnp_op_kind;

/** Returns a static lower-case name for an op kind ("conv2d_forward"), or NULL if unknown. */
/* (declared in nnplug.h as nnp_op_kind_name) */

/* ------------------------------------------------------------------------------------------ */
/**
 * NNP_OP_GEMM — Y = alpha * op(A) * op(B) + beta * C   (BLAS sgemm / ONNX Gemm, batched)
 *
 * inputs:  [0] A: [M, K] (trans_a = 0) or [K, M] (trans_a = 1); or rank 3 [batch, ., .]
 *          [1] B: [K, N] (trans_b = 0) or [N, K] (trans_b = 1); or rank 3 [batch, ., .]
 *          [2] C: optional; [N] or [M, N] (broadcast over rows and batch) or [batch, M, N]
 * outputs: [0] Y: [M, N], or [batch, M, N] when A or B has rank 3. May alias C when C has
 *          Y's shape (in-place accumulate).
 * A rank-2 operand is broadcast over the batch; two rank-3 operands must agree on batch.
 * With C absent, beta is ignored. op(X) is X or its transpose.
 */
typedef struct nnp_gemm_params {
  size_t struct_size;
  int32_t trans_a; /**< 0 or 1 */
  int32_t trans_b; /**< 0 or 1 */
  double alpha;
  double beta;
} nnp_gemm_params;
#define NNP_GEMM_PARAMS_STRUCT_SIZE_1_0 sizeof(nnp_gemm_params)

/* ------------------------------------------------------------------------------------------ */
/**
 * Convolution parameters, shared by the four NNP_OP_CONV2D_* kinds (cuDNN / ONNX Conv;
 * cross-correlation, no filter flip).
 *
 * Shapes: x [N, C, H, W], w [K, C/groups, R, S], b [K], y [N, K, P, Q] with
 *   P = floor((H + pad_top + pad_bottom - dilation_h*(R-1) - 1) / stride_h) + 1
 *   Q = floor((W + pad_left + pad_right - dilation_w*(S-1) - 1) / stride_w) + 1
 *   y[n,k,p,q] = b[k] + sum_{c,r,s} x[n, g*C/groups + c, p*stride_h - pad_top + r*dilation_h,
 *                                    q*stride_w - pad_left + s*dilation_w] * w[k,c,r,s]
 *   where g = k / (K/groups) and out-of-range x reads are 0.
 * C and K must be divisible by groups; stride >= 1, dilation >= 1 (1 = dense), padding >= 0,
 * P >= 1 and Q >= 1.
 *
 * NNP_OP_CONV2D_FORWARD:         inputs {x, w, b (optional)}   outputs {y}
 * NNP_OP_CONV2D_BACKWARD_DATA:   inputs {dy, w}                outputs {dx}   (dx has x's shape)
 * NNP_OP_CONV2D_BACKWARD_FILTER: inputs {x, dy}                outputs {dw}   (dw has w's shape)
 * NNP_OP_CONV2D_BACKWARD_BIAS:   inputs {dy}                   outputs {db [K]}; params may be
 *                                NULL (db[k] = sum over n,p,q of dy[n,k,p,q])
 */
typedef struct nnp_conv2d_params {
  size_t struct_size;
  int32_t stride_h, stride_w;
  int32_t pad_top, pad_bottom, pad_left, pad_right;
  int32_t dilation_h, dilation_w;
  int32_t groups;
} nnp_conv2d_params;
#define NNP_CONV2D_PARAMS_STRUCT_SIZE_1_0 sizeof(nnp_conv2d_params)

/* ------------------------------------------------------------------------------------------ */
/** Pooling modes. */
typedef enum nnp_pool_mode {
  NNP_POOL_UNDEFINED = 0,
  NNP_POOL_MAX = 1,
  NNP_POOL_AVERAGE = 2
} nnp_pool_mode;

/**
 * NNP_OP_POOL2D_FORWARD  inputs {x [N,C,H,W]}            outputs {y [N,C,P,Q]}
 * NNP_OP_POOL2D_BACKWARD inputs {x, y, dy}                outputs {dx (x's shape)}
 *
 * (ONNX MaxPool / AveragePool, PyTorch's output-size rule for ceil_mode.)
 *   P = floor_or_ceil((H + pad_top + pad_bottom - window_h) / stride_h) + 1, and with ceil_mode
 *   the last window must start inside the input or the top padding: if (P-1)*stride_h >=
 *   H + pad_top then P -= 1. Likewise Q.
 * Max: padding never wins (acts as -inf); backward routes dy to the first maximum in
 * row-major window order. y is read by backends that need it (cuDNN) and must be the
 * forward's output.
 * Average: window clipped to [−pad, H+pad_bottom) for the divisor when count_include_pad = 1,
 * to the input when 0; the sum always covers only input elements.
 * global = 1: window = (H, W), stride 1, padding 0; the other window fields are ignored.
 * window >= 1, stride >= 1, 0 <= pad < window on each side (pad_top, pad_bottom < window_h ...).
 */
typedef struct nnp_pool2d_params {
  size_t struct_size;
  int32_t mode; /**< nnp_pool_mode */
  int32_t window_h, window_w;
  int32_t stride_h, stride_w;
  int32_t pad_top, pad_bottom, pad_left, pad_right;
  int32_t ceil_mode;         /**< 0 or 1 */
  int32_t count_include_pad; /**< 0 or 1, average only */
  int32_t global;            /**< 0 or 1 */
} nnp_pool2d_params;
#define NNP_POOL2D_PARAMS_STRUCT_SIZE_1_0 sizeof(nnp_pool2d_params)

/* ------------------------------------------------------------------------------------------ */
/** Activation functions (ONNX Relu, LeakyRelu, Sigmoid, Tanh, Gelu, Elu). */
typedef enum nnp_activation {
  NNP_ACTIVATION_UNDEFINED = 0,
  NNP_ACTIVATION_RELU = 1,       /**< max(x, 0); derivative at 0 is 0 */
  NNP_ACTIVATION_LEAKY_RELU = 2, /**< x >= 0 ? x : alpha*x (ONNX default alpha 0.01) */
  NNP_ACTIVATION_SIGMOID = 3,    /**< 1 / (1 + exp(-x)) */
  NNP_ACTIVATION_TANH = 4,       /**< tanh(x) */
  NNP_ACTIVATION_GELU_ERF = 5,   /**< 0.5 x (1 + erf(x / sqrt 2)) */
  NNP_ACTIVATION_GELU_TANH = 6,  /**< 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
  NNP_ACTIVATION_ELU = 7         /**< x > 0 ? x : alpha (exp(x) - 1) (ONNX default alpha 1) */
} nnp_activation;

/**
 * NNP_OP_ACTIVATION_FORWARD  inputs {x}      outputs {y}   y may alias x
 * NNP_OP_ACTIVATION_BACKWARD inputs {x, dy}  outputs {dx}  dx = f'(x) * dy; dx may alias dy
 * All tensors have one shape, any rank.
 */
typedef struct nnp_activation_params {
  size_t struct_size;
  int32_t function; /**< nnp_activation */
  int32_t reserved0; /**< must be 0 */
  double alpha;      /**< leaky_relu slope / elu scale; ignored by the others */
} nnp_activation_params;
#define NNP_ACTIVATION_PARAMS_STRUCT_SIZE_1_0 sizeof(nnp_activation_params)

/* ------------------------------------------------------------------------------------------ */
/**
 * NNP_OP_SOFTMAX_FORWARD  inputs {x}      outputs {y}    (ONNX Softmax / LogSoftmax, opset 13:
 *                                                        one axis)
 * NNP_OP_SOFTMAX_BACKWARD inputs {y, dy}  outputs {dx}   y is the forward's output
 *   softmax:     dx = y * (dy - sum_axis(dy * y))
 *   log-softmax: dx = dy - exp(y) * sum_axis(dy)
 * axis in [-rank, rank), negative counts from the end. y may alias x; dx may alias dy.
 */
typedef struct nnp_softmax_params {
  size_t struct_size;
  int32_t axis;
  int32_t log; /**< 0 softmax, 1 log-softmax */
} nnp_softmax_params;
#define NNP_SOFTMAX_PARAMS_STRUCT_SIZE_1_0 sizeof(nnp_softmax_params)

/* ------------------------------------------------------------------------------------------ */
/** Loss reductions (ONNX reduction attribute). */
typedef enum nnp_reduction {
  NNP_REDUCTION_UNDEFINED = 0,
  NNP_REDUCTION_MEAN = 1, /**< sum / number of non-ignored samples */
  NNP_REDUCTION_SUM = 2,
  NNP_REDUCTION_NONE = 3
} nnp_reduction;

/**
 * NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD (ONNX SoftmaxCrossEntropyLoss without weights, 2-D)
 *   inputs  {logits [N, C], labels [N] int64}
 *   outputs {loss: [] (rank 0) for mean/sum, [N] for none; log_prob [N, C] (optional)}
 *   loss_i = -log_softmax(logits_i)[labels_i]; 0 where labels_i == ignore_index.
 *   mean divides by the count of non-ignored samples (0/0 gives NaN, as ONNX).
 *   A label outside [0, C) that is not ignored contributes NaN.
 * NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD
 *   inputs  {logits [N, C], labels [N], dloss (loss's shape)}   outputs {dlogits [N, C]}
 *   dlogits_i = (softmax(logits_i) - onehot(labels_i)) * dloss_i (/ count for mean);
 *   rows with ignored labels are 0.
 */
typedef struct nnp_softmax_cross_entropy_params {
  size_t struct_size;
  int32_t reduction;        /**< nnp_reduction */
  int32_t has_ignore_index; /**< 0 or 1 */
  int64_t ignore_index;     /**< used when has_ignore_index = 1 */
} nnp_softmax_cross_entropy_params;
#define NNP_SOFTMAX_CROSS_ENTROPY_PARAMS_STRUCT_SIZE_1_0 sizeof(nnp_softmax_cross_entropy_params)

/* ------------------------------------------------------------------------------------------ */
/**
 * Batch normalisation over N (and H, W) per channel (ONNX BatchNormalization, cuDNN spatial
 * mode). x is [N, C] or [N, C, H, W]; per-channel tensors are [C]. M = N*H*W.
 *   mean_c = sum x / M;  var_c = sum (x - mean_c)^2 / M (biased);  inv_std = 1/sqrt(var + eps)
 *   y = scale * (x - mean) * inv_std + bias
 *
 * NNP_OP_BATCH_NORM_FORWARD_TRAINING
 *   inputs  {x, scale, bias}
 *   outputs {y, running_mean (in/out), running_var (in/out), saved_mean, saved_inv_std}
 *   running_mean = momentum * running_mean + (1 - momentum) * mean            (ONNX)
 *   running_var  = momentum * running_var  + (1 - momentum) * var * M/(M-1)  (unbiased, as
 *                  cuDNN and PyTorch; M = 1 uses var)
 *   running_mean/running_var are read and written (in place); saved_* are for backward.
 * NNP_OP_BATCH_NORM_FORWARD_INFERENCE
 *   inputs {x, scale, bias, mean, var}  outputs {y};  inv_std = 1/sqrt(var + eps)
 * NNP_OP_BATCH_NORM_BACKWARD
 *   inputs {x, dy, scale, saved_mean, saved_inv_std}  outputs {dx, dscale, dbias}
 *   dbias = sum dy; dscale = sum dy * xhat;
 *   dx = scale * inv_std / M * (M*dy - dbias - xhat * dscale), xhat = (x - mean) * inv_std
 */
typedef struct nnp_batch_norm_params {
  size_t struct_size;
  double epsilon;  /**< > 0, ONNX default 1e-5 */
  double momentum; /**< weight of the old running value, in [0, 1]; ONNX default 0.9 */
} nnp_batch_norm_params;
#define NNP_BATCH_NORM_PARAMS_STRUCT_SIZE_1_0 sizeof(nnp_batch_norm_params)

/**
 * Layer normalisation over the trailing dimensions [axis, rank) (ONNX LayerNormalization).
 * Outer shape O = x.shape[0:axis]; normalised shape I = x.shape[axis:]; stats tensors have
 * ONNX's shape: x's rank with 1 in the normalised dimensions (O + [1]*len(I)).
 *   mean = sum x / |I|;  var = sum (x - mean)^2 / |I|;  inv_std = 1/sqrt(var + eps)
 *   y = (x - mean) * inv_std * scale + bias
 * NNP_OP_LAYER_NORM_FORWARD
 *   inputs {x, scale (I), bias (I, optional)}  outputs {y, mean (optional), inv_std (optional)}
 * NNP_OP_LAYER_NORM_BACKWARD
 *   inputs {x, dy, scale, mean, inv_std}  outputs {dx, dscale (I), dbias (I, optional)}
 */
typedef struct nnp_layer_norm_params {
  size_t struct_size;
  int32_t axis; /**< in [-rank, rank); ONNX default -1 */
  int32_t reserved0; /**< must be 0 */
  double epsilon;
} nnp_layer_norm_params;
#define NNP_LAYER_NORM_PARAMS_STRUCT_SIZE_1_0 sizeof(nnp_layer_norm_params)

/* ------------------------------------------------------------------------------------------ */
/**
 * Dropout with a counter-based mask, identical on every backend (Philox4x32-10, Salmon et al.,
 * "Parallel random numbers: as easy as 1, 2, 3", SC'11; the Random123 constants).
 *
 * For element i (row-major linear index) the mask bit comes from
 *   (r0, r1, r2, r3) = philox4x32_10(counter = {lo32(c), hi32(c), 0, 0},
 *                                    key     = {lo32(seed), hi32(seed)}),  c = offset + i / 4
 *   u = r_{i % 4} >> 8                   (24 random bits)
 *   keep_i = u >= threshold,  threshold = (uint32_t)(ratio * 16777216.0)  (computed in double)
 *   y_i = keep_i ? x_i * scale : 0,      scale = (T)(1.0 / (1.0 - ratio))  (T = x's dtype)
 * A caller that draws several masks from one seed advances offset by ceil(numel / 4) per call.
 *
 * NNP_OP_DROPOUT_FORWARD  inputs {x}   outputs {y, mask (optional, uint8 0/1, x's shape)}
 * NNP_OP_DROPOUT_BACKWARD inputs {dy}  outputs {dx}  (same params: the mask is regenerated)
 * y may alias x; dx may alias dy. ratio in [0, 1).
 */
typedef struct nnp_dropout_params {
  size_t struct_size;
  double ratio; /**< probability of dropping an element */
  uint64_t seed;
  uint64_t offset; /**< Philox counter offset, in units of 4 elements */
} nnp_dropout_params;
#define NNP_DROPOUT_PARAMS_STRUCT_SIZE_1_0 sizeof(nnp_dropout_params)

/* ------------------------------------------------------------------------------------------ */
/** Elementwise binary functions (ONNX Add, Sub, Mul, Div). */
typedef enum nnp_binary_op {
  NNP_BINARY_UNDEFINED = 0,
  NNP_BINARY_ADD = 1,
  NNP_BINARY_SUB = 2,
  NNP_BINARY_MUL = 3,
  NNP_BINARY_DIV = 4
} nnp_binary_op;

/**
 * NNP_OP_BINARY inputs {a, b} outputs {y}: y = a (op) b with numpy (multidirectional)
 * broadcasting; y has the broadcast shape. y may alias a or b when it has that operand's shape.
 */
typedef struct nnp_binary_params {
  size_t struct_size;
  int32_t op; /**< nnp_binary_op */
} nnp_binary_params;
#define NNP_BINARY_PARAMS_STRUCT_SIZE_1_0 sizeof(nnp_binary_params)

/** NNP_OP_SCALE inputs {x} outputs {y}: y = alpha * x (same shape). y may alias x. */
typedef struct nnp_scale_params {
  size_t struct_size;
  double alpha;
} nnp_scale_params;
#define NNP_SCALE_PARAMS_STRUCT_SIZE_1_0 sizeof(nnp_scale_params)

/** NNP_OP_FILL inputs {} outputs {y}: every element of y = value (rounded to y's dtype). */
typedef struct nnp_fill_params {
  size_t struct_size;
  double value;
} nnp_fill_params;
#define NNP_FILL_PARAMS_STRUCT_SIZE_1_0 sizeof(nnp_fill_params)

/**
 * NNP_OP_COPY inputs {x} outputs {y}: y = x element by element; same shape and dtype; both may
 * have arbitrary (non-negative) strides; they must not overlap. params may be NULL.
 * NNP_OP_CAST inputs {x} outputs {y}: same shape, any two float dtypes (float16, bfloat16,
 * float32, float64); rounds to nearest even. params may be NULL.
 */

/**
 * NNP_OP_TRANSPOSE inputs {x} outputs {y} (ONNX Transpose): y.shape[i] = x.shape[perm[i]],
 * y[j0..jr] = x[i] with i[perm[k]] = j[k]. perm is a permutation of 0..rank-1 in its first
 * rank entries; the rest must be 0.
 */
typedef struct nnp_transpose_params {
  size_t struct_size;
  int32_t perm[NNP_MAX_DIMS];
} nnp_transpose_params;
#define NNP_TRANSPOSE_PARAMS_STRUCT_SIZE_1_0 sizeof(nnp_transpose_params)

/* ------------------------------------------------------------------------------------------ */
/** Reduction functions (ONNX ReduceSum, ReduceMean, ReduceMax). */
typedef enum nnp_reduce_op {
  NNP_REDUCE_UNDEFINED = 0,
  NNP_REDUCE_SUM = 1,
  NNP_REDUCE_MEAN = 2,
  NNP_REDUCE_MAX = 3
} nnp_reduce_op;

/**
 * NNP_OP_REDUCE inputs {x} outputs {y}. Reduces over axes[0..n_axes) (each in [-rank, rank),
 * no repeats); n_axes = 0 reduces over every axis. keepdims = 1 keeps reduced axes as 1,
 * keepdims = 0 drops them (reducing everything then gives rank 0). An empty reduction gives
 * 0 (sum), NaN (mean) or -inf (max). Max propagates NaN.
 */
typedef struct nnp_reduce_params {
  size_t struct_size;
  int32_t op; /**< nnp_reduce_op */
  int32_t keepdims;
  int32_t n_axes;
  int32_t axes[NNP_MAX_DIMS];
} nnp_reduce_params;
#define NNP_REDUCE_PARAMS_STRUCT_SIZE_1_0 sizeof(nnp_reduce_params)

/* ------------------------------------------------------------------------------------------ */
/**
 * NNP_OP_SGD_UPDATE (PyTorch torch.optim.SGD; momentum buffer zero-initialised by the caller)
 *   inputs {grad}  outputs {param (in/out), momentum_buffer (in/out; required if momentum != 0)}
 *   g = grad + weight_decay * param
 *   if momentum != 0: buf = momentum * buf + (1 - dampening) * g;
 *                     g = nesterov ? g + momentum * buf : buf
 *   param -= lr * g
 * All tensors have param's shape. With dampening = 0 a zero buffer equals PyTorch's first step.
 */
typedef struct nnp_sgd_params {
  size_t struct_size;
  double lr;
  double momentum;
  double dampening;
  double weight_decay;
  int32_t nesterov; /**< 0 or 1; requires momentum > 0 and dampening = 0 */
  int32_t reserved0; /**< must be 0 */
} nnp_sgd_params;
#define NNP_SGD_PARAMS_STRUCT_SIZE_1_0 sizeof(nnp_sgd_params)

/**
 * NNP_OP_ADAM_UPDATE (Kingma & Ba 2015; AdamW: Loshchilov & Hutter 2019; PyTorch's formulas)
 *   inputs {grad}  outputs {param, m, v} (all in/out, param's shape; m, v zero-initialised)
 *   adamw = 0: g = grad + weight_decay * param;   adamw = 1: param *= 1 - lr * weight_decay
 *   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
 *   param -= lr * (m / (1 - beta1^step)) / (sqrt(v / (1 - beta2^step)) + epsilon)
 * step is the 1-based count of this update (>= 1).
 */
typedef struct nnp_adam_params {
  size_t struct_size;
  double lr;
  double beta1;
  double beta2;
  double epsilon;
  double weight_decay;
  int64_t step;
  int32_t adamw; /**< 0 Adam (L2 in the gradient), 1 AdamW (decoupled decay) */
  int32_t reserved0; /**< must be 0 */
} nnp_adam_params;
#define NNP_ADAM_PARAMS_STRUCT_SIZE_1_0 sizeof(nnp_adam_params)

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NNPLUG_OPS_H_ */
