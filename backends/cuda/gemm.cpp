// gemm.cpp — NNP_OP_GEMM and NNP_OP_MATMUL through cuBLAS (cublasGemmEx,
// cublasGemmStridedBatchedEx, cublasGemmBatchedEx), float32, float16 and bfloat16 operands.
// Speed comes from cuBLAS's tensor-core kernels, one cuBLAS call per op: a batch that one stride
// per operand describes is one strided-batched call (a broadcast operand has stride 0; a shared
// B against a batched, untransposed A folds the batch into M: one plain GEMM); any other numpy
// batch broadcast is one pointer-array call whose arrays a small kernel writes on the device
// (gemm_kernels.cu), so the op stays capturable in a CUDA graph.
//
// Math: float32 is exact IEEE FP32 (CUBLAS_COMPUTE_32F with CUBLAS_DEFAULT_MATH) unless the
// stream allows TF32 (then CUBLAS_COMPUTE_32F_FAST_TF32 with CUBLAS_TF32_TENSOR_OP_MATH);
// float16/bfloat16 accumulate in float32 (CUBLAS_COMPUTE_32F), split-K reductions included
// (CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION). The math mode is set on every call.
//
// cuBLAS is column-major; nnplug is row-major. A row-major [R, C] matrix is the column-major
// [C, R] matrix of its transpose, so Y = op(A) op(B) is computed as Y^T = op(B)^T op(A)^T with
// B as cuBLAS's first operand; each operand's leading dimension is its stored column count.
// GEMM's C is broadcast into Y first (any ONNX unidirectional form), then accumulated with beta,
// except for a linear layer's bias vector on the shapes where cuBLASLt's bias epilogue was
// measured faster (below).
#include "lib_loader.hpp"
#include "ops.hpp"

#include <nnplug/kit/broadcast.hpp>
#include <nnplug/kit/matmul.hpp>

#include <cublasLt.h>

