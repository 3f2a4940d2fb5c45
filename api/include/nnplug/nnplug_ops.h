/*
 * nnplug_ops.h — op kinds and their parameter structs, shared by the public API and the plugin
 * ABI. GENERATED from api/ops/ops.toml by api/ops/gen_ops.py: edit the table, not this file.
 *
 * An op is data: a kind (int32_t, an nnp_op_kind value), a size-prefixed params struct, an
 * array of input tensors and an array of output tensors (DLTensor, dlpack 0.6). It runs with
 * nnp_op_execute() (nnplug.h) or a typed wrapper such as nnp_conv2d_forward()
 * (nnplug_op_wrappers.h); nnp_op_infer_shapes() gives the output shapes.
 *
 * Conventions that hold for every op unless its block says otherwise:
 *  - Tensors are DLTensor. `data + byte_offset` is the first element. Strides are in elements;
 *    ops require compact row-major tensors (strides NULL or equal to the compact strides);
 *    NNP_OP_COPY alone accepts arbitrary strides (>= 0; an output's strides must not make two
 *    indices address one element). byte_offset is a whole number of elements, data is aligned
 *    to the element size (a tensor with elements: INVALID_ARGUMENT otherwise when it runs), and
 *    the tensor's bytes from data + byte_offset must not wrap the address space. Rank <=
 *    NNP_MAX_DIMS; every dimension >= 0.
 *  - Layouts: activations NCHW, filters OIHW = [K, C/groups, R, S].
 *  - All floating-point operands of one call share one dtype: float32 on every backend,
 *    float64 on the reference, float16/bfloat16 where a backend says so (nnp_op_supported).
 *    Integer operands (class labels) are int64; masks are uint8.
 *  - Every tensor of a call lives on the device of the stream it runs on (host memory,
 *    kDLCPU, for every CPU device).
 *  - Outputs are overwritten, never accumulated into, and must not overlap inputs, except
 *    where an output says "may alias": then it may be exactly the same memory (same data
 *    pointer, offset and shape) as that input.
 *  - An optional tensor is passed as a NULL pointer in the inputs/outputs array; trailing
 *    optional tensors may be left out of the arrays.
 *  - Params structs start with `size_t struct_size` = sizeof(struct) as compiled by the
 *    caller. NNP_*_STRUCT_SIZE_1_<m> = offsetof(last field of ABI 1.m) + sizeof(that field);
 *    a callee accepts any size >= the smallest size it knows and reads only what fits. No
 *    struct has hidden padding: spare bytes are `reserved*` fields that must be 0.
 *  - A double field must fit the call's float dtype (|value| <= 3.4e38 for float32, 65504
 *    for float16): alpha = 1e308 in a float32 call is INVALID_ARGUMENT, never inf.
 *  - A field added in a later minor, set to a non-default value, makes a plugin built for an
 *    older minor answer NNP_STATUS_UNSUPPORTED (libnnplug checks this before calling it).
 *  - Reductions and normalisations accumulate in at least float32 (double on the reference).
 *    A statistic an op hands from its forward to its backward in that precision is float32 in
 *    a float16/bfloat16 call: attention's softmax_lse (ABI 1.9), layer norm's mean and inv_std
 *    and batch norm's per-channel tensors (ABI 1.10); before those minors it had the call's
 *    dtype.
 * Where ONNX defines the op, semantics follow ONNX (opset 17 unless a block names another);
 * where it does not, the block names its source. docs/ops.md has the formulas in full.
 */
#ifndef NNPLUG_OPS_H_
#define NNPLUG_OPS_H_

#include <nnplug/nnplug_types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** ABI version of these headers (the op table's [abi]): the major must match between host
 * and plugin; the minor counts the additions (docs/abi.md's changelog). nnplug_plugin.h
 * states the versioning rules. */
#define NNP_ABI_VERSION_MAJOR 1
#define NNP_ABI_VERSION_MINOR 10

/** The most tensors a variadic input or output (an op block's "[i..] name[n]") stands for:
 * such an op takes 1..NNP_MAX_VARIADIC tensors there, each under that tensor's rules
 * (ABI 1.2). */
#define NNP_MAX_VARIADIC 64

/** Op kinds. Values are explicit and never reused; names are nnp_op_kind_name(). */
typedef enum nnp_op_kind {
  NNP_OP_UNDEFINED = 0,
  NNP_OP_GEMM = 1, /**< "gemm" */
  NNP_OP_MATMUL = 2, /**< "matmul", ABI 1.2 */
  NNP_OP_CONV2D_FORWARD = 10, /**< "conv2d_forward" */
  NNP_OP_CONV2D_BACKWARD_DATA = 11, /**< "conv2d_backward_data" */
  NNP_OP_CONV2D_BACKWARD_FILTER = 12, /**< "conv2d_backward_filter" */
  NNP_OP_CONV2D_BACKWARD_BIAS = 13, /**< "conv2d_backward_bias" */
  NNP_OP_CONV_FORWARD = 14, /**< "conv_forward", ABI 1.2 */
  NNP_OP_CONV_BACKWARD_DATA = 15, /**< "conv_backward_data", ABI 1.2 */
  NNP_OP_CONV_BACKWARD_FILTER = 16, /**< "conv_backward_filter", ABI 1.2 */
  NNP_OP_CONV_BACKWARD_BIAS = 17, /**< "conv_backward_bias", ABI 1.2 */
  NNP_OP_CONV_TRANSPOSE_FORWARD = 120, /**< "conv_transpose_forward", ABI 1.2 */
  NNP_OP_CONV_TRANSPOSE_BACKWARD_DATA = 121, /**< "conv_transpose_backward_data", ABI 1.2 */
  NNP_OP_CONV_TRANSPOSE_BACKWARD_FILTER = 122, /**< "conv_transpose_backward_filter", ABI 1.2 */
  NNP_OP_POOL2D_FORWARD = 20, /**< "pool2d_forward" */
  NNP_OP_POOL2D_BACKWARD = 21, /**< "pool2d_backward" */
  NNP_OP_POOL_FORWARD = 22, /**< "pool_forward", ABI 1.2 */
  NNP_OP_POOL_BACKWARD = 23, /**< "pool_backward", ABI 1.2 */
  NNP_OP_ACTIVATION_FORWARD = 30, /**< "activation_forward" */
  NNP_OP_ACTIVATION_BACKWARD = 31, /**< "activation_backward" */
  NNP_OP_SOFTMAX_FORWARD = 40, /**< "softmax_forward" */
  NNP_OP_SOFTMAX_BACKWARD = 41, /**< "softmax_backward" */
  NNP_OP_ATTENTION_FORWARD = 130, /**< "attention_forward", ABI 1.2 */
  NNP_OP_ATTENTION_BACKWARD = 131, /**< "attention_backward", ABI 1.2 */
  NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD = 50, /**< "softmax_cross_entropy_forward" */
  NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD = 51, /**< "softmax_cross_entropy_backward" */
  NNP_OP_NLL_LOSS_FORWARD = 52, /**< "nll_loss_forward", ABI 1.2 */
  NNP_OP_NLL_LOSS_BACKWARD = 53, /**< "nll_loss_backward", ABI 1.2 */
  NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_FORWARD = 54, /**< "softmax_cross_entropy_loss_forward", ABI 1.2 */
  NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_BACKWARD = 55, /**< "softmax_cross_entropy_loss_backward", ABI 1.2 */
  NNP_OP_BATCH_NORM_FORWARD_TRAINING = 60, /**< "batch_norm_forward_training" */
  NNP_OP_BATCH_NORM_FORWARD_INFERENCE = 61, /**< "batch_norm_forward_inference" */
  NNP_OP_BATCH_NORM_BACKWARD = 62, /**< "batch_norm_backward" */
  NNP_OP_LAYER_NORM_FORWARD = 65, /**< "layer_norm_forward" */
  NNP_OP_LAYER_NORM_BACKWARD = 66, /**< "layer_norm_backward" */
  NNP_OP_DROPOUT_FORWARD = 70, /**< "dropout_forward" */
  NNP_OP_DROPOUT_BACKWARD = 71, /**< "dropout_backward" */
  NNP_OP_BINARY = 80, /**< "binary" */
  NNP_OP_SCALE = 81, /**< "scale" */
  NNP_OP_FILL = 82, /**< "fill" */
  NNP_OP_COPY = 83, /**< "copy" */
  NNP_OP_TRANSPOSE = 84, /**< "transpose" */
  NNP_OP_CONCAT = 86, /**< "concat", ABI 1.2 */
  NNP_OP_SPLIT = 87, /**< "split", ABI 1.2 */
  NNP_OP_SLICE = 88, /**< "slice", ABI 1.2 */
  NNP_OP_GATHER = 89, /**< "gather", ABI 1.2 */
  NNP_OP_SLICE_BACKWARD = 140, /**< "slice_backward", ABI 1.2 */
  NNP_OP_GATHER_BACKWARD = 141, /**< "gather_backward", ABI 1.2 */
  NNP_OP_CAST = 85, /**< "cast" */
  NNP_OP_REDUCE = 90, /**< "reduce" */
  NNP_OP_CUMSUM = 91, /**< "cumsum", ABI 1.5 */
  NNP_OP_SGD_UPDATE = 100, /**< "sgd_update" */
  NNP_OP_ADAM_UPDATE = 101, /**< "adam_update" */
  NNP_OP_CLIP = 110, /**< "clip", ABI 1.1 */
  NNP_OP_UNARY_FORWARD = 111, /**< "unary_forward", ABI 1.2 */
  NNP_OP_UNARY_BACKWARD = 112, /**< "unary_backward", ABI 1.2 */
  NNP_OP_WHERE = 114, /**< "where", ABI 1.2 */
  NNP_OP_ALL_REDUCE = 150, /**< "all_reduce", ABI 1.3 */
  NNP_OP_BROADCAST = 151, /**< "broadcast", ABI 1.3 */
  NNP_OP_ALL_GATHER = 152, /**< "all_gather", ABI 1.3 */
  NNP_OP_KIND_FORCE_INT32 = 0x7FFFFFFF /**< not a kind: keeps the enum 32-bit */
} nnp_op_kind;

/** Number of op kinds defined by this header. */
#define NNP_OP_KIND_COUNT 59

/** Pooling modes. */
typedef enum nnp_pool_mode {
  NNP_POOL_UNDEFINED = 0,
  NNP_POOL_MAX = 1,
  NNP_POOL_AVERAGE = 2,
  NNP_POOL_FORCE_INT32 = 0x7FFFFFFF /**< not a value: keeps the enum 32-bit */
} nnp_pool_mode;

/** Activation functions (ONNX Relu, LeakyRelu, Sigmoid, Tanh, Gelu, Elu). */
typedef enum nnp_activation {
  NNP_ACTIVATION_UNDEFINED = 0,
  NNP_ACTIVATION_RELU = 1, /**< max(x, 0); derivative at 0 is 0 */
  NNP_ACTIVATION_LEAKY_RELU = 2, /**< x >= 0 ? x : alpha*x (ONNX default alpha 0.01) */
  NNP_ACTIVATION_SIGMOID = 3, /**< 1 / (1 + exp(-x)) */
  NNP_ACTIVATION_TANH = 4, /**< tanh(x) */
  NNP_ACTIVATION_GELU_ERF = 5, /**< 0.5 x (1 + erf(x / sqrt 2)) */
  NNP_ACTIVATION_GELU_TANH = 6, /**< 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
  NNP_ACTIVATION_ELU = 7, /**< x > 0 ? x : alpha (exp(x) - 1) (ONNX default alpha 1) */
  NNP_ACTIVATION_FORCE_INT32 = 0x7FFFFFFF /**< not a value: keeps the enum 32-bit */
} nnp_activation;

/** Loss reductions (ONNX reduction attribute). */
typedef enum nnp_reduction {
  NNP_REDUCTION_UNDEFINED = 0,
  NNP_REDUCTION_MEAN = 1, /**< sum / number of non-ignored samples */
  NNP_REDUCTION_SUM = 2,
  NNP_REDUCTION_NONE = 3,
  NNP_REDUCTION_FORCE_INT32 = 0x7FFFFFFF /**< not a value: keeps the enum 32-bit */
} nnp_reduction;

/** Elementwise binary functions (ONNX Add, Sub, Mul, Div, Pow). */
typedef enum nnp_binary_op {
  NNP_BINARY_UNDEFINED = 0,
  NNP_BINARY_ADD = 1,
  NNP_BINARY_SUB = 2,
  NNP_BINARY_MUL = 3,
  NNP_BINARY_DIV = 4,
  NNP_BINARY_POW = 5, /**< a^b, float exponent (ONNX Pow, opset 15; C pow: pow(x, 0) = 1 for every x, NaN included; pow(1, y) = 1; a negative base with a non-integer exponent gives NaN) (ABI 1.2) */
  NNP_BINARY_FORCE_INT32 = 0x7FFFFFFF /**< not a value: keeps the enum 32-bit */
} nnp_binary_op;

/** Reduction functions (ONNX ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceL2, ReduceL1, ReduceSumSquare, ReduceLogSumExp, opset 18). */
typedef enum nnp_reduce_op {
  NNP_REDUCE_UNDEFINED = 0,
  NNP_REDUCE_SUM = 1,
  NNP_REDUCE_MEAN = 2,
  NNP_REDUCE_MAX = 3,
  NNP_REDUCE_MIN = 4, /**< smallest element; propagates NaN; empty: +inf (ABI 1.2) */
  NNP_REDUCE_L2 = 5, /**< sqrt(sum(x^2)); empty: 0 (ABI 1.2) */
  NNP_REDUCE_L1 = 6, /**< sum(|x|); empty: 0 (ABI 1.2) */
  NNP_REDUCE_SUM_SQUARE = 7, /**< sum(x^2); empty: 0 (ABI 1.2) */
  NNP_REDUCE_LOG_SUM_EXP = 8, /**< log(sum(exp(x))), computed as m + log(sum(exp(x - m))) with m = max(x); empty: -inf (ABI 1.2) */
  NNP_REDUCE_FORCE_INT32 = 0x7FFFFFFF /**< not a value: keeps the enum 32-bit */
} nnp_reduce_op;

/** Elementwise unary functions (ONNX Exp, Log, Sqrt, Abs, Neg, Reciprocal, Floor, Ceil, Sin, Cos, Erf; ABI 1.2). IEEE semantics at the edges, as C's <math.h>. */
typedef enum nnp_unary_op {
  NNP_UNARY_UNDEFINED = 0,
  NNP_UNARY_EXP = 1, /**< exp(x); derivative exp(x) (ABI 1.2) */
  NNP_UNARY_LOG = 2, /**< natural log; log(0) = -inf, log(x < 0) = NaN; derivative 1/x (ABI 1.2) */
  NNP_UNARY_SQRT = 3, /**< sqrt(x); sqrt(x < 0) = NaN; derivative 0.5/sqrt(x) (inf at 0) (ABI 1.2) */
  NNP_UNARY_ABS = 4, /**< |x|; derivative sign(x), 0 at x = 0 (nnplug's choice, as for relu) (ABI 1.2) */
  NNP_UNARY_NEG = 5, /**< -x; derivative -1 (ABI 1.2) */
  NNP_UNARY_RECIPROCAL = 6, /**< 1/x; 1/0 = inf (signed); derivative -1/x^2 (ABI 1.2) */
  NNP_UNARY_FLOOR = 7, /**< largest integer <= x; no derivative (unary_backward refuses it) (ABI 1.2) */
  NNP_UNARY_CEIL = 8, /**< smallest integer >= x; no derivative (unary_backward refuses it) (ABI 1.2) */
  NNP_UNARY_SIN = 9, /**< sin(x); derivative cos(x) (ABI 1.2) */
  NNP_UNARY_COS = 10, /**< cos(x); derivative -sin(x) (ABI 1.2) */
  NNP_UNARY_ERF = 11, /**< erf(x); derivative 2/sqrt(pi) exp(-x^2) (ABI 1.2) */
  NNP_UNARY_FORCE_INT32 = 0x7FFFFFFF /**< not a value: keeps the enum 32-bit */
} nnp_unary_op;

/** ONNX auto_pad for convolution and pooling (ABI 1.2). UNDEFINED (0) is NOTSET: explicit pads. */
typedef enum nnp_auto_pad {
  NNP_AUTO_PAD_NOTSET = 0, /**< use the explicit pads (the default) */
  NNP_AUTO_PAD_SAME_UPPER = 1, /**< output = ceil(input / stride); an odd total pad puts the extra at the end (ABI 1.2) */
  NNP_AUTO_PAD_SAME_LOWER = 2, /**< output = ceil(input / stride); an odd total pad puts the extra at the beginning (ABI 1.2) */
  NNP_AUTO_PAD_VALID = 3, /**< no padding (ABI 1.2) */
  NNP_AUTO_PAD_FORCE_INT32 = 0x7FFFFFFF /**< not a value: keeps the enum 32-bit */
} nnp_auto_pad;

/* ------------------------------------------------------------------------------------------ */
/**
 * Y = alpha * op(A) * op(B) + beta * C   (BLAS sgemm / ONNX Gemm, batched).
 *
 * NNP_OP_GEMM (gemm, 1)
 *   inputs:  [0] A: [M, K] (trans_a = 0) or [K, M] (trans_a = 1); or rank 3 [batch, ., .]
 *            [1] B: [K, N] (trans_b = 0) or [N, K] (trans_b = 1); or rank 3 [batch, ., .]
 *            [2] C (optional): any shape that broadcasts unidirectionally to Y's (ONNX): rank 0, [1], [N], [1, N], [M, 1], [M, N]; batched also [batch, M, N], [batch, 1, N], ...
 *   outputs: [0] Y: [M, N], or [batch, M, N] when A or B has rank 3; may alias C
 *   A rank-2 operand is broadcast over the batch; two rank-3 operands must agree on batch.
 *   With C absent, beta is ignored. op(X) is X or its transpose. C broadcasts unidirectionally to
 *   Y (ONNX Gemm, opset 13): its shape, aligned right, has each dimension equal to Y's or 1, and
 *   rank <= Y's rank (ABI 1.2; before, only [N], [M, N] and [batch, M, N]).
 */
typedef struct nnp_gemm_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t trans_a; /**< 0 or 1; 0: A is [M, K]; 1: A is [K, M]; default 0 */
  int32_t trans_b; /**< 0 or 1; 0: B is [K, N]; 1: B is [N, K]; default 0 */
  double alpha; /**< finite; default 1.0 */
  double beta; /**< finite when C is given; ignored without C (ONNX default 1); default 1.0 */
} nnp_gemm_params;
#define NNP_GEMM_PARAMS_STRUCT_SIZE_1_0 (offsetof(nnp_gemm_params, beta) + sizeof(double))
#define NNP_GEMM_PARAMS_STRUCT_SIZE NNP_GEMM_PARAMS_STRUCT_SIZE_1_0

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
 * C and K must be divisible by groups; P >= 1 and Q >= 1. A stride, dilation or groups of 0
 * means 1, so zeroed params (struct_size set) are a dense, unpadded, ungrouped convolution with
 * stride 1; plugins receive the 1.
 *
 * NNP_OP_CONV2D_FORWARD (conv2d_forward, 10)
 *   inputs:  [0] x: [N, C, H, W]
 *            [1] w: [K, C/groups, R, S]
 *            [2] b (optional): [K]
 *   outputs: [0] y: [N, K, P, Q]
 *
 * NNP_OP_CONV2D_BACKWARD_DATA (conv2d_backward_data, 11)
 *   inputs:  [0] dy: [N, K, P, Q]
 *            [1] w: [K, C/groups, R, S]
 *   outputs: [0] dx: x's shape [N, C, H, W] (not inferable: several H give one P)
 *
 * NNP_OP_CONV2D_BACKWARD_FILTER (conv2d_backward_filter, 12)
 *   inputs:  [0] x: [N, C, H, W]
 *            [1] dy: [N, K, P, Q]
 *   outputs: [0] dw: w's shape [K, C/groups, R, S] (not inferable: several R give one P)
 *
 * NNP_OP_CONV2D_BACKWARD_BIAS (conv2d_backward_bias, 13)
 *   inputs:  [0] dy: [N, K, P, Q]
 *   outputs: [0] db: [K]
 *   db[k] = sum over n,p,q of dy[n,k,p,q]; params may be NULL.
 */
