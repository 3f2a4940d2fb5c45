// test_reference.cpp — unit tests of the reference backend, calling libnnplug-reference.so's
// table directly (dlopen, no libnnplug): the handshake and device slots, hand-derived values
// for every op family, the documented edge cases, and central finite differences of the
// forward ops against every backward op in float64.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <nnplug/nnplug_plugin.h>

#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr DLDataType kF64{kDLFloat, 64, 1};
constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kF16{kDLFloat, 16, 1};
constexpr DLDataType kI64{kDLInt, 64, 1};
constexpr DLDataType kU8{kDLUInt, 8, 1};
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// ---- the plugin, loaded once -----------------------------------------------------------------
std::string g_last_error;
void on_error(void*, nnp_status, const char* message) { g_last_error = message; }
void on_log(void*, int32_t, const char*) {}

struct plugin {
  void* handle = nullptr;
  nnp_plugin_get_api_fn entry = nullptr;
  nnp_host_api host{};
  const nnp_plugin_api* api = nullptr;
  void* stream = nullptr;

  plugin() {
    handle = dlopen(NNPLUG_REFERENCE_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    REQUIRE_MESSAGE(handle != nullptr, dlerror());
    void* symbol = dlsym(handle, NNP_PLUGIN_ENTRY_SYMBOL);
    REQUIRE(symbol != nullptr);
    entry = reinterpret_cast<nnp_plugin_get_api_fn>(symbol);
    host = make_host(NNP_ABI_VERSION_MAJOR);
    REQUIRE(entry(&host, &api) == NNP_STATUS_OK);
    REQUIRE(api->stream_create(0, &stream) == NNP_STATUS_OK);
  }
  static nnp_host_api make_host(int32_t major) {
    nnp_host_api h{};
    h.struct_size = sizeof(h);
    h.abi_version_major = major;
    h.abi_version_minor = NNP_ABI_VERSION_MINOR;
    h.set_error = on_error;
    h.log = on_log;
    return h;
  }
};
plugin& ref() {
  static plugin p;
  return p;
}

// ---- tensors ---------------------------------------------------------------------------------
// A host tensor: bytes of any dtype, compact unless strides are given.
struct tensor {
  DLDataType dtype;
  std::vector<int64_t> shape, strides;
  std::vector<unsigned char> bytes;
  DLTensor dl{};

  tensor(std::vector<int64_t> s, std::initializer_list<double> values = {}, DLDataType dt = kF64)
      : dtype(dt), shape(std::move(s)) {
    bytes.resize(static_cast<size_t>(numel()) * dt.bits / 8 + 1);
    size_t i = 0;
    for (double v : values) set(i++, v);
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  double get(size_t i) const {
    if (dtype.bits == 64 && dtype.code == kDLFloat)
      return reinterpret_cast<const double*>(bytes.data())[i];
    if (dtype.bits == 32) return reinterpret_cast<const float*>(bytes.data())[i];
    if (dtype.code == kDLInt) return double(reinterpret_cast<const int64_t*>(bytes.data())[i]);
    return bytes[i];
  }
  void set(size_t i, double v) {
    if (dtype.bits == 64 && dtype.code == kDLFloat)
      reinterpret_cast<double*>(bytes.data())[i] = v;
    else if (dtype.bits == 32)
      reinterpret_cast<float*>(bytes.data())[i] = float(v);
    else if (dtype.code == kDLInt)
      reinterpret_cast<int64_t*>(bytes.data())[i] = int64_t(v);
    else
      bytes[i] = static_cast<unsigned char>(v);
  }
  double* f64() { return reinterpret_cast<double*>(bytes.data()); }
  const DLTensor* t() {
    dl.data = bytes.data();
    dl.device = DLDevice{kDLCPU, 0};
    dl.ndim = static_cast<int32_t>(shape.size());
    dl.dtype = dtype;
    dl.shape = shape.data();
    dl.strides = strides.empty() ? nullptr : strides.data();
    dl.byte_offset = 0;
    return &dl;
  }
};

nnp_status run(int32_t kind, const void* params, std::initializer_list<tensor*> ins,
               std::initializer_list<tensor*> outs) {
  std::vector<const DLTensor*> in, out;
  for (tensor* t : ins) in.push_back(t != nullptr ? t->t() : nullptr);
  for (tensor* t : outs) out.push_back(t != nullptr ? t->t() : nullptr);
  return ref().api->op_execute(ref().stream, kind, params, in.size(), in.data(), out.size(),
                               out.data());
}
#define RUN_OK(...) REQUIRE(run(__VA_ARGS__) == NNP_STATUS_OK)

void check_values(const tensor& t, std::initializer_list<double> want, double tol = 1e-12) {
  REQUIRE(size_t(t.numel()) == want.size());
  size_t i = 0;
  for (double w : want) {
    const double g = t.get(i);
    INFO("element " << i << ": got " << g << ", want " << w);
    if (std::isnan(w))
      CHECK(std::isnan(g));
    else if (std::isinf(w))
      CHECK(g == w);
    else
      CHECK(std::fabs(g - w) <= tol * std::max(1.0, std::fabs(w)));
    ++i;
  }
}

template <typename P>
P params() {
  P p{};
  p.struct_size = sizeof(P);
  return p;
}

nnp_conv2d_params conv(int sh, int sw, int pt, int pb, int pl, int pr, int dh, int dw, int g) {
  auto p = params<nnp_conv2d_params>();
  p.stride_h = sh, p.stride_w = sw, p.pad_top = pt, p.pad_bottom = pb, p.pad_left = pl;
  p.pad_right = pr, p.dilation_h = dh, p.dilation_w = dw, p.groups = g;
  return p;
}
nnp_pool2d_params pool(int mode, int wh, int ww, int sh, int sw, int pt, int pb, int pl, int pr,
                       int ceil_mode, int count_include_pad) {
  auto p = params<nnp_pool2d_params>();
  p.mode = mode, p.window_h = wh, p.window_w = ww, p.stride_h = sh, p.stride_w = sw;
  p.pad_top = pt, p.pad_bottom = pb, p.pad_left = pl, p.pad_right = pr;
  p.ceil_mode = ceil_mode, p.count_include_pad = count_include_pad;
  return p;
}

void fill_random(tensor& t, std::mt19937_64& rng) {
  std::normal_distribution<double> nd;
  for (int64_t i = 0; i < t.numel(); ++i) t.set(size_t(i), nd(rng));
}

// Central finite differences of L(.) = sum(forward_output * R) with respect to `x`, compared
// with `analytic` (the backward op's result for upstream gradient R).
void check_fd(const char* what, tensor& x, const std::function<double()>& loss,
              const tensor& analytic, double eps = 1e-6) {
  REQUIRE(x.numel() == analytic.numel());
  double worst = 0.0, scale = 1e-12;
  for (int64_t i = 0; i < x.numel(); ++i) {
    double* v = x.f64() + i;
    const double old = *v;
    *v = old + eps;
    const double lp = loss();
    *v = old - eps;
    const double lm = loss();
    *v = old;
    const double fd = (lp - lm) / (2 * eps);
    worst = std::max(worst, std::fabs(fd - analytic.get(size_t(i))));
    scale = std::max(scale, std::fabs(fd));
  }
  INFO(what << ": max |fd - analytic| / max |fd| = " << worst / scale);
  CHECK(worst / scale < 1e-6);
}
double dot(const tensor& a, const tensor& b) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += a.get(size_t(i)) * b.get(size_t(i));
  return s;
}

// Checks the backward op of a normalisation (batch norm, layer norm: inputs {x, dy, scale,
// saved mean, saved inv_std}, outputs {dx, dscale, dbias}) with upstream gradient R against
// finite differences of `loss`, which runs the forward op (saving mean and inv_std) and returns
// dot(y, R).
void check_norm_backward(const std::string& what, int32_t backward_kind, const void* params,
                         tensor& x, tensor& scale, tensor& bias, tensor& R, tensor& mean,
                         tensor& inv_std, const std::function<double()>& loss) {
  loss();
  tensor dx(x.shape), ds(scale.shape), db(bias.shape);
  RUN_OK(backward_kind, params, {&x, &R, &scale, &mean, &inv_std}, {&dx, &ds, &db});
  check_fd((what + " dx").c_str(), x, loss, dx);
  check_fd((what + " dscale").c_str(), scale, loss, ds);
  check_fd((what + " dbias").c_str(), bias, loss, db);
}

}  // namespace

