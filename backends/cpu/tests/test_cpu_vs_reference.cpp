// Unit tests of the CPU backend on its own: both plugins (cpu and reference) are opened
// directly with dlopen (no libnnplug), every op kind runs on both with the same random inputs,
// and the cpu result must match the reference by NMSE (float32 vs the double-accumulating
// oracle), masks bit for bit, with guard bytes after every output. The full cross-backend suite
// is nnplug-conformance; these tests pin the cpu plugin's fast paths (panel-split GEMM, im2col
// conv with groups/dilation/padding, broadcasting, the threading policy) where they are written.
#include <nnplug/nnplug_plugin.h>

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <dlfcn.h>

#include <cmath>
#include <array>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

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
plugin& ref() {
  static plugin p(NNPLUG_REFERENCE_PLUGIN_PATH);
  return p;
}

constexpr size_t kGuard = 64;
constexpr uint8_t kGuardByte = 0xA5;

DLDataType dt_f32() { return DLDataType{kDLFloat, 32, 1}; }
DLDataType dt_i64() { return DLDataType{kDLInt, 64, 1}; }
DLDataType dt_u8() { return DLDataType{kDLUInt, 8, 1}; }

// A host tensor with guard bytes after its data.
struct tensor {
  std::vector<int64_t> shape;
  DLDataType dtype{};
  std::vector<uint8_t> bytes;
  DLTensor t{};
  tensor(std::vector<int64_t> s, DLDataType d) : shape(std::move(s)), dtype(d) {
    bytes.assign(size_bytes() + kGuard, kGuardByte);
    bind();
  }
  tensor(const tensor& o) : shape(o.shape), dtype(o.dtype), bytes(o.bytes) { bind(); }
  void bind() {
    t = DLTensor{};
    t.data = bytes.data();
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = static_cast<int>(shape.size());
    t.dtype = dtype;
    t.shape = shape.data();
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  size_t size_bytes() const { return static_cast<size_t>(numel()) * (dtype.bits / 8); }
  float* f() { return reinterpret_cast<float*>(bytes.data()); }
  bool guard_ok() const {
    for (size_t i = size_bytes(); i < bytes.size(); ++i)
      if (bytes[i] != kGuardByte) return false;
    return true;
  }
};

tensor randn(std::vector<int64_t> shape, uint32_t seed, float scale = 1.0f) {
  tensor t(std::move(shape), dt_f32());
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.f()[i] = dist(gen);
  return t;
}

double nmse(const tensor& a, const tensor& b) {
  const float* x = reinterpret_cast<const float*>(a.bytes.data());
  const float* y = reinterpret_cast<const float*>(b.bytes.data());
  double num = 0, den = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (std::isnan(x[i]) != std::isnan(y[i])) return INFINITY;
    if (std::isnan(x[i])) continue;
    num += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    den += double(y[i]) * y[i];
  }
  return den == 0 ? num : num / den;
}

// Runs one call on both plugins (outputs start as copies of `outs`, for in/out tensors) and
// checks every output of the cpu against the reference.
void check(int32_t kind, const void* params, std::vector<tensor*> ins, std::vector<tensor*> outs,
           double tol = 1e-10) {
  std::vector<tensor> ro, co;
  for (tensor* o : outs)
    if (o) {
      ro.push_back(*o);
      co.push_back(*o);
    }
  auto run = [&](plugin& p, std::vector<tensor>& res) {
    std::vector<const DLTensor*> in, out;
    for (tensor* i : ins) in.push_back(i ? &i->t : nullptr);
    size_t k = 0;
    for (tensor* o : outs) out.push_back(o ? &res[k++].t : nullptr);
    REQUIRE(p.api->op_supported(0, kind, params, in.size(), in.data(), out.size(), out.data()) ==
            NNP_STATUS_OK);
    const nnp_status s =
        p.api->op_execute(p.stream, kind, params, in.size(), in.data(), out.size(), out.data());
    REQUIRE_MESSAGE(s == NNP_STATUS_OK, g_last_error);
  };
  run(ref(), ro);
  run(cpu(), co);
  for (size_t i = 0; i < ro.size(); ++i) {
    CAPTURE(i);
    CHECK(co[i].guard_ok());
    if (co[i].dtype.code == kDLFloat && co[i].dtype.bits == 32) {
      CHECK(nmse(co[i], ro[i]) <= tol);
    } else {
      CHECK(std::memcmp(co[i].bytes.data(), ro[i].bytes.data(), co[i].size_bytes()) == 0);
    }
  }
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
  tensor x({4}, DLDataType{kDLFloat, 64, 1}), y({4}, DLDataType{kDLFloat, 64, 1});
  nnp_scale_params p{sizeof(p), 2.0};
  const DLTensor* in[] = {&x.t};
  const DLTensor* out[] = {&y.t};
  CHECK(cpu().api->op_supported(0, NNP_OP_SCALE, &p, 1, in, 1, out) == NNP_STATUS_UNSUPPORTED);
  CHECK(g_last_error.find("float64") != std::string::npos);
  CHECK(cpu().api->op_execute(cpu().stream, 999, &p, 1, in, 1, out) == NNP_STATUS_UNSUPPORTED);
}