typedef struct nnp_conv2d_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t stride_h; /**< >= 0; 0 means 1; default 1 */
  int32_t stride_w; /**< >= 0; 0 means 1; default 1 */
  int32_t pad_top; /**< >= 0; default 0 */
  int32_t pad_bottom; /**< >= 0; default 0 */
  int32_t pad_left; /**< >= 0; default 0 */
  int32_t pad_right; /**< >= 0; default 0 */
  int32_t dilation_h; /**< >= 0; 1 = dense; 0 means 1; default 1 */
  int32_t dilation_w; /**< >= 0; 1 = dense; 0 means 1; default 1 */
  int32_t groups; /**< >= 0; 0 means 1; default 1 */
  int32_t reserved0; /**< reserved, must be 0; ABI 1.1 */
} nnp_conv2d_params;
#define NNP_CONV2D_PARAMS_STRUCT_SIZE_1_0 (offsetof(nnp_conv2d_params, groups) + sizeof(int32_t))
#define NNP_CONV2D_PARAMS_STRUCT_SIZE_1_1 (offsetof(nnp_conv2d_params, reserved0) + sizeof(int32_t))
#define NNP_CONV2D_PARAMS_STRUCT_SIZE NNP_CONV2D_PARAMS_STRUCT_SIZE_1_1