#include <climits>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace nnp::cuda {
namespace {

cudaDataType cuda_type(elem t, const char* op) {
  return float_code(t, CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF, op);
}

int checked_int(int64_t v, const char* op, const char* what) {
  if (v > INT_MAX)
    unsupported(format("%s: %s = %lld exceeds cuBLAS's 32-bit limit (2^31 - 1)", op, what,
                       static_cast<long long>(v)));
  return static_cast<int>(v);
}

// The stream's cuBLAS handle with the math mode of element type t (file comment, "Math").
cublasHandle_t blas_for(stream& s, elem t) {
  cublasHandle_t h = s.blas();
  cublasMath_t mode = CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;  // 16-bit: 32F throughout
  if (t == elem::f32) mode = s.allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH;
  NNP_CUBLAS_CHECK(cublasSetMathMode(h, mode));
  return h;
}

cublasComputeType_t compute_type(const stream& s, elem t) {
  return (t == elem::f32 && s.allow_tf32) ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

// ---- a GEMM with its bias in cuBLASLt's epilogue ---------------------------------------------
// Y = alpha op(A) op(B) + C for float32 when C is a vector of Y's N columns and beta = 1 (a linear
// layer's forward): one cublasLtMatmul with CUBLASLT_EPILOGUE_BIAS (the bias added to the product
// in the GEMM's epilogue, before it is stored) instead of C broadcast into Y by a kernel, then a
// GEMM with beta = 1 reading Y back. The formula is the same (alpha * the product + C[j], rounded
// once per step); the math mode is the stream's, as for cublasGemmEx. The algorithm is
// cuBLASLt's first heuristic choice for the shape, math mode and operand alignments, asked once
// per device and cached (thread-safe); with no choice the op takes the two-kernel path.
// It takes GEMMs with K <= 256 and at least 65 536 elements in Y: there the bias pass is a real
// pass over memory next to a short GEMM. On an H200 (docs/cuda-backend.md) that is the vit's
// linear layers (M = 2 048 and 2 176, K = 49 to 128), whose `--graph` epoch it made 5 % faster,
// while the cnn's fc1 (M = 128, N = 128, K = 9 216) ran slower under cuBLASLt's heuristic choice
// than under cublasGemmEx's (the cnn's epoch 0.29-0.33 s against 0.28 s) and the mlp's layers
// (M = 128, K = 512 and 784) were no faster. NNPLUG_CUDA_GEMM_LT=0 leaves the path out, =all
// takes it for every shape, to measure them side by side.
constexpr int64_t kLtMaxK = 256, kLtMinOutput = 65536;
bool lt_takes(int64_t M, int64_t N, int64_t K) {
  static const int mode = [] {  // 0: never, 1: the shapes above, 2: always
    const char* e = std::getenv("NNPLUG_CUDA_GEMM_LT");
    if (e == nullptr) return 1;
    return std::string(e) == "0" ? 0 : std::string(e) == "all" ? 2 : 1;
  }();
  return mode == 2 || (mode == 1 && K <= kLtMaxK && M * N >= kLtMinOutput);
}

// The largest of 16, 8 and 4 bytes that p is aligned to (cuBLASLt's alignment preferences).
uint32_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  return a % 16 == 0 ? 16u : a % 8 == 0 ? 8u : 4u;
}

// cuBLASLt's descriptors of one call, destroyed with it.
struct lt_call {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  lt_call() = default;
  lt_call(const lt_call&) = delete;
  lt_call& operator=(const lt_call&) = delete;
  ~lt_call() {
    if (pref != nullptr) cublasLtMatmulPreferenceDestroy(pref);
    if (d != nullptr) cublasLtMatrixLayoutDestroy(d);
    if (b != nullptr) cublasLtMatrixLayoutDestroy(b);
    if (a != nullptr) cublasLtMatrixLayoutDestroy(a);
    if (op != nullptr) cublasLtMatmulDescDestroy(op);
  }
};

// The workspace cuBLASLt's heuristic may ask for (split-K partials), from the stream's
// kScratchWorkspace slot.
constexpr uint64_t kLtWorkspaceBytes = uint64_t{4} << 20;

// D [m, n] (column-major, ld m) = alpha op_a(a) op_b(b) + bias[i] for row i, float32, with a and b
// as cublasGemmEx takes them (a: m x k after op_a, leading dimension lda; b: k x n after op_b).
// False when cuBLASLt offers no algorithm for it (nothing was launched).
bool gemm_bias_lt(stream& s, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n, int k,
                  float alpha, const void* a, int lda, const void* b, int ldb, const void* bias,
                  void* d, cublasComputeType_t compute) {
  lt_call c;
  NNP_CUBLAS_CHECK(cublasLtMatmulDescCreate(&c.op, compute, CUDA_R_32F));
  NNP_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(c.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a));
  NNP_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(c.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b));
  const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
  NNP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(c.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                  sizeof epilogue));
  NNP_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(c.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  const bool ta = op_a != CUBLAS_OP_N, tb = op_b != CUBLAS_OP_N;
  NNP_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&c.a, CUDA_R_32F, ta ? k : m, ta ? m : k, lda));
  NNP_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&c.b, CUDA_R_32F, tb ? n : k, tb ? k : n, ldb));
  NNP_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&c.d, CUDA_R_32F, m, n, m));

  // The heuristic's choice, once per (device, shape, math mode, alignments).
  using key_t =
      std::tuple<int, int, int, int, int, int, int, uint32_t, uint32_t, uint32_t, uint32_t>;
  struct choice {
    bool found;  // false: cuBLASLt offered no algorithm (the two-kernel path)
    cublasLtMatmulHeuristicResult_t result;
  };
  static std::mutex mutex;
  static std::map<key_t, choice> cache;
  const uint32_t al_a = alignment_of(a), al_b = alignment_of(b), al_d = alignment_of(d),
                 al_bias = alignment_of(bias);
  const key_t key{s.device,
                  m,
                  n,
                  k,
                  static_cast<int>(op_a),
                  static_cast<int>(op_b),
                  static_cast<int>(compute),
                  al_a,
                  al_b,
                  al_d,
                  al_bias};
  choice ch{};
  bool asked = false;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) {
      ch = it->second;
      asked = true;
    }
  }
  if (!asked) {
    NNP_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&c.pref));
    NNP_CUBLAS_CHECK(
        cublasLtMatmulPreferenceSetAttribute(c.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &kLtWorkspaceBytes, sizeof kLtWorkspaceBytes));
    const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> aligns[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, al_a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, al_b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, al_d},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, al_d}};
    for (const auto& [attr, value] : aligns)
      NNP_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(c.pref, attr, &value, sizeof value));
    int returned = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(s.blas_lt(), c.op, c.a, c.b, c.d, c.d,
                                                             c.pref, 1, &ch.result, &returned);
    ch.found = st == CUBLAS_STATUS_SUCCESS && returned > 0 &&
               ch.result.state == CUBLAS_STATUS_SUCCESS &&
               ch.result.workspaceSize <= kLtWorkspaceBytes;
    std::lock_guard<std::mutex> lock(mutex);
    cache.emplace(key, ch);
  }
  if (!ch.found) return false;
  void* workspace =
      ch.result.workspaceSize > 0 ? s.scratch(kScratchWorkspace, ch.result.workspaceSize) : nullptr;
  const float beta = 0.0f;
  NNP_CUBLAS_CHECK(cublasLtMatmul(s.blas_lt(), c.op, &alpha, a, c.a, b, c.b, &beta, d, c.d, d, c.d,
                                  &ch.result.algo, workspace, ch.result.workspaceSize, s.handle));
  return true;
}

