// nnplug/kit/pool_nd.hpp — the window geometry of N-D pooling for plugins: one resolved record
// per spatial dimension (pool_dim, resolve_pool_dim) and a call's geometry as 3 spatial
// dimensions (pool_nd_geometry, resolve_pool_nd). Defined once, in nnplug/geometry/pool.hpp,
// which libnnplug's shape rule uses too.
#pragma once

#include <nnplug/geometry/pool.hpp>
#include <nnplug/kit/tensor.hpp>