/* ------------------------------------------------------------------------------------------ */
/**
 * N-D convolution parameters (ONNX Conv, opset 22; cross-correlation, no filter flip), shared
 * by the four NNP_OP_CONV_* kinds. k = 1, 2 or 3 spatial dimensions, taken from x's rank (3..5).
 * Each array's first k entries are used (pads: the first 2k) and the rest must be 0; zeroed
 * params are valid and mean ONNX's defaults (stride 1, no padding, dilation 1, group 1).
 *
 * Shapes: x [N, C, D1..Dk], w [K, C/group, R1..Rk], b [K], y [N, K, O1..Ok] with
 *   O_i = floor((D_i + pad_begin_i + pad_end_i - dilation_i*(R_i-1) - 1) / stride_i) + 1
 *   y[n,m,o] = b[m] + sum_{c,r} x[n, g*C/group + c, o*stride - pad_begin + r*dilation] * w[m,c,r]
 *   (o, r multi-indices, componentwise), g = m / (K/group), out-of-range x reads are 0.
 * auto_pad (ONNX): SAME_UPPER / SAME_LOWER give O_i = ceil(D_i / stride_i) with total padding
 * max(0, (O_i-1)*stride_i + dilation_i*(R_i-1) + 1 - D_i), split begin = floor(total/2) (UPPER)
 * or ceil(total/2) (LOWER); VALID is no padding; pads must then be all 0. C and K must be
 * divisible by group (group = C, K = m*C: depthwise with channel multiplier m); every O_i >= 1.
 *
 * Fused clamp (ABI 1.7; NNP_OP_CONV_FORWARD only): with has_clip_min and/or has_clip_max set,
 * the forward's output is y = min(max(y, clip_min), clip_max) after the bias, each bound only
 * where its flag is 1: ONNX Conv followed by ONNX Clip (opset 13; both bounds with clip_min >
 * clip_max give clip_max everywhere; NaN stays NaN), in one pass. Relu is has_clip_min = 1,
 * clip_min = 0; ReLU6 (MobileNet's Clip(0, 6)) sets both. The backward kinds refuse the flags
 * (INVALID_ARGUMENT): the clamp's gradient is the caller's (ReLU's is activation_backward(RELU)
 * with the clamped y as its x, as y > 0 exactly where the unclamped output was).
 *
 * Fused max pooling (ABI 1.8; NNP_OP_CONV_FORWARD only): with max_pool = p >= 2, the forward's
 * output (after the bias and the clamp) is then max-pooled over non-overlapping p x .. x p
 * windows, and only the pooled tensor is written: y [N, K, P1..Pk] with P_i = floor(O_i / p)
 * (every O_i >= p), y[n,m,q] = max over 0 <= s_i < p of conv(n, m, q*p + s), NaN if any of them
 * is NaN. That is ONNX Conv [-> Clip/Relu] -> MaxPool with kernel_shape = strides = [p]*k, no
 * padding, dilations 1, ceil_mode 0, one output, in one pass: the full-size output is never
 * stored (on the cpu, a 2 x 2 pool after a Winograd convolution is taken from each 2 x 2 output
 * tile in registers). max_pool 0 or 1: no pooling. The backward kinds refuse it (INVALID_ARGUMENT):
 * max pooling's gradient needs the unpooled output. A backend may answer UNSUPPORTED for it
 * (nnp_op_supported says so), and a plugin built for an earlier minor never receives it.
 *
 * NNP_OP_CONV_FORWARD (conv_forward, 14), new in ABI 1.2
 *   inputs:  [0] x: [N, C, D1..Dk], k = 1..3
 *            [1] w: [K, C/group, R1..Rk]
 *            [2] b (optional): [K]
 *   outputs: [0] y: [N, K, O1..Ok]; [N, K, floor(O1/p)..floor(Ok/p)] with max_pool = p >= 2
 *   N-D convolution (ONNX Conv), 1 to 3 spatial dimensions; nnp_conv_params has the formula.
 *
 * NNP_OP_CONV_BACKWARD_DATA (conv_backward_data, 15), new in ABI 1.2
 *   inputs:  [0] dy: [N, K, O1..Ok]
 *            [1] w: [K, C/group, R1..Rk]
 *   outputs: [0] dx: x's shape [N, C, D1..Dk] (not inferable: several D give one O)
 *   dx = dL/dx of NNP_OP_CONV_FORWARD: dx[n, g*C/group + c, d] = sum over m in group g, r and o
 *   with d = o*stride - pad_begin + r*dilation of dy[n,m,o] * w[m,c,r].
 *
 * NNP_OP_CONV_BACKWARD_FILTER (conv_backward_filter, 16), new in ABI 1.2
 *   inputs:  [0] x: [N, C, D1..Dk]
 *            [1] dy: [N, K, O1..Ok]
 *   outputs: [0] dw: w's shape [K, C/group, R1..Rk] (not inferable: several R give one O)
 *   dw = dL/dw of NNP_OP_CONV_FORWARD:
 *   dw[m,c,r] = sum over n, o of x[n, g*C/group + c, o*stride - pad_begin + r*dilation] * dy[n,m,o]
 *   with g = m / (K/group).
 *
 * NNP_OP_CONV_BACKWARD_BIAS (conv_backward_bias, 17), new in ABI 1.2
 *   inputs:  [0] dy: [N, K, O1..Ok], k = 1..3
 *   outputs: [0] db: [K]
 *   db[m] = sum over n and every spatial position o of dy[n,m,o]; params may be NULL. The bias
 *   gradient of NNP_OP_CONV_FORWARD and of NNP_OP_CONV_TRANSPOSE_FORWARD alike (the same
 *   formula: the bias is added to every output position of channel m).
 */
typedef struct nnp_conv_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t group; /**< >= 0; ONNX group; 0 means 1; default 1; ABI 1.2 */
  int32_t auto_pad; /**< nnp_auto_pad; ONNX auto_pad; not NOTSET: pads must be 0; default NOTSET; ABI 1.2 */
  int32_t kernel_shape[NNP_MAX_DIMS]; /**< ONNX kernel_shape: all 0 = taken from w, else must equal w's R1..Rk; default 0; ABI 1.2 */
  int32_t strides[NNP_MAX_DIMS]; /**< ONNX strides, >= 0 (0 means 1); default 0; ABI 1.2 */
  int32_t pads[NNP_MAX_DIMS]; /**< ONNX pads, >= 0: [begin_1..begin_k, end_1..end_k]; default 0; ABI 1.2 */
  int32_t dilations[NNP_MAX_DIMS]; /**< ONNX dilations, >= 0 (0 means 1); default 0; ABI 1.2 */
  int32_t has_clip_min; /**< 0 or 1; 1: the forward's y is clamped below at clip_min (conv_forward only); default 0; ABI 1.7 */
  int32_t has_clip_max; /**< 0 or 1; 1: the forward's y is clamped above at clip_max (conv_forward only); default 0; ABI 1.7 */
  double clip_min; /**< lower bound (not NaN) when has_clip_min = 1; default 0.0; ABI 1.7 */
  double clip_max; /**< upper bound (not NaN) when has_clip_max = 1; default 0.0; ABI 1.7 */
  int32_t max_pool; /**< >= 0; p >= 2: the forward's y is max-pooled over non-overlapping windows of p along every spatial axis (conv_forward only); 0 or 1: none; default 0; ABI 1.8 */
  int32_t reserved1; /**< reserved, must be 0; ABI 1.8 */
} nnp_conv_params;
#define NNP_CONV_PARAMS_STRUCT_SIZE_1_2 (offsetof(nnp_conv_params, dilations) + sizeof(int32_t) * NNP_MAX_DIMS)
#define NNP_CONV_PARAMS_STRUCT_SIZE_1_7 (offsetof(nnp_conv_params, clip_max) + sizeof(double))
#define NNP_CONV_PARAMS_STRUCT_SIZE_1_8 (offsetof(nnp_conv_params, reserved1) + sizeof(int32_t))
#define NNP_CONV_PARAMS_STRUCT_SIZE NNP_CONV_PARAMS_STRUCT_SIZE_1_8

/* ------------------------------------------------------------------------------------------ */
/**
 * N-D transposed convolution parameters (ONNX ConvTranspose, opset 22), shared by the
 * NNP_OP_CONV_TRANSPOSE_* kinds; the gradient of Conv with respect to its input, plus bias.
 * k = 1, 2 or 3 spatial dimensions, taken from x's rank (3..5). Each array's first k entries are
 * used (pads: the first 2k) and the rest must be 0; zeroed params are valid (ONNX's defaults).
 *
 * Shapes: x [N, C, D1..Dk], w [C, K/group, R1..Rk] (ONNX's layout), b [K], y [N, K, O1..Ok] with
 *   O_i = stride_i*(D_i-1) + output_padding_i + dilation_i*(R_i-1) + 1 - pad_begin_i - pad_end_i
 *   y[n,m,o] = b[m] + sum over c in group g, d, r with o = d*stride - pad_begin + r*dilation of
 *              x[n,c,d] * w[c, m - g*K/group, r],   g = m / (K/group) = c / (C/group)
 * Padding, as ONNX says: output_shape given (its first k entries all >= 1): O = output_shape and
 * total_i = stride_i*(D_i-1) + output_padding_i + dilation_i*(R_i-1) + 1 - O_i (negative: outputs
 * that no input reaches, which get only b), split pad_begin = floor(total/2) for SAME_UPPER, else
 * pad_begin = total - floor(total/2) (pads must be 0). Otherwise SAME_UPPER / SAME_LOWER give
 * O_i = D_i * stride_i by the same split (pads must be 0); VALID is no padding; NOTSET uses pads.
 * C must be divisible by group; every O_i >= 1.
 *
 * NNP_OP_CONV_TRANSPOSE_FORWARD (conv_transpose_forward, 120), new in ABI 1.2
 *   inputs:  [0] x: [N, C, D1..Dk], k = 1..3
 *            [1] w: [C, K/group, R1..Rk]
 *            [2] b (optional): [K]
 *   outputs: [0] y: [N, K, O1..Ok]
 *   N-D transposed convolution (ONNX ConvTranspose), 1 to 3 spatial dimensions;
 *   nnp_conv_transpose_params has the formula and the padding rules. Its bias gradient is
 *   NNP_OP_CONV_BACKWARD_BIAS (the same formula).
 *
 * NNP_OP_CONV_TRANSPOSE_BACKWARD_DATA (conv_transpose_backward_data, 121), new in ABI 1.2
 *   inputs:  [0] dy: [N, K, O1..Ok]
 *            [1] w: [C, K/group, R1..Rk]
 *   outputs: [0] dx: x's shape [N, C, D1..Dk] (not inferable: the pads may depend on D)
 *   dx = dL/dx of NNP_OP_CONV_TRANSPOSE_FORWARD: the forward convolution of dy with w (as
 *   NNP_OP_CONV_FORWARD with w read as [C, K/group, R..]):
 *   dx[n,c,d] = sum over m in c's group g and r of
 *               dy[n, m, d*stride - pad_begin + r*dilation] * w[c, m - g*K/group, r].
 *
 * NNP_OP_CONV_TRANSPOSE_BACKWARD_FILTER (conv_transpose_backward_filter, 122), new in ABI 1.2
 *   inputs:  [0] x: [N, C, D1..Dk]
 *            [1] dy: [N, K, O1..Ok]
 *   outputs: [0] dw: w's shape [C, K/group, R1..Rk] (not inferable: several R give one O)
 *   dw = dL/dw of NNP_OP_CONV_TRANSPOSE_FORWARD:
 *   dw[c,m,r] = sum over n, d of x[n,c,d] * dy[n, g*K/group + m, d*stride - pad_begin + r*dilation]
 *   with g = c / (C/group).
 */
typedef struct nnp_conv_transpose_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t group; /**< >= 0; ONNX group: C and K in group groups; 0 means 1; default 1; ABI 1.2 */
  int32_t auto_pad; /**< nnp_auto_pad; ONNX auto_pad (SAME_*: output = input * stride); not NOTSET: pads must be 0; default NOTSET; ABI 1.2 */
  int32_t kernel_shape[NNP_MAX_DIMS]; /**< ONNX kernel_shape: all 0 = w's R1..Rk, else must equal them; default 0; ABI 1.2 */
  int32_t strides[NNP_MAX_DIMS]; /**< ONNX strides, >= 0 (0 means 1): the output step per input position; default 0; ABI 1.2 */
  int32_t pads[NNP_MAX_DIMS]; /**< ONNX pads, >= 0: [begin_1..begin_k, end_1..end_k], removed from the full output; default 0; ABI 1.2 */
  int32_t dilations[NNP_MAX_DIMS]; /**< ONNX dilations of w, >= 0 (0 means 1); default 0; ABI 1.2 */
  int32_t output_padding[NNP_MAX_DIMS]; /**< ONNX output_padding, >= 0: extra output rows at the end of each axis; default 0; ABI 1.2 */
  int32_t output_shape[NNP_MAX_DIMS]; /**< ONNX output_shape (spatial O1..Ok): all 0 = not given; else every entry >= 1 and it sets the pads; default 0; ABI 1.2 */
} nnp_conv_transpose_params;
#define NNP_CONV_TRANSPOSE_PARAMS_STRUCT_SIZE_1_2 (offsetof(nnp_conv_transpose_params, output_shape) + sizeof(int32_t) * NNP_MAX_DIMS)
#define NNP_CONV_TRANSPOSE_PARAMS_STRUCT_SIZE NNP_CONV_TRANSPOSE_PARAMS_STRUCT_SIZE_1_2

/* ------------------------------------------------------------------------------------------ */
/**
 * Pooling (ONNX MaxPool / AveragePool, PyTorch's output-size rule for ceil_mode).
 *   P = floor_or_ceil((H + pad_top + pad_bottom - window_h) / stride_h) + 1, and with ceil_mode
 *   the last window must start inside the input or the top padding: if (P-1)*stride_h >=
 *   H + pad_top then P -= 1. Likewise Q.
 * Max: padding never wins (acts as -inf); backward routes dy to the first maximum in
 * row-major window order. y is read by backends that need it (cuDNN) and must be the
 * forward's output.
 * Average: window clipped to [-pad, H+pad_bottom) for the divisor when count_include_pad = 1,
 * to the input when 0; the sum always covers only input elements.
 * global = 1: window = (H, W), stride 1, padding 0; the other window fields are ignored.
 * Unless global: window >= 1, stride >= 1, 0 <= pad < window on each side.
 *
 * NNP_OP_POOL2D_FORWARD (pool2d_forward, 20)
 *   inputs:  [0] x: [N, C, H, W]
 *   outputs: [0] y: [N, C, P, Q]
 *
 * NNP_OP_POOL2D_BACKWARD (pool2d_backward, 21)
 *   inputs:  [0] x: [N, C, H, W]
 *            [1] y: [N, C, P, Q], the forward's output
 *            [2] dy: [N, C, P, Q]
 *   outputs: [0] dx: x's shape
 */
