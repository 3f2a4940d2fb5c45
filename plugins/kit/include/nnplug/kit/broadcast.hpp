// Numpy (ONNX multidirectional) broadcasting for compact row-major tensors, shared by backends.
//
// An operand of rank r_in is aligned to the output's rank r_out from the right; a missing
// leading dim or a dim of size 1 repeats, i.e. has element stride 0. broadcast_strides gives
// those strides; broadcast_offset maps an output linear index to the operand's element offset.
#pragma once

#include <nnplug/nnplug_types.h>

#include <cstdint>

namespace nnp {

// Element strides of compact tensor `t` laid against an output of shape out_shape[0..out_rank):
// strides[d] = 0 where t has no dim d or has size 1 there (broadcast), else t's compact stride.
// Requires t.ndim <= out_rank <= NNP_MAX_DIMS (shapes already checked as broadcastable).
inline void broadcast_strides(const DLTensor& t, int out_rank, int64_t* strides) {
  const int lead = out_rank - t.ndim;
  int64_t stride = 1;
  for (int d = out_rank - 1; d >= 0; --d) {
    const int td = d - lead;
    if (td < 0) {
      strides[d] = 0;
      continue;
    }
    strides[d] = t.shape[td] == 1 ? 0 : stride;
    stride *= t.shape[td];
  }
}

// Element offset, in an operand with broadcast `strides`, of the output element with row-major
// linear index `i` in an output of shape out_shape[0..out_rank).
inline int64_t broadcast_offset(int64_t i, const int64_t* out_shape, int out_rank,
                                const int64_t* strides) {
  int64_t offset = 0;
  for (int d = out_rank - 1; d >= 0; --d) {
    const int64_t extent = out_shape[d];
    offset += (i % extent) * strides[d];
    i /= extent;
  }
  return offset;
}

}  // namespace nnp