// ---- plugin slots ----------------------------------------------------------------------------
TEST_CASE("handshake, device and memory slots") {
  const nnp_plugin_api* api = ref().api;
  CHECK(std::string(api->name) == "reference");
  CHECK(std::string(api->version) == "0.1.0");
  CHECK(api->struct_size >= NNP_PLUGIN_API_STRUCT_SIZE_1_0);

  int32_t n = -1;
  const char* reason = "x";
  REQUIRE(api->get_device_count(&n, &reason) == NNP_STATUS_OK);
  CHECK(n == 1);

  nnp_device_props props{};
  props.struct_size = sizeof(props);
  REQUIRE(api->get_device_props(0, &props) == NNP_STATUS_OK);
  CHECK(std::string(props.name) == "reference:0");
  CHECK(std::string(props.plugin_name) == "reference");
  CHECK(props.device_type == kDLCPU);
  CHECK(props.auto_priority == 0);
  CHECK(props.num_threads == 1);
  CHECK(props.memory_bytes > 0);
  CHECK(api->get_device_props(1, &props) == NNP_STATUS_INVALID_ARGUMENT);

  // A caller with a smaller struct: only the fields that fit are written.
  nnp_device_props small{};
  small.struct_size = offsetof(nnp_device_props, device_type);
  small.device_type = 77;
  REQUIRE(api->get_device_props(0, &small) == NNP_STATUS_OK);
  CHECK(small.name != nullptr);
  CHECK(small.device_type == 77);

  void* p = nullptr;
  REQUIRE(api->mem_alloc(0, 100, &p) == NNP_STATUS_OK);
  CHECK(reinterpret_cast<uintptr_t>(p) % 64 == 0);
  CHECK(api->mem_free(0, p) == NNP_STATUS_OK);
  CHECK(api->mem_alloc(0, size_t(1) << 62, &p) == NNP_STATUS_OUT_OF_MEMORY);

  double src[3] = {1, 2, 3}, dst[3] = {};
  REQUIRE(api->memcpy_async(ref().stream, dst, src, sizeof src, NNP_MEMCPY_HOST_TO_DEVICE) == 0);
  CHECK(api->stream_synchronize(ref().stream) == NNP_STATUS_OK);
  CHECK(dst[2] == 3);
}

TEST_CASE("a host with another ABI major is refused") {
  nnp_host_api host = plugin::make_host(NNP_ABI_VERSION_MAJOR + 1);
  const nnp_plugin_api* api = nullptr;
  CHECK(ref().entry(&host, &api) == NNP_STATUS_ABI_MISMATCH);
  CHECK(api == nullptr);
  CHECK(g_last_error.find("ABI") != std::string::npos);
  nnp_host_api good = plugin::make_host(NNP_ABI_VERSION_MAJOR);
  REQUIRE(ref().entry(&good, &api) == NNP_STATUS_OK);  // restore the host callbacks
  ref().host = good;
  REQUIRE(ref().entry(&ref().host, &api) == NNP_STATUS_OK);
}