typedef struct nnp_pool2d_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t mode; /**< nnp_pool_mode; default MAX */
  int32_t window_h; /**< default 2 */
  int32_t window_w; /**< default 2 */
  int32_t stride_h; /**< default 2 */
  int32_t stride_w; /**< default 2 */
  int32_t pad_top; /**< default 0 */
  int32_t pad_bottom; /**< default 0 */
  int32_t pad_left; /**< default 0 */
  int32_t pad_right; /**< default 0 */
  int32_t ceil_mode; /**< 0 or 1; default 0 */
  int32_t count_include_pad; /**< 0 or 1; average only; default 0 */
  int32_t global; /**< 0 or 1; default 0 */
} nnp_pool2d_params;
#define NNP_POOL2D_PARAMS_STRUCT_SIZE_1_0 (offsetof(nnp_pool2d_params, global) + sizeof(int32_t))
#define NNP_POOL2D_PARAMS_STRUCT_SIZE NNP_POOL2D_PARAMS_STRUCT_SIZE_1_0

/* ------------------------------------------------------------------------------------------ */
/**
 * N-D pooling (ONNX MaxPool / AveragePool, opset 22; GlobalMaxPool / GlobalAveragePool with
 * global = 1), ABI 1.2. x is [N, C, D1..Dk] with k = rank(x) - 2 in {1, 2, 3}; the per-dimension
 * arrays use their first k entries (pads its first 2k), the rest must be 0.
 * Per spatial dimension i: effective kernel ek = dilations[i] * (kernel_shape[i] - 1) + 1,
 * output O_i, pads b_i = pads[i] (begin), e_i = pads[k + i] (end), stride s:
 *   auto_pad NOTSET: O = floor((D + b + e - ek) / s) + 1 (ceil with ceil_mode; ONNX rule: a
 *     last window that would start in the end padding is dropped: if (O-1)*s >= D + b, O -= 1)
 *   SAME_UPPER / SAME_LOWER: O = ceil(D / s); total pad = max(0, (O-1)*s + ek - D), split
 *     total/2 at the begin (UPPER; the extra at the end) or at the end (LOWER); pads must be 0
 *   VALID: O = floor((D - ek) / s) + 1, no padding; pads must be 0
 *   (with auto_pad, ceil_mode has no effect: ONNX's ceil and floor formulas agree there)
 * Window of output o: taps t_j = o*s - b + j*dilation, j = 0..kernel-1 (per dimension).
 * Max: y = the largest tap inside x (padding never wins); NaN propagates (the first NaN wins);
 * ties go to the first tap in row-major window order. Average: y = sum of the taps inside x /
 * divisor; divisor = the taps inside x (count_include_pad = 0) or the taps inside the padded
 * extent [-b, D + e) (count_include_pad = 1; a ceil_mode window running past it is clipped,
 * as PyTorch and ONNX Runtime). A window with no tap inside x (possible only with dilations)
 * gives -inf (max, Indices -1) or 0/0 = NaN (average without count_include_pad).
 * global = 1: window = (D1..Dk), stride 1, no padding, dilation 1; kernel_shape, strides,
 * pads, dilations, auto_pad and ceil_mode are ignored.
 * Unless global: kernel_shape >= 1, strides and dilations >= 0 (0 means 1),
 * 0 <= pad < ek, and every O_i >= 1.
 *
 * NNP_OP_POOL_FORWARD (pool_forward, 22), new in ABI 1.2
 *   inputs:  [0] x: [N, C, D1..Dk], k in {1, 2, 3}
 *   outputs: [0] y: [N, C, O1..Ok]
 *            [1] indices (optional): [N, C, O1..Ok], max pooling only, int64
 *   N-D max / average pooling (ONNX MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool);
 *   nnp_pool_params has the formulas. indices (max only; NULL for average) is ONNX's Indices: the
 *   flat index of each output's maximum in x, (n*C + c) * D1*..*Dk + the spatial index, which is
 *   row-major (storage_order 0) or column-major within the spatial dimensions (storage_order 1:
 *   i1 + i2*D1 + i3*D1*D2), as ONNX's reference and ONNX Runtime; -1 for a window with no tap
 *   inside x.
 *
 * NNP_OP_POOL_BACKWARD (pool_backward, 23), new in ABI 1.2
 *   inputs:  [0] x: [N, C, D1..Dk]
 *            [1] y: [N, C, O1..Ok], the forward's output
 *            [2] dy: [N, C, O1..Ok]
 *   outputs: [0] dx: x's shape
 *   dx of N-D pooling (no ONNX op; PyTorch max_poolNd / avg_poolNd backward, cuDNN's
 *   cudnnPoolingBackward operands): the forward's params, x, its output y and dy. Max routes each
 *   dy to the first maximum of its window in row-major window order (the tap forward's indices
 *   names; padding never wins; a window with no tap inside x routes nothing); dx sums over
 *   overlapping windows. Average spreads dy / divisor over the window's taps inside x, with the
 *   forward's divisor. y must be the forward's output; backends may read it (cuDNN) or recompute
 *   from x (reference, cpu).
 */
typedef struct nnp_pool_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t mode; /**< nnp_pool_mode; MAX (ONNX MaxPool) or AVERAGE (ONNX AveragePool); default MAX; ABI 1.2 */
  int32_t auto_pad; /**< nnp_auto_pad; ONNX auto_pad; default NOTSET; ABI 1.2 */
  int32_t ceil_mode; /**< 0 or 1; ONNX ceil_mode, with ONNX's rule for the last window; default 0; ABI 1.2 */
  int32_t count_include_pad; /**< 0 or 1; ONNX count_include_pad; average only; default 0; ABI 1.2 */
  int32_t global; /**< 0 or 1; 1: ONNX GlobalMaxPool / GlobalAveragePool; default 0; ABI 1.2 */
  int32_t storage_order; /**< 0 or 1; ONNX storage_order for Indices: 0 row-major, 1 column-major; default 0; ABI 1.2 */
  int32_t kernel_shape[NNP_MAX_DIMS]; /**< ONNX kernel_shape (required unless global), k entries >= 1; default 0; ABI 1.2 */
  int32_t strides[NNP_MAX_DIMS]; /**< ONNX strides, k entries; 0 means 1 (the ONNX default); default 0; ABI 1.2 */
  int32_t pads[NNP_MAX_DIMS]; /**< ONNX pads, 2k entries [b_1..b_k, e_1..e_k]; 0 <= pad < ek; default 0; ABI 1.2 */
  int32_t dilations[NNP_MAX_DIMS]; /**< ONNX dilations, k entries; 0 means 1 (the ONNX default); default 0; ABI 1.2 */
} nnp_pool_params;
#define NNP_POOL_PARAMS_STRUCT_SIZE_1_2 (offsetof(nnp_pool_params, dilations) + sizeof(int32_t) * NNP_MAX_DIMS)
#define NNP_POOL_PARAMS_STRUCT_SIZE NNP_POOL_PARAMS_STRUCT_SIZE_1_2

/* ------------------------------------------------------------------------------------------ */
/**
 * Activation: y = f(x) elementwise; all tensors have one shape, any rank.
 *
 * NNP_OP_ACTIVATION_FORWARD (activation_forward, 30)
 *   inputs:  [0] x
 *   outputs: [0] y: x's shape; may alias x
 *
 * NNP_OP_ACTIVATION_BACKWARD (activation_backward, 31)
 *   inputs:  [0] x
 *            [1] dy: x's shape
 *   outputs: [0] dx: x's shape; may alias dy
 *   dx = f'(x) * dy.
 */
typedef struct nnp_activation_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t function; /**< nnp_activation; default RELU */
  int32_t reserved0; /**< reserved, must be 0 */
  double alpha; /**< leaky_relu slope / elu scale (finite); ignored by the others; default 0.0 */
} nnp_activation_params;
#define NNP_ACTIVATION_PARAMS_STRUCT_SIZE_1_0 (offsetof(nnp_activation_params, alpha) + sizeof(double))
#define NNP_ACTIVATION_PARAMS_STRUCT_SIZE NNP_ACTIVATION_PARAMS_STRUCT_SIZE_1_0

/* ------------------------------------------------------------------------------------------ */
/**
 * Softmax / log-softmax along one axis (ONNX Softmax / LogSoftmax, opset 13).
 *   log-softmax: y = (x - max) - log(sum exp(x - max)), in that order (no rounding of max + log)
 *   softmax backward:     dx = y * (dy - sum_axis(dy * y))
 *   log-softmax backward: dx = dy - exp(y) * sum_axis(dy)
 *
 * NNP_OP_SOFTMAX_FORWARD (softmax_forward, 40)
 *   inputs:  [0] x
 *   outputs: [0] y: x's shape; may alias x
 *
 * NNP_OP_SOFTMAX_BACKWARD (softmax_backward, 41)
 *   inputs:  [0] y: the forward's output
 *            [1] dy: y's shape
 *   outputs: [0] dx: y's shape; may alias dy
 */
typedef struct nnp_softmax_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t axis; /**< in [-rank, rank); negative counts from the end; default -1 */
  int32_t log; /**< 0 or 1; 0 softmax, 1 log-softmax; default 0 */
} nnp_softmax_params;
#define NNP_SOFTMAX_PARAMS_STRUCT_SIZE_1_0 (offsetof(nnp_softmax_params, log) + sizeof(int32_t))
#define NNP_SOFTMAX_PARAMS_STRUCT_SIZE NNP_SOFTMAX_PARAMS_STRUCT_SIZE_1_0

/* ------------------------------------------------------------------------------------------ */
/**
 * Scaled dot-product attention (ONNX Attention, opset 23; Vaswani et al., "Attention is all you
 * need", NeurIPS 2017), one op so that a backend can fuse it (FlashAttention, cuDNN SDPA).
 * Two layouts, chosen by the rank of Q (K, V and Y follow it):
 *   rank 4: Q [B, Hq, Tq, D], K [B, Hkv, Tk, D], V [B, Hkv, Tk, Dv], Y [B, Hq, Tq, Dv];
 *           q_num_heads / kv_num_heads are 0 or equal to Hq / Hkv.
 *   rank 3: Q [B, Tq, Hq*D], K [B, Tk, Hkv*D], V [B, Tk, Hkv*Dv], Y [B, Tq, Hq*Dv] (the
 *           heads side by side in the last dimension: the layout of a Linear's output and of the
 *           output projection's input); q_num_heads and kv_num_heads are required.
 * Hq must be a multiple of Hkv (grouped-query attention: query head h reads kv head
 * h / (Hq/Hkv)). For every batch b and query head h, with s = scale (0: 1/sqrt(D), ONNX's
 * default):
 *   S = s * Q K^T + mask     [Tq, Tk]  (mask: the optional additive attn_mask, broadcast
 *                                       numpy-style from its shape to [B, Hq, Tq, Tk]; with
 *                                       is_causal = 1, also -inf where j > i: ONNX's upper-left
 *                                       aligned causal mask)
 *   lse = log(sum_j exp(S - max_j S)) + max_j S   (per row; the optional softmax_lse output)
 *   P = exp(S - lse)                   (softmax over the keys, computed as x - max - log(sum))
 *   Y = P V
 * Backward (FlashAttention-2, Dao 2023), from Y, lse and dY:
 *   dV = P^T dY;  dP = dY V^T;  delta_i = sum_d dY[i,d] Y[i,d];  dS = P * (dP - delta)
 *   dQ = s * dS K;  dK = s * dS^T Q   (dK and dV summed over the query heads of a group)
 * A row whose every score is -inf (fully masked) gives Y = 0, lse = -inf and zero gradients,
 * where the plain composition gives NaN (nnplug differs from ONNX here on purpose, as fused
 * kernels do). No gradient flows to attn_mask. ONNX's softcap, qk_matmul_output_mode,
 * past/present key-value cache and softmax_precision are not covered (float32 accumulation).
 *
 * NNP_OP_ATTENTION_FORWARD (attention_forward, 130), new in ABI 1.2
 *   inputs:  [0] Q: [B, Hq, Tq, D] or [B, Tq, Hq*D]
 *            [1] K: [B, Hkv, Tk, D] or [B, Tk, Hkv*D]
 *            [2] V: [B, Hkv, Tk, Dv] or [B, Tk, Hkv*Dv]
 *            [3] attn_mask (optional): additive, broadcastable to [B, Hq, Tq, Tk] (rank <= 4)
 *   outputs: [0] Y: [B, Hq, Tq, Dv] or [B, Tq, Hq*Dv]
 *            [1] softmax_lse (optional): [B, Hq, Tq]: each score row's log-sum-exp, for the backward, float32 in a float16/bfloat16 call (ABI 1.9), else the call's float dtype
 *
 * NNP_OP_ATTENTION_BACKWARD (attention_backward, 131), new in ABI 1.2
 *   inputs:  [0] Q
 *            [1] K
 *            [2] V
 *            [3] attn_mask (optional): the forward's mask
 *            [4] Y: the forward's output
 *            [5] dY: Y's shape
 *            [6] softmax_lse: [B, Hq, Tq], the forward's, float32 in a float16/bfloat16 call (ABI 1.9), else the call's float dtype
 *   outputs: [0] dQ: Q's shape
 *            [1] dK: K's shape
 *            [2] dV: V's shape
 *   The forward's params and mask; Y and softmax_lse are the forward's outputs.
 */
