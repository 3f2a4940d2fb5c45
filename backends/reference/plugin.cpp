// Placeholder: the reference backend is being written (issue 2).
#include <nnplug_common/boundary.hpp>

static nnp_plugin_api make_table() {
  nnp_plugin_api t{};
  t.struct_size = sizeof(nnp_plugin_api);
  t.abi_version_major = NNP_ABI_VERSION_MAJOR;
  t.abi_version_minor = NNP_ABI_VERSION_MINOR;
  t.name = "reference";
  t.version = "0.1.0";
  return t;
}
static const nnp_plugin_api kTable = make_table();

NNP_PLUGIN_ENTRY nnp_status nnp_plugin_get_api(const nnp_host_api* host,
                                               const nnp_plugin_api** api) {
  return nnp::accept_host(host, &kTable, api);
}
