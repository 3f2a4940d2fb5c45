// nccl_load_test.cpp — loads libnnplug-comm-nccl.so directly (dlopen, not through libnnplug)
// with a host of its own, and checks what holds on every machine, with or without a GPU:
//  - NCCL is not mapped before initialize (the plugin opens it on first use);
//  - the entry refuses a host of another ABI major with a message, and hands out a table:
//    transport "nccl", memory DEVICE_STREAM, device_type kDLCUDA, every slot but shutdown set;
//  - initialize opens NCCL (version "<nnplug> (NCCL x.y.z)", NCCL mapped), or, with
//    --expect-failure, fails with LOAD_FAILED and a message holding each TEXT (NCCL not mapped);
//  - comm_supported (which reads only the call) accepts float32, float64, float16 and bfloat16
//    and SUM / MEAN / MAX / MIN, and refuses int32 and a kind that is no collective with
//    UNSUPPORTED and a message; comm_execute refuses a NULL communicator; comm_destroy(NULL) is
//    OK. Nothing here needs a GPU.
// Usage: nnplug-nccl-load-test <path to libnnplug-comm-nccl.so> [options]
//   --expect-failure TEXT  initialize fails, its message contains TEXT (repeatable)
//   --expect-log TEXT      a message the plugin logged contains TEXT (repeatable)
#include <nnplug/nnplug_comm_plugin.h>
#include <nnplug/nnplug_version.h>

#include <dlfcn.h>

#include "check.hpp"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using nccl_test::contains;
std::string g_error;  // the plugin's last set_error message
std::string g_logs;   // every message it logged, one per line

void on_error(void*, nnp_status, const char* message) { g_error = message ? message : ""; }
void on_log(void*, int32_t, const char* message) {
  g_logs += message ? message : "";
  g_logs += "\n";
}

// Whether the process has mapped the library with this soname (never maps it).
bool is_mapped(const char* soname) {
  void* h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return false;
  dlclose(h);
  return true;
}

// A one-dimensional tensor of 8 elements of `dtype` on cuda:0, data NULL (nothing runs on it).
struct tensor8 {
  int64_t shape[1] = {8};
  DLTensor t{};
  const DLTensor* io[1] = {&t};
  explicit tensor8(DLDataType dtype) {
    t.device = {kDLCUDA, 0};
    t.ndim = 1;
    t.dtype = dtype;
    t.shape = shape;
  }
  tensor8(const tensor8&) = delete;
  tensor8& operator=(const tensor8&) = delete;
};