typedef struct nnp_attention_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t is_causal; /**< 0 or 1; 1: mask keys after the query (j > i), ONNX is_causal; default 0; ABI 1.2 */
  int32_t q_num_heads; /**< >= 0; Hq; required (>= 1) for rank-3 tensors, 0 or Hq for rank 4; default 0; ABI 1.2 */
  int32_t kv_num_heads; /**< >= 0; Hkv; required (>= 1) for rank-3 tensors, 0 or Hkv for rank 4; default 0; ABI 1.2 */
  int32_t reserved0; /**< reserved, must be 0; ABI 1.2 */
  double scale; /**< >= 0, finite; multiplies Q K^T; 0 means 1/sqrt(D) (ONNX default); default 0.0; ABI 1.2 */
} nnp_attention_params;
#define NNP_ATTENTION_PARAMS_STRUCT_SIZE_1_2 (offsetof(nnp_attention_params, scale) + sizeof(double))
#define NNP_ATTENTION_PARAMS_STRUCT_SIZE NNP_ATTENTION_PARAMS_STRUCT_SIZE_1_2

/* ------------------------------------------------------------------------------------------ */
/**
 * Softmax cross-entropy (ONNX SoftmaxCrossEntropyLoss without weights, 2-D).
 *   loss_i = -log_softmax(logits_i)[labels_i]; 0 where labels_i == ignore_index.
 *   mean divides by the count of non-ignored samples (0/0 gives NaN, as ONNX).
 *   A label outside [0, C) that is not ignored contributes NaN.
 *   backward: dlogits_i = (softmax(logits_i) - onehot(labels_i)) * dloss_i (/ count for mean);
 *   rows with ignored labels are 0.
 *
 * NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD (softmax_cross_entropy_forward, 50)
 *   inputs:  [0] logits: [N, C]
 *            [1] labels: [N], int64
 *   outputs: [0] loss: [] (rank 0) for mean/sum, [N] for none
 *            [1] log_prob (optional): [N, C]
 *
 * NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD (softmax_cross_entropy_backward, 51)
 *   inputs:  [0] logits: [N, C]
 *            [1] labels: [N], int64
 *            [2] dloss: loss's shape
 *   outputs: [0] dlogits: [N, C]
 */
typedef struct nnp_softmax_cross_entropy_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t reduction; /**< nnp_reduction; default MEAN */
  int32_t has_ignore_index; /**< 0 or 1; default 0 */
  int64_t ignore_index; /**< used when has_ignore_index = 1; default -100 */
} nnp_softmax_cross_entropy_params;
#define NNP_SOFTMAX_CROSS_ENTROPY_PARAMS_STRUCT_SIZE_1_0 (offsetof(nnp_softmax_cross_entropy_params, ignore_index) + sizeof(int64_t))
#define NNP_SOFTMAX_CROSS_ENTROPY_PARAMS_STRUCT_SIZE NNP_SOFTMAX_CROSS_ENTROPY_PARAMS_STRUCT_SIZE_1_0

/* ------------------------------------------------------------------------------------------ */
/**
 * Negative log-likelihood loss (ONNX NegativeLogLikelihoodLoss, opset 22), ABI 1.2.
 * input holds log-probabilities [N, C, d1..dk] (k >= 0), target int64 [N, d1..dk], weight
 * optional [C] (absent: every weight 1). For every position j = (n, d1..dk), t = target[j]:
 *   w_j = 0 if t == ignore_index (when has_ignore_index), else weight[t]
 *   loss_j = -input[n, t, d1..dk] * w_j
 *   none: loss = loss_j ([N, d1..dk]);  sum: sum_j loss_j;  mean: sum_j loss_j / sum_j w_j
 * (ONNX's weighted mean; without weight the divisor is the count of non-ignored positions; a
 * divisor of 0 gives 0/0 = NaN, as ONNX). A target outside [0, C) that is not ignored gives
 * loss_j = NaN and w_j = NaN (so sum and mean are NaN): devices cannot raise errors.
 * Backward: dinput[n, c, d] = -w_j * g_j where c == t, else 0; g_j = dloss[j] (none), dloss
 * (sum) or dloss / sum_j w_j (mean); ignored positions are 0, out-of-range ones NaN over c.
 *
 * NNP_OP_NLL_LOSS_FORWARD (nll_loss_forward, 52), new in ABI 1.2
 *   inputs:  [0] input: log-probabilities [N, C] or [N, C, d1..dk]
 *            [1] target: [N] or [N, d1..dk], int64
 *            [2] weight (optional): [C], per-class weights
 *   outputs: [0] loss: [] (rank 0) for mean/sum, [N, d1..dk] for none
 *
 * NNP_OP_NLL_LOSS_BACKWARD (nll_loss_backward, 53), new in ABI 1.2
 *   inputs:  [0] input: [N, C, d1..dk], the forward's input
 *            [1] target: [N, d1..dk], int64
 *            [2] dloss: loss's shape
 *            [3] weight (optional): [C]
 *   outputs: [0] dinput: input's shape
 */
typedef struct nnp_nll_loss_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t reduction; /**< an nnp_reduction value, or 0 (UNDEFINED) for MEAN, the ONNX default, so that zeroed params are valid; default MEAN; ABI 1.2 */
  int32_t has_ignore_index; /**< 0 or 1; 1: targets equal to ignore_index are ignored (ONNX: the attribute is present); default 0; ABI 1.2 */
  int64_t ignore_index; /**< any value, negative or outside [0, C) included; used when has_ignore_index = 1; default -100; ABI 1.2 */
} nnp_nll_loss_params;
#define NNP_NLL_LOSS_PARAMS_STRUCT_SIZE_1_2 (offsetof(nnp_nll_loss_params, ignore_index) + sizeof(int64_t))
#define NNP_NLL_LOSS_PARAMS_STRUCT_SIZE NNP_NLL_LOSS_PARAMS_STRUCT_SIZE_1_2

/* ------------------------------------------------------------------------------------------ */
/**
 * Softmax cross-entropy loss (ONNX SoftmaxCrossEntropyLoss, opset 13), ABI 1.2: the NLL loss
 * (nnp_nll_loss_params, the same formulas, weights, reductions and ignore rule) of
 *   log_prob = log_softmax(scores, axis = 1) = x - max_c x - log(sum_c exp(x - max_c x))
 * (computed in that order). Backward: dscores[n, c, d] = (softmax(scores)[n, c, d] -
 * onehot(t)[c]) * w_j * g_j, g_j as for NLL; ignored positions are 0, out-of-range ones NaN.
 *
 * NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_FORWARD (softmax_cross_entropy_loss_forward, 54), new in ABI 1.2
 *   inputs:  [0] scores: [N, C] or [N, C, d1..dk]
 *            [1] labels: [N] or [N, d1..dk], int64
 *            [2] weights (optional): [C], per-class weights
 *   outputs: [0] loss: [] (rank 0) for mean/sum, [N, d1..dk] for none
 *            [1] log_prob (optional): scores' shape
 *
 * NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_BACKWARD (softmax_cross_entropy_loss_backward, 55), new in ABI 1.2
 *   inputs:  [0] scores: [N, C, d1..dk], the forward's input
 *            [1] labels: [N, d1..dk], int64
 *            [2] dloss: loss's shape
 *            [3] weights (optional): [C]
 *   outputs: [0] dscores: scores' shape
 */
typedef struct nnp_softmax_cross_entropy_loss_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t reduction; /**< an nnp_reduction value, or 0 (UNDEFINED) for MEAN, the ONNX default, so that zeroed params are valid; default MEAN; ABI 1.2 */
  int32_t has_ignore_index; /**< 0 or 1; 1: labels equal to ignore_index are ignored (ONNX: the attribute is present); default 0; ABI 1.2 */
  int64_t ignore_index; /**< any value, negative or outside [0, C) included; used when has_ignore_index = 1; default -100; ABI 1.2 */
} nnp_softmax_cross_entropy_loss_params;
#define NNP_SOFTMAX_CROSS_ENTROPY_LOSS_PARAMS_STRUCT_SIZE_1_2 (offsetof(nnp_softmax_cross_entropy_loss_params, ignore_index) + sizeof(int64_t))
#define NNP_SOFTMAX_CROSS_ENTROPY_LOSS_PARAMS_STRUCT_SIZE NNP_SOFTMAX_CROSS_ENTROPY_LOSS_PARAMS_STRUCT_SIZE_1_2

/* ------------------------------------------------------------------------------------------ */
/**
 * Batch normalisation over N (and H, W) per channel (ONNX BatchNormalization, cuDNN spatial
 * mode). x is [N, C] or [N, C, H, W]; per-channel tensors are [C]. M = N*H*W. x, y, dy and dx
 * have the call's dtype; every per-channel tensor (scale, bias, the running, saved and given
 * statistics, dscale, dbias) is float32 in a float16/bfloat16 call (ABI 1.10; ONNX's T1 and T2
 * may differ from T, and cuDNN and PyTorch keep them in float32 for 16-bit inputs), else the
 * call's dtype; the sums are computed in float32 or wider.
 *   mean_c = sum x / M;  var_c = sum (x - mean_c)^2 / M (biased);  inv_std = 1/sqrt(var + eps)
 *   y = scale * (x - mean) * inv_std + bias
 * Training: running_mean = momentum * running_mean + (1 - momentum) * mean            (ONNX)
 *           running_var  = momentum * running_var  + (1 - momentum) * var * M/(M-1)  (unbiased,
 *           as cuDNN and PyTorch; M = 1 uses var); with running_var_rule = 1 the population
 *           var (ONNX). saved_* are for backward.
 * Inference: inv_std = 1/sqrt(var + eps) from the given mean and var.
 * Backward: dbias = sum dy; dscale = sum dy * xhat;
 *   dx = scale * inv_std / M * (M*dy - dbias - xhat * dscale), xhat = (x - mean) * inv_std
 *
 * NNP_OP_BATCH_NORM_FORWARD_TRAINING (batch_norm_forward_training, 60)
 *   inputs:  [0] x
 *            [1] scale: [C], float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype
 *            [2] bias: [C], float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype
 *   outputs: [0] y: x's shape
 *            [1] running_mean: [C], read and written (in place), float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype
 *            [2] running_var: [C], read and written (in place), float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype
 *            [3] saved_mean: [C], float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype
 *            [4] saved_inv_std: [C], float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype
 *
 * NNP_OP_BATCH_NORM_FORWARD_INFERENCE (batch_norm_forward_inference, 61)
 *   inputs:  [0] x
 *            [1] scale: [C], float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype
 *            [2] bias: [C], float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype
 *            [3] mean: [C], float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype
 *            [4] var: [C], float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype
 *   outputs: [0] y: x's shape
 *
 * NNP_OP_BATCH_NORM_BACKWARD (batch_norm_backward, 62)
 *   inputs:  [0] x
 *            [1] dy: x's shape
 *            [2] scale: [C], float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype
 *            [3] saved_mean: [C], float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype
 *            [4] saved_inv_std: [C], float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype
 *   outputs: [0] dx: x's shape
 *            [1] dscale: [C], float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype
 *            [2] dbias: [C], float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype
 */
