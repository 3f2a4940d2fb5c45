// attention_cudnn.cpp — float16/bfloat16 attention through cuDNN's fused scaled-dot-product
// attention (FlashAttention-style kernels on tensor cores: 16-bit products, float32 accumulation
// and softmax), built with NVIDIA's cudnn-frontend (third_party/cudnn-frontend, header-only; its
// calls into cuDNN's graph API go to cudnn_loader.cpp's definitions, so the library is the one
// the backend opened at run time).
//
// What cuDNN is given: Q, K, V, O (and dQ, dK, dV, dO) as [B, H, T, D] with the geometry's element
// strides (nnplug/kit/attention.hpp), so both ONNX layouts are passed as they are; the scale; the
// causal mask as cuDNN's diagonal band aligned top-left with right bound 0 (key j > query i
// hidden: ONNX's upper-left causal mask); the log-sum-exp ("Stats", natural log) in float32
// [B, Hq, Tq, 1]; grouped-query heads by K's and V's head count. Not given to cuDNN (attention.cu
// runs those calls): an additive mask (nnplug's rule for a fully masked row, Y = 0 and lse = -inf,
// is not cuDNN's), D or Dv not a multiple of 8 or above 128, operands not 16-byte aligned.
//
// A graph is built once per *plan* key — direction, dtype, device, the geometry with its strides,
// causal, scale, whether the forward writes Stats — and cached in a process-wide map, with its
// workspace size; a key cuDNN refused keeps the reason, so later calls ask cuDNN nothing. Plans
// are built and run with one cuDNN handle per device, this file's own (a plan is finalised for a
// handle): under that device's mutex, pointed at the calling stream (cudnnSetStream) before each
// execution, so streams on any thread share the plans. The backward asks for cuDNN's deterministic
// algorithm first (the same result on every call, as the backend's own kernels), then for any. The
// workspace is the stream's grow-only scratch (kScratchWorkspace); a workspace that does not fit in
// memory now is a refusal of this call only.
#include "attention_cudnn.hpp"