// comm_supported on a tensor8 of `dtype`.
nnp_status supported(const nnp_comm_plugin_api* api, int32_t kind, const void* params,
                     DLDataType dtype) {
  const tensor8 x(dtype);
  g_error.clear();
  return api->comm_supported(nullptr, kind, params, 1, x.io, 1, x.io);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s libnnplug-comm-nccl.so [--expect-failure TEXT] "
                 "[--expect-log TEXT]\n",
                 argv[0]);
    return 2;
  }
  std::vector<std::string> failures, logs;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--expect-failure") == 0 && i + 1 < argc) {
      failures.push_back(argv[++i]);
    } else if (std::strcmp(argv[i], "--expect-log") == 0 && i + 1 < argc) {
      logs.push_back(argv[++i]);
    } else {
      std::fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }

  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "dlopen failed: %s\n", dlerror());
    return 1;
  }
  CHECK(!is_mapped("libnccl.so.2"));
  auto entry =
      reinterpret_cast<nnp_comm_plugin_get_api_fn>(dlsym(lib, NNP_COMM_PLUGIN_ENTRY_SYMBOL));
  CHECK(entry != nullptr);
  CHECK(dlsym(lib, NNP_PLUGIN_ENTRY_SYMBOL) == nullptr);  // not a device plugin
  if (entry == nullptr) return 1;

  nnp_host_api host{};
  host.struct_size = sizeof host;
  host.abi_version_major = NNP_ABI_VERSION_MAJOR + 1;
  host.abi_version_minor = 0;
  host.set_error = on_error;
  host.log = on_log;
  const nnp_comm_plugin_api* api = nullptr;
  CHECK(entry(&host, &api) == NNP_STATUS_ABI_MISMATCH);
  CHECK(api == nullptr);
  CHECK(contains(g_error, "ABI"));
  CHECK(entry(nullptr, &api) == NNP_STATUS_INVALID_ARGUMENT);
  host.abi_version_major = NNP_ABI_VERSION_MAJOR;
  host.abi_version_minor = NNP_ABI_VERSION_MINOR;
  CHECK(entry(&host, &api) == NNP_STATUS_OK);
  if (api == nullptr) return 1;

  CHECK(api->struct_size >= NNP_COMM_PLUGIN_API_STRUCT_SIZE_1_3);
  CHECK(api->abi_version_major == NNP_ABI_VERSION_MAJOR);
  CHECK(api->abi_version_minor >= 3);
  CHECK(api->transport != nullptr && std::strcmp(api->transport, "nccl") == 0);
  CHECK(api->version != nullptr);
  CHECK(api->memory == NNP_COMM_MEMORY_DEVICE_STREAM);
  CHECK(api->device_type == kDLCUDA);
  CHECK(api->initialize != nullptr && api->get_unique_id != nullptr &&
        api->comm_create != nullptr && api->comm_destroy != nullptr &&
        api->comm_supported != nullptr && api->comm_execute != nullptr);
  if (api->initialize == nullptr || api->comm_supported == nullptr) return 1;
  CHECK(!is_mapped("libnccl.so.2"));  // the entry opened nothing

  g_error.clear();
  const nnp_status init = api->initialize();
  if (!failures.empty()) {
    CHECK(init == NNP_STATUS_LOAD_FAILED);
    std::printf("initialize: %d: %s\n", static_cast<int>(init), g_error.c_str());
    for (const std::string& text : failures) {
      CHECK(contains(g_error, text));
      if (!contains(g_error, text))
        std::fprintf(stderr, "expected the message to contain '%s'\n", text.c_str());
    }
    CHECK(!is_mapped("libnccl.so.2"));
    return nccl_test::failures == 0 ? 0 : 1;
  }
  CHECK(init == NNP_STATUS_OK);
  if (init != NNP_STATUS_OK) {
    std::fprintf(stderr, "initialize failed: %s\n", g_error.c_str());
    return 1;
  }
  const std::string version = api->version;
  std::printf("nccl plugin %s\n%s", version.c_str(), g_logs.c_str());
  CHECK(version.rfind(std::string(NNP_VERSION_STRING) + " (NCCL 2.", 0) == 0);
  CHECK(is_mapped("libnccl.so.2"));
  for (const std::string& text : logs) {
    CHECK(contains(g_logs, text));
    if (!contains(g_logs, text)) std::fprintf(stderr, "expected a log with '%s'\n", text.c_str());
  }

  const DLDataType f32{kDLFloat, 32, 1}, f64{kDLFloat, 64, 1}, f16{kDLFloat, 16, 1},
      bf16{kDLBfloat, 16, 1}, i32{kDLInt, 32, 1};
  nnp_all_reduce_params ar{};
  ar.struct_size = sizeof ar;
  for (int32_t op : {NNP_REDUCE_SUM, NNP_REDUCE_MEAN, NNP_REDUCE_MAX, NNP_REDUCE_MIN}) {
    ar.op = op;
    for (const DLDataType& t : {f32, f64, f16, bf16}) {
      const nnp_status st = supported(api, NNP_OP_ALL_REDUCE, &ar, t);
      CHECK(st == NNP_STATUS_OK);
      if (st != NNP_STATUS_OK) std::fprintf(stderr, "refused: %s\n", g_error.c_str());
    }
  }
  ar.op = NNP_REDUCE_L2;
  CHECK(supported(api, NNP_OP_ALL_REDUCE, &ar, f32) == NNP_STATUS_UNSUPPORTED);
  CHECK(contains(g_error, "SUM, MEAN, MAX or MIN"));
  ar.op = NNP_REDUCE_SUM;
  CHECK(supported(api, NNP_OP_ALL_REDUCE, &ar, i32) == NNP_STATUS_UNSUPPORTED);
  CHECK(contains(g_error, "int32") && contains(g_error, "NCCL"));
  nnp_broadcast_params bc{};
  bc.struct_size = sizeof bc;
  CHECK(supported(api, NNP_OP_BROADCAST, &bc, f16) == NNP_STATUS_OK);
  nnp_all_gather_params ag{};
  ag.struct_size = sizeof ag;
  CHECK(supported(api, NNP_OP_ALL_GATHER, &ag, bf16) == NNP_STATUS_OK);
  CHECK(supported(api, NNP_OP_GEMM, nullptr, f32) == NNP_STATUS_UNSUPPORTED);
  CHECK(contains(g_error, "not a collective"));

  const tensor8 x(f32);
  const DLTensor* const* io = x.io;
  CHECK(api->comm_execute(nullptr, nullptr, NNP_OP_ALL_REDUCE, &ar, 1, io, 1, io) ==
        NNP_STATUS_INVALID_ARGUMENT);
  CHECK(api->comm_destroy(nullptr) == NNP_STATUS_OK);
  CHECK(api->get_unique_id(nullptr) == NNP_STATUS_INVALID_ARGUMENT);

  return nccl_test::report();
}