TEST_CASE("gemm: transposes, alpha/beta, C broadcast, batch, panel and K splits") {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (const std::array<int64_t, 3>& mnk : std::vector<std::array<int64_t, 3>>{
               {3, 5, 7}, {128, 512, 784}, {300, 40, 64}, {40, 24, 4100}}) {
        const int64_t m = mnk[0], n = mnk[1], k = mnk[2];
        CAPTURE(ta);
        CAPTURE(tb);
        CAPTURE(m);
        tensor a = randn(ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k}, 1);
        tensor b = randn(tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, 2);
        tensor cv = randn({n}, 3), cm = randn({m, n}, 4);
        tensor y({m, n}, dt_f32());
        nnp_gemm_params p{sizeof(p), ta, tb, 0.5, 2.0};
        check(NNP_OP_GEMM, &p, {&a, &b, nullptr}, {&y});
        check(NNP_OP_GEMM, &p, {&a, &b, &cv}, {&y});
        check(NNP_OP_GEMM, &p, {&a, &b, &cm}, {&y});
      }
  tensor a = randn({4, 6, 8}, 5), b = randn({8, 10}, 6), c = randn({4, 6, 10}, 7);
  tensor y({4, 6, 10}, dt_f32());
  nnp_gemm_params p{sizeof(p), 0, 0, 1.0, -1.0};
  check(NNP_OP_GEMM, &p, {&a, &b, &c}, {&y});
  tensor k0a({3, 0}, dt_f32()), k0b({0, 4}, dt_f32()), c0 = randn({3, 4}, 8), y0({3, 4}, dt_f32());
  check(NNP_OP_GEMM, &p, {&k0a, &k0b, &c0}, {&y0});
  // K split (K > 2 max(M, N)), accumulating in place into Y = C on both plugins.
  tensor ka = randn({24, 4500}, 9), kb = randn({4500, 20}, 10), kc = randn({24, 20}, 11);
  const nnp_gemm_params pk{sizeof(pk), 0, 0, 1.0, 0.5};
  tensor ky_ref = kc, ky_cpu = kc;
  for (auto [pl, yt] : {std::pair<plugin*, tensor*>{&ref(), &ky_ref}, {&cpu(), &ky_cpu}}) {
    const DLTensor* kin[] = {&ka.t, &kb.t, &yt->t};
    const DLTensor* kout[] = {&yt->t};
    REQUIRE_MESSAGE(
        pl->api->op_execute(pl->stream, NNP_OP_GEMM, &pk, 3, kin, 1, kout) == NNP_STATUS_OK,
        g_last_error);
  }
  CHECK(ky_cpu.guard_ok());
  CHECK(nmse(ky_cpu, ky_ref) <= 1e-10);
  CHECK(nmse(ky_cpu, kc) > 1e-2);  // the GEMM did change Y
}

