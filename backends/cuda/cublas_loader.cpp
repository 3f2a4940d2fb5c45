// cublas_loader.cpp — cuBLAS opened at run time (lib_loader.hpp): defines every cuBLAS function
// the backend calls, with cublas_api.h's signature, as a call through the symbol of
// libcublas.so.13 (resolved with dlsym on first call). cublas_v2.h maps cublasCreate and friends
// to their _v2 names, so those are the names defined and looked up here. libcublasLt.so.13 is
// libcublas's own dependency, found through its RUNPATH ($ORIGIN): in a pip wheel and in the
// toolkit both live in the same folder. The cublasLt* functions (gemm.cpp's bias epilogue) are
// looked up through libcublas's handle too: dlsym on a handle searches the library and its
// dependencies, so they come from the libcublasLt that this libcublas loaded.
#include "lib_loader.hpp"

#include <cublasLt.h>
#include <cublas_v2.h>

#include <nnplug/kit/error.hpp>

#include <dlfcn.h>

#include <atomic>

// X(return type, name, parameters, arguments): every cuBLAS function the backend calls.
// clang-format off
#define NNP_CUBLAS_FUNCTIONS(X)                                                                    \
  X(cublasStatus_t, cublasCreate_v2, (cublasHandle_t* handle), (handle))                           \
  X(cublasStatus_t, cublasDestroy_v2, (cublasHandle_t handle), (handle))                           \
  X(cublasStatus_t, cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t streamId),            \
    (handle, streamId))                                                                            \
  X(cublasStatus_t, cublasSetMathMode, (cublasHandle_t handle, cublasMath_t mode), (handle, mode)) \
  X(cublasStatus_t, cublasGetProperty, (libraryPropertyType type, int* value), (type, value))      \
  X(cublasStatus_t, cublasGemmEx,                                                                  \
    (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,      \
     int k, const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B,          \
     cudaDataType Btype, int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc,          \
     cublasComputeType_t computeType, cublasGemmAlgo_t algo),                                      \
    (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc,    \
     computeType, algo))                                                                           \
  X(cublasStatus_t, cublasGemmStridedBatchedEx,                                                    \
    (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,      \
     int k, const void* alpha, const void* A, cudaDataType Atype, int lda, long long int strideA,  \
     const void* B, cudaDataType Btype, int ldb, long long int strideB, const void* beta, void* C, \
     cudaDataType Ctype, int ldc, long long int strideC, int batchCount,                           \
     cublasComputeType_t computeType, cublasGemmAlgo_t algo),                                      \
    (handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, \
     C, Ctype, ldc, strideC, batchCount, computeType, algo))                                      \
  X(cublasStatus_t, cublasGemmBatchedEx,                                                           \
    (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,      \
     int k, const void* alpha, const void* const Aarray[], cudaDataType Atype, int lda,           \
     const void* const Barray[], cudaDataType Btype, int ldb, const void* beta,                   \
     void* const Carray[], cudaDataType Ctype, int ldc, int batchCount,                           \
     cublasComputeType_t computeType, cublasGemmAlgo_t algo),                                      \
    (handle, transa, transb, m, n, k, alpha, Aarray, Atype, lda, Barray, Btype, ldb, beta, Carray, \
     Ctype, ldc, batchCount, computeType, algo))                                                   \
  X(cublasStatus_t, cublasLtCreate, (cublasLtHandle_t* handle), (handle))                          \
  X(cublasStatus_t, cublasLtDestroy, (cublasLtHandle_t handle), (handle))                          \
  X(cublasStatus_t, cublasLtMatmulDescCreate,                                                      \
    (cublasLtMatmulDesc_t* desc, cublasComputeType_t computeType, cudaDataType_t scaleType),        \
    (desc, computeType, scaleType))                                                                \
  X(cublasStatus_t, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc))                \
  X(cublasStatus_t, cublasLtMatmulDescSetAttribute,                                                \
    (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void* buf,              \
     size_t sizeInBytes),                                                                          \
    (desc, attr, buf, sizeInBytes))                                                                \
  X(cublasStatus_t, cublasLtMatrixLayoutCreate,                                                    \
    (cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld), \
    (layout, type, rows, cols, ld))                                                                \
  X(cublasStatus_t, cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout), (layout))        \
  X(cublasStatus_t, cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t* pref), (pref))    \
  X(cublasStatus_t, cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref), (pref))    \
  X(cublasStatus_t, cublasLtMatmulPreferenceSetAttribute,                                          \
    (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf,  \
     size_t sizeInBytes),                                                                          \
    (pref, attr, buf, sizeInBytes))                                                                \
  X(cublasStatus_t, cublasLtMatmulAlgoGetHeuristic,                                                \
    (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,             \
     cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,     \
     cublasLtMatmulPreference_t pref, int requestedAlgoCount,                                      \
     cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returnAlgoCount),               \
    (handle, desc, Adesc, Bdesc, Cdesc, Ddesc, pref, requestedAlgoCount, heuristicResultsArray,    \
     returnAlgoCount))                                                                             \
  X(cublasStatus_t, cublasLtMatmul,                                                                \
    (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,         \
     cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,  \
     const void* C, cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,           \
     const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspaceSizeInBytes,               \
     cudaStream_t stream),                                                                         \
    (handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace,           \
     workspaceSizeInBytes, stream))

