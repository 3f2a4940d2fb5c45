// nnplug/kit/conv_nd.hpp — the geometry of the N-D convolution ops for plugins: ONNX's meaning
// of zeroed attributes (conv_one_if_zero), the auto_pad and output_shape padding rules
// (conv_resolve_axis, conv_transpose_resolve_axis) and a call's geometry in forward terms
// (conv_nd_geometry: conv_nd_of_conv, conv_nd_of_transpose). Defined once, in
// nnplug/geometry/conv.hpp, which libnnplug's shape rule uses too.
#pragma once

#include <nnplug/geometry/conv.hpp>
#include <nnplug/kit/tensor.hpp>
