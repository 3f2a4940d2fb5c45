// cudnn_loader.cpp — cuDNN opened at run time (lib_loader.hpp): defines every cuDNN function the
// backend calls, with cudnn_graph.h / cudnn_ops.h / cudnn_cnn.h's signatures, as a call through
// the symbol of libcudnn.so.9 (resolved with dlsym on first call). libcudnn.so.9 loads its
// sub-libraries (libcudnn_graph, _ops, _cnn, engines) itself, from its own folder.
//
// The soname does not tell which CUDA major a cuDNN 9 was built for (nvidia-cudnn-cu12 and
// nvidia-cudnn-cu13 both ship libcudnn.so.9): a candidate built for another CUDA major than
// this plugin is skipped, and the search goes on.
#include "lib_loader.hpp"

#include <cudnn.h>

#include <nnplug/kit/error.hpp>

#include <dlfcn.h>

#include <atomic>

// X(return type, name, parameters, arguments): every cuDNN function the backend calls.
// clang-format off
#define NNP_CUDNN_FUNCTIONS(X)                                                                     \
  X(cudnnStatus_t, cudnnCreate, (cudnnHandle_t* handle), (handle))                                 \
  X(cudnnStatus_t, cudnnDestroy, (cudnnHandle_t handle), (handle))                                 \
  X(cudnnStatus_t, cudnnSetStream, (cudnnHandle_t handle, cudaStream_t streamId),                  \
    (handle, streamId))                                                                            \
  X(cudnnStatus_t, cudnnCreateTensorDescriptor, (cudnnTensorDescriptor_t* tensorDesc),             \
    (tensorDesc))                                                                                  \
  X(cudnnStatus_t, cudnnDestroyTensorDescriptor, (cudnnTensorDescriptor_t tensorDesc),             \
    (tensorDesc))                                                                                  \
  X(cudnnStatus_t, cudnnSetTensor4dDescriptor,                                                     \
    (cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format, cudnnDataType_t dataType,     \
     int n, int c, int h, int w),                                                                  \
    (tensorDesc, format, dataType, n, c, h, w))                                                    \
  X(cudnnStatus_t, cudnnCreateFilterDescriptor, (cudnnFilterDescriptor_t* filterDesc),             \
    (filterDesc))                                                                                  \
  X(cudnnStatus_t, cudnnDestroyFilterDescriptor, (cudnnFilterDescriptor_t filterDesc),             \
    (filterDesc))                                                                                  \
  X(cudnnStatus_t, cudnnSetFilter4dDescriptor,                                                     \
    (cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType, cudnnTensorFormat_t format,     \
     int k, int c, int h, int w),                                                                  \
    (filterDesc, dataType, format, k, c, h, w))                                                    \
  X(cudnnStatus_t, cudnnCreateConvolutionDescriptor, (cudnnConvolutionDescriptor_t* convDesc),     \
    (convDesc))                                                                                    \
  X(cudnnStatus_t, cudnnDestroyConvolutionDescriptor, (cudnnConvolutionDescriptor_t convDesc),     \
    (convDesc))                                                                                    \
  X(cudnnStatus_t, cudnnSetConvolution2dDescriptor,                                                \
    (cudnnConvolutionDescriptor_t convDesc, int pad_h, int pad_w, int u, int v, int dilation_h,    \
     int dilation_w, cudnnConvolutionMode_t mode, cudnnDataType_t computeType),                    \
    (convDesc, pad_h, pad_w, u, v, dilation_h, dilation_w, mode, computeType))                     \
  X(cudnnStatus_t, cudnnSetTensorNdDescriptor,                                                     \
    (cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t dataType, int nbDims, const int dimA[],   \
     const int strideA[]),                                                                         \
    (tensorDesc, dataType, nbDims, dimA, strideA))                                                 \
  X(cudnnStatus_t, cudnnSetFilterNdDescriptor,                                                     \
    (cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType, cudnnTensorFormat_t format,     \
     int nbDims, const int filterDimA[]),                                                          \
    (filterDesc, dataType, format, nbDims, filterDimA))                                            \
  X(cudnnStatus_t, cudnnSetConvolutionNdDescriptor,                                                \
    (cudnnConvolutionDescriptor_t convDesc, int arrayLength, const int padA[],                     \
     const int filterStrideA[], const int dilationA[], cudnnConvolutionMode_t mode,                \
     cudnnDataType_t computeType),                                                                 \
    (convDesc, arrayLength, padA, filterStrideA, dilationA, mode, computeType))                    \
  X(cudnnStatus_t, cudnnFindConvolutionForwardAlgorithmEx,                                         \
    (cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void* x,                     \
     const cudnnFilterDescriptor_t wDesc, const void* w,                                           \
     const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t yDesc, void* y,    \
     const int requestedAlgoCount, int* returnedAlgoCount,                                         \
     cudnnConvolutionFwdAlgoPerf_t* perfResults, void* workSpace, size_t workSpaceSizeInBytes),    \
    (handle, xDesc, x, wDesc, w, convDesc, yDesc, y, requestedAlgoCount, returnedAlgoCount,        \
     perfResults, workSpace, workSpaceSizeInBytes))                                                \
  X(cudnnStatus_t, cudnnFindConvolutionBackwardDataAlgorithmEx,                                    \
    (cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const void* w,                     \
     const cudnnTensorDescriptor_t dyDesc, const void* dy,                                         \
     const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc, void* dx,  \
     const int requestedAlgoCount, int* returnedAlgoCount,                                         \
     cudnnConvolutionBwdDataAlgoPerf_t* perfResults, void* workSpace,                              \
     size_t workSpaceSizeInBytes),                                                                 \
    (handle, wDesc, w, dyDesc, dy, convDesc, dxDesc, dx, requestedAlgoCount, returnedAlgoCount,    \
     perfResults, workSpace, workSpaceSizeInBytes))                                                \
  X(cudnnStatus_t, cudnnFindConvolutionBackwardFilterAlgorithmEx,                                  \
    (cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void* x,                     \
     const cudnnTensorDescriptor_t dyDesc, const void* y,                                          \
     const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t dwDesc, void* dw,  \
     const int requestedAlgoCount, int* returnedAlgoCount,                                         \
     cudnnConvolutionBwdFilterAlgoPerf_t* perfResults, void* workSpace,                            \
     size_t workSpaceSizeInBytes),                                                                 \
    (handle, xDesc, x, dyDesc, y, convDesc, dwDesc, dw, requestedAlgoCount, returnedAlgoCount,     \
     perfResults, workSpace, workSpaceSizeInBytes))                                                \
  X(cudnnStatus_t, cudnnSetConvolutionGroupCount,                                                  \
    (cudnnConvolutionDescriptor_t convDesc, int groupCount), (convDesc, groupCount))               \
  X(cudnnStatus_t, cudnnSetConvolutionMathType,                                                    \
    (cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t mathType), (convDesc, mathType))       \
  X(cudnnStatus_t, cudnnGetConvolutionForwardAlgorithm_v7,                                         \
    (cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,                                  \
     const cudnnFilterDescriptor_t filterDesc, const cudnnConvolutionDescriptor_t convDesc,        \
     const cudnnTensorDescriptor_t destDesc, const int requestedAlgoCount,                         \
     int* returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t* perfResults),                          \
    (handle, srcDesc, filterDesc, convDesc, destDesc, requestedAlgoCount, returnedAlgoCount,       \
     perfResults))                                                                                 \
  X(cudnnStatus_t, cudnnGetConvolutionBackwardDataAlgorithm_v7,                                    \
    (cudnnHandle_t handle, const cudnnFilterDescriptor_t filterDesc,                               \
     const cudnnTensorDescriptor_t diffDesc, const cudnnConvolutionDescriptor_t convDesc,          \
     const cudnnTensorDescriptor_t gradDesc, const int requestedAlgoCount,                         \
     int* returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t* perfResults),                      \
    (handle, filterDesc, diffDesc, convDesc, gradDesc, requestedAlgoCount, returnedAlgoCount,      \
     perfResults))                                                                                 \
  X(cudnnStatus_t, cudnnGetConvolutionBackwardFilterAlgorithm_v7,                                  \
    (cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,                                  \
     const cudnnTensorDescriptor_t diffDesc, const cudnnConvolutionDescriptor_t convDesc,          \
     const cudnnFilterDescriptor_t gradDesc, const int requestedAlgoCount,                         \
     int* returnedAlgoCount, cudnnConvolutionBwdFilterAlgoPerf_t* perfResults),                    \
    (handle, srcDesc, diffDesc, convDesc, gradDesc, requestedAlgoCount, returnedAlgoCount,         \
     perfResults))                                                                                 \
  X(cudnnStatus_t, cudnnGetConvolutionForwardWorkspaceSize,                                        \
    (cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,                                    \
     const cudnnFilterDescriptor_t wDesc, const cudnnConvolutionDescriptor_t convDesc,             \
     const cudnnTensorDescriptor_t yDesc, cudnnConvolutionFwdAlgo_t algo, size_t* sizeInBytes),    \
    (handle, xDesc, wDesc, convDesc, yDesc, algo, sizeInBytes))                                    \
  X(cudnnStatus_t, cudnnGetConvolutionBackwardDataWorkspaceSize,                                   \
    (cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc,                                    \
     const cudnnTensorDescriptor_t dyDesc, const cudnnConvolutionDescriptor_t convDesc,            \
     const cudnnTensorDescriptor_t dxDesc, cudnnConvolutionBwdDataAlgo_t algo,                     \
     size_t* sizeInBytes),                                                                         \
    (handle, wDesc, dyDesc, convDesc, dxDesc, algo, sizeInBytes))                                  \
  X(cudnnStatus_t, cudnnGetConvolutionBackwardFilterWorkspaceSize,                                 \
    (cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,                                    \
     const cudnnTensorDescriptor_t dyDesc, const cudnnConvolutionDescriptor_t convDesc,            \
     const cudnnFilterDescriptor_t gradDesc, cudnnConvolutionBwdFilterAlgo_t algo,                 \
     size_t* sizeInBytes),                                                                         \
    (handle, xDesc, dyDesc, convDesc, gradDesc, algo, sizeInBytes))                                \
  X(cudnnStatus_t, cudnnConvolutionForward,                                                        \
    (cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x,  \
     const cudnnFilterDescriptor_t wDesc, const void* w,                                           \
     const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionFwdAlgo_t algo,                  \
     void* workSpace, size_t workSpaceSizeInBytes, const void* beta,                               \
     const cudnnTensorDescriptor_t yDesc, void* y),                                                \
    (handle, alpha, xDesc, x, wDesc, w, convDesc, algo, workSpace, workSpaceSizeInBytes, beta,     \
     yDesc, y))                                                                                    \
  X(cudnnStatus_t, cudnnConvolutionBackwardData,                                                   \
    (cudnnHandle_t handle, const void* alpha, const cudnnFilterDescriptor_t wDesc, const void* w,  \
     const cudnnTensorDescriptor_t dyDesc, const void* dy,                                         \
     const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdDataAlgo_t algo,              \
     void* workSpace, size_t workSpaceSizeInBytes, const void* beta,                               \
     const cudnnTensorDescriptor_t dxDesc, void* dx),                                              \
    (handle, alpha, wDesc, w, dyDesc, dy, convDesc, algo, workSpace, workSpaceSizeInBytes, beta,   \
     dxDesc, dx))                                                                                  \
  X(cudnnStatus_t, cudnnConvolutionBackwardFilter,                                                 \
    (cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x,  \
     const cudnnTensorDescriptor_t dyDesc, const void* dy,                                         \
     const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdFilterAlgo_t algo,            \
     void* workSpace, size_t workSpaceSizeInBytes, const void* beta,                               \
     const cudnnFilterDescriptor_t dwDesc, void* dw),                                              \
    (handle, alpha, xDesc, x, dyDesc, dy, convDesc, algo, workSpace, workSpaceSizeInBytes, beta,   \
     dwDesc, dw))                                                                                  \
  X(cudnnStatus_t, cudnnGetStream, (cudnnHandle_t handle, cudaStream_t* streamId),                 \
    (handle, streamId))                                                                            \
  /* the graph API, for cudnn-frontend (attention_cudnn.cpp) */                                   \
  X(cudnnStatus_t, cudnnBackendCreateDescriptor,                                                   \
    (cudnnBackendDescriptorType_t descriptorType, cudnnBackendDescriptor_t* descriptor),           \
    (descriptorType, descriptor))                                                                  \
  X(cudnnStatus_t, cudnnBackendDestroyDescriptor, (cudnnBackendDescriptor_t descriptor),           \
    (descriptor))                                                                                  \
  X(cudnnStatus_t, cudnnBackendFinalize, (cudnnBackendDescriptor_t descriptor), (descriptor))      \
  X(cudnnStatus_t, cudnnBackendSetAttribute,                                                       \
    (cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t attributeName,               \
     cudnnBackendAttributeType_t attributeType, int64_t elementCount,                              \
     const void* arrayOfElements),                                                                 \
    (descriptor, attributeName, attributeType, elementCount, arrayOfElements))                     \
  X(cudnnStatus_t, cudnnBackendGetAttribute,                                                       \
    (cudnnBackendDescriptor_t const descriptor, cudnnBackendAttributeName_t attributeName,         \
     cudnnBackendAttributeType_t attributeType, int64_t requestedElementCount,                     \
     int64_t* elementCount, void* arrayOfElements),                                                \
    (descriptor, attributeName, attributeType, requestedElementCount, elementCount,                \
     arrayOfElements))                                                                             \
  X(cudnnStatus_t, cudnnBackendExecute,                                                            \
    (cudnnHandle_t handle, cudnnBackendDescriptor_t executionPlan,                                 \
     cudnnBackendDescriptor_t variantPack),                                                        \
    (handle, executionPlan, variantPack))