TEST_CASE("unsupported requests answer UNSUPPORTED and touch nothing") {
  CHECK(run(4242, nullptr, {}, {}) == NNP_STATUS_UNSUPPORTED);
  CHECK(g_last_error.find("4242") != std::string::npos);

  tensor a({2, 2}, {1, 2, 3, 4}, kF16), b({2, 2}, {}, kF16), y({2, 2}, {}, kF16);
  auto p = params<nnp_gemm_params>();
  p.alpha = 1;
  CHECK(run(NNP_OP_GEMM, &p, {&a, &b, nullptr}, {&y}) == NNP_STATUS_UNSUPPORTED);
  CHECK(g_last_error.find("float16") != std::string::npos);
  const DLTensor* ins[] = {a.t(), b.t()};
  const DLTensor* outs[] = {y.t()};
  CHECK(ref().api->op_supported(0, NNP_OP_GEMM, &p, 2, ins, 1, outs) == NNP_STATUS_UNSUPPORTED);

  tensor x({2}, {1.5, 2.5}), h({2}, {7, 7}, kF16);
  CHECK(run(NNP_OP_CAST, nullptr, {&x}, {&h}) == NNP_STATUS_UNSUPPORTED);
  CHECK(h.bytes[0] == 7);  // the raw bytes set above are untouched
}

// ---- hand-derived values ---------------------------------------------------------------------
TEST_CASE("gemm: transposes, alpha/beta, C broadcast, batch, in place") {
  tensor A({2, 2}, {1, 2, 3, 4}), B({2, 2}, {5, 6, 7, 8}), Y({2, 2});
  auto p = params<nnp_gemm_params>();
  p.alpha = 1;
  RUN_OK(NNP_OP_GEMM, &p, {&A, &B, nullptr}, {&Y});
  check_values(Y, {19, 22, 43, 50});

  tensor Cn({2}, {1, -1});
  p.alpha = 2, p.beta = 1;
  RUN_OK(NNP_OP_GEMM, &p, {&A, &B, &Cn}, {&Y});
  check_values(Y, {39, 43, 87, 99});

  p.trans_a = 1, p.alpha = 1, p.beta = 0;  // A^T B = [[1,3],[2,4]] B
  RUN_OK(NNP_OP_GEMM, &p, {&A, &B, &Cn}, {&Y});
  check_values(Y, {26, 30, 38, 44});

  p.trans_a = 0, p.trans_b = 1;  // A B^T
  RUN_OK(NNP_OP_GEMM, &p, {&A, &B, nullptr}, {&Y});
  check_values(Y, {17, 23, 39, 53});

  // Batched A [2,2,2] times rank-2 B (broadcast), C [M,N] broadcast over the batch.
  tensor A3({2, 2, 2}, {1, 2, 3, 4, 0, 1, 1, 0}), C2({2, 2}, {1, 1, 1, 1}), Y3({2, 2, 2});
  p.trans_b = 0, p.beta = 1;
  RUN_OK(NNP_OP_GEMM, &p, {&A3, &B, &C2}, {&Y3});
  check_values(Y3, {20, 23, 44, 51, 8, 9, 6, 7});

  // In place: Y aliases C.
  tensor C({2, 2}, {1, 2, 3, 4});
  p.alpha = 1, p.beta = -1;
  RUN_OK(NNP_OP_GEMM, &p, {&A, &B, &C}, {&C});
  check_values(C, {18, 20, 40, 46});

  // K = 0: the product is empty (0); beta = 0 does not read C, even a NaN C.
  tensor A0({2, 0}), B0({0, 2}), Cnan({2}, {kNaN, kNaN}), Y0({2, 2}, {5, 5, 5, 5});
  p.beta = 0;
  RUN_OK(NNP_OP_GEMM, &p, {&A0, &B0, &Cnan}, {&Y0});
  check_values(Y0, {0, 0, 0, 0});
}