typedef struct nnp_batch_norm_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  double epsilon; /**< > 0, finite; > 0, ONNX default 1e-5; default 1e-05 */
  double momentum; /**< in [0,1]; weight of the old running value; ONNX default 0.9; default 0.9 */
  int32_t running_var_rule; /**< 0 or 1; training's running_var update: 0 (the default, today's rule and that of PyTorch and cuDNN, kept for ABI stability) the unbiased var * M/(M-1); 1 ONNX BatchNormalization's population var; default 0; ABI 1.2 */
  int32_t reserved0; /**< reserved, must be 0; ABI 1.2 */
} nnp_batch_norm_params;
#define NNP_BATCH_NORM_PARAMS_STRUCT_SIZE_1_0 (offsetof(nnp_batch_norm_params, momentum) + sizeof(double))
#define NNP_BATCH_NORM_PARAMS_STRUCT_SIZE_1_2 (offsetof(nnp_batch_norm_params, reserved0) + sizeof(int32_t))
#define NNP_BATCH_NORM_PARAMS_STRUCT_SIZE NNP_BATCH_NORM_PARAMS_STRUCT_SIZE_1_2

/* ------------------------------------------------------------------------------------------ */
/**
 * Layer normalisation over the trailing dimensions [axis, rank) (ONNX LayerNormalization).
 * Outer shape O = x.shape[0:axis]; normalised shape I = x.shape[axis:]; stats tensors have
 * ONNX's shape: x's rank with 1 in the normalised dimensions (O + [1]*len(I)), and its
 * stash_type = 1 dtype: float32 in a float16/bfloat16 call (ABI 1.10), computed in float32 or
 * wider; x, scale, bias, y and the gradients have the call's dtype.
 *   mean = sum x / |I|;  var = sum (x - mean)^2 / |I|;  inv_std = 1/sqrt(var + eps)
 *   y = (x - mean) * inv_std * scale + bias
 *
 * NNP_OP_LAYER_NORM_FORWARD (layer_norm_forward, 65)
 *   inputs:  [0] x
 *            [1] scale: I
 *            [2] bias (optional): I
 *   outputs: [0] y: x's shape
 *            [1] mean (optional): O + [1]*len(I), float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype
 *            [2] inv_std (optional): O + [1]*len(I), float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype
 *
 * NNP_OP_LAYER_NORM_BACKWARD (layer_norm_backward, 66)
 *   inputs:  [0] x
 *            [1] dy: x's shape
 *            [2] scale: I
 *            [3] mean: O + [1]*len(I), float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype
 *            [4] inv_std: O + [1]*len(I), float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype
 *   outputs: [0] dx: x's shape
 *            [1] dscale: I
 *            [2] dbias (optional): I
 */
typedef struct nnp_layer_norm_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t axis; /**< in [-rank, rank); ONNX default -1; default -1 */
  int32_t reserved0; /**< reserved, must be 0 */
  double epsilon; /**< >= 0, finite; default 1e-05 */
} nnp_layer_norm_params;
#define NNP_LAYER_NORM_PARAMS_STRUCT_SIZE_1_0 (offsetof(nnp_layer_norm_params, epsilon) + sizeof(double))
#define NNP_LAYER_NORM_PARAMS_STRUCT_SIZE NNP_LAYER_NORM_PARAMS_STRUCT_SIZE_1_0

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
 * The backward op takes the same params: the mask is regenerated.
 *
 * Step counter on the device (ABI 1.4): with the optional input `step` (float32, 1 element, on
 * the call's device) the counter offset is
 *   offset + step * offset_per_step      (uint64 arithmetic, modulo 2^64)
 * with step's value read on the device when the op runs, in stream order: an op queued before
 * (binary ADD step += one, in place) may update it. One counter can so drive every dropout layer
 * of a training step and adam_update's bias corrections: with offset_per_step = the counter
 * blocks a layer draws per step, a step replayed with the same params draws exactly the masks of
 * calls whose offset was advanced by hand (bit for bit). step must hold a whole number >= 0
 * (float32 holds every whole number up to 2^24 exactly): every backend refuses other values
 * with NNP_STATUS_INVALID_ARGUMENT and leaves y and the mask untouched: the reference and cpu
 * backends when the op runs; sim and cuda, whose kernels read the value on the device, at the
 * stream's next synchronize. Without a step tensor offset_per_step is not used (any value is
 * accepted).
 *
 * NNP_OP_DROPOUT_FORWARD (dropout_forward, 70)
 *   inputs:  [0] x
 *            [1] step (optional): 1 element ([] or [1]): the step counter; the offset used is offset + step * offset_per_step, float32; new in ABI 1.4
 *   outputs: [0] y: x's shape; may alias x
 *            [1] mask (optional): x's shape, 0/1, uint8
 *
 * NNP_OP_DROPOUT_BACKWARD (dropout_backward, 71)
 *   inputs:  [0] dy
 *            [1] step (optional): 1 element ([] or [1]): the step counter, as in dropout_forward, float32; new in ABI 1.4
 *   outputs: [0] dx: dy's shape; may alias dy
 */
typedef struct nnp_dropout_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  double ratio; /**< in [0,1); probability of dropping an element; default 0.5 */
  uint64_t seed; /**< default 0 */
  uint64_t offset; /**< Philox counter offset, in units of 4 elements; default 0 */
  uint64_t offset_per_step; /**< counter blocks added to offset per unit of the step input; not used without it; default 0; ABI 1.4 */
} nnp_dropout_params;
#define NNP_DROPOUT_PARAMS_STRUCT_SIZE_1_0 (offsetof(nnp_dropout_params, offset) + sizeof(uint64_t))
#define NNP_DROPOUT_PARAMS_STRUCT_SIZE_1_4 (offsetof(nnp_dropout_params, offset_per_step) + sizeof(uint64_t))
#define NNP_DROPOUT_PARAMS_STRUCT_SIZE NNP_DROPOUT_PARAMS_STRUCT_SIZE_1_4

/* ------------------------------------------------------------------------------------------ */
/**
 * y = a (op) b with numpy (multidirectional) broadcasting; y has the broadcast shape.
 *
 * NNP_OP_BINARY (binary, 80)
 *   inputs:  [0] a
 *            [1] b
 *   outputs: [0] y: the broadcast shape; may alias a or b when it has that operand's shape; may alias a or b
 */
typedef struct nnp_binary_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t op; /**< nnp_binary_op; default ADD */
  int32_t reserved0; /**< reserved, must be 0; ABI 1.1 */
} nnp_binary_params;
#define NNP_BINARY_PARAMS_STRUCT_SIZE_1_0 (offsetof(nnp_binary_params, op) + sizeof(int32_t))
#define NNP_BINARY_PARAMS_STRUCT_SIZE_1_1 (offsetof(nnp_binary_params, reserved0) + sizeof(int32_t))
#define NNP_BINARY_PARAMS_STRUCT_SIZE NNP_BINARY_PARAMS_STRUCT_SIZE_1_1

/* ------------------------------------------------------------------------------------------ */
/**
 * y = alpha * x (same shape).
 *
 * NNP_OP_SCALE (scale, 81)
 *   inputs:  [0] x
 *   outputs: [0] y: x's shape; may alias x
 */
typedef struct nnp_scale_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  double alpha; /**< default 1.0 */
} nnp_scale_params;
#define NNP_SCALE_PARAMS_STRUCT_SIZE_1_0 (offsetof(nnp_scale_params, alpha) + sizeof(double))
#define NNP_SCALE_PARAMS_STRUCT_SIZE NNP_SCALE_PARAMS_STRUCT_SIZE_1_0

/* ------------------------------------------------------------------------------------------ */
/**
 * Every element of y = value (rounded to y's dtype).
 *
 * NNP_OP_FILL (fill, 82)
 *   inputs:  none
 *   outputs: [0] y: any shape
 */
typedef struct nnp_fill_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  double value; /**< default 0.0 */
} nnp_fill_params;
#define NNP_FILL_PARAMS_STRUCT_SIZE_1_0 (offsetof(nnp_fill_params, value) + sizeof(double))
#define NNP_FILL_PARAMS_STRUCT_SIZE NNP_FILL_PARAMS_STRUCT_SIZE_1_0

/* ------------------------------------------------------------------------------------------ */
/**
 * ONNX Transpose: y.shape[i] = x.shape[perm[i]], y[j0..jr] = x[i] with i[perm[k]] = j[k].
 * perm is a permutation of 0..rank-1 in its first rank entries; the rest must be 0.
 *
 * NNP_OP_TRANSPOSE (transpose, 84)
 *   inputs:  [0] x
 *   outputs: [0] y: x.shape permuted by perm
 */
typedef struct nnp_transpose_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t perm[NNP_MAX_DIMS]; /**< default identity */
} nnp_transpose_params;
#define NNP_TRANSPOSE_PARAMS_STRUCT_SIZE_1_0 (offsetof(nnp_transpose_params, perm) + sizeof(int32_t) * NNP_MAX_DIMS)
#define NNP_TRANSPOSE_PARAMS_STRUCT_SIZE NNP_TRANSPOSE_PARAMS_STRUCT_SIZE_1_0

/* ------------------------------------------------------------------------------------------ */
/**
 * ONNX Concat (opset 13): y = the inputs joined along `axis`, in order. Every input has y's
 * rank and y's dims except along axis; y.shape[axis] = sum of the inputs' dims there (an input
 * may have 0 there). Split with the inputs' extents is its backward.
 *
 * NNP_OP_CONCAT (concat, 86), new in ABI 1.2
 *   inputs:  [0..] xs[n] (variadic: 1..NNP_MAX_VARIADIC tensors): one rank and dtype, equal dims except along axis, any dtype
 *   outputs: [0] y: the inputs' shape with the sum of their dims along axis, any dtype
 */
typedef struct nnp_concat_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t axis; /**< in [-rank, rank); negative counts from the end (ONNX requires it: 0 is nnplug's default); default 0; ABI 1.2 */
  int32_t reserved0; /**< reserved, must be 0; ABI 1.2 */
} nnp_concat_params;
#define NNP_CONCAT_PARAMS_STRUCT_SIZE_1_2 (offsetof(nnp_concat_params, reserved0) + sizeof(int32_t))
#define NNP_CONCAT_PARAMS_STRUCT_SIZE NNP_CONCAT_PARAMS_STRUCT_SIZE_1_2

/* ------------------------------------------------------------------------------------------ */
/**
 * ONNX Split (opset 18): x cut along `axis` into the outputs, in order; every output has x's
 * dims except along axis. The sizes along axis (ONNX's optional `split` input) are the outputs'
 * own extents, given by the caller; they must add up to x.shape[axis]. num_outputs > 0 selects
 * ONNX's num_outputs attribute instead: then there are exactly num_outputs outputs, each
 * ceil(x.shape[axis] / num_outputs) long except the last, which gets the rest (ONNX's rule for
 * uneven splits; a negative rest is refused), and nnp_op_infer_shapes gives the outputs'
 * shapes. Split of dy is the backward of concat.
 *
 * NNP_OP_SPLIT (split, 87), new in ABI 1.2
 *   inputs:  [0] x: any dtype
 *   outputs: [0..] ys[n] (variadic: 1..NNP_MAX_VARIADIC tensors): x's shape except along axis, where their extents add up to x's, any dtype
 *   Not inferable unless num_outputs > 0: the split sizes are the outputs' extents.
 */
typedef struct nnp_split_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t axis; /**< in [-rank, rank); negative counts from the end; ONNX default 0; default 0; ABI 1.2 */
  int32_t num_outputs; /**< 0: the outputs' extents are the split sizes; > 0: ONNX num_outputs (must equal the number of outputs); default 0; ABI 1.2 */
} nnp_split_params;
#define NNP_SPLIT_PARAMS_STRUCT_SIZE_1_2 (offsetof(nnp_split_params, num_outputs) + sizeof(int32_t))
#define NNP_SPLIT_PARAMS_STRUCT_SIZE NNP_SPLIT_PARAMS_STRUCT_SIZE_1_2

