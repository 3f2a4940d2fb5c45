// nnplug/kit/tensor.hpp — dtype and DLTensor helpers (is_f32, dtype_name, numel, data_ptr,
// is_compact, shape_string, normalize_axis) and the shape maths of nnplug_ops.h (conv_out_dim,
// pool_out_dim, resolve_pool_window, overflow-safe sizes) for plugins. Defined once, in
// nnplug/geometry/tensor.hpp, which libnnplug's validation uses too.
#pragma once

#include <nnplug/geometry/tensor.hpp>