#include <cudnn_frontend.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace nnp::cuda {
namespace {

namespace fe = cudnn_frontend;
using tensor_ptr = std::shared_ptr<fe::graph::Tensor_attributes>;

// The graph's tensors by uid (the variant pack's keys).
enum : int64_t { kUidQ = 1, kUidK, kUidV, kUidO, kUidStats, kUidDO, kUidDQ, kUidDK, kUidDV };

struct sdpa_plan {
  fe::graph::Graph graph;
  int64_t workspace = 0;
  std::string refusal;  // non-empty: cuDNN did not take the key, and why
};

// direction, dtype, device, B, Hq, Hkv, Tq, Tk, D, Dv, causal, scale bits, stats, then the
// batch, head and row strides of q, k, v, y.
using plan_key = std::array<int64_t, 13 + 12>;
std::mutex g_plans_mutex;
std::map<plan_key, std::shared_ptr<const sdpa_plan>> g_plans;

plan_key key_of(int direction, elem t, int32_t device, const nnp::kit::attention_geometry& g,
                bool stats) {
  const float scale = static_cast<float>(g.scale);
  uint32_t scale_bits = 0;
  std::memcpy(&scale_bits, &scale, sizeof scale_bits);
  const nnp::kit::attention_operand ops[] = {g.q, g.k, g.v, g.y};
  plan_key k{direction,
             static_cast<int64_t>(t),
             device,
             g.batch,
             g.hq,
             g.hkv,
             g.tq,
             g.tk,
             g.d,
             g.dv,
             g.causal ? 1 : 0,
             static_cast<int64_t>(scale_bits),
             stats ? 1 : 0};
  size_t i = 13;
  for (const auto& o : ops) {
    k[i++] = o.batch_stride;
    k[i++] = o.head_stride;
    k[i++] = o.row_stride;
  }
  return k;
}

// This file's cuDNN handle of a device, and the mutex its users hold.
struct device_handle {
  std::mutex mutex;
  cudnnHandle_t h = nullptr;
};
constexpr int kMaxDevices = 64;
device_handle g_handles[kMaxDevices];

fe::DataType_t fe_type(elem t) {
  return t == elem::bf16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF;
}

tensor_ptr add_tensor(fe::graph::Graph& graph, const char* name, int64_t uid, int64_t b, int64_t h,
                      int64_t rows, int64_t width, const nnp::kit::attention_operand& o) {
  return graph.tensor(fe::graph::Tensor_attributes()
                          .set_name(name)
                          .set_uid(uid)
                          .set_dim({b, h, rows, width})
                          .set_stride({o.batch_stride, o.head_stride, o.row_stride, 1}));
}

// Stats / lse: [B, Hq, Tq, 1] float32, compact.
std::vector<int64_t> stats_stride(const nnp::kit::attention_geometry& g) {
  return {g.hq * g.tq, g.tq, 1, 1};
}

void set_io_types(fe::graph::Graph& graph, elem t) {
  graph.set_io_data_type(fe_type(t))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
}

// Builds graph's plans for handle h: the empty string, or cuDNN's reason to refuse.
std::string build(fe::graph::Graph& graph, cudnnHandle_t h, int64_t* workspace) {
  fe::error_t e = graph.validate();
  if (e.is_good()) e = graph.build_operation_graph(h);
  if (e.is_good()) e = graph.create_execution_plans({fe::HeurMode_t::A});
  if (e.is_good()) e = graph.check_support(h);
  if (e.is_good()) e = graph.build_plans(h);
  if (e.is_good()) e = graph.get_workspace_size(*workspace);
  if (e.is_good()) return "";
  const std::string m = e.get_message();
  return m.empty() ? "cuDNN refused the graph" : m;
}

// A new plan whose graph has its data types and the inputs both directions read: Q, K, V.
struct plan_inputs {
  std::shared_ptr<sdpa_plan> plan;
  tensor_ptr q, k, v;
};
plan_inputs new_plan(elem t, const nnp::kit::attention_geometry& g) {
  plan_inputs in{std::make_shared<sdpa_plan>(), nullptr, nullptr, nullptr};
  fe::graph::Graph& graph = in.plan->graph;
  set_io_types(graph, t);
  in.q = add_tensor(graph, "Q", kUidQ, g.batch, g.hq, g.tq, g.d, g.q);
  in.k = add_tensor(graph, "K", kUidK, g.batch, g.hkv, g.tk, g.d, g.k);
  in.v = add_tensor(graph, "V", kUidV, g.batch, g.hkv, g.tk, g.dv, g.v);
  return in;
}

std::shared_ptr<sdpa_plan> forward_plan(elem t, const nnp::kit::attention_geometry& g, bool stats,
                                        cudnnHandle_t h) {
  const plan_inputs in = new_plan(t, g);
  const std::shared_ptr<sdpa_plan>& plan = in.plan;
  fe::graph::Graph& graph = plan->graph;
  auto options = fe::graph::SDPA_attributes()
                     .set_name("nnplug_attention_forward")
                     .set_generate_stats(stats)
                     .set_attn_scale(static_cast<float>(g.scale))
                     .set_causal_mask(g.causal);
  auto [o, lse] = graph.sdpa(in.q, in.k, in.v, options);
  o->set_output(true)
      .set_uid(kUidO)
      .set_dim({g.batch, g.hq, g.tq, g.dv})
      .set_stride({g.y.batch_stride, g.y.head_stride, g.y.row_stride, 1});
  if (stats)
    lse->set_output(true)
        .set_uid(kUidStats)
        .set_data_type(fe::DataType_t::FLOAT)
        .set_dim({g.batch, g.hq, g.tq, 1})
        .set_stride(stats_stride(g));
  plan->refusal = build(graph, h, &plan->workspace);
  return plan;
}

std::shared_ptr<sdpa_plan> backward_plan(elem t, const nnp::kit::attention_geometry& g,
                                         cudnnHandle_t h, bool deterministic) {
  const plan_inputs in = new_plan(t, g);
  const std::shared_ptr<sdpa_plan>& plan = in.plan;
  fe::graph::Graph& graph = plan->graph;
  const tensor_ptr o = add_tensor(graph, "O", kUidO, g.batch, g.hq, g.tq, g.dv, g.y);
  const tensor_ptr d_o = add_tensor(graph, "dO", kUidDO, g.batch, g.hq, g.tq, g.dv, g.y);
  const tensor_ptr stats = graph.tensor(fe::graph::Tensor_attributes()
                                            .set_name("Stats")
                                            .set_uid(kUidStats)
                                            .set_dim({g.batch, g.hq, g.tq, 1})
                                            .set_stride(stats_stride(g))
                                            .set_data_type(fe::DataType_t::FLOAT));
  auto options = fe::graph::SDPA_backward_attributes()
                     .set_name("nnplug_attention_backward")
                     .set_attn_scale(static_cast<float>(g.scale))
                     .set_causal_mask(g.causal)
                     .set_deterministic_algorithm(deterministic);
  auto [dq, dk, dv] = graph.sdpa_backward(in.q, in.k, in.v, o, d_o, stats, options);
  const nnp::kit::attention_operand* layouts[] = {&g.q, &g.k, &g.v};
  const std::array<int64_t, 4> dims[] = {
      {g.batch, g.hq, g.tq, g.d}, {g.batch, g.hkv, g.tk, g.d}, {g.batch, g.hkv, g.tk, g.dv}};
  const int64_t uids[] = {kUidDQ, kUidDK, kUidDV};
  const tensor_ptr grads[] = {dq, dk, dv};
  for (int i = 0; i < 3; ++i)
    grads[i]
        ->set_output(true)
        .set_uid(uids[i])
        .set_dim({dims[i][0], dims[i][1], dims[i][2], dims[i][3]})
        .set_stride({layouts[i]->batch_stride, layouts[i]->head_stride, layouts[i]->row_stride, 1});
  plan->refusal = build(graph, h, &plan->workspace);
  return plan;
}

std::shared_ptr<const sdpa_plan> find_or_build(
    const plan_key& key, const std::function<std::shared_ptr<sdpa_plan>()>& make) {
  {
    std::lock_guard<std::mutex> lock(g_plans_mutex);
    auto it = g_plans.find(key);
    if (it != g_plans.end()) return it->second;
  }
  std::shared_ptr<const sdpa_plan> plan;
  try {
    plan = make();
  } catch (const std::exception& e) {  // the frontend throws for some refusals
    auto refused = std::make_shared<sdpa_plan>();
    refused->refusal = std::string("cudnn-frontend: ") + e.what();
    plan = refused;
  }
  std::lock_guard<std::mutex> lock(g_plans_mutex);
  return g_plans.emplace(key, plan).first->second;  // another thread's, if it was first
}

// Under the device's handle mutex: the plan plan_of(handle) gives, run on s with the pointers of
// pack. The empty string, or why it did not run (cuDNN refused the key, or no memory for the
// workspace now). Throws for a failed execution.
std::string run(stream& s, std::unordered_map<int64_t, void*>& pack,
                const std::function<std::shared_ptr<const sdpa_plan>(cudnnHandle_t)>& plan_of) {
  if (s.device < 0 || s.device >= kMaxDevices)
    return format("device %d: this file keeps cuDNN handles for %d devices",
                  static_cast<int>(s.device), kMaxDevices);
  device_handle& dh = g_handles[s.device];
  std::lock_guard<std::mutex> lock(dh.mutex);
  if (dh.h == nullptr) NNP_CUDNN_CHECK(cudnnCreate(&dh.h));
  const std::shared_ptr<const sdpa_plan> plan = plan_of(dh.h);
  if (!plan->refusal.empty()) return plan->refusal;
  void* ws = nullptr;
  if (plan->workspace > 0) {
    ws = s.try_scratch(kScratchWorkspace, static_cast<size_t>(plan->workspace));
    if (ws == nullptr)
      return format("no device memory now for cuDNN's workspace of %lld bytes",
                    static_cast<long long>(plan->workspace));
  }
  NNP_CUDNN_CHECK(cudnnSetStream(dh.h, s.handle));
  fe::error_t e = plan->graph.execute(dh.h, pack, ws);
  if (!e.is_good())
    throw nnp::error(NNP_STATUS_DEVICE_ERROR,
                     "attention: cuDNN's fused attention failed: " + e.get_message());
  return "";
}

bool misaligned(const void* p) { return p != nullptr && reinterpret_cast<uintptr_t>(p) % 16 != 0; }

}  // namespace