/* ------------------------------------------------------------------------------------------ */
/**
 * ONNX Slice (opset 13), with starts, ends, axes and steps as params (ONNX passes them as
 * int64 tensors). For i < n_axes: axis a = axes[i] (axes = 0..n_axes-1 when has_axes = 0),
 * step s = steps[i] (1 when has_steps = 0), d = x.shape[a]:
 *   start = starts[i] (+ d if < 0), end = ends[i] (+ d if < 0), then clamped:
 *   s > 0: start, end in [0, d];        s < 0: start in [0, d-1], end in [-1, d-1];
 *   y.shape[a] = max(0, ceil((end - start) / s)),  y[.., j, ..] = x[.., start + j*s, ..].
 * INT64_MAX / INT64_MIN as end mean "to the end" (forward / backward). Axes not named keep
 * their extent. n_axes = 0 gives y = x. Repeated axes and zero steps are refused.
 *
 * NNP_OP_SLICE (slice, 88), new in ABI 1.2
 *   inputs:  [0] x: any dtype
 *   outputs: [0] y: x's shape with the sliced axes' counts, any dtype
 *
 * NNP_OP_SLICE_BACKWARD (slice_backward, 140), new in ABI 1.2
 *   inputs:  [0] dy: the forward's y shape, any dtype
 *   outputs: [0] dx: the forward's x shape (not inferable), any dtype
 *   dx = 0 except the elements the forward slice read, which get dy (params the forward's).
 */
typedef struct nnp_slice_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t n_axes; /**< K, the entries used in starts, ends, axes, steps; in [0, rank]; default 0; ABI 1.2 */
  int32_t has_axes; /**< 0 or 1; 0: axes = 0..K-1 (ONNX default); default 0; ABI 1.2 */
  int32_t has_steps; /**< 0 or 1; 0: every step 1 (ONNX default); default 0; ABI 1.2 */
  int32_t reserved0; /**< reserved, must be 0; ABI 1.2 */
  int64_t starts[NNP_MAX_DIMS]; /**< ONNX starts; negative counts from the end; default 0; ABI 1.2 */
  int64_t ends[NNP_MAX_DIMS]; /**< ONNX ends (exclusive); negative counts from the end; INT64_MAX / INT64_MIN = to the end; default 0; ABI 1.2 */
  int64_t axes[NNP_MAX_DIMS]; /**< ONNX axes, in [-rank, rank), no repeats; read when has_axes = 1; default 0; ABI 1.2 */
  int64_t steps[NNP_MAX_DIMS]; /**< ONNX steps, non-zero; read when has_steps = 1; default 0; ABI 1.2 */
} nnp_slice_params;
#define NNP_SLICE_PARAMS_STRUCT_SIZE_1_2 (offsetof(nnp_slice_params, steps) + sizeof(int64_t) * NNP_MAX_DIMS)
#define NNP_SLICE_PARAMS_STRUCT_SIZE NNP_SLICE_PARAMS_STRUCT_SIZE_1_2

/* ------------------------------------------------------------------------------------------ */
/**
 * ONNX Gather (opset 13): with a = axis, r = rank(data), q = rank(indices),
 *   y.shape = data.shape[:a] + indices.shape + data.shape[a+1:]   (rank q + r - 1)
 *   y[i_0..i_{a-1}, j_0..j_{q-1}, k_{a+1}..] = data[i_0..i_{a-1}, idx(j), k_{a+1}..],
 *   idx(j) = indices[j] + (indices[j] < 0 ? data.shape[a] : 0).
 * An index outside [-data.shape[a], data.shape[a]) is an error in ONNX. The reference and cpu
 * backends check every index before writing and fail with NNP_STATUS_INVALID_ARGUMENT naming
 * the first bad one (outputs untouched). A device that cannot raise from a kernel writes zeros
 * for the slices of such indices (gather) and drops their rows of dy (gather_backward).
 * gather_backward scatter-adds dy into a zeroed dx of data's shape (deterministic: every element
 * of dx sums its contributions in the order of indices); it is the embedding-lookup gradient.
 *
 * NNP_OP_GATHER (gather, 89), new in ABI 1.2
 *   inputs:  [0] data: rank r >= 1, any dtype
 *            [1] indices: any rank q (0 included), int64
 *   outputs: [0] y: data.shape[:axis] + indices.shape + data.shape[axis+1:], any dtype
 *
 * NNP_OP_GATHER_BACKWARD (gather_backward, 141), new in ABI 1.2
 *   inputs:  [0] dy: the forward's y shape
 *            [1] indices: the forward's indices, int64
 *   outputs: [0] dx: data's shape (not inferable: data.shape[axis] is not in dy)
 *   dx = 0, then dx[.., idx(j), ..] += dy[.., j, ..] in the order of j (deterministic).
 */
typedef struct nnp_gather_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t axis; /**< in [-r, r); negative counts from the end; ONNX default 0; default 0; ABI 1.2 */
  int32_t reserved0; /**< reserved, must be 0; ABI 1.2 */
} nnp_gather_params;
#define NNP_GATHER_PARAMS_STRUCT_SIZE_1_2 (offsetof(nnp_gather_params, reserved0) + sizeof(int32_t))
#define NNP_GATHER_PARAMS_STRUCT_SIZE NNP_GATHER_PARAMS_STRUCT_SIZE_1_2

/* ------------------------------------------------------------------------------------------ */
/**
 * Reduces over axes[0..n_axes) (each in [-rank, rank), no repeats) (ONNX ReduceSum, ReduceMean,
 * ReduceMax; ABI 1.2 also ReduceMin, ReduceL2, ReduceL1, ReduceSumSquare, ReduceLogSumExp;
 * opset 18). n_axes = 0 reduces over every axis, unless noop_with_empty_axes = 1: then y = x
 * (ONNX). keepdims = 1 keeps reduced axes as 1, keepdims = 0 drops them (reducing everything
 * then gives rank 0). An empty reduction gives 0 (sum, l1, l2, sum_square), NaN (mean), -inf
 * (max, log_sum_exp) or +inf (min). Max and min propagate NaN.
 *
 * NNP_OP_REDUCE (reduce, 90)
 *   inputs:  [0] x
 *   outputs: [0] y: x's shape with reduced axes as 1 (keepdims) or dropped
 */
typedef struct nnp_reduce_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t op; /**< nnp_reduce_op; default SUM */
  int32_t keepdims; /**< 0 or 1; default 1 */
  int32_t n_axes; /**< default 0 */
  int32_t axes[NNP_MAX_DIMS]; /**< default 0 */
  int32_t noop_with_empty_axes; /**< 0 or 1; ONNX: with n_axes = 0, 1 makes the op the identity; default 0; ABI 1.1 */
} nnp_reduce_params;
#define NNP_REDUCE_PARAMS_STRUCT_SIZE_1_0 (offsetof(nnp_reduce_params, axes) + sizeof(int32_t) * NNP_MAX_DIMS)
#define NNP_REDUCE_PARAMS_STRUCT_SIZE_1_1 (offsetof(nnp_reduce_params, noop_with_empty_axes) + sizeof(int32_t))
#define NNP_REDUCE_PARAMS_STRUCT_SIZE NNP_REDUCE_PARAMS_STRUCT_SIZE_1_1

/* ------------------------------------------------------------------------------------------ */
/**
 * SGD (PyTorch torch.optim.SGD; momentum buffer zero-initialised by the caller)
 *   g = grad + weight_decay * param
 *   if momentum != 0: buf = momentum * buf + (1 - dampening) * g;
 *                     g = nesterov ? g + momentum * buf : buf
 *   param -= lr * g
 * With dampening = 0 a zero buffer equals PyTorch's first step.
 *
 * NNP_OP_SGD_UPDATE (sgd_update, 100)
 *   inputs:  [0] grad
 *   outputs: [0] param: read and written (in place)
 *            [1] momentum_buffer (optional): read and written; required if momentum != 0
 *   All tensors have param's shape.
 */
typedef struct nnp_sgd_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  double lr; /**< finite; default 0.01 */
  double momentum; /**< finite; default 0.0 */
  double dampening; /**< finite; default 0.0 */
  double weight_decay; /**< finite; default 0.0 */
  int32_t nesterov; /**< 0 or 1; requires momentum > 0 and dampening = 0; default 0 */
  int32_t reserved0; /**< reserved, must be 0 */
} nnp_sgd_params;
#define NNP_SGD_PARAMS_STRUCT_SIZE_1_0 (offsetof(nnp_sgd_params, reserved0) + sizeof(int32_t))
#define NNP_SGD_PARAMS_STRUCT_SIZE NNP_SGD_PARAMS_STRUCT_SIZE_1_0

/* ------------------------------------------------------------------------------------------ */
/**
 * Adam / AdamW (Kingma & Ba 2015; AdamW: Loshchilov & Hutter 2019; PyTorch's formulas)
 *   adamw = 0: g = grad + weight_decay * param;   adamw = 1: param *= 1 - lr * weight_decay
 *   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
 *   param -= lr * (m / (1 - beta1^step)) / (sqrt(v / (1 - beta2^step)) + epsilon)
 * step is the 1-based count of this update.
 *
 * NNP_OP_ADAM_UPDATE (adam_update, 101)
 *   inputs:  [0] grad
 *            [1] step (optional): 1 element ([] or [1]): the 1-based step count; replaces params->step, float32; new in ABI 1.4
 *            [2] lr (optional): 1 element ([] or [1]): the learning rate; replaces params->lr; new in ABI 1.4
 *   outputs: [0] param: read and written (in place)
 *            [1] m: read and written (in place)
 *            [2] v: read and written (in place)
 *   grad, param, m and v have param's shape; m and v start at zero.
 *   Per-step values on the device (ABI 1.4; PyTorch's "capturable" Adam): the optional inputs
 *   step and lr hold 1 element each (shape [] or [1]) on the call's device and are read there
 *   when the op runs, in stream order: an op queued before may update them (binary ADD step +=
 *   one, in place), so a replayed sequence of calls needs no new params. Given, step's value
 *   replaces params->step in the bias corrections (params->step is then not read), and lr's
 *   value replaces params->lr (in the update and in AdamW's decay). step is float32 whatever the
 *   call's dtype: it counts whole steps exactly up to 2^24. Its value must be a whole number >= 1:
 *   every backend refuses others with NNP_STATUS_INVALID_ARGUMENT and leaves param, m and v
 *   untouched: the reference and cpu backends when the op runs; sim and cuda, whose kernels read
 *   the value on the device, at the stream's next synchronize (or graph launch's). lr's value is
 *   used as it is.
 */
typedef struct nnp_adam_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  double lr; /**< finite; default 0.001 */
  double beta1; /**< in [0,1); default 0.9 */
  double beta2; /**< in [0,1); default 0.999 */
  double epsilon; /**< >= 0, finite; default 1e-08 */
  double weight_decay; /**< finite; default 0.0 */
  int64_t step; /**< >= 1; default 1 */
  int32_t adamw; /**< 0 or 1; 0 Adam (L2 in the gradient), 1 AdamW (decoupled decay); default 0 */
  int32_t reserved0; /**< reserved, must be 0 */
} nnp_adam_params;
#define NNP_ADAM_PARAMS_STRUCT_SIZE_1_0 (offsetof(nnp_adam_params, reserved0) + sizeof(int32_t))
#define NNP_ADAM_PARAMS_STRUCT_SIZE NNP_ADAM_PARAMS_STRUCT_SIZE_1_0

/* ------------------------------------------------------------------------------------------ */
/**
 * y = min(max(x, min), max) elementwise (ONNX Clip, opset 13). A bound applies only when its
 * has_* flag is 1. When both apply and min > max, every element becomes max (ONNX). NaN in x
 * stays NaN. ONNX passes the bounds as optional 0-d input tensors; nnplug takes them as params
 * (the same results, no device scalars to read).
 *
 * NNP_OP_CLIP (clip, 110), new in ABI 1.1
 *   inputs:  [0] x
 *   outputs: [0] y: x's shape; may alias x
 */