// Referenced by cudnn-frontend's native CUDA-graph support, which the backend does not use; newer
// than cuDNN 9.0, so not required of the library found (kSymbols): a cuDNN without them answers
// CUDNN_STATUS_NOT_SUPPORTED.
#define NNP_CUDNN_OPTIONAL_FUNCTIONS(X)                                                            \
  X(cudnnStatus_t, cudnnBackendPopulateCudaGraph,                                                  \
    (cudnnHandle_t handle, cudnnBackendDescriptor_t executionPlan,                                 \
     cudnnBackendDescriptor_t variantPack, cudaGraph_t graph),                                     \
    (handle, executionPlan, variantPack, graph))                                                   \
  X(cudnnStatus_t, cudnnBackendUpdateCudaGraph,                                                    \
    (cudnnHandle_t handle, cudnnBackendDescriptor_t executionPlan,                                 \
     cudnnBackendDescriptor_t variantPack, cudaGraph_t graph),                                     \
    (handle, executionPlan, variantPack, graph))

#define NNP_CUDNN_OTHER_FUNCTIONS(X)                                                               \
  X(const char*, cudnnGetErrorString, (cudnnStatus_t status), (status))                            \
  X(void, cudnnGetLastErrorString, (char* message, size_t max_size), (message, max_size))          \
  X(size_t, cudnnGetVersion, (void), ())                                                           \
  X(size_t, cudnnGetCudartVersion, (void), ())
