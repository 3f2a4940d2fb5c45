// plugin.cpp — registration file of the reference backend (libnnplug-reference.so): the one
// device "reference:0" (host memory, single-threaded, synchronous streams: every slot from the
// plugin kit's host_plugin.hpp), and the kernel rows: which op kinds and dtypes it implements
// (every kind, float32 and float64; copy and transpose any dtype). The plugin kit serves
// op_supported and op_execute from these rows. Ops themselves live in one file per family
// (see reference.hpp), in the static library nnplug_reference_kernels.
#include "reference.hpp"

#include <nnplug/kit/host_plugin.hpp>
#include <nnplug/nnplug_version.h>

namespace {

using nnp::kit::f32;
using nnp::kit::f64;
using nnp::kit::op_call;
using nnp::kit::op_row;

// cast converts between float32 and float64 only (the row lists both dtypes for x).
void check_cast(const op_call& c) {
  const DLDataType& y = c.out(0)->dtype;
  if (!nnp::is_f32(y) && !nnp::is_f64(y))
    nnp::unsupported(nnp::format("the reference backend implements float32 and float64 only; "
                                 "output 0 is %s (cast supports float32 <-> float64 only)",
                                 nnp::dtype_name(y).c_str()));
}

constexpr uint32_t kFloats = f32 | f64;

// clang-format off
const op_row kRows[] = {
    {NNP_OP_GEMM,                           kFloats,        ref::gemm},
    {NNP_OP_CONV2D_FORWARD,                 kFloats,        ref::conv2d_forward},
    {NNP_OP_CONV2D_BACKWARD_DATA,           kFloats,        ref::conv2d_backward_data},
    {NNP_OP_CONV2D_BACKWARD_FILTER,         kFloats,        ref::conv2d_backward_filter},
    {NNP_OP_CONV2D_BACKWARD_BIAS,           kFloats,        ref::conv2d_backward_bias},
    {NNP_OP_POOL2D_FORWARD,                 kFloats,        ref::pool2d_forward},
    {NNP_OP_POOL2D_BACKWARD,                kFloats,        ref::pool2d_backward},
    {NNP_OP_ACTIVATION_FORWARD,             kFloats,        ref::activation_forward},
    {NNP_OP_ACTIVATION_BACKWARD,            kFloats,        ref::activation_backward},
    {NNP_OP_SOFTMAX_FORWARD,                kFloats,        ref::softmax_forward},
    {NNP_OP_SOFTMAX_BACKWARD,               kFloats,        ref::softmax_backward},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD,  kFloats,        ref::softmax_cross_entropy_forward},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD, kFloats,        ref::softmax_cross_entropy_backward},
    {NNP_OP_BATCH_NORM_FORWARD_TRAINING,    kFloats,        ref::batch_norm_forward_training},
    {NNP_OP_BATCH_NORM_FORWARD_INFERENCE,   kFloats,        ref::batch_norm_forward_inference},
    {NNP_OP_BATCH_NORM_BACKWARD,            kFloats,        ref::batch_norm_backward},
    {NNP_OP_LAYER_NORM_FORWARD,             kFloats,        ref::layer_norm_forward},
    {NNP_OP_LAYER_NORM_BACKWARD,            kFloats,        ref::layer_norm_backward},
    {NNP_OP_DROPOUT_FORWARD,                kFloats,        ref::dropout_forward},
    {NNP_OP_DROPOUT_BACKWARD,               kFloats,        ref::dropout_backward},
    {NNP_OP_BINARY,                         kFloats,        ref::binary},
    {NNP_OP_SCALE,                          kFloats,        ref::scale},
    {NNP_OP_FILL,                           kFloats,        ref::fill},
    {NNP_OP_COPY,                           nnp::kit::any,  ref::copy},
    {NNP_OP_TRANSPOSE,                      nnp::kit::any,  ref::transpose},
    {NNP_OP_CAST,                           kFloats,        ref::cast, check_cast},
    {NNP_OP_REDUCE,                         kFloats,        ref::reduce},
    {NNP_OP_SGD_UPDATE,                     kFloats,        ref::sgd_update},
    {NNP_OP_ADAM_UPDATE,                    kFloats,        ref::adam_update},
    {NNP_OP_CLIP,                           kFloats,        ref::clip},
};
// clang-format on
constexpr nnp::kit::host_backend kBackend = nnp::kit::host_backend_of(
    "reference", NNP_VERSION_STRING, kRows,
    "nnplug reference backend (naive, single-threaded, float32/float64)");

const nnp_plugin_api kTable = nnp::kit::host_plugin_table<kBackend>();

}  // namespace

NNP_KIT_PLUGIN_ENTRY(kTable)