typedef struct nnp_clip_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t has_min; /**< 0 or 1; default 0; ABI 1.1 */
  int32_t has_max; /**< 0 or 1; default 0; ABI 1.1 */
  double min; /**< lower bound (not NaN) when has_min = 1; default 0.0; ABI 1.1 */
  double max; /**< upper bound (not NaN) when has_max = 1; default 0.0; ABI 1.1 */
} nnp_clip_params;
#define NNP_CLIP_PARAMS_STRUCT_SIZE_1_1 (offsetof(nnp_clip_params, max) + sizeof(double))
#define NNP_CLIP_PARAMS_STRUCT_SIZE NNP_CLIP_PARAMS_STRUCT_SIZE_1_1

/* ------------------------------------------------------------------------------------------ */
/**
 * Y = op(A) @ op(B), numpy matmul (ONNX MatMul, opset 13) with optional transposes of the last
 * two dimensions of each operand. Zeroed params (trans_a = trans_b = 0) are ONNX MatMul. The
 * transposes are nnplug's extension (ONNX has none): they make the backward two matmuls,
 * dA = dY @ op(B)^T and dB = op(A)^T @ dY, then a reduce over broadcast batch dimensions.
 *
 * NNP_OP_MATMUL (matmul, 2), new in ABI 1.2
 *   inputs:  [0] A: [..., M, K] (trans_a = 0), [..., K, M] (trans_a = 1) or [K]
 *            [1] B: [..., K, N] (trans_b = 0), [..., N, K] (trans_b = 1) or [K]
 *   outputs: [0] Y: [broadcast batch..., M, N], without M when A is 1-D and without N when B is 1-D
 *   numpy matmul (ONNX MatMul, opset 13): A is [..., M, K] and B is [..., K, N] (after the
 *   transposes); the batch dimensions (all but the last two) broadcast with numpy rules and Y is
 *   [broadcast batch..., M, N]. A 1-D A is [K], promoted to [1, K]; a 1-D B is [K], promoted to
 *   [K, 1]; the added dimension is removed from Y (so [K] @ [K] gives a rank-0 Y). Rank 0
 *   operands are refused (ONNX). K = 0 gives zeros.
 */
typedef struct nnp_matmul_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t trans_a; /**< 0 or 1; 1: A's last two dimensions are [K, M] (op(A) = A^T); ignored when A is 1-D; default 0; ABI 1.2 */
  int32_t trans_b; /**< 0 or 1; 1: B's last two dimensions are [N, K] (op(B) = B^T); ignored when B is 1-D; default 0; ABI 1.2 */
} nnp_matmul_params;
#define NNP_MATMUL_PARAMS_STRUCT_SIZE_1_2 (offsetof(nnp_matmul_params, trans_b) + sizeof(int32_t))
#define NNP_MATMUL_PARAMS_STRUCT_SIZE NNP_MATMUL_PARAMS_STRUCT_SIZE_1_2

/* ------------------------------------------------------------------------------------------ */
/**
 * y = f(x) elementwise for f = op (nnp_unary_op: ONNX Exp, Log, Sqrt, Abs, Neg, Reciprocal,
 * Floor, Ceil, Sin, Cos, Erf). The backward is dx = f'(x) * dy, for the differentiable ops.
 *
 * NNP_OP_UNARY_FORWARD (unary_forward, 111), new in ABI 1.2
 *   inputs:  [0] x
 *   outputs: [0] y: x's shape; may alias x
 *
 * NNP_OP_UNARY_BACKWARD (unary_backward, 112), new in ABI 1.2
 *   inputs:  [0] x
 *            [1] dy: x's shape
 *   outputs: [0] dx: x's shape; may alias dy
 *   dx = f'(x) * dy for op EXP, LOG, SQRT, ABS, NEG, RECIPROCAL, SIN, COS, ERF (nnp_unary_op gives
 *   each f'); FLOOR and CEIL, piecewise constant, are refused (INVALID_ARGUMENT).
 */
typedef struct nnp_unary_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t op; /**< nnp_unary_op; default EXP; ABI 1.2 */
  int32_t reserved0; /**< reserved, must be 0; ABI 1.2 */
} nnp_unary_params;
#define NNP_UNARY_PARAMS_STRUCT_SIZE_1_2 (offsetof(nnp_unary_params, reserved0) + sizeof(int32_t))
#define NNP_UNARY_PARAMS_STRUCT_SIZE NNP_UNARY_PARAMS_STRUCT_SIZE_1_2

/* ------------------------------------------------------------------------------------------ */
/**
 * ONNX CumSum (opset 14), ABI 1.5, with axis as a param (ONNX passes it as a 0-d tensor): y has
 * x's shape and dtype. Along axis, for each line x[0..n) (n = x.shape[axis], the other indices
 * fixed):
 *   exclusive = 0, reverse = 0:  y[i] = sum_{j <= i} x[j]
 *   exclusive = 1, reverse = 0:  y[i] = sum_{j < i}  x[j]    (y[0] = 0)
 *   exclusive = 0, reverse = 1:  y[i] = sum_{j >= i} x[j]
 *   exclusive = 1, reverse = 1:  y[i] = sum_{j > i}  x[j]    (y[n-1] = 0)
 * Order and precision, on every backend: one running sum per line, adding x[j] in the order of
 * j (from j = 0 up, or from j = n-1 down with reverse = 1), in float64 for float32 and float64
 * x; each y[i] is that sum rounded once to x's dtype. NaN and Inf carry on to the rest of the
 * line (IEEE). n = 0 gives an empty y. The backward is a cumsum too: dx = cumsum(dy) with the
 * same axis and exclusive and reverse flipped, so there is no backward op: an autograd bridge
 * runs cumsum on dy.
 *
 * NNP_OP_CUMSUM (cumsum, 91), new in ABI 1.5
 *   inputs:  [0] x
 *   outputs: [0] y: x's shape; in place when it is x (each line's x[i] is read before y[i] is written); may alias x
 */
typedef struct nnp_cumsum_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  int32_t axis; /**< in [-rank, rank); negative counts from the end (ONNX requires it: 0 is nnplug's default); default 0; ABI 1.5 */
  int32_t exclusive; /**< 0 or 1; 1: y[i] leaves x[i] out (ONNX exclusive); default 0; ABI 1.5 */
  int32_t reverse; /**< 0 or 1; 1: sums run from the end of the axis (ONNX reverse); default 0; ABI 1.5 */
  int32_t reserved0; /**< reserved, must be 0; ABI 1.5 */
} nnp_cumsum_params;
#define NNP_CUMSUM_PARAMS_STRUCT_SIZE_1_5 (offsetof(nnp_cumsum_params, reserved0) + sizeof(int32_t))
#define NNP_CUMSUM_PARAMS_STRUCT_SIZE NNP_CUMSUM_PARAMS_STRUCT_SIZE_1_5

/* ------------------------------------------------------------------------------------------ */
/**
 * All-reduce across the ranks of a communicator (MPI_Allreduce, ncclAllReduce), ABI 1.3:
 *   y = op(x_0, x_1, ..., x_{size-1}) elementwise over the ranks' x, on every rank.
 *   SUM adds, MEAN adds then divides by size (NCCL's ncclAvg), MAX and MIN take the largest and
 *   smallest (NaN handling is the transport's). The order of the additions is the transport's
 *   (ranks' results agree bitwise within one transport and size; they may differ from a
 *   single-process sum in the last bits). comm, dtype and shape must be the same on every rank.
 *
 * NNP_OP_ALL_REDUCE (all_reduce, 150), new in ABI 1.3
 *   inputs:  [0] x: any shape; the same on every rank
 *   outputs: [0] y: x's shape; in place when it is x; may alias x
 */
typedef struct nnp_all_reduce_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  nnp_comm* comm; /**< required: a live communicator; the communicator; bound to the stream's device; ABI 1.3 */
  int32_t op; /**< SUM, MEAN, MAX or MIN; default SUM; ABI 1.3 */
  int32_t reserved0; /**< reserved, must be 0; ABI 1.3 */
} nnp_all_reduce_params;
#define NNP_ALL_REDUCE_PARAMS_STRUCT_SIZE_1_3 (offsetof(nnp_all_reduce_params, reserved0) + sizeof(int32_t))
#define NNP_ALL_REDUCE_PARAMS_STRUCT_SIZE NNP_ALL_REDUCE_PARAMS_STRUCT_SIZE_1_3

/* ------------------------------------------------------------------------------------------ */
/**
 * Broadcast from one rank (MPI_Bcast, ncclBroadcast), ABI 1.3: y = x of rank `root`, on every
 * rank (x of the other ranks is not read; root's y = its x). comm, root, dtype and shape must be
 * the same on every rank.
 *
 * NNP_OP_BROADCAST (broadcast, 151), new in ABI 1.3
 *   inputs:  [0] x: any shape; read on the root only
 *   outputs: [0] y: x's shape; in place when it is x; may alias x
 */
typedef struct nnp_broadcast_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  nnp_comm* comm; /**< required: a live communicator; the communicator; bound to the stream's device; ABI 1.3 */
  int32_t root; /**< the rank whose x is sent, in [0, size); default 0; ABI 1.3 */
  int32_t reserved0; /**< reserved, must be 0; ABI 1.3 */
} nnp_broadcast_params;
#define NNP_BROADCAST_PARAMS_STRUCT_SIZE_1_3 (offsetof(nnp_broadcast_params, reserved0) + sizeof(int32_t))
#define NNP_BROADCAST_PARAMS_STRUCT_SIZE NNP_BROADCAST_PARAMS_STRUCT_SIZE_1_3

/* ------------------------------------------------------------------------------------------ */
/**
 * All-gather (MPI_Allgather, ncclAllGather), ABI 1.3: y = the ranks' x concatenated along axis 0
 * in rank order, on every rank: y[r * n + i, ...] = x_r[i, ...] for x of shape [n, ...]. comm,
 * dtype and x's shape must be the same on every rank.
 *
 * NNP_OP_ALL_GATHER (all_gather, 152), new in ABI 1.3
 *   inputs:  [0] x: [n, d1..dk], rank >= 1; the same shape on every rank
 *   outputs: [0] y: [size * n, d1..dk]
 */
typedef struct nnp_all_gather_params {
  size_t struct_size; /**< sizeof as compiled by the caller */
  nnp_comm* comm; /**< required: a live communicator; the communicator; bound to the stream's device; ABI 1.3 */
} nnp_all_gather_params;
#define NNP_ALL_GATHER_PARAMS_STRUCT_SIZE_1_3 (offsetof(nnp_all_gather_params, comm) + sizeof(nnp_comm*))
#define NNP_ALL_GATHER_PARAMS_STRUCT_SIZE NNP_ALL_GATHER_PARAMS_STRUCT_SIZE_1_3

/* ------------------------------------------------------------------------------------------ */
/* Ops without params (params may be NULL). */
/**
 * NNP_OP_COPY (copy, 83)
 *   inputs:  [0] x: any dtype
 *   outputs: [0] y: x's shape, any dtype
 *   y = x element by element; same shape and dtype (any dtype); both may have arbitrary
 *   (non-negative) strides; they must not overlap. params may be NULL.
 */
/**
 * NNP_OP_CAST (cast, 85)
 *   inputs:  [0] x: any float dtype
 *   outputs: [0] y: x's shape, any float dtype
 *   Same shape, any two float dtypes (float16, bfloat16, float32, float64); rounds to nearest
 *   even. params may be NULL. nnp_op_infer_shapes gives y's shape; its dtype is the caller's.
 */
/**
 * NNP_OP_WHERE (where, 114), new in ABI 1.2
 *   inputs:  [0] condition: broadcasts with x and y, uint8
 *            [1] x: taken where condition != 0
 *            [2] y: taken where condition == 0
 *   outputs: [0] output: the broadcast shape of condition, x and y; may alias x or y when it has that operand's shape; may alias x or y
 *   output = condition ? x : y elementwise (ONNX Where, opset 16), with numpy (multidirectional)
 *   broadcasting of all three inputs. condition is uint8: 0 is false, any other value true. params
 *   may be NULL.
 */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NNPLUG_OPS_H_ */
