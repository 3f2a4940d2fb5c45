// nnplug/geometry/slice.hpp — the index maths of ONNX Slice (opset 13), the one definition for
// libnnplug's shape rule and every backend's kernels (the kit re-exports it through
// <nnplug/kit/data_movement.hpp>), so that they cannot disagree: resolve_slice turns params and
// an input shape into each dimension's first index, step and count:
// y[.., j, ..] = x[.., start + j*step, ..] for j < count. Dimensions that params do not name
// keep start 0, step 1, count = dim. Header-only; C++17.
#pragma once

#include <nnplug/nnplug_ops.h>

#include <cstdint>
#include <string>

namespace nnp {
struct slice_dim {
  int64_t start, step, count;
};

// Resolves `p` for a tensor of `rank` dims `shape` into dims[0..rank). Returns true, or false
// with *why naming the params field and the problem (n_axes outside [0, rank], an axis outside
// [-rank, rank), a repeated axis, a zero step).
inline bool resolve_slice(const nnp_slice_params& p, int rank, const int64_t* shape,
                          slice_dim* dims, std::string* why) {
  for (int d = 0; d < rank; ++d) dims[d] = slice_dim{0, 1, shape[d]};
  if (p.n_axes < 0 || p.n_axes > rank) {
    if (why)
      *why = "params->n_axes: expected in [0, rank = " + std::to_string(rank) + "], got " +
             std::to_string(p.n_axes);
    return false;
  }
  bool seen[NNP_MAX_DIMS] = {};
  for (int i = 0; i < p.n_axes; ++i) {
    const int64_t ax = p.has_axes ? p.axes[i] : i;
    if (ax < -rank || ax >= rank) {
      if (why)
        *why = "params->axes[" + std::to_string(i) + "]: expected in [-rank, rank) = [" +
               std::to_string(-rank) + ", " + std::to_string(rank) + "), got " + std::to_string(ax);
      return false;
    }
    const int a = static_cast<int>(ax < 0 ? ax + rank : ax);
    if (seen[a]) {
      if (why)
        *why = "params->axes[" + std::to_string(i) + "]: axis " + std::to_string(ax) +
               " is repeated (ONNX refuses repeated axes)";
      return false;
    }
    seen[a] = true;
    const int64_t step = p.has_steps ? p.steps[i] : 1;
    if (step == 0) {
      if (why) *why = "params->steps[" + std::to_string(i) + "]: expected non-zero, got 0";
      return false;
    }
    const int64_t dim = shape[a];
    int64_t start = p.starts[i], end = p.ends[i];
    if (start < 0) start += dim;  // INT64_MIN + dim cannot overflow (dim >= 0)
    if (end < 0) end += dim;
    auto clamp = [](int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; };
    int64_t count;
    if (step > 0) {
      start = clamp(start, 0, dim);
      end = clamp(end, 0, dim);
      count = end > start ? (end - start - 1) / step + 1 : 0;
    } else {
      start = clamp(start, 0, dim - 1);
      end = clamp(end, -1, dim - 1);
      // |step| as unsigned: step may be INT64_MIN.
      const uint64_t mag = uint64_t(0) - static_cast<uint64_t>(step);
      count =
          start > end ? static_cast<int64_t>(static_cast<uint64_t>(start - end - 1) / mag) + 1 : 0;
    }
    dims[a] = slice_dim{count > 0 ? start : 0, step, count};
  }
  return true;
}

}  // namespace nnp