// ---- gemm ---------------------------------------------------------------------------------------
// The sizes op_gemm hands cuBLAS: M, N, K, the leading dimensions and the batch count.
struct gemm_sizes {
  int64_t M, N, K, batch;
  bool runs_cublas;  // Y has elements and K > 0 (else no cuBLAS call)
};
gemm_sizes gemm_sizes_of(const nnp_gemm_params& p, const op_call& c) {
  const DLTensor& A = *c.in(0);
  const DLTensor& B = *c.in(1);
  const DLTensor& Y = *c.out(0);
  const int ra = A.ndim, rb = B.ndim;
  gemm_sizes g{};
  g.M = p.trans_a ? A.shape[ra - 1] : A.shape[ra - 2];
  g.K = p.trans_a ? A.shape[ra - 2] : A.shape[ra - 1];
  g.N = p.trans_b ? B.shape[rb - 2] : B.shape[rb - 1];
  g.batch = Y.ndim == 3 ? Y.shape[0] : 1;
  g.runs_cublas = numel(Y) > 0 && g.K > 0;
  return g;
}

// Y <- C broadcast unidirectionally (ONNX): C's shape aligned right, each dimension Y's or 1.
// When C without its leading 1s ends Y's shape, C tiles Y in order (launch_broadcast_tail);
// else ([M, 1], [batch, 1, N], ...) every element finds its C element through strides.
void broadcast_c(stream& s, elem t, const DLTensor& C, const DLTensor& Y) {
  const int64_t n_y = numel(Y);
  int lead = 0;
  while (lead < C.ndim && C.shape[lead] == 1) ++lead;
  const int rest = C.ndim - lead;
  bool suffix = rest <= Y.ndim;
  for (int i = 0; suffix && i < rest; ++i)
    suffix = C.shape[C.ndim - 1 - i] == Y.shape[Y.ndim - 1 - i];
  if (suffix) {
    launch_broadcast_tail(s, t, data_ptr<const void>(C), numel(C), data_ptr<void>(Y), n_y);
    return;
  }
  broadcast_geometry g{};
  g.rank = Y.ndim;
  for (int d = 0; d < Y.ndim; ++d) g.shape[d] = Y.shape[d];
  nnp::broadcast_strides(C, Y.ndim, g.stride);
  launch_broadcast_strided(s, dtype_size(Y.dtype), data_ptr<const void>(C), data_ptr<void>(Y), n_y,
                           g);
}