// clang-format on

namespace nnp::cuda {
namespace {

#define NNP_CUDNN_NAME(ret, name, params, args) #name,
const char* const kSymbols[] = {NNP_CUDNN_FUNCTIONS(NNP_CUDNN_NAME)
                                    NNP_CUDNN_OTHER_FUNCTIONS(NNP_CUDNN_NAME) nullptr};
#undef NNP_CUDNN_NAME

#ifndef NNPLUG_CUDNN_BUILD_DIR
#define NNPLUG_CUDNN_BUILD_DIR ""
#endif

// cuDNN 9 built for this plugin's CUDA major (cudnnGetCudartVersion is e.g. 13000 for CUDA 13).
std::string check_cudnn(void* handle) {
  using version_fn = size_t (*)();
  auto version = reinterpret_cast<version_fn>(dlsym(handle, "cudnnGetVersion"));
  auto cudart = reinterpret_cast<version_fn>(dlsym(handle, "cudnnGetCudartVersion"));
  if (version == nullptr || cudart == nullptr) return "no cudnnGetVersion";
  const size_t v = version(), rt = cudart();
  if (v / 10000 != CUDNN_MAJOR)
    return format("is cuDNN %zu.%zu, the plugin needs cuDNN %d", v / 10000, v / 100 % 100,
                  CUDNN_MAJOR);
  if (rt / 1000 != CUDART_VERSION / 1000)
    return format(
        "is cuDNN %zu.%zu for CUDA %zu, the plugin needs a cuDNN for CUDA %d "
        "(e.g. the nvidia-cudnn-cu%d wheel)",
        v / 10000, v / 100 % 100, rt / 1000, CUDART_VERSION / 1000, CUDART_VERSION / 1000);
  return "";
}

std::string cudnn_version(void* handle) {
  using version_fn = size_t (*)();
  auto version = reinterpret_cast<version_fn>(dlsym(handle, "cudnnGetVersion"));
  if (version == nullptr) return "unknown";
  const size_t v = version();  // major * 10000 + minor * 100 + patch (cuDNN 9)
  return format("%zu.%zu.%zu", v / 10000, v / 100 % 100, v % 100);
}

}  // namespace

const loaded_library& cudnn_library() {
  static const loaded_library lib = open_library(library_spec{"cuDNN",
                                                              "libcudnn.so.9",
                                                              {"cudnn/lib"},
                                                              NNPLUG_CUDNN_BUILD_DIR,
                                                              kSymbols,
                                                              check_cudnn,
                                                              cudnn_version});
  return lib;
}

}  // namespace nnp::cuda

