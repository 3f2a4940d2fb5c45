// gemm.cpp — NNP_OP_GEMM through cuBLAS (cublasGemmEx / cublasGemmStridedBatchedEx), float32,
// float16 and bfloat16 operands with float32 accumulation (CUBLAS_COMPUTE_32F; _32F_FAST_TF32
// for float32 when the stream allows TF32). Speed comes from cuBLAS's tensor-core kernels.
//
// cuBLAS is column-major; nnplug is row-major. A row-major [R, C] matrix is the column-major
// [C, R] matrix of its transpose, so Y = op(A) op(B) is computed as Y^T = op(B)^T op(A)^T with
// B as cuBLAS's first operand. C is broadcast into Y first, then accumulated with beta.
#include "ops.hpp"

#include <climits>

namespace nnp::cuda {
namespace {

cudaDataType cuda_type(elem t) {
  return float_code(t, CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF, "gemm");
}

int checked_int(int64_t v, const char* what) {
  if (v > INT_MAX)
    unsupported(format("gemm: %s = %lld exceeds cuBLAS's 32-bit limit (2^31 - 1)", what,
                       static_cast<long long>(v)));
  return static_cast<int>(v);
}

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

}  // namespace

void check_gemm_limits(const op_call& c) {
  const gemm_sizes g = gemm_sizes_of(c.params_as<nnp_gemm_params>(), c);
  if (!g.runs_cublas) return;
  // M, N and K bound the leading dimensions (each is one of them).
  checked_int(g.M, "M");
  checked_int(g.N, "N");
  checked_int(g.K, "K");
  checked_int(g.batch, "batch");
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

  // Y <- C broadcast (unless Y is C itself), then Y = alpha op(A) op(B) + beta Y.
  double beta = 0.0;
  if (C != nullptr && p.beta != 0.0) {
    beta = p.beta;
    if (data_ptr<const void>(*C) != data_ptr<const void>(Y) || numel(*C) != n_y)
      launch_broadcast_tail(s, t, data_ptr<const void>(*C), numel(*C), data_ptr<void>(Y), n_y);
  }
  if (K == 0) {  // empty inner product: Y = beta * C (or 0)
    if (beta != 0.0)
      launch_scale(s, t, data_ptr<const void>(Y), data_ptr<void>(Y), n_y, beta);
    else
      NNP_CUDA_CHECK(cudaMemsetAsync(data_ptr<void>(Y), 0, n_y * dtype_size(Y.dtype), s.handle));
    return;
  }

  const int m = checked_int(N, "N"), n = checked_int(M, "M"), k = checked_int(K, "K");
  const cublasOperation_t op_first = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int ld_first = checked_int(p.trans_b ? K : N, "ldb");
  const int ld_second = checked_int(p.trans_a ? M : K, "lda");
  const long long stride_first = rb == 3 ? static_cast<long long>(K * N) : 0;
  const long long stride_second = ra == 3 ? static_cast<long long>(M * K) : 0;
  const long long stride_y = static_cast<long long>(M * N);

  const cudaDataType dt = cuda_type(t);
  const cublasComputeType_t compute =
      (t == elem::f32 && s.allow_tf32) ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const float alpha_f = static_cast<float>(p.alpha);
  const float beta_f = static_cast<float>(beta);
  cublasHandle_t h = s.blas();
  if (batch == 1) {
    NNP_CUBLAS_CHECK(cublasGemmEx(h, op_first, op_second, m, n, k, &alpha_f,
                                  data_ptr<const void>(B), dt, ld_first, data_ptr<const void>(A),
                                  dt, ld_second, &beta_f, data_ptr<void>(Y), dt, m, compute,
                                  CUBLAS_GEMM_DEFAULT));
  } else {
    NNP_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        h, op_first, op_second, m, n, k, &alpha_f, data_ptr<const void>(B), dt, ld_first,
        stride_first, data_ptr<const void>(A), dt, ld_second, stride_second, &beta_f,
        data_ptr<void>(Y), dt, m, stride_y, checked_int(batch, "batch"), compute,
        CUBLAS_GEMM_DEFAULT));
  }
}

}  // namespace nnp::cuda