// ---- matmul -------------------------------------------------------------------------------------
// How op_matmul runs one call (plan_matmul): the geometry and the cuBLAS call that computes it.
struct matmul_plan {
  enum kind_t {
    nothing,   // Y has no elements
    zeros,     // K = 0: Y is zero-filled
    single,    // one GEMM (batch 1, or the batch folded into M: rows = batch * M)
    strided,   // cublasGemmStridedBatchedEx over one merged batch dimension
    pointers,  // cublasGemmBatchedEx with device pointer arrays (batch dims that do not merge)
  } kind = nothing;
  bool ta = false, tb = false;  // effective transposes (ignored for a 1-D operand)
  int64_t M = 0, N = 0, K = 0;
  int64_t lda = 1, ldb = 1;  // A's and B's stored column counts (their leading dimensions)
  int64_t rows = 0;          // cuBLAS's n: M, or batch * M when folded
  int64_t batch = 1;         // cuBLAS's batch count (strided, pointers)
  int64_t stride_a = 0, stride_b = 0;  // element strides between batch entries (strided)
  // The merged batch dimensions (pointers): sizes and element strides of A and B.
  int rank = 0;
  int64_t shape[NNP_MAX_DIMS] = {};
  int64_t sa[NNP_MAX_DIMS] = {}, sb[NNP_MAX_DIMS] = {};
};

matmul_plan plan_matmul(const op_call& c) {
  const auto p = c.params_as<nnp_matmul_params>();
  const DLTensor& A = *c.in(0);
  const DLTensor& B = *c.in(1);
  const DLTensor& Y = *c.out(0);
  matmul_plan pl;
  pl.ta = p.trans_a != 0 && A.ndim > 1;
  pl.tb = p.trans_b != 0 && B.ndim > 1;
  const int batch_rank = nnp::kit::matmul_batch_rank(A, B, Y);
  const nnp::kit::matmul_operand oa(A, true, batch_rank), ob(B, false, batch_rank);
  pl.M = pl.ta ? oa.cols : oa.rows;
  pl.K = pl.ta ? oa.rows : oa.cols;
  pl.N = pl.tb ? ob.rows : ob.cols;
  pl.lda = oa.cols;
  pl.ldb = ob.cols;
  pl.rows = pl.M;
  if (numel(Y) == 0) return pl;  // nothing (its batch may still be huge: [2^31, 0, N])
  if (pl.K == 0) {
    pl.kind = matmul_plan::zeros;
    return pl;
  }
  pl.kind = matmul_plan::single;
  int64_t batch = 1;
  for (int d = 0; d < batch_rank; ++d) batch *= Y.shape[d];
  if (batch == 1) return pl;
  // A holds every batch entry in Y's order and B is shared: one [batch * M, K] x op(B) GEMM.
  // (batch * M <= numel(Y): no overflow.)
  if (!pl.ta && ob.batch_count == 1 && oa.batch_count == batch && batch * pl.M <= INT_MAX) {
    pl.rows = batch * pl.M;
    return pl;
  }
  // Merge Y's batch dimensions, innermost first: drop 1s; an outer dimension joins the inner
  // one when both operands step through it as one (stride = inner stride * inner size; 0 = 0
  // for a dimension both broadcast along). Y is compact, so it always does.
  int rank = 0;
  int64_t shape[NNP_MAX_DIMS], sa[NNP_MAX_DIMS], sb[NNP_MAX_DIMS];  // innermost first
  for (int d = batch_rank - 1; d >= 0; --d) {
    if (Y.shape[d] == 1) continue;
    if (rank > 0 && oa.batch_stride[d] == sa[rank - 1] * shape[rank - 1] &&
        ob.batch_stride[d] == sb[rank - 1] * shape[rank - 1]) {
      shape[rank - 1] *= Y.shape[d];
      continue;
    }
    shape[rank] = Y.shape[d];
    sa[rank] = oa.batch_stride[d];
    sb[rank] = ob.batch_stride[d];
    ++rank;
  }
  pl.batch = batch;
  if (rank == 1) {
    pl.kind = matmul_plan::strided;
    pl.stride_a = sa[0];
    pl.stride_b = sb[0];
    return pl;
  }
  pl.kind = matmul_plan::pointers;
  pl.rank = rank;
  for (int i = 0; i < rank; ++i) {  // outermost first, as Y's row-major batch index runs
    pl.shape[i] = shape[rank - 1 - i];
    pl.sa[i] = sa[rank - 1 - i];
    pl.sb[i] = sb[rank - 1 - i];
  }
  return pl;
}