#define NNP_CUDNN_DEFINE(ret, name, params, args)                                             \
  NNP_CUDA_LAZY_FUNCTION(::nnp::cuda::cudnn_library, CUDNN_STATUS_NOT_INITIALIZED, ret, name, \
                         params, args)
NNP_CUDNN_FUNCTIONS(NNP_CUDNN_DEFINE)
#define NNP_CUDNN_DEFINE_OPTIONAL(ret, name, params, args)                                  \
  NNP_CUDA_LAZY_FUNCTION(::nnp::cuda::cudnn_library, CUDNN_STATUS_NOT_SUPPORTED, ret, name, \
                         params, args)
NNP_CUDNN_OPTIONAL_FUNCTIONS(NNP_CUDNN_DEFINE_OPTIONAL)
NNP_CUDA_LAZY_FUNCTION(::nnp::cuda::cudnn_library, "cuDNN is not loaded", const char*,
                       cudnnGetErrorString, (cudnnStatus_t status), (status))
NNP_CUDA_LAZY_FUNCTION(::nnp::cuda::cudnn_library, (void)0, void, cudnnGetLastErrorString,
                       (char* message, size_t max_size), (message, max_size))
NNP_CUDA_LAZY_FUNCTION(::nnp::cuda::cudnn_library, 0, size_t, cudnnGetVersion, (void), ())
NNP_CUDA_LAZY_FUNCTION(::nnp::cuda::cudnn_library, 0, size_t, cudnnGetCudartVersion, (void), ())