std::string cudnn_attention_refusal(elem t, const nnp::kit::attention_geometry& g, bool has_mask,
                                    std::initializer_list<const void*> operands) {
  if (t != elem::f16 && t != elem::bf16) return "cuDNN's fused attention takes 16-bit operands";
  if (has_mask) return "an additive mask (nnplug's fully-masked-row rule is not cuDNN's)";
  if (g.d % 8 != 0 || g.dv % 8 != 0 || g.d > 128 || g.dv > 128)
    return format(
        "D = %lld, Dv = %lld: cuDNN's fused attention is used for multiples of 8 up to "
        "128",
        static_cast<long long>(g.d), static_cast<long long>(g.dv));
  for (const void* p : operands)
    if (misaligned(p)) return "an operand is not 16-byte aligned";
  static const bool off = [] {
    const char* e = std::getenv("NNPLUG_CUDA_ATTENTION_CUDNN");
    return e != nullptr && std::strcmp(e, "0") == 0;
  }();
  if (off) return "NNPLUG_CUDA_ATTENTION_CUDNN=0";
  return "";
}

std::string attention_forward_cudnn(stream& s, elem t, const nnp::kit::attention_geometry& g,
                                    const void* q, const void* k, const void* v, bool has_mask,
                                    void* y, float* stats) {
  const std::string no = cudnn_attention_refusal(t, g, has_mask, {q, k, v, y, stats});
  if (!no.empty()) return no;
  const bool with_stats = stats != nullptr;
  std::unordered_map<int64_t, void*> pack = {{kUidQ, const_cast<void*>(q)},
                                             {kUidK, const_cast<void*>(k)},
                                             {kUidV, const_cast<void*>(v)},
                                             {kUidO, y}};
  if (with_stats) pack[kUidStats] = stats;
  return run(s, pack, [&](cudnnHandle_t h) {
    const auto plan = find_or_build(key_of(0, t, s.device, g, with_stats),
                                    [&] { return forward_plan(t, g, with_stats, h); });
    return plan;
  });
}