#define NNP_CUBLAS_TEXT_FUNCTIONS(X)                                                               \
  X(const char*, cublasGetStatusName, (cublasStatus_t status), (status))                           \
  X(const char*, cublasGetStatusString, (cublasStatus_t status), (status))
// clang-format on

namespace nnp::cuda {
namespace {

#define NNP_CUBLAS_NAME(ret, name, params, args) #name,
const char* const kSymbols[] = {NNP_CUBLAS_FUNCTIONS(NNP_CUBLAS_NAME)
                                    NNP_CUBLAS_TEXT_FUNCTIONS(NNP_CUBLAS_NAME) nullptr};
#undef NNP_CUBLAS_NAME

#ifndef NNPLUG_CUBLAS_BUILD_DIR
#define NNPLUG_CUBLAS_BUILD_DIR ""
#endif

// The soname pins the major version; the library must agree.
std::string check_cublas(void* handle) {
  using get_property_fn = cublasStatus_t (*)(libraryPropertyType, int*);
  auto get = reinterpret_cast<get_property_fn>(dlsym(handle, "cublasGetProperty"));
  int major = 0;
  if (get == nullptr || get(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS)
    return "cublasGetProperty failed";
  if (major != CUBLAS_VER_MAJOR)
    return format("is cuBLAS %d, the plugin was built for cuBLAS %d", major, CUBLAS_VER_MAJOR);
  return "";
}

std::string cublas_version(void* handle) {
  using get_property_fn = cublasStatus_t (*)(libraryPropertyType, int*);
  auto get = reinterpret_cast<get_property_fn>(dlsym(handle, "cublasGetProperty"));
  int v[3] = {0, 0, 0};
  if (get == nullptr || get(MAJOR_VERSION, &v[0]) != CUBLAS_STATUS_SUCCESS ||
      get(MINOR_VERSION, &v[1]) != CUBLAS_STATUS_SUCCESS ||
      get(PATCH_LEVEL, &v[2]) != CUBLAS_STATUS_SUCCESS)
    return "unknown";
  return format("%d.%d.%d", v[0], v[1], v[2]);
}

}  // namespace

const loaded_library& cublas_library() {
  static const loaded_library lib = open_library(library_spec{"cuBLAS",
                                                              "libcublas.so.13",
                                                              {"cu13/lib", "cublas/lib"},
                                                              NNPLUG_CUBLAS_BUILD_DIR,
                                                              kSymbols,
                                                              check_cublas,
                                                              cublas_version});
  return lib;
}

}  // namespace nnp::cuda

#define NNP_CUBLAS_DEFINE(ret, name, params, args)                                              \
  NNP_CUDA_LAZY_FUNCTION(::nnp::cuda::cublas_library, CUBLAS_STATUS_NOT_INITIALIZED, ret, name, \
                         params, args)
#define NNP_CUBLAS_DEFINE_TEXT(ret, name, params, args)                                          \
  NNP_CUDA_LAZY_FUNCTION(::nnp::cuda::cublas_library, "cuBLAS is not loaded", ret, name, params, \
                         args)
NNP_CUBLAS_FUNCTIONS(NNP_CUBLAS_DEFINE)
NNP_CUBLAS_TEXT_FUNCTIONS(NNP_CUBLAS_DEFINE_TEXT)