// cuBLAS's 32-bit sizes of a plan: UNSUPPORTED, naming the limit, beyond them.
void check_matmul_plan(const matmul_plan& pl) {
  if (pl.kind == matmul_plan::nothing || pl.kind == matmul_plan::zeros) return;
  checked_int(pl.N, "matmul", "N");
  checked_int(pl.M, "matmul", "M");
  checked_int(pl.rows, "matmul", "batch * M");
  checked_int(pl.K, "matmul", "K");
  checked_int(pl.lda, "matmul", "lda (A's last dimension)");
  checked_int(pl.ldb, "matmul", "ldb (B's last dimension)");
  if (pl.kind == matmul_plan::strided || pl.kind == matmul_plan::pointers)
    checked_int(pl.batch, "matmul", "batch (product of Y's batch dimensions)");
}

}  // namespace

void check_gemm_limits(const op_call& c) {
  const gemm_sizes g = gemm_sizes_of(c.params_as<nnp_gemm_params>(), c);
  if (!g.runs_cublas) return;
  // M, N and K bound the leading dimensions (each is one of them).
  checked_int(g.M, "gemm", "M");
  checked_int(g.N, "gemm", "N");
  checked_int(g.K, "gemm", "K");
  checked_int(g.batch, "gemm", "batch");
}