TEST_CASE("conv2d: forward, backward data/filter/bias over strides, padding, dilation, groups") {
  struct cs {
    int64_t n, c, h, w, k, r, s;
    int32_t sh, sw, pt, pb, pl, pr, dh, dw, g;
  };
  const cs cases[] = {
      {4, 1, 28, 28, 8, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 1},  // the cnn's conv1 (fewer filters)
      {3, 6, 9, 8, 4, 3, 3, 2, 1, 1, 0, 2, 1, 1, 2, 2},    // stride, uneven pad, dilation, groups
      {2, 4, 7, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4},    // depthwise
      {2, 8, 5, 6, 6, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 2},    // 1x1 direct path with groups
      {2, 3, 6, 5, 2, 2, 3, 3, 2, 1, 2, 0, 1, 1, 1, 1},    // stride 3 with padding
      // Winograd F(2x2, 3x3): >= 16 channels, stride 1; odd/even sizes, every padding <= 2
      {3, 16, 12, 12, 16, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 1},  // the cnn's conv2, smaller
      {2, 17, 9, 8, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},    // odd sizes, "same" padding
      {2, 16, 7, 10, 16, 3, 3, 1, 1, 2, 0, 1, 2, 1, 1, 1},   // uneven padding
      {1, 16, 5, 5, 16, 3, 3, 1, 1, 3, 3, 0, 0, 1, 1, 1},    // padding 3: im2col backward-data
  };
  for (const cs& t : cases) {
    CAPTURE(t.c);
    CAPTURE(t.g);
    const nnp_conv2d_params p{sizeof(p), t.sh, t.sw, t.pt, t.pb, t.pl, t.pr, t.dh, t.dw, t.g};
    const int64_t P = (t.h + t.pt + t.pb - t.dh * (t.r - 1) - 1) / t.sh + 1;
    const int64_t Q = (t.w + t.pl + t.pr - t.dw * (t.s - 1) - 1) / t.sw + 1;
    tensor x = randn({t.n, t.c, t.h, t.w}, 11), w = randn({t.k, t.c / t.g, t.r, t.s}, 12);
    tensor b = randn({t.k}, 13), dy = randn({t.n, t.k, P, Q}, 14);
    tensor y({t.n, t.k, P, Q}, dt_f32()), dx({t.n, t.c, t.h, t.w}, dt_f32());
    tensor dw({t.k, t.c / t.g, t.r, t.s}, dt_f32()), db({t.k}, dt_f32());
    check(NNP_OP_CONV2D_FORWARD, &p, {&x, &w, &b}, {&y});
    check(NNP_OP_CONV2D_FORWARD, &p, {&x, &w, nullptr}, {&y});
    check(NNP_OP_CONV2D_BACKWARD_DATA, &p, {&dy, &w}, {&dx});
    check(NNP_OP_CONV2D_BACKWARD_FILTER, &p, {&x, &dy}, {&dw});
    check(NNP_OP_CONV2D_BACKWARD_BIAS, nullptr, {&dy}, {&db});
  }
}

TEST_CASE("pool2d: max/average, padding, ceil mode, global, backward") {
  struct ps {
    int32_t mode, wh, ww, sh, sw, pt, pb, pl, pr, ceil, incl, global;
  };
  const ps cases[] = {{NNP_POOL_MAX, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0},
                      {NNP_POOL_MAX, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, 0},
                      {NNP_POOL_AVERAGE, 3, 2, 2, 1, 1, 0, 0, 1, 1, 1, 0},
                      {NNP_POOL_AVERAGE, 3, 3, 2, 2, 1, 2, 1, 2, 0, 0, 0},
                      {NNP_POOL_AVERAGE, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}};
  for (const ps& c : cases) {
    CAPTURE(c.mode);
    const nnp_pool2d_params p{sizeof(p), c.mode, c.wh, c.ww,   c.sh,   c.sw,    c.pt,
                              c.pb,      c.pl,   c.pr, c.ceil, c.incl, c.global};
    const int64_t H = 11, W = 10;
    auto out = [&](int64_t in, int64_t win, int64_t st, int64_t a, int64_t b) {
      if (c.global) return int64_t{1};
      const int64_t span = in + a + b - win;
      int64_t o = (c.ceil ? (span + st - 1) / st : span / st) + 1;
      if (c.ceil && (o - 1) * st >= in + a) --o;
      return o;
    };
    const int64_t P = out(H, c.wh, c.sh, c.pt, c.pb), Q = out(W, c.ww, c.sw, c.pl, c.pr);
    tensor x = randn({2, 3, H, W}, 21), dy = randn({2, 3, P, Q}, 22);
    tensor y({2, 3, P, Q}, dt_f32()), dx({2, 3, H, W}, dt_f32());
    check(NNP_OP_POOL2D_FORWARD, &p, {&x}, {&y});
    check(NNP_OP_POOL2D_BACKWARD, &p, {&x, &y, &dy}, {&dx});
  }
}

