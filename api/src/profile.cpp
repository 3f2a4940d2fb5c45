// The op profile of libnnplug (NNPLUG_PROFILE; docs/profiling.md): with the variable set, every
// nnp_op_execute that runs an op (not one recorded into a graph, not a collective) is timed
// from the plugin's op_execute to the end of the stream's synchronisation that follows it (the
// profile synchronises after every op, so that an asynchronous device's time is its execution,
// not its launch). Per op kind and per signature (kind and operand shapes) the calls and the
// time add up; at process exit the table goes to stderr, or to the file NNPLUG_PROFILE names.
// GFLOP/s for the kinds whose multiply-adds follow from the shapes: GEMM and MatMul
// (2 M N K per product), convolutions of every direction (2 x the elements of the output
// channels' tensor x C/groups x the kernel's taps), attention (forward 2 rows Tk (D + Dv),
// backward 2 rows Tk (3 D + 2 Dv): recomputed scores, dP, dV, dQ, dK).
// Thread safety: one mutex around the tables, taken only when the profile is on.
#include "internal.hpp"
#include "op_table.hpp"

#include <nnplug/nnplug_ops.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace nnp::host {
namespace {

struct tally {
  uint64_t calls = 0;
  double seconds = 0.0;
  double flops = 0.0;  // per call (the same for every call of a signature)
};

int64_t numel(const DLTensor* t) {
  int64_t n = 1;
  for (int d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}

std::string shape_text(const DLTensor* t) {
  if (t == nullptr) return "-";
  std::string s = "[";
  for (int d = 0; d < t->ndim; ++d) s += (d ? "," : "") + std::to_string(t->shape[d]);
  return s + "]";
}

// The params as struct P (zero beyond the caller's struct_size; all zero without params).
template <typename P>
P params_of(const void* params) {
  P p{};
  if (params != nullptr)
    std::memcpy(&p, params, std::min(sizeof(P), *static_cast<const size_t*>(params)));
  return p;
}

// Floating-point operations of one call (0 when the kind has no formula here). Shapes were
// validated by nnp_op_execute.
double flops_of(int32_t kind, const void* params, size_t n_in, const DLTensor* const* in,
                size_t n_out, const DLTensor* const* out) {
  auto at = [](size_t n, const DLTensor* const* ts, size_t i) -> const DLTensor* {
    return i < n ? ts[i] : nullptr;
  };
  const DLTensor *a = at(n_in, in, 0), *b = at(n_in, in, 1), *y = at(n_out, out, 0);
  if (a == nullptr || y == nullptr) return 0.0;
  // the tensor over the output channels and the filter, per convolution direction
  auto conv = [&](const DLTensor* per_channel, const DLTensor* w) {
    if (per_channel == nullptr || w == nullptr || w->ndim < 1 || w->shape[0] == 0) return 0.0;
    return 2.0 * static_cast<double>(numel(per_channel)) *
           static_cast<double>(numel(w) / w->shape[0]);
  };
  switch (kind) {
    case NNP_OP_GEMM: {
      const auto p = params_of<nnp_gemm_params>(params);
      if (a->ndim < 2) return 0.0;
      const int64_t k = p.trans_a ? a->shape[a->ndim - 2] : a->shape[a->ndim - 1];
      return 2.0 * static_cast<double>(numel(y)) * static_cast<double>(k);
    }
    case NNP_OP_MATMUL:
      return a->ndim >= 1
                 ? 2.0 * static_cast<double>(numel(y)) * static_cast<double>(a->shape[a->ndim - 1])
                 : 0.0;
    case NNP_OP_CONV2D_FORWARD:
    case NNP_OP_CONV_FORWARD:
      return conv(y, b);
    case NNP_OP_CONV2D_BACKWARD_DATA:
    case NNP_OP_CONV_BACKWARD_DATA:
      return conv(a, b);  // dy, w
    case NNP_OP_CONV2D_BACKWARD_FILTER:
    case NNP_OP_CONV_BACKWARD_FILTER:
      return conv(b, y);  // dy, dw
    case NNP_OP_ATTENTION_FORWARD:
    case NNP_OP_ATTENTION_BACKWARD: {
      const DLTensor* v = at(n_in, in, 2);
      if (b == nullptr || v == nullptr || (a->ndim != 3 && a->ndim != 4)) return 0.0;
      const auto p = params_of<nnp_attention_params>(params);
      const bool packed = a->ndim == 3;
      if (packed && (p.q_num_heads <= 0 || p.kv_num_heads <= 0)) return 0.0;
      const double d = packed ? static_cast<double>(a->shape[2]) / p.q_num_heads
                              : static_cast<double>(a->shape[3]);
      const double dv = packed ? static_cast<double>(v->shape[2]) / p.kv_num_heads
                               : static_cast<double>(v->shape[3]);
      const double tk = static_cast<double>(b->shape[packed ? 1 : 2]);
      if (d == 0.0) return 0.0;
      const double rows = static_cast<double>(numel(a)) / d;
      return kind == NNP_OP_ATTENTION_FORWARD ? 2.0 * rows * tk * (d + dv)
                                              : 2.0 * rows * tk * (3.0 * d + 2.0 * dv);
    }
    default:
      return 0.0;
  }
}

class profile {
 public:
  profile() {
    const char* v = env_value("NNPLUG_PROFILE");
    on_ = v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
    if (on_ && std::strcmp(v, "1") != 0 && std::strcmp(v, "stderr") != 0) path_ = v;
  }
  profile(const profile&) = delete;
  profile& operator=(const profile&) = delete;
  ~profile() { write(); }

  bool on() const { return on_; }

  void add(int32_t kind, const void* params, size_t n_in, const DLTensor* const* in, size_t n_out,
           const DLTensor* const* out, double seconds) {
    const op_desc* op = find_op(kind);
    std::string sig = op != nullptr ? op->name : std::to_string(kind);
    for (size_t i = 0; i < n_in; ++i) sig += " " + shape_text(in[i]);
    const double flops = flops_of(kind, params, n_in, in, n_out, out);
    std::lock_guard<std::mutex> lock(mutex_);
    tally& k = kinds_[op != nullptr ? op->name : std::to_string(kind)];
    ++k.calls;
    k.seconds += seconds;
    k.flops += flops;  // kinds: the total
    tally& s = signatures_[sig];
    ++s.calls;
    s.seconds += seconds;
    s.flops = flops;
  }

 private:
  void write() {
    if (!on_) return;
    std::FILE* f = path_.empty() ? stderr : std::fopen(path_.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "nnplug: NNPLUG_PROFILE: cannot write %s\n", path_.c_str());
      return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    double total = 0.0;
    uint64_t calls = 0;
    for (const auto& [name, t] : kinds_) {
      total += t.seconds;
      calls += t.calls;
    }
    std::fprintf(f,
                 "nnplug profile: %llu op calls, %.3f s in ops (each call from op_execute to "
                 "its stream's synchronisation)\n",
                 static_cast<unsigned long long>(calls), total);
    auto by_time = [](const std::map<std::string, tally>& m) {
      std::vector<std::pair<std::string, tally>> v(m.begin(), m.end());
      std::stable_sort(v.begin(), v.end(), [](const auto& x, const auto& y) {
        return x.second.seconds > y.second.seconds;
      });
      return v;
    };
    auto gflops = [](double flops, double seconds) {
      if (flops <= 0.0 || seconds <= 0.0) return std::string("-");
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f", flops / seconds * 1e-9);
      return std::string(buf);
    };
    std::fprintf(f, "%-34s %10s %12s %7s %12s %10s\n", "op", "calls", "total ms", "share",
                 "mean us", "GFLOP/s");
    for (const auto& [name, t] : by_time(kinds_))
      std::fprintf(f, "%-34s %10llu %12.3f %6.1f%% %12.2f %10s\n", name.c_str(),
                   static_cast<unsigned long long>(t.calls), t.seconds * 1e3,
                   total > 0.0 ? 100.0 * t.seconds / total : 0.0, t.seconds * 1e6 / t.calls,
                   gflops(t.flops, t.seconds).c_str());
    constexpr size_t kTop = 30;
    std::fprintf(f, "\nthe %zu signatures (op, input shapes) that took longest:\n", kTop);
    std::fprintf(f, "%-64s %10s %12s %12s %10s\n", "op and input shapes", "calls", "total ms",
                 "mean us", "GFLOP/s");
    size_t shown = 0;
    for (const auto& [sig, t] : by_time(signatures_)) {
      if (shown++ == kTop) break;
      std::fprintf(f, "%-64s %10llu %12.3f %12.2f %10s\n", sig.c_str(),
                   static_cast<unsigned long long>(t.calls), t.seconds * 1e3,
                   t.seconds * 1e6 / t.calls, gflops(t.flops * t.calls, t.seconds).c_str());
    }
    if (f != stderr) std::fclose(f);
  }

  bool on_ = false;
  std::string path_;
  std::mutex mutex_;
  std::map<std::string, tally> kinds_, signatures_;
};

profile& the_profile() {
  static profile p;
  return p;
}

}  // namespace

bool profiling() {
  static const bool on = the_profile().on();
  return on;
}

nnp_status profile_op(nnp_stream* stream, int32_t kind, const void* params, size_t n_in,
                      const DLTensor* const* in, size_t n_out, const DLTensor* const* out,
                      const std::function<nnp_status()>& run) {
  const nnp_plugin* p = stream->device->plugin;
  const auto start = std::chrono::steady_clock::now();
  const nnp_status st = run();
  if (st != NNP_STATUS_OK) return st;
  const nnp_status sync = call_slot(p, "stream_synchronize",
                                    [&] { return p->api->stream_synchronize(stream->handle); });
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  if (sync != NNP_STATUS_OK) {  // the op was queued; its error surfaces at the next sync
    const std::string message = nnp_last_error_message();
    std::lock_guard<std::mutex> lock(stream->pending_mutex);
    if (stream->pending == NNP_STATUS_OK) {
      stream->pending = sync;
      stream->pending_message = message;
    }
    return NNP_STATUS_OK;
  }
  the_profile().add(kind, params, n_in, in, n_out, out, took.count());
  return NNP_STATUS_OK;
}

}  // namespace nnp::host