void op_gemm(stream& s, const op_call& c) {
  const auto p = read_params<nnp_gemm_params>(c.params);
  const DLTensor& A = *c.in(0);
  const DLTensor& B = *c.in(1);
  const DLTensor* C = c.in(2);
  const DLTensor& Y = *c.out(0);
  const elem t = elem_of(Y.dtype);

  const int ra = A.ndim, rb = B.ndim;
  const int64_t M = p.trans_a ? A.shape[ra - 1] : A.shape[ra - 2];
  const int64_t K = p.trans_a ? A.shape[ra - 2] : A.shape[ra - 1];
  const int64_t N = p.trans_b ? B.shape[rb - 2] : B.shape[rb - 1];
  const int64_t batch = Y.ndim == 3 ? Y.shape[0] : 1;
  const int64_t n_y = numel(Y);
  if (n_y == 0) return;

  // A batched, untransposed A against one B: the batch folds into M (one [batch * M, K] GEMM;
  // Y's batch entries follow each other like A's).
  const bool fold = batch > 1 && ra == 3 && rb == 2 && !p.trans_a && batch * M <= INT_MAX;
  // C a vector of N with beta = 1: cuBLASLt's bias epilogue (above), C not broadcast first.
  const bool bias_epilogue = lt_takes(batch * M, N, K) && t == elem::f32 && C != nullptr &&
                             p.beta == 1.0 && p.alpha != 0.0 && K > 0 && (batch == 1 || fold) &&
                             numel(*C) == N && C->ndim >= 1 && C->shape[C->ndim - 1] == N &&
                             data_ptr<const void>(*C) != data_ptr<const void>(Y);
  // Y <- C broadcast (unless Y is C itself), then Y = alpha op(A) op(B) + beta Y. beta = 0 does
  // not read C (BLAS convention: NaN/Inf in C do not leak through).
  double beta = 0.0;
  if (C != nullptr && p.beta != 0.0) {
    beta = p.beta;
    if (!bias_epilogue && (data_ptr<const void>(*C) != data_ptr<const void>(Y) || numel(*C) != n_y))
      broadcast_c(s, t, *C, Y);
  }
  if (K == 0) {  // empty inner product: Y = beta * C (or 0)
    if (beta != 0.0)
      launch_scale(s, t, data_ptr<const void>(Y), data_ptr<void>(Y), n_y, beta);
    else
      NNP_CUDA_CHECK(cudaMemsetAsync(data_ptr<void>(Y), 0, n_y * dtype_size(Y.dtype), s.handle));
    return;
  }

  const int m = checked_int(N, "gemm", "N"), k = checked_int(K, "gemm", "K");
  const cublasOperation_t op_first = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int ld_first = checked_int(p.trans_b ? K : N, "gemm", "ldb");
  const int ld_second = checked_int(p.trans_a ? M : K, "gemm", "lda");
  const long long stride_first = rb == 3 ? static_cast<long long>(K * N) : 0;
  const long long stride_second = ra == 3 ? static_cast<long long>(M * K) : 0;
  const long long stride_y = static_cast<long long>(M * N);

  const cudaDataType dt = cuda_type(t, "gemm");
  const cublasComputeType_t compute = compute_type(s, t);
  // alpha = 0: cuBLAS would skip the product, losing 0 * inf = NaN (docs/ops.md, "Non-finite
  // values"). The product goes to scratch, and Y = 0 * product + beta * Y follows.
  const bool zero_alpha = p.alpha == 0.0;
  void* y_out = zero_alpha
                    ? s.scratch(kScratchTemp1, static_cast<size_t>(n_y) * dtype_size(Y.dtype))
                    : data_ptr<void>(Y);
  const float alpha_f = zero_alpha ? 1.0f : static_cast<float>(p.alpha);
  const float beta_f = zero_alpha ? 0.0f : static_cast<float>(beta);
  cublasHandle_t h = blas_for(s, t);
  if (batch == 1 || fold) {
    const int n = checked_int(fold ? batch * M : M, "gemm", "M");
    if (bias_epilogue) {
      if (gemm_bias_lt(s, op_first, op_second, m, n, k, alpha_f, data_ptr<const void>(B), ld_first,
                       data_ptr<const void>(A), ld_second, data_ptr<const void>(*C), y_out,
                       compute))
        return;
      broadcast_c(s, t, *C, Y);  // no cuBLASLt algorithm: the two-kernel path
    }
    NNP_CUBLAS_CHECK(cublasGemmEx(h, op_first, op_second, m, n, k, &alpha_f,
                                  data_ptr<const void>(B), dt, ld_first, data_ptr<const void>(A),
                                  dt, ld_second, &beta_f, y_out, dt, m, compute,
                                  CUBLAS_GEMM_DEFAULT));
  } else {
    NNP_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        h, op_first, op_second, m, checked_int(M, "gemm", "M"), k, &alpha_f,
        data_ptr<const void>(B), dt, ld_first, stride_first, data_ptr<const void>(A), dt, ld_second,
        stride_second, &beta_f, y_out, dt, m, stride_y, checked_int(batch, "gemm", "batch"),
        compute, CUBLAS_GEMM_DEFAULT));
  }
  if (zero_alpha) launch_axpby(s, t, y_out, data_ptr<void>(Y), n_y, 0.0, beta);
}

void check_matmul(const op_call& c) {
  if (c.in(0) == nullptr || c.in(1) == nullptr || c.out(0) == nullptr) return;
  check_matmul_plan(plan_matmul(c));
}

