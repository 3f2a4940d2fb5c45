// nnplug/kit/data_movement.hpp — index maths of the data-movement ops, shared by libnnplug's
// shape rules and every backend's kernels, so that they cannot disagree:
//  - resolve_slice (nnplug/geometry/slice.hpp, re-exported here): ONNX Slice (opset 13) params
//    and an input shape give each dimension's first index, step and count:
//    y[.., j, ..] = x[.., start + j*step, ..] for j < count. Dimensions that params do not name
//    keep start 0, step 1, count = dim.
//  - check_gather_indices: the range check of ONNX Gather's indices, for backends that can
//    fail a call while running it (host backends).
// Header-only; C++17.
#pragma once

#include <nnplug/geometry/slice.hpp>
#include <nnplug/kit/error.hpp>
#include <nnplug/nnplug_ops.h>

#include <cstdint>

namespace nnp {

// Every index must lie in [-dim, dim) (ONNX Gather; negative counts from the end). Throws
// INVALID_ARGUMENT naming the first one that does not, before the kernel writes anything.
inline void check_gather_indices(const char* op, const int64_t* indices, int64_t n, int64_t dim) {
  for (int64_t k = 0; k < n; ++k)
    if (indices[k] < -dim || indices[k] >= dim)
      fail(NNP_STATUS_INVALID_ARGUMENT,
           format("%s: inputs[1] (indices): element %lld is %lld, outside [-%lld, %lld) "
                  "(data.shape[axis] = %lld)",
                  op, static_cast<long long>(k), static_cast<long long>(indices[k]),
                  static_cast<long long>(dim), static_cast<long long>(dim),
                  static_cast<long long>(dim)));
}

}  // namespace nnp