TEST_CASE("activations forward and backward") {
  tensor x = randn({3, 50, 7}, 31, 2.0f), dy = randn({3, 50, 7}, 32);
  tensor y({3, 50, 7}, dt_f32()), dx({3, 50, 7}, dt_f32());
  for (int32_t f = NNP_ACTIVATION_RELU; f <= NNP_ACTIVATION_ELU; ++f) {
    CAPTURE(f);
    const nnp_activation_params p{sizeof(p), f, 0, 0.3};
    check(NNP_OP_ACTIVATION_FORWARD, &p, {&x}, {&y});
    check(NNP_OP_ACTIVATION_BACKWARD, &p, {&x, &dy}, {&dx});
  }
  tensor big = randn({200000}, 33), bigy({200000}, dt_f32());  // parallel path
  const nnp_activation_params p{sizeof(p), NNP_ACTIVATION_RELU, 0, 0.0};
  check(NNP_OP_ACTIVATION_FORWARD, &p, {&big}, {&bigy});
}

TEST_CASE("softmax and log-softmax on every axis, backward") {
  tensor x = randn({4, 5, 6}, 41, 3.0f), dy = randn({4, 5, 6}, 42);
  tensor y({4, 5, 6}, dt_f32()), dx({4, 5, 6}, dt_f32());
  for (int32_t axis : {-1, 0, 1, 2})
    for (int32_t log = 0; log < 2; ++log) {
      CAPTURE(axis);
      CAPTURE(log);
      const nnp_softmax_params p{sizeof(p), axis, log};
      check(NNP_OP_SOFTMAX_FORWARD, &p, {&x}, {&y});
      // backward with the forward's output as y (computed by the reference)
      tensor yf({4, 5, 6}, dt_f32());
      const DLTensor* in[] = {&x.t};
      const DLTensor* out[] = {&yf.t};
      REQUIRE(ref().api->op_execute(ref().stream, NNP_OP_SOFTMAX_FORWARD, &p, 1, in, 1, out) ==
              NNP_STATUS_OK);
      check(NNP_OP_SOFTMAX_BACKWARD, &p, {&yf, &dy}, {&dx});
    }
}

TEST_CASE("softmax cross-entropy: reductions, ignore_index, log_prob, backward") {
  const int64_t n = 37, c = 10;
  tensor logits = randn({n, c}, 51, 2.0f), labels({n}, dt_i64());
  for (int64_t i = 0; i < n; ++i) reinterpret_cast<int64_t*>(labels.bytes.data())[i] = (i * 7) % c;
  for (int32_t red : {NNP_REDUCTION_MEAN, NNP_REDUCTION_SUM, NNP_REDUCTION_NONE})
    for (int32_t ign = 0; ign < 2; ++ign) {
      CAPTURE(red);
      CAPTURE(ign);
      const nnp_softmax_cross_entropy_params p{sizeof(p), red, ign, 3};
      tensor loss(red == NNP_REDUCTION_NONE ? std::vector<int64_t>{n} : std::vector<int64_t>{},
                  dt_f32());
      tensor lp({n, c}, dt_f32()), dl({n, c}, dt_f32());
      check(NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD, &p, {&logits, &labels}, {&loss, &lp});
      check(NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD, &p, {&logits, &labels}, {&loss, nullptr});
      tensor dloss = randn(loss.shape, 52);
      check(NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD, &p, {&logits, &labels, &dloss}, {&dl});
    }
}