void op_matmul(stream& s, const op_call& c) {
  const matmul_plan pl = plan_matmul(c);
  check_matmul_plan(pl);
  const DLTensor& A = *c.in(0);
  const DLTensor& B = *c.in(1);
  const DLTensor& Y = *c.out(0);
  const elem t = elem_of(Y.dtype);
  switch (pl.kind) {
    case matmul_plan::nothing:
      return;
    case matmul_plan::zeros:  // empty inner product
      NNP_CUDA_CHECK(
          cudaMemsetAsync(data_ptr<void>(Y), 0, numel(Y) * dtype_size(Y.dtype), s.handle));
      return;
    default:
      break;
  }

  // Y^T [N, rows] = op(B)^T op(A)^T, column-major (file comment).
  const int m = static_cast<int>(pl.N), n = static_cast<int>(pl.rows), k = static_cast<int>(pl.K);
  const cublasOperation_t op_first = pl.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = pl.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int ld_first = static_cast<int>(pl.ldb), ld_second = static_cast<int>(pl.lda);
  const cudaDataType dt = cuda_type(t, "matmul");
  const cublasComputeType_t compute = compute_type(s, t);
  const float alpha = 1.0f, beta = 0.0f;
  cublasHandle_t h = blas_for(s, t);
  const void* a = data_ptr<const void>(A);
  const void* b = data_ptr<const void>(B);
  void* y = data_ptr<void>(Y);

  switch (pl.kind) {
    case matmul_plan::single:
      NNP_CUBLAS_CHECK(cublasGemmEx(h, op_first, op_second, m, n, k, &alpha, b, dt, ld_first, a, dt,
                                    ld_second, &beta, y, dt, m, compute, CUBLAS_GEMM_DEFAULT));
      return;
    case matmul_plan::strided:
      NNP_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
          h, op_first, op_second, m, n, k, &alpha, b, dt, ld_first,
          static_cast<long long>(pl.stride_b), a, dt, ld_second,
          static_cast<long long>(pl.stride_a), &beta, y, dt, m, static_cast<long long>(pl.M * pl.N),
          static_cast<int>(pl.batch), compute, CUBLAS_GEMM_DEFAULT));
      return;
    case matmul_plan::pointers: {
      // ptrs: A's batch entries, then B's, then Y's (byte addresses, written on the device).
      const int64_t es = static_cast<int64_t>(dtype_size(Y.dtype));
      batch_geometry g{};
      g.rank = pl.rank;
      for (int i = 0; i < pl.rank; ++i) {
        g.shape[i] = pl.shape[i];
        g.a_stride[i] = pl.sa[i] * es;
        g.b_stride[i] = pl.sb[i] * es;
      }
      void** ptrs = static_cast<void**>(
          s.scratch(kScratchTemp0, static_cast<size_t>(3 * pl.batch) * sizeof(void*)));
      launch_batch_pointers(s, a, b, y, pl.M * pl.N * es, pl.batch, g, ptrs);
      const void* const* a_ptrs = ptrs;
      const void* const* b_ptrs = ptrs + pl.batch;
      void* const* y_ptrs = ptrs + 2 * pl.batch;
      NNP_CUBLAS_CHECK(cublasGemmBatchedEx(
          h, op_first, op_second, m, n, k, &alpha, b_ptrs, dt, ld_first, a_ptrs, dt, ld_second,
          &beta, y_ptrs, dt, m, static_cast<int>(pl.batch), compute, CUBLAS_GEMM_DEFAULT));
      return;
    }
    default:
      return;
  }
}

// gemm: cuBLAS's 32-bit sizes (C broadcasts into Y in every ONNX unidirectional form).
void check_gemm(const op_call& c) { check_gemm_limits(c); }
// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kGemmOps[] = {
    {NNP_OP_GEMM,   kHalfFloats, on_stream<op_gemm>, check_gemm},
    {NNP_OP_MATMUL, kHalfFloats, on_stream<op_matmul>, check_matmul},
};
// clang-format on
extern const kit::op_row_list kGemmRows = kit::row_list(kGemmOps);

}  // namespace nnp::cuda
