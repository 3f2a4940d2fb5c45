// Unit tests of what is particular to the CPU plugin, opened directly with dlopen (no
// libnnplug): its device properties and its float64 policy (declared UNSUPPORTED, with a
// message). Numerics are checked by nnplug-conformance (CTest conformance_cpu and
// conformance_cpu_full: every op against the reference, with cases that reach the cpu's own
// paths: panel-split and K-split GEMM, Winograd and im2col convolution, parallel elementwise
// blocks, the dropout mask cache, float16/bfloat16 casts).
#include <nnplug/nnplug_plugin.h>

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <dlfcn.h>

#include <string>

namespace {

std::string g_last_error;

void host_set_error(void*, nnp_status, const char* message) { g_last_error = message; }
void host_log(void*, int32_t, const char*) {}

const nnp_host_api kHost = {sizeof(nnp_host_api),  NNP_ABI_VERSION_MAJOR,
                            NNP_ABI_VERSION_MINOR, nullptr,
                            host_set_error,        host_log};

struct plugin {
  const nnp_plugin_api* api = nullptr;
  void* stream = nullptr;
  explicit plugin(const char* path) {
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    REQUIRE_MESSAGE(h != nullptr, dlerror());
    auto entry = reinterpret_cast<nnp_plugin_get_api_fn>(dlsym(h, NNP_PLUGIN_ENTRY_SYMBOL));
    const bool has_entry = entry != nullptr;
    REQUIRE(has_entry);
    REQUIRE(entry(&kHost, &api) == NNP_STATUS_OK);
    if (api->initialize) REQUIRE(api->initialize() == NNP_STATUS_OK);
    REQUIRE(api->stream_create(0, &stream) == NNP_STATUS_OK);
  }
  // The plugin's documented teardown (what nnp_shutdown does): frees its scratch and joins
  // its worker threads, so LeakSanitizer sees no per-thread buffers at exit.
  ~plugin() {
    if (api == nullptr) return;
    api->stream_destroy(stream);
    if (api->shutdown != nullptr) api->shutdown();
  }
};

plugin& cpu() {
  static plugin p(NNPLUG_CPU_PLUGIN_PATH);
  return p;
}

DLTensor host_tensor(void* data, int64_t* shape, DLDataType dtype) {
  DLTensor t{};
  t.data = data;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = 1;
  t.dtype = dtype;
  t.shape = shape;
  return t;
}

}  // namespace

TEST_CASE("device props: cpu:0, priority 100, threads and model in the description") {
  nnp_device_props props{};
  props.struct_size = sizeof(props);
  REQUIRE(cpu().api->get_device_props(0, &props) == NNP_STATUS_OK);
  CHECK(std::string(props.name) == "cpu:0");
  CHECK(props.auto_priority == 100);
  CHECK(props.num_threads >= 1);
  CHECK(props.device_type == kDLCPU);
  CHECK(std::string(props.description).find("threads") != std::string::npos);
}

TEST_CASE("float64 is declared unsupported with a message") {
  double xd[4] = {1, 2, 3, 4}, yd[4] = {};
  int64_t shape[1] = {4};
  const DLTensor x = host_tensor(xd, shape, DLDataType{kDLFloat, 64, 1});
  const DLTensor y = host_tensor(yd, shape, DLDataType{kDLFloat, 64, 1});
  nnp_scale_params p{};
  p.struct_size = sizeof(p);
  p.alpha = 2.0;
  const DLTensor* in[] = {&x};
  const DLTensor* out[] = {&y};
  CHECK(cpu().api->op_supported(0, NNP_OP_SCALE, &p, 1, in, 1, out) == NNP_STATUS_UNSUPPORTED);
  CHECK(g_last_error.find("float64") != std::string::npos);
  CHECK(cpu().api->op_execute(cpu().stream, 999, &p, 1, in, 1, out) == NNP_STATUS_UNSUPPORTED);
}