TEST_CASE("conv2d: forward with padding and stride, backward data / filter / bias") {
  tensor x({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), w({1, 1, 2, 2}, {1, 0, 0, -1});
  tensor b({1}, {0.5}), y({1, 1, 2, 2});
  auto p = conv(1, 1, 0, 0, 0, 0, 1, 1, 1);
  RUN_OK(NNP_OP_CONV2D_FORWARD, &p, {&x, &w, &b}, {&y});
  check_values(y, {-3.5, -3.5, -3.5, -3.5});  // x[p,q] - x[p+1,q+1] + 0.5

  auto ps = conv(2, 2, 1, 1, 1, 1, 1, 1, 1);  // P = floor((3+2-2)/2)+1 = 2
  RUN_OK(NNP_OP_CONV2D_FORWARD, &ps, {&x, &w, nullptr}, {&y});
  check_values(y, {-1, -3, -7, -4});

  auto pd = conv(1, 1, 0, 0, 0, 0, 2, 2, 1);  // dilation 2: taps x[0,0] and x[2,2]
  tensor y1({1, 1, 1, 1});
  RUN_OK(NNP_OP_CONV2D_FORWARD, &pd, {&x, &w, nullptr}, {&y1});
  check_values(y1, {1 - 9});

  tensor dy({1, 1, 2, 2}, {1, 1, 1, 1}), dx({1, 1, 3, 3}), dw({1, 1, 2, 2}), db({1});
  RUN_OK(NNP_OP_CONV2D_BACKWARD_DATA, &p, {&dy, &w}, {&dx});
  check_values(dx, {1, 1, 0, 1, 0, -1, 0, -1, -1});
  RUN_OK(NNP_OP_CONV2D_BACKWARD_FILTER, &p, {&x, &dy}, {&dw});
  check_values(dw, {12, 16, 24, 28});
  RUN_OK(NNP_OP_CONV2D_BACKWARD_BIAS, nullptr, {&dy}, {&db});
  check_values(db, {4});

  // Depthwise (groups = C = 2): each channel sees only its own filter.
  tensor x2({1, 2, 1, 2}, {1, 2, 3, 4}), w2({2, 1, 1, 1}, {10, -1}), y2({1, 2, 1, 2});
  auto pg = conv(1, 1, 0, 0, 0, 0, 1, 1, 2);
  RUN_OK(NNP_OP_CONV2D_FORWARD, &pg, {&x2, &w2, nullptr}, {&y2});
  check_values(y2, {10, 20, -3, -4});
}

TEST_CASE("pool2d: max, ceil_mode, average with and without padding in the divisor") {
  tensor x({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), y({1, 1, 2, 2});
  auto pm = pool(NNP_POOL_MAX, 2, 2, 2, 2, 0, 0, 0, 0, 1, 0);  // ceil: P = 2
  RUN_OK(NNP_OP_POOL2D_FORWARD, &pm, {&x}, {&y});
  check_values(y, {5, 6, 8, 9});
  auto pa = pool(NNP_POOL_AVERAGE, 2, 2, 2, 2, 0, 0, 0, 0, 1, 0);
  RUN_OK(NNP_OP_POOL2D_FORWARD, &pa, {&x}, {&y});
  check_values(y, {3, 4.5, 7.5, 9});

  auto pin = pool(NNP_POOL_AVERAGE, 2, 2, 2, 2, 1, 1, 1, 1, 0, 1);
  RUN_OK(NNP_OP_POOL2D_FORWARD, &pin, {&x}, {&y});
  check_values(y, {0.25, 1.25, 2.75, 7});
  auto pex = pool(NNP_POOL_AVERAGE, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0);
  RUN_OK(NNP_OP_POOL2D_FORWARD, &pex, {&x}, {&y});
  check_values(y, {1, 2.5, 5.5, 7});

  // ceil_mode rule, window 2, stride 2: H = 5 without padding gives 3 windows (floor: 2), the
  // last covering row 4 only; H = 5 with padding 1 gives ceil(5/2)+1 = 4, minus the window
  // that would start in the bottom padding: 3.
  tensor x5({1, 1, 5, 1}, {1, 2, 3, 4, 5}), y5({1, 1, 3, 1});
  auto pc = pool(NNP_POOL_MAX, 2, 1, 2, 1, 0, 0, 0, 0, 1, 0);
  RUN_OK(NNP_OP_POOL2D_FORWARD, &pc, {&x5}, {&y5});
  check_values(y5, {2, 4, 5});
  auto pcp = pool(NNP_POOL_MAX, 2, 1, 2, 1, 1, 1, 0, 0, 1, 0);
  RUN_OK(NNP_OP_POOL2D_FORWARD, &pcp, {&x5}, {&y5});
  check_values(y5, {1, 3, 5});
  auto pca = pool(NNP_POOL_AVERAGE, 2, 1, 2, 1, 1, 1, 0, 0, 1, 1);  // divisors 2, 2, 2
  RUN_OK(NNP_OP_POOL2D_FORWARD, &pca, {&x5}, {&y5});
  check_values(y5, {0.5, 2.5, 4.5});

  // Max backward goes to the first maximum in row-major window order.
  tensor t({1, 1, 2, 2}, {7, 7, 7, 7}), ty({1, 1, 1, 1}), tdy({1, 1, 1, 1}, {3}), tdx({1, 1, 2, 2});
  auto p2 = pool(NNP_POOL_MAX, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0);
  RUN_OK(NNP_OP_POOL2D_FORWARD, &p2, {&t}, {&ty});
  RUN_OK(NNP_OP_POOL2D_BACKWARD, &p2, {&t, &ty, &tdy}, {&tdx});
  check_values(tdx, {3, 0, 0, 0});

  // Global average pooling ignores the window fields.
  auto pgl = params<nnp_pool2d_params>();
  pgl.mode = NNP_POOL_AVERAGE, pgl.global = 1;
  tensor yg({1, 1, 1, 1});
  RUN_OK(NNP_OP_POOL2D_FORWARD, &pgl, {&x}, {&yg});
  check_values(yg, {5});
}

TEST_CASE("activations: values and derivatives") {
  auto p = params<nnp_activation_params>();
  tensor x({3}, {-1, 0, 2}), y({3}), dy({3}, {1, 1, 1}), dx({3});
  p.function = NNP_ACTIVATION_RELU;
  RUN_OK(NNP_OP_ACTIVATION_FORWARD, &p, {&x}, {&y});
  check_values(y, {0, 0, 2});
  RUN_OK(NNP_OP_ACTIVATION_BACKWARD, &p, {&x, &dy}, {&dx});
  check_values(dx, {0, 0, 1});  // derivative at 0 is 0
  p.function = NNP_ACTIVATION_LEAKY_RELU, p.alpha = 0.1;
  RUN_OK(NNP_OP_ACTIVATION_FORWARD, &p, {&x}, {&y});
  check_values(y, {-0.1, 0, 2});
  p.function = NNP_ACTIVATION_SIGMOID;
  RUN_OK(NNP_OP_ACTIVATION_BACKWARD, &p, {&x, &dy}, {&dx});
  CHECK(dx.get(1) == doctest::Approx(0.25));
  p.function = NNP_ACTIVATION_TANH;
  RUN_OK(NNP_OP_ACTIVATION_BACKWARD, &p, {&x, &dy}, {&dx});
  CHECK(dx.get(1) == doctest::Approx(1.0));
  p.function = NNP_ACTIVATION_GELU_ERF;
  tensor one({1}, {1}), g({1});
  RUN_OK(NNP_OP_ACTIVATION_FORWARD, &p, {&one}, {&g});
  check_values(g, {0.8413447460685429});  // Phi(1)
  p.function = NNP_ACTIVATION_ELU, p.alpha = 2;
  RUN_OK(NNP_OP_ACTIVATION_FORWARD, &p, {&x}, {&x});  // in place
  check_values(x, {2 * (std::exp(-1.0) - 1), 0, 2});
}

TEST_CASE("softmax and log-softmax along an axis") {
  tensor x({3, 1}, {0, std::log(2.0), std::log(3.0)}), y({3, 1});
  auto p = params<nnp_softmax_params>();
  p.axis = 0;
  RUN_OK(NNP_OP_SOFTMAX_FORWARD, &p, {&x}, {&y});
  check_values(y, {1.0 / 6, 1.0 / 3, 0.5});
  p.log = 1, p.axis = -2;
  RUN_OK(NNP_OP_SOFTMAX_FORWARD, &p, {&x}, {&y});
  check_values(y, {std::log(1.0 / 6), std::log(1.0 / 3), std::log(0.5)});
  // Along the last axis (size 1) every softmax is 1, every log-softmax 0.
  p.axis = 1;
  RUN_OK(NNP_OP_SOFTMAX_FORWARD, &p, {&x}, {&y});
  check_values(y, {0, 0, 0});
}

TEST_CASE("softmax cross-entropy: reductions, ignore_index, out-of-range labels") {
  tensor logits({2, 2}, {0, std::log(3.0), 5, 1}), labels({2}, {1, -1}, kI64);
  tensor loss({}), lp({2, 2});
  auto p = params<nnp_softmax_cross_entropy_params>();
  p.reduction = NNP_REDUCTION_MEAN, p.has_ignore_index = 1, p.ignore_index = -1;
  RUN_OK(NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD, &p, {&logits, &labels}, {&loss, &lp});
  check_values(loss, {-std::log(0.75)});  // the ignored row does not count
  CHECK(lp.get(0) == doctest::Approx(std::log(0.25)));
  tensor dloss({}, {1}), dlogits({2, 2});
  RUN_OK(NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD, &p, {&logits, &labels, &dloss}, {&dlogits});
  check_values(dlogits, {0.25, -0.25, 0, 0});

  p.reduction = NNP_REDUCTION_NONE, p.has_ignore_index = 0;
  tensor bad({2}, {1, 2}, kI64), per({2});
  RUN_OK(NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD, &p, {&logits, &bad}, {&per, nullptr});
  check_values(per, {-std::log(0.75), kNaN});

  tensor all_ignored({2}, {-1, -1}, kI64);
  p.reduction = NNP_REDUCTION_MEAN, p.has_ignore_index = 1;
  RUN_OK(NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD, &p, {&logits, &all_ignored}, {&loss, nullptr});
  check_values(loss, {kNaN});  // 0 / 0
}

TEST_CASE("batch norm: training statistics, running update, inference") {
  tensor x({2, 1}, {1, 3}), scale({1}, {2}), bias({1}, {1}), y({2, 1});
  tensor rm({1}, {0}), rv({1}, {1}), sm({1}), si({1});
  auto p = params<nnp_batch_norm_params>();
  p.epsilon = 1e-5, p.momentum = 0.9;
  RUN_OK(NNP_OP_BATCH_NORM_FORWARD_TRAINING, &p, {&x, &scale, &bias}, {&y, &rm, &rv, &sm, &si});
  const double inv = 1 / std::sqrt(1 + 1e-5);  // mean 2, biased var 1
  check_values(y, {1 - 2 * inv, 1 + 2 * inv});
  check_values(sm, {2});
  check_values(si, {inv});
  check_values(rm, {0.2});
  check_values(rv, {0.9 + 0.1 * 2});  // unbiased var = 1 * 2 / 1
  tensor mean({1}, {1}), var({1}, {4}), yi({2, 1});
  RUN_OK(NNP_OP_BATCH_NORM_FORWARD_INFERENCE, &p, {&x, &scale, &bias, &mean, &var}, {&yi});
  const double inv4 = 1 / std::sqrt(4 + 1e-5);
  check_values(yi, {1, 1 + 2 * 2 * inv4});
}

TEST_CASE("layer norm: statistics in ONNX's shape, optional bias") {
  tensor x({2, 2}, {1, 3, 0, 0}), scale({2}, {1, 2}), y({2, 2}), mean({2, 1}), inv({2, 1});
  auto p = params<nnp_layer_norm_params>();
  p.axis = -1, p.epsilon = 1e-5;
  RUN_OK(NNP_OP_LAYER_NORM_FORWARD, &p, {&x, &scale, nullptr}, {&y, &mean, &inv});
  const double r = 1 / std::sqrt(1 + 1e-5);
  check_values(y, {-r, 2 * r, 0, 0});
  check_values(mean, {2, 0});
  check_values(inv, {r, 1 / std::sqrt(1e-5)});
}

TEST_CASE("dropout: the Philox mask of nnplug_ops.h") {
  // Philox4x32-10(counter 0, key 0) = {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8};
  // >> 8 = {6694888, 14772677, 12343212, 10158299}. ratio 0.5: threshold 8388608.
  tensor x({4}, {1, 1, 1, 1}), y({4}), mask({4}, {}, kU8);
  auto p = params<nnp_dropout_params>();
  p.ratio = 0.5;
  RUN_OK(NNP_OP_DROPOUT_FORWARD, &p, {&x}, {&y, &mask});
  check_values(y, {0, 2, 2, 2});
  check_values(mask, {0, 1, 1, 1});
  p.ratio = 0.7;  // threshold (uint32_t)(0.7 * 2^24) = 11744051
  RUN_OK(NNP_OP_DROPOUT_FORWARD, &p, {&x}, {&y, &mask});
  check_values(mask, {0, 1, 1, 0});
  tensor dy({4}, {1, 2, 3, 4}), dx({4});
  RUN_OK(NNP_OP_DROPOUT_BACKWARD, &p, {&dy}, {&dx});
  check_values(dx, {0, 2 / 0.3, 3 / 0.3, 0});
  p.ratio = 0;  // keeps everything, scale 1
  RUN_OK(NNP_OP_DROPOUT_FORWARD, &p, {&dy}, {&dy, nullptr});
  check_values(dy, {1, 2, 3, 4});
}

TEST_CASE("elementwise: broadcasting binary, scale, fill, strided copy, transpose, cast") {
  tensor a({2, 1}, {1, 2}), b({3}, {10, 20, 30}), y({2, 3});
  auto pb = params<nnp_binary_params>();
  pb.op = NNP_BINARY_ADD;
  RUN_OK(NNP_OP_BINARY, &pb, {&a, &b}, {&y});
  check_values(y, {11, 21, 31, 12, 22, 32});
  pb.op = NNP_BINARY_DIV;
  RUN_OK(NNP_OP_BINARY, &pb, {&y, &b}, {&y});  // in place, y has a's shape
  check_values(y, {1.1, 1.05, 31.0 / 30, 1.2, 1.1, 32.0 / 30});

  auto ps = params<nnp_scale_params>();
  ps.alpha = -2;
  RUN_OK(NNP_OP_SCALE, &ps, {&b}, {&b});
  check_values(b, {-20, -40, -60});

  auto pf = params<nnp_fill_params>();
  pf.value = 0.1;
  tensor f({2}, {}, kF32);
  RUN_OK(NNP_OP_FILL, &pf, {}, {&f});
  CHECK(reinterpret_cast<float*>(f.bytes.data())[1] == 0.1f);

  // Copy from a column-major view into a compact tensor.
  tensor cm({2, 3}, {1, 4, 2, 5, 3, 6}), c({2, 3});
  cm.strides = {1, 2};
  RUN_OK(NNP_OP_COPY, nullptr, {&cm}, {&c});
  check_values(c, {1, 2, 3, 4, 5, 6});

  auto pt = params<nnp_transpose_params>();
  pt.perm[0] = 1, pt.perm[1] = 0;
  tensor t({3, 2});
  RUN_OK(NNP_OP_TRANSPOSE, &pt, {&c}, {&t});
  check_values(t, {1, 4, 2, 5, 3, 6});

  tensor d({2}, {1.0 / 3, 1e300}), s({2}, {}, kF32);
  RUN_OK(NNP_OP_CAST, nullptr, {&d}, {&s});
  CHECK(reinterpret_cast<float*>(s.bytes.data())[0] == float(1.0 / 3));
  CHECK(std::isinf(s.get(1)));
}

TEST_CASE("byte_offset is applied to every operand") {
  // x and y are views 2 elements into their buffers (DLTensor.byte_offset = 16 bytes).
  tensor xb({5}, {9, 9, 1, 2, 3}), yb({5}, {7, 7, 0, 0, 0});
  DLTensor x = *xb.t(), y = *yb.t();
  int64_t shape[1] = {3};
  x.shape = y.shape = shape;
  x.byte_offset = y.byte_offset = 2 * sizeof(double);
  auto p = params<nnp_scale_params>();
  p.alpha = 10;
  const DLTensor* ins[] = {&x};
  const DLTensor* outs[] = {&y};
  REQUIRE(ref().api->op_execute(ref().stream, NNP_OP_SCALE, &p, 1, ins, 1, outs) == NNP_STATUS_OK);
  check_values(yb, {7, 7, 10, 20, 30});
}

TEST_CASE("reduce: axes, keepdims, empty reductions, NaN in max") {
  tensor x({2, 3}, {1, 2, 3, 4, 5, 6});
  auto p = params<nnp_reduce_params>();
  p.op = NNP_REDUCE_SUM, p.n_axes = 1, p.axes[0] = -1, p.keepdims = 1;
  tensor s({2, 1});
  RUN_OK(NNP_OP_REDUCE, &p, {&x}, {&s});
  check_values(s, {6, 15});
  p.op = NNP_REDUCE_MEAN, p.axes[0] = 0, p.keepdims = 0;
  tensor m({3});
  RUN_OK(NNP_OP_REDUCE, &p, {&x}, {&m});
  check_values(m, {2.5, 3.5, 4.5});
  p.op = NNP_REDUCE_MAX, p.n_axes = 0;
  tensor mx({});
  RUN_OK(NNP_OP_REDUCE, &p, {&x}, {&mx});
  check_values(mx, {6});
  x.set(4, kNaN);
  RUN_OK(NNP_OP_REDUCE, &p, {&x}, {&mx});
  check_values(mx, {kNaN});

  tensor e({2, 0}), r({2});
  p.n_axes = 1, p.axes[0] = 1;
  for (auto [op, want] :
       {std::pair{NNP_REDUCE_SUM, 0.0}, {NNP_REDUCE_MEAN, kNaN}, {NNP_REDUCE_MAX, -kInf}}) {
    p.op = op;
    RUN_OK(NNP_OP_REDUCE, &p, {&e}, {&r});
    check_values(r, {want, want});
  }
}

TEST_CASE("optimisers: SGD with momentum / Nesterov, Adam and AdamW first steps") {
  auto p = params<nnp_sgd_params>();
  p.lr = 0.1, p.momentum = 0.9;
  tensor g({1}, {0.5}), w({1}, {1}), buf({1}, {0});
  RUN_OK(NNP_OP_SGD_UPDATE, &p, {&g}, {&w, &buf});
  check_values(w, {0.95});
  check_values(buf, {0.5});
  RUN_OK(NNP_OP_SGD_UPDATE, &p, {&g}, {&w, &buf});
  check_values(w, {0.855});
  p.nesterov = 1, p.weight_decay = 0.1;  // g = 0.5 + 0.1 = 0.6; buf = 0.6; g = 0.6 + 0.54
  tensor w2({1}, {1}), b2({1}, {0});
  RUN_OK(NNP_OP_SGD_UPDATE, &p, {&g}, {&w2, &b2});
  check_values(w2, {1 - 0.1 * 1.14});

  // Step 1: the bias-corrected m and v are g and g^2, so param -= lr * g / (|g| + eps).
  auto pa = params<nnp_adam_params>();
  pa.lr = 0.1, pa.beta1 = 0.9, pa.beta2 = 0.999, pa.epsilon = 1e-8, pa.step = 1;
  tensor wa({1}, {1}), m({1}), v({1});
  RUN_OK(NNP_OP_ADAM_UPDATE, &pa, {&g}, {&wa, &m, &v});
  check_values(wa, {1 - 0.1 * 0.5 / (0.5 + 1e-8)});
  check_values(m, {0.05});
  check_values(v, {0.00025});
  pa.adamw = 1, pa.weight_decay = 0.1;
  tensor ww({1}, {1}), mw({1}), vw({1});
  RUN_OK(NNP_OP_ADAM_UPDATE, &pa, {&g}, {&ww, &mw, &vw});
  check_values(ww, {0.99 - 0.1 * 0.5 / (0.5 + 1e-8)});
}

TEST_CASE("empty tensors do not crash") {
  tensor x({0, 3, 4, 4}), w({2, 3, 3, 3}), y({0, 2, 2, 2});
  auto pc = conv(1, 1, 0, 0, 0, 0, 1, 1, 1);
  RUN_OK(NNP_OP_CONV2D_FORWARD, &pc, {&x, &w, nullptr}, {&y});
  tensor dw({2, 3, 3, 3});
  RUN_OK(NNP_OP_CONV2D_BACKWARD_FILTER, &pc, {&x, &y}, {&dw});
  CHECK(dw.get(0) == 0);
  tensor l({0, 5}), lab({0}, {}, kI64), loss({});
  auto ps = params<nnp_softmax_cross_entropy_params>();
  ps.reduction = NNP_REDUCTION_SUM;
  RUN_OK(NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD, &ps, {&l, &lab}, {&loss, nullptr});
  check_values(loss, {0});
}

// ---- finite differences (float64) ------------------------------------------------------------
TEST_CASE("backward ops match central finite differences of the forward ops") {
  std::mt19937_64 rng(20261122);

  SUBCASE("conv2d: stride, asymmetric padding, dilation, groups") {
    auto p = conv(2, 1, 1, 0, 2, 1, 1, 2, 2);
    tensor x({2, 4, 6, 5}), w({4, 2, 3, 2}), b({4}), y({2, 4, 3, 6}), R({2, 4, 3, 6});
    fill_random(x, rng), fill_random(w, rng), fill_random(b, rng), fill_random(R, rng);
    auto loss = [&] {
      REQUIRE(run(NNP_OP_CONV2D_FORWARD, &p, {&x, &w, &b}, {&y}) == NNP_STATUS_OK);
      return dot(y, R);
    };
    tensor dx({2, 4, 6, 5}), dw({4, 2, 3, 2}), db({4});
    RUN_OK(NNP_OP_CONV2D_BACKWARD_DATA, &p, {&R, &w}, {&dx});
    RUN_OK(NNP_OP_CONV2D_BACKWARD_FILTER, &p, {&x, &R}, {&dw});
    RUN_OK(NNP_OP_CONV2D_BACKWARD_BIAS, nullptr, {&R}, {&db});
    check_fd("conv dx", x, loss, dx);
    check_fd("conv dw", w, loss, dw);
    check_fd("conv db", b, loss, db);
  }
  SUBCASE("pool2d: max and average, ceil_mode, asymmetric padding") {
    for (int mode : {NNP_POOL_MAX, NNP_POOL_AVERAGE})
      for (int cip : {0, 1}) {
        auto p = pool(mode, 3, 2, 2, 3, 1, 2, 1, 1, 1, cip);  // P = 4, Q = 3 for 7 x 8
        tensor x({1, 2, 7, 8}), y({1, 2, 4, 3}), R({1, 2, 4, 3}), dx({1, 2, 7, 8});
        for (int64_t i = 0; i < x.numel(); ++i)
          x.set(size_t(i), double((i * 37) % 113));  // no ties
        fill_random(R, rng);
        auto loss = [&] {
          REQUIRE(run(NNP_OP_POOL2D_FORWARD, &p, {&x}, {&y}) == NNP_STATUS_OK);
          return dot(y, R);
        };
        loss();
        RUN_OK(NNP_OP_POOL2D_BACKWARD, &p, {&x, &y, &R}, {&dx});
        check_fd("pool dx", x, loss, dx, 1e-4);
      }
  }
  SUBCASE("activations") {
    for (int f = NNP_ACTIVATION_RELU; f <= NNP_ACTIVATION_ELU; ++f) {
      auto p = params<nnp_activation_params>();
      p.function = f, p.alpha = 0.3;
      tensor x({4, 5}), y({4, 5}), R({4, 5}), dx({4, 5});
      fill_random(x, rng), fill_random(R, rng);
      for (int64_t i = 0; i < x.numel(); ++i)  // keep away from the kinks at 0
        if (std::fabs(x.get(size_t(i))) < 1e-3) x.set(size_t(i), 0.5);
      auto loss = [&] {
        REQUIRE(run(NNP_OP_ACTIVATION_FORWARD, &p, {&x}, {&y}) == NNP_STATUS_OK);
        return dot(y, R);
      };
      RUN_OK(NNP_OP_ACTIVATION_BACKWARD, &p, {&x, &R}, {&dx});
      check_fd("activation dx", x, loss, dx);
    }
  }
  SUBCASE("softmax and log-softmax") {
    for (int log : {0, 1})
      for (int axis : {0, 1, -1}) {
        auto p = params<nnp_softmax_params>();
        p.axis = axis, p.log = log;
        tensor x({3, 4, 2}), y({3, 4, 2}), R({3, 4, 2}), dx({3, 4, 2});
        fill_random(x, rng), fill_random(R, rng);
        auto loss = [&] {
          REQUIRE(run(NNP_OP_SOFTMAX_FORWARD, &p, {&x}, {&y}) == NNP_STATUS_OK);
          return dot(y, R);
        };
        loss();
        RUN_OK(NNP_OP_SOFTMAX_BACKWARD, &p, {&y, &R}, {&dx});
        check_fd("softmax dx", x, loss, dx);
      }
  }
  SUBCASE("softmax cross-entropy") {
    for (int red : {NNP_REDUCTION_MEAN, NNP_REDUCTION_SUM, NNP_REDUCTION_NONE}) {
      auto p = params<nnp_softmax_cross_entropy_params>();
      p.reduction = red, p.has_ignore_index = 1, p.ignore_index = 2;
      tensor x({4, 3}), labels({4}, {0, 2, 1, 1}, kI64), dx({4, 3});
      tensor loss(red == NNP_REDUCTION_NONE ? std::vector<int64_t>{4} : std::vector<int64_t>{});
      tensor R(loss.shape);
      fill_random(x, rng), fill_random(R, rng);
      auto f = [&] {
        REQUIRE(run(NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD, &p, {&x, &labels}, {&loss, nullptr}) ==
                NNP_STATUS_OK);
        return dot(loss, R);
      };
      RUN_OK(NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD, &p, {&x, &labels, &R}, {&dx});
      check_fd("cross-entropy dlogits", x, f, dx);
    }
  }
  SUBCASE("batch norm (training forward)") {
    auto p = params<nnp_batch_norm_params>();
    p.epsilon = 1e-3, p.momentum = 0.9;
    tensor x({3, 2, 2, 3}), sc({2}), bi({2}), y({3, 2, 2, 3}), R({3, 2, 2, 3});
    fill_random(x, rng), fill_random(sc, rng), fill_random(bi, rng), fill_random(R, rng);
    tensor rm({2}), rv({2}), sm({2}), si({2});
    auto loss = [&] {
      REQUIRE(run(NNP_OP_BATCH_NORM_FORWARD_TRAINING, &p, {&x, &sc, &bi},
                  {&y, &rm, &rv, &sm, &si}) == NNP_STATUS_OK);
      return dot(y, R);
    };
    check_norm_backward("batch norm", NNP_OP_BATCH_NORM_BACKWARD, &p, x, sc, bi, R, sm, si, loss);
  }
  SUBCASE("layer norm") {
    auto p = params<nnp_layer_norm_params>();
    p.axis = 1, p.epsilon = 1e-3;
    tensor x({2, 3, 4}), sc({3, 4}), bi({3, 4}), y({2, 3, 4}), R({2, 3, 4});
    fill_random(x, rng), fill_random(sc, rng), fill_random(bi, rng), fill_random(R, rng);
    tensor mean({2, 1, 1}), inv({2, 1, 1});
    auto loss = [&] {
      REQUIRE(run(NNP_OP_LAYER_NORM_FORWARD, &p, {&x, &sc, &bi}, {&y, &mean, &inv}) ==
              NNP_STATUS_OK);
      return dot(y, R);
    };
    check_norm_backward("layer norm", NNP_OP_LAYER_NORM_BACKWARD, &p, x, sc, bi, R, mean, inv,
                        loss);
  }
  SUBCASE("dropout") {
    auto p = params<nnp_dropout_params>();
    p.ratio = 0.4, p.seed = 99, p.offset = 3;
    tensor x({5, 7}), y({5, 7}), R({5, 7}), dx({5, 7});
    fill_random(x, rng), fill_random(R, rng);
    auto loss = [&] {
      REQUIRE(run(NNP_OP_DROPOUT_FORWARD, &p, {&x}, {&y, nullptr}) == NNP_STATUS_OK);
      return dot(y, R);
    };
    RUN_OK(NNP_OP_DROPOUT_BACKWARD, &p, {&R}, {&dx});
    check_fd("dropout dx", x, loss, dx);
  }
}
