// plugin.cpp — registration file of the reference backend (libnnplug-reference.so): the one
// device "reference:0" (host memory, single-threaded, synchronous streams: every slot from the
// plugin kit's host_plugin.hpp), serving the kernel rows of rows.hpp (which op kinds and dtypes
// the reference kernels implement; the simulated accelerator serves the same rows). Ops
// themselves live in one file per family (see reference.hpp), in the static library
// nnplug_reference_kernels.
#include "rows.hpp"

#include <nnplug/kit/host_plugin.hpp>
#include <nnplug/nnplug_version.h>

namespace {

constexpr nnp::kit::host_backend kBackend =
    nnp::kit::host_backend_of("reference", NNP_VERSION_STRING, ref::kFamilies,
                              "nnplug reference backend (naive, single-threaded, float32/float64)");

const nnp_plugin_api kTable = nnp::kit::host_plugin_table<kBackend>();

}  // namespace

NNP_KIT_PLUGIN_ENTRY(kTable)