TEST_CASE("batch norm and layer norm") {
  for (auto shape : {std::vector<int64_t>{16, 5}, std::vector<int64_t>{4, 3, 5, 6}}) {
    const int64_t C = shape[1];
    tensor x = randn(shape, 61, 2.0f), dy = randn(shape, 62);
    tensor sc = randn({C}, 63), bi = randn({C}, 64), rm = randn({C}, 65);
    tensor rv = randn({C}, 66);
    for (int64_t i = 0; i < C; ++i) rv.f()[i] = std::fabs(rv.f()[i]) + 0.5f;
    tensor y(shape, dt_f32()), sm({C}, dt_f32()), si({C}, dt_f32());
    const nnp_batch_norm_params p{sizeof(p), 1e-5, 0.9};
    check(NNP_OP_BATCH_NORM_FORWARD_TRAINING, &p, {&x, &sc, &bi}, {&y, &rm, &rv, &sm, &si});
    check(NNP_OP_BATCH_NORM_FORWARD_INFERENCE, &p, {&x, &sc, &bi, &rm, &rv}, {&y});
    // saved stats from the reference, then backward
    tensor rm2 = rm, rv2 = rv;
    const DLTensor* in[] = {&x.t, &sc.t, &bi.t};
    const DLTensor* out[] = {&y.t, &rm2.t, &rv2.t, &sm.t, &si.t};
    REQUIRE(ref().api->op_execute(ref().stream, NNP_OP_BATCH_NORM_FORWARD_TRAINING, &p, 3, in, 5,
                                  out) == NNP_STATUS_OK);
    tensor dx(shape, dt_f32()), ds({C}, dt_f32()), dbias({C}, dt_f32());
    check(NNP_OP_BATCH_NORM_BACKWARD, &p, {&x, &dy, &sc, &sm, &si}, {&dx, &ds, &dbias});
  }
  tensor x = randn({6, 4, 9}, 71, 2.0f), dy = randn({6, 4, 9}, 72);
  for (int32_t axis : {-1, 1}) {
    CAPTURE(axis);
    std::vector<int64_t> inner = axis == -1 ? std::vector<int64_t>{9} : std::vector<int64_t>{4, 9};
    std::vector<int64_t> stats =
        axis == -1 ? std::vector<int64_t>{6, 4, 1} : std::vector<int64_t>{6, 1, 1};
    tensor sc = randn(inner, 73), bi = randn(inner, 74);
    tensor y({6, 4, 9}, dt_f32()), mean(stats, dt_f32()), inv(stats, dt_f32());
    const nnp_layer_norm_params p{sizeof(p), axis, 0, 1e-5};
    check(NNP_OP_LAYER_NORM_FORWARD, &p, {&x, &sc, &bi}, {&y, &mean, &inv});
    const DLTensor* in[] = {&x.t, &sc.t, &bi.t};
    const DLTensor* out[] = {&y.t, &mean.t, &inv.t};
    REQUIRE(ref().api->op_execute(ref().stream, NNP_OP_LAYER_NORM_FORWARD, &p, 3, in, 3, out) ==
            NNP_STATUS_OK);
    tensor dx({6, 4, 9}, dt_f32()), ds(inner, dt_f32()), db(inner, dt_f32());
    check(NNP_OP_LAYER_NORM_BACKWARD, &p, {&x, &dy, &sc, &mean, &inv}, {&dx, &ds, &db});
  }
}

TEST_CASE("dropout: bit-identical masks, forward and backward") {
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{128 * 512 + 3}}) {
    CAPTURE(n);
    tensor x = randn({n}, 81), y({n}, dt_f32()), mask({n}, dt_u8()), dx({n}, dt_f32());
    const nnp_dropout_params p{sizeof(p), 0.3, 0x1234567890ull, 17};
    check(NNP_OP_DROPOUT_FORWARD, &p, {&x}, {&y, &mask}, 0.0);
    check(NNP_OP_DROPOUT_BACKWARD, &p, {&x}, {&dx}, 0.0);  // mask from the stream's cache
  }
  // Backward without a matching forward (no cached mask: Philox again), and after more
  // forwards than the cache holds (the first mask evicted), and with another ratio.
  tensor x = randn({1000}, 82), y({1000}, dt_f32()), dx({1000}, dt_f32());
  const nnp_dropout_params never{sizeof(never), 0.5, 99, 12345};
  check(NNP_OP_DROPOUT_BACKWARD, &never, {&x}, {&dx}, 0.0);
  for (uint64_t off = 0; off < 6; ++off) {
    const nnp_dropout_params p{sizeof(p), 0.5, 7, off * 250};
    check(NNP_OP_DROPOUT_FORWARD, &p, {&x}, {&y}, 0.0);
  }
  for (uint64_t off = 0; off < 6; ++off) {
    const nnp_dropout_params p{sizeof(p), 0.5, 7, off * 250};
    check(NNP_OP_DROPOUT_BACKWARD, &p, {&x}, {&dx}, 0.0);
    const nnp_dropout_params q{sizeof(q), 0.25, 7, off * 250};  // same counter, other ratio
    check(NNP_OP_DROPOUT_BACKWARD, &q, {&x}, {&dx}, 0.0);
  }
}