std::string attention_backward_cudnn(stream& s, elem t, const nnp::kit::attention_geometry& g,
                                     const void* q, const void* k, const void* v, bool has_mask,
                                     const void* y, const void* dy, const float* stats, void* dq,
                                     void* dk, void* dv) {
  const std::string no =
      cudnn_attention_refusal(t, g, has_mask, {q, k, v, y, dy, stats, dq, dk, dv});
  if (!no.empty()) return no;
  std::unordered_map<int64_t, void*> pack = {{kUidQ, const_cast<void*>(q)},
                                             {kUidK, const_cast<void*>(k)},
                                             {kUidV, const_cast<void*>(v)},
                                             {kUidO, const_cast<void*>(y)},
                                             {kUidDO, const_cast<void*>(dy)},
                                             {kUidStats, const_cast<float*>(stats)},
                                             {kUidDQ, dq},
                                             {kUidDK, dk},
                                             {kUidDV, dv}};
  return run(s, pack, [&](cudnnHandle_t h) {
    std::shared_ptr<const sdpa_plan> plan;
    for (const bool deterministic : {true, false}) {  // cuDNN's deterministic algorithm first
      plan = find_or_build(key_of(deterministic ? 1 : 2, t, s.device, g, true),
                           [&] { return backward_plan(t, g, h, deterministic); });
      if (plan->refusal.empty()) break;
    }
    return plan;
  });
}

}  // namespace nnp::cuda

// NVRTC. cudnn-frontend's experimental Blackwell RMSNorm+SiLU engine compiles a kernel at run time
// with NVRTC; nnplug builds no such graph, so nothing calls these, and the plugin links no NVRTC
// (its DT_NEEDED list stays libc and libstdc++). They are here so that the frontend's code links;
// each answers NVRTC_ERROR_INTERNAL_ERROR.
extern "C" {
nvrtcResult nvrtcCreateProgram(nvrtcProgram*, const char*, const char*, int, const char* const*,
                               const char* const*) {
  return NVRTC_ERROR_INTERNAL_ERROR;
}
nvrtcResult nvrtcDestroyProgram(nvrtcProgram*) { return NVRTC_ERROR_INTERNAL_ERROR; }
nvrtcResult nvrtcCompileProgram(nvrtcProgram, int, const char* const*) {
  return NVRTC_ERROR_INTERNAL_ERROR;
}
nvrtcResult nvrtcGetCUBINSize(nvrtcProgram, size_t*) { return NVRTC_ERROR_INTERNAL_ERROR; }
nvrtcResult nvrtcGetCUBIN(nvrtcProgram, char*) { return NVRTC_ERROR_INTERNAL_ERROR; }
nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram, size_t*) { return NVRTC_ERROR_INTERNAL_ERROR; }
nvrtcResult nvrtcGetProgramLog(nvrtcProgram, char*) { return NVRTC_ERROR_INTERNAL_ERROR; }
}
