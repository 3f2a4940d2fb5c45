// conv_cudnn.hpp — what the convolution ops (conv.cpp: the ops, the direct kernels' fallback and
// the non-finite rule) and their cuDNN path (conv_cudnn.cpp: descriptors, algorithm choice,
// plans) share: a call in the geometry's terms (nnplug/kit/conv_nd.hpp) and cuDNN's view of it.
#pragma once

#include "ops.hpp"

#include <nnplug/kit/conv_nd.hpp>

#include <cstdint>

namespace nnp::cuda {

// ---- what cuDNN sees ----------------------------------------------------------------------------
enum class dir { forward, backward_data, backward_filter };

// cuDNN's view of a geometry: its last nsp axes (2 for 1-d and 2-d, 3 for 3-d) and, per
// geometry axis, the input extent cuDNN takes and its symmetric pad. An axis where the begin pad
// used on both sides gives another output size (or the pad is negative) is windowed: cuDNN gets
// the zero-padded input cropped to what the outputs read, extent (out-1)*stride +
// dilation*(kernel-1) + 1 starting at -pad, and pads it by 0.
struct cudnn_view {
  int nsp = 2;
  bool windowed = false;                // some axis is
  int64_t in[kConvMaxSpatial] = {};     // cuDNN's input extents
  int64_t shift[kConvMaxSpatial] = {};  // windowed axes: the begin pad; else 0
  int64_t pad[kConvMaxSpatial] = {};    // cuDNN's symmetric pads
  bool fits = true;                     // every size within cuDNN's int (2^31 - 1 elements)
};

// The geometry of a call whose operands are all non-empty (conv_cudnn.cpp).
cudnn_view view_of(const conv_nd_geometry& g);

// ---- one call -----------------------------------------------------------------------------------
// A call in the geometry's terms: its input (in), filter (w) and output (out) tensors, one of
// which the direction computes (forward: out, backward-data: in, backward-filter: w), the others
// read; bias (NULL: none) is added to the result's channels.
struct conv_job {
  dir d;
  elem t;
  conv_nd_geometry g;
  cudnn_view v;
  void* in;
  void* w;
  void* out;
  const void* bias;
  int64_t n_in, n_w, n_out;  // element counts
  int64_t n_in_cudnn;        // of the input as cuDNN sees it (windowed)
};

// Queues the call on cuDNN (conv_cudnn.cpp); false when cuDNN runs nothing for it (the direct
// kernels then compute it).
bool run_cudnn(stream& s, const conv_job& j);

}  // namespace nnp::cuda