TEST_CASE("binary with broadcasting, scale, fill") {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{4, 5}, {4, 5}},          {{4, 5}, {5}}, {{4, 1}, {1, 5}},
      {{2, 3, 4, 5}, {3, 1, 1}}, {{1}, {3, 4}}, {{2, 1, 4}, {3, 1}}};
  for (const auto& [sa, sb] : shapes) {
    tensor a = randn(sa, 91), b = randn(sb, 92);
    for (int64_t i = 0; i < b.numel(); ++i) b.f()[i] += b.f()[i] >= 0 ? 0.5f : -0.5f;
    std::vector<int64_t> sy(std::max(sa.size(), sb.size()));
    for (size_t i = 0; i < sy.size(); ++i) {
      const int64_t da = i < sy.size() - sa.size() ? 1 : sa[i - (sy.size() - sa.size())];
      const int64_t db = i < sy.size() - sb.size() ? 1 : sb[i - (sy.size() - sb.size())];
      sy[i] = std::max(da, db);
    }
    tensor y(sy, dt_f32());
    for (int32_t op = NNP_BINARY_ADD; op <= NNP_BINARY_DIV; ++op) {
      const nnp_binary_params p{sizeof(p), op};
      check(NNP_OP_BINARY, &p, {&a, &b}, {&y});
    }
  }
  tensor x = randn({100001}, 93), y({100001}, dt_f32());
  const nnp_scale_params sp{sizeof(sp), -1.5};
  check(NNP_OP_SCALE, &sp, {&x}, {&y});
  const nnp_fill_params fp{sizeof(fp), 0.25};
  check(NNP_OP_FILL, &fp, {}, {&y});
  tensor one({1}, dt_f32());
  check(NNP_OP_FILL, &fp, {}, {&one});
}

TEST_CASE("copy with strides, transpose, cast") {
  tensor x = randn({3, 4, 5}, 101), y({3, 4, 5}, dt_f32());
  check(NNP_OP_COPY, nullptr, {&x}, {&y}, 0.0);
  // a transposed view of x as the source: shape [5, 4, 3], strides [1, 5, 20]
  tensor xv = x;
  xv.shape = {5, 4, 3};
  xv.bind();
  int64_t strides[3] = {1, 5, 20};
  xv.t.strides = strides;
  tensor yv({5, 4, 3}, dt_f32());
  check(NNP_OP_COPY, nullptr, {&xv}, {&yv}, 0.0);
  for (const std::array<int32_t, 3>& perm :
       std::vector<std::array<int32_t, 3>>{{2, 1, 0}, {0, 2, 1}, {1, 0, 2}}) {
    nnp_transpose_params p{};
    p.struct_size = sizeof(p);
    std::vector<int64_t> ys(3);
    for (int k = 0; k < 3; ++k) {
      p.perm[k] = perm[k];
      ys[k] = x.shape[perm[k]];
    }
    tensor yt(ys, dt_f32());
    check(NNP_OP_TRANSPOSE, &p, {&x}, {&yt}, 0.0);
  }
  tensor xc = randn({1000}, 102, 100.0f), yc({1000}, DLDataType{kDLFloat, 64, 1});
  tensor back({1000}, dt_f32());
  check(NNP_OP_CAST, nullptr, {&xc}, {&yc}, 0.0);
  check(NNP_OP_CAST, nullptr, {&yc}, {&back}, 0.0);
}

