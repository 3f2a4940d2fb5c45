// rows.hpp — which op kinds and dtypes the reference kernels implement: every kind, float32 and
// float64 (copy, transpose and the data-movement ops but gather_backward any dtype). Each
// kernel file ends with the rows of the kernels it defines (an nnp::kit::op_row_list); this
// header lists the files. The reference plugin (plugin.cpp) and the simulated accelerator
// (backends/sim) serve op_supported and op_execute from these rows through the plugin kit, so
// both always declare the same ops.
#pragma once

#include "reference.hpp"

namespace ref {

// clang-format off
extern const nnp::kit::op_row_list kGemmRows,
    kMatmulRows,
    kConvRows,
    kPoolRows,
    kActivationRows,
    kSoftmaxRows,
    kAttentionRows,
    kLossRows,
    kNormRows,
    kDropoutRows,
    kElementwiseRows,
    kDataMovementRows,
    kReduceRows,
    kOptimizerRows;
inline const nnp::kit::op_row_list* const kFamilies[] = {
    &kGemmRows,
    &kMatmulRows,
    &kConvRows,
    &kPoolRows,
    &kActivationRows,
    &kSoftmaxRows,
    &kAttentionRows,
    &kLossRows,
    &kNormRows,
    &kDropoutRows,
    &kElementwiseRows,
    &kDataMovementRows,
    &kReduceRows,
    &kOptimizerRows,
};
// clang-format on

}  // namespace ref