// float16 / bfloat16 casts exist on the cpu only (the reference casts float32 <-> float64):
// known answers, ties to even, overflow to inf, subnormals, and exact round trips.
TEST_CASE("cast to and from float16 / bfloat16: known answers") {
  const float in[] = {
      1.0f,          65504.0f, 65520.0f,          1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048,
      5.9604645e-8f, -2.0f,    1.0f + 1.0f / 256, 1.0f + 3.0f / 256};
  const uint16_t half[] = {0x3C00, 0x7BFF, 0x7C00, 0x3C00, 0x3C02, 0x0001, 0xC000, 0x3C04, 0x3C0C};
  const uint16_t bf[] = {0x3F80, 0x4780, 0x4780, 0x3F80, 0x3F80, 0x3380, 0xC000, 0x3F80, 0x3F82};
  const int64_t n = 9;
  tensor x({n}, dt_f32());
  std::memcpy(x.f(), in, sizeof(in));
  for (int which = 0; which < 2; ++which) {
    CAPTURE(which);
    tensor y({n}, which == 0 ? DLDataType{kDLFloat, 16, 1} : DLDataType{kDLBfloat, 16, 1});
    tensor back({n}, dt_f32());
    const DLTensor* i1[] = {&x.t};
    const DLTensor* o1[] = {&y.t};
    REQUIRE(cpu().api->op_execute(cpu().stream, NNP_OP_CAST, nullptr, 1, i1, 1, o1) ==
            NNP_STATUS_OK);
    const uint16_t* got = reinterpret_cast<const uint16_t*>(y.bytes.data());
    for (int64_t i = 0; i < n; ++i) {
      CAPTURE(i);
      CHECK(got[i] == (which == 0 ? half[i] : bf[i]));
    }
    CHECK(y.guard_ok());
    const DLTensor* i2[] = {&y.t};
    const DLTensor* o2[] = {&back.t};
    REQUIRE(cpu().api->op_execute(cpu().stream, NNP_OP_CAST, nullptr, 1, i2, 1, o2) ==
            NNP_STATUS_OK);
    CHECK(back.f()[0] == 1.0f);
    CHECK(back.f()[6] == -2.0f);
    if (which == 0) CHECK(back.f()[5] == 5.9604645e-8f);
  }
}

TEST_CASE("reduce: sum, mean, max over axis sets, keepdims") {
  tensor x = randn({4, 5, 6, 7}, 111);
  const std::vector<std::vector<int32_t>> axes_sets = {{}, {0}, {3}, {1, 2}, {0, 2}, {-1, 0}};
  for (int32_t op = NNP_REDUCE_SUM; op <= NNP_REDUCE_MAX; ++op)
    for (const auto& axes : axes_sets)
      for (int32_t keep = 0; keep < 2; ++keep) {
        CAPTURE(op);
        CAPTURE(axes.size());
        CAPTURE(keep);
        nnp_reduce_params p{};
        p.struct_size = sizeof(p);
        p.op = op;
        p.keepdims = keep;
        p.n_axes = static_cast<int32_t>(axes.size());
        bool red[4] = {axes.empty(), axes.empty(), axes.empty(), axes.empty()};
        for (size_t i = 0; i < axes.size(); ++i) {
          p.axes[i] = axes[i];
          red[(axes[i] + 4) % 4] = true;
        }
        std::vector<int64_t> ys;
        for (int i = 0; i < 4; ++i) {
          if (!red[i])
            ys.push_back(x.shape[i]);
          else if (keep)
            ys.push_back(1);
        }
        tensor y(ys, dt_f32());
        check(NNP_OP_REDUCE, &p, {&x}, {&y});
      }
}

TEST_CASE("sgd and adam updates") {
  tensor g = randn({70001}, 121), w = randn({70001}, 122), m = randn({70001}, 123, 0.1f);
  tensor v = randn({70001}, 124, 0.1f);
  for (int64_t i = 0; i < v.numel(); ++i) v.f()[i] = std::fabs(v.f()[i]);
  for (int32_t nest = 0; nest < 2; ++nest) {
    const nnp_sgd_params p{sizeof(p), 0.1, 0.9, 0.0, 1e-4, nest, 0};
    check(NNP_OP_SGD_UPDATE, &p, {&g}, {&w, &m});
  }
  for (int32_t adamw = 0; adamw < 2; ++adamw) {
    const nnp_adam_params p{sizeof(p), 1e-3, 0.9, 0.999, 1e-8, 0.01, 3, adamw, 0};
    check(NNP_OP_ADAM_UPDATE, &p, {&g}, {&w, &m, &v});
  }
}
