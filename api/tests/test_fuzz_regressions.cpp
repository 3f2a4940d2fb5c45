// Regression tests of findings of the fuzz target (fuzz/, docs/fuzzing.md), written out as
// plain op calls so that every build runs them (the ASan+UBSan build included), on every device
// found. The fuzz inputs themselves are in fuzz/regressions/ (fuzz/README.md lists them).
#include <doctest/doctest.h>

#include <nnplug/nnplug.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace {

// Every device of this tree's backends, with a stream of its own (other tests load fixture
// plugins into the same process: those are left out).
struct device_stream {
  nnp_device* device;
  nnp_stream* stream;
  DLDevice dl;
  std::string name;
};

std::vector<device_stream> all_devices() {
  size_t n = 0;
  REQUIRE(nnp_get_devices(nullptr, &n) == NNP_STATUS_OK);
  std::vector<nnp_device*> devices(n);
  REQUIRE(nnp_get_devices(devices.data(), &n) == NNP_STATUS_OK);
  std::vector<device_stream> out;
  for (nnp_device* d : devices) {
    nnp_device_props props{};
    props.struct_size = sizeof props;
    REQUIRE(nnp_device_get_props(d, &props) == NNP_STATUS_OK);
    const std::string plugin = props.plugin_name;
    if (plugin != "reference" && plugin != "cpu" && plugin != "sim" && plugin != "cuda") continue;
    device_stream ds{d, nullptr, {}, props.name};
    REQUIRE(nnp_device_get_dldevice(d, &ds.dl) == NNP_STATUS_OK);
    REQUIRE(nnp_stream_create(d, &ds.stream) == NNP_STATUS_OK);
    out.push_back(ds);
  }
  REQUIRE(!out.empty());
  return out;
}

// Runs `body` on each device of all_devices() (for_each_host_device: those whose memory is the
// host's, kDLCPU), with the device's name captured, then destroys the streams.
void run_on_devices(bool host_memory_only, const std::function<void(device_stream&)>& body) {
  std::vector<device_stream> devices = all_devices();
  for (device_stream& d : devices) {
    if (host_memory_only && d.dl.device_type != kDLCPU) continue;
    CAPTURE(d.name);
    body(d);
  }
  for (device_stream& d : devices) CHECK(nnp_stream_destroy(d.stream) == NNP_STATUS_OK);
}
void for_each_device(const std::function<void(device_stream&)>& body) {
  run_on_devices(false, body);
}
void for_each_host_device(const std::function<void(device_stream&)>& body) {
  run_on_devices(true, body);
}

DLTensor tensor(DLDevice device, DLDataType dtype, int ndim, int64_t* shape, void* data) {
  DLTensor t{};
  t.data = data;
  t.device = device;
  t.ndim = ndim;
  t.dtype = dtype;
  t.shape = shape;
  return t;
}

constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kF64{kDLFloat, 64, 1};

// Executes one op on d's stream and waits for it: the call's status, or the synchronize's.
nnp_status execute_synced(const device_stream& d, int32_t kind, const void* params,
                          const std::vector<const DLTensor*>& in,
                          const std::vector<const DLTensor*>& out) {
  nnp_status st =
      nnp_op_execute(d.stream, kind, params, in.size(), in.data(), out.size(), out.data());
  if (st == NNP_STATUS_OK) st = nnp_stream_synchronize(d.stream);
  return st;
}

// A call the fuzzer broke (`st`, from execute_synced) must now run or be declared unsupported;
// a failure shows libnnplug's message.
void check_runs_or_unsupported(nnp_status st) {
  const std::string message = nnp_last_error_message();
  CAPTURE(message);
  CHECK((st == NNP_STATUS_OK || st == NNP_STATUS_UNSUPPORTED));
}

}  // namespace

// fuzz/regressions/cpu-cast-empty-null-data: the cpu backend's cast passed a tensor without
// elements (data NULL, which the ABI allows then) to memcpy, undefined behaviour even for 0 bytes.
TEST_CASE("fuzz regression: cast of a tensor without elements and NULL data") {
  for_each_device([](device_stream& d) {
    for (DLDataType to : {kF32, kF64}) {
      int64_t shape[2] = {1, 0};
      DLTensor x = tensor(d.dl, kF32, 2, shape, nullptr), y = tensor(d.dl, to, 2, shape, nullptr);
      check_runs_or_unsupported(execute_synced(d, NNP_OP_CAST, nullptr, {&x}, {&y}));
    }
  });
}

// fuzz/regressions/kit-empty-null-data-byte-offset: a tensor without elements may have NULL
// data and any byte_offset that is a multiple of its element size; the plugin kit's data_ptr
// (and the cpu backend's own byte pointers) computed NULL + byte_offset, undefined behaviour.
TEST_CASE("fuzz regression: ops on tensors without elements, NULL data and a byte_offset") {
  for_each_device([](device_stream& d) {
    int64_t shape[2] = {0, 3}, shape_t[2] = {3, 0};
    DLTensor x = tensor(d.dl, kF32, 2, shape, nullptr), y = tensor(d.dl, kF32, 2, shape, nullptr);
    x.byte_offset = 44;
    y.byte_offset = 8;
    DLTensor yt = tensor(d.dl, kF32, 2, shape_t, nullptr);
    yt.byte_offset = 8;
    nnp_transpose_params tp{};
    tp.struct_size = sizeof tp;
    tp.perm[0] = 1;
    tp.perm[1] = 0;
    nnp_activation_params ap{};
    ap.struct_size = sizeof ap;
    ap.function = NNP_ACTIVATION_RELU;
    nnp_scale_params sp{};
    sp.struct_size = sizeof sp;
    sp.alpha = 2.0;
    struct {
      int32_t kind;
      const void* params;
      DLTensor* y;
    } calls[] = {{NNP_OP_TRANSPOSE, &tp, &yt},
                 {NNP_OP_COPY, nullptr, &y},
                 {NNP_OP_CAST, nullptr, &y},
                 {NNP_OP_ACTIVATION_FORWARD, &ap, &y},
                 {NNP_OP_SCALE, &sp, &y}};
    for (const auto& call : calls) {
      const std::string op = nnp_op_kind_name(call.kind);
      CAPTURE(op);
      check_runs_or_unsupported(execute_synced(d, call.kind, call.params, {&x}, {call.y}));
    }
  });
}

// fuzz/regressions/cpu-batch-norm-training-empty-batch: with M = N*H*W = 0 the statistics are
// 0/0 = NaN and so are the running values (docs/ops.md); the cpu backend gave mean 0, var 0.
TEST_CASE("fuzz regression: batch_norm_forward_training of an empty batch gives NaN statistics") {
  for_each_host_device([](device_stream& d) {
    int64_t xshape[4] = {0, 3, 2, 2}, cshape[1] = {3};
    float scale[3] = {1, 2, 3}, bias[3] = {0, 1, 2};
    float rmean[3] = {1, 1, 1}, rvar[3] = {2, 2, 2}, smean[3] = {}, sinv[3] = {};
    float dummy = 0;
    DLTensor x = tensor(d.dl, kF32, 4, xshape, &dummy), y = tensor(d.dl, kF32, 4, xshape, &dummy);
    DLTensor s = tensor(d.dl, kF32, 1, cshape, scale), b = tensor(d.dl, kF32, 1, cshape, bias);
    DLTensor rm = tensor(d.dl, kF32, 1, cshape, rmean), rv = tensor(d.dl, kF32, 1, cshape, rvar);
    DLTensor sm = tensor(d.dl, kF32, 1, cshape, smean), si = tensor(d.dl, kF32, 1, cshape, sinv);
    nnp_batch_norm_params p{};
    p.struct_size = sizeof p;
    p.epsilon = 1e-5;
    p.momentum = 0.9;
    const nnp_status st = execute_synced(d, NNP_OP_BATCH_NORM_FORWARD_TRAINING, &p, {&x, &s, &b},
                                         {&y, &rm, &rv, &sm, &si});
    const std::string message = nnp_last_error_message();
    CAPTURE(message);
    REQUIRE(st == NNP_STATUS_OK);
    for (int c = 0; c < 3; ++c) {
      CHECK(std::isnan(rmean[c]));
      CHECK(std::isnan(rvar[c]));
      CHECK(std::isnan(smean[c]));
      CHECK(std::isnan(sinv[c]));
    }
  });
}

// fuzz/regressions/validate-alias-wrapping-address: an output aliasing its input at
// data + byte_offset past the top of the address space. The aliasing check compared
// data + byte_offset as pointers (undefined behaviour when it wraps); nnp_op_supported, which
// does not look at data, runs it too. Execute refuses the wrapping extent.
TEST_CASE("fuzz regression: aliasing check with data + byte_offset wrapping the address space") {
  for_each_device([](device_stream& d) {
    int64_t shape[1] = {4};
    void* top = reinterpret_cast<void*>(~uintptr_t{0} - 63);
    DLTensor x = tensor(d.dl, kF32, 1, shape, top), y = tensor(d.dl, kF32, 1, shape, top);
    x.byte_offset = y.byte_offset = 64;
    const DLTensor* in[] = {&x};
    const DLTensor* out[] = {&y};
    nnp_activation_params p{};
    p.struct_size = sizeof p;
    p.function = NNP_ACTIVATION_RELU;
    const nnp_status sup = nnp_op_supported(d.device, NNP_OP_ACTIVATION_FORWARD, &p, 1, in, 1, out);
    CHECK((sup == NNP_STATUS_OK || sup == NNP_STATUS_UNSUPPORTED));
    CHECK(nnp_op_execute(d.stream, NNP_OP_ACTIVATION_FORWARD, &p, 1, in, 1, out) ==
          NNP_STATUS_INVALID_ARGUMENT);
  });
}

// fuzz/regressions/reference-sgd-empty-momentum-buffer: SGD with momentum and a momentum_buffer
// without elements (NULL data): the reference took the NULL data for an absent buffer and
// refused the call; the cpu backend ran it (nothing to do).
TEST_CASE("fuzz regression: sgd_update with momentum on tensors without elements") {
  for_each_device([](device_stream& d) {
    int64_t shape[2] = {1, 0};
    DLTensor g = tensor(d.dl, kF32, 2, shape, nullptr), w = tensor(d.dl, kF32, 2, shape, nullptr),
             buf = tensor(d.dl, kF32, 2, shape, nullptr);
    nnp_sgd_params p{};
    p.struct_size = sizeof p;
    p.lr = 0.01;
    p.momentum = 0.9;
    check_runs_or_unsupported(execute_synced(d, NNP_OP_SGD_UPDATE, &p, {&g}, {&w, &buf}));
  });
}

// fuzz/regressions/kit-empty-huge-byte-offset: libnnplug checks the extent of tensors with
// elements only, so a tensor without elements may carry any byte_offset (a multiple of its
// element size); the plugin kit's data_ptr added it to data as pointer arithmetic, which
// wrapped (undefined behaviour). Host memory: the CPU devices only.
TEST_CASE("fuzz regression: tensors without elements and a byte_offset that wraps data") {
  for_each_host_device([](device_stream& d) {
    float storage[4] = {1, 1, 1, 1};
    int64_t xshape[5] = {0, 3, 1, 4, 4}, bshape[1] = {3};
    DLTensor x = tensor(d.dl, kF32, 5, xshape, storage),
             db = tensor(d.dl, kF32, 1, bshape, storage);
    x.byte_offset = ~uint64_t{0} - 7;
    nnp_conv_params p{};
    p.struct_size = sizeof p;
    p.group = 1;
    const nnp_status st = execute_synced(d, NNP_OP_CONV_BACKWARD_BIAS, &p, {&x}, {&db});
    const std::string message = nnp_last_error_message();
    CAPTURE(message);
    REQUIRE((st == NNP_STATUS_OK || st == NNP_STATUS_UNSUPPORTED));
    if (st == NNP_STATUS_OK)
      for (int c = 0; c < 3; ++c) CHECK(storage[c] == 0.0f);  // db = sum over no elements
  });
}

// fuzz/regressions/reference-matmul-empty-huge-batch: Y = [2^31, 0, 4] has no elements, but the
// reference looped over its 2^31 batch entries (minutes under the sanitizers). The CTest
// timeout of api_tests catches a return of that loop.
TEST_CASE("fuzz regression: matmul with a huge batch and no elements returns at once") {
  for_each_host_device([](device_stream& d) {
    float bdata[12] = {};
    int64_t ashape[3] = {int64_t{1} << 31, 0, 3}, bshape[2] = {3, 4},
            yshape[3] = {int64_t{1} << 31, 0, 4};
    DLTensor a = tensor(d.dl, kF32, 3, ashape, nullptr), b = tensor(d.dl, kF32, 2, bshape, bdata),
             y = tensor(d.dl, kF32, 3, yshape, nullptr);
    nnp_matmul_params p{};
    p.struct_size = sizeof p;
    check_runs_or_unsupported(execute_synced(d, NNP_OP_MATMUL, &p, {&a, &b}, {&y}));
  });
}

// fuzz/regressions/kit-pool-empty-huge-plane: x = [0, 2, 2^62, 4] has no elements, and the
// plane size 2^62 * 4 does not fit int64: the plugin kit's pooling geometry and the cpu
// backend's row counts overflowed (UBSan: signed integer overflow). libnnplug now refuses a shape
// whose nonzero dimensions' product overflows (docs/abi.md, validation), so the call never
// reaches a plugin; the kit and the cpu backend no longer multiply without planes either.
TEST_CASE("fuzz regression: pooling of an empty batch whose plane size does not fit int64") {
  for_each_device([](device_stream& d) {
    int64_t xshape[4] = {0, 2, int64_t{1} << 62, 4}, yshape[4] = {0, 2, int64_t{1} << 61, 2};
    DLTensor x = tensor(d.dl, kF32, 4, xshape, nullptr), y = tensor(d.dl, kF32, 4, yshape, nullptr),
             dy = tensor(d.dl, kF32, 4, yshape, nullptr),
             dx = tensor(d.dl, kF32, 4, xshape, nullptr);
    nnp_pool_params p{};
    p.struct_size = sizeof p;
    p.mode = NNP_POOL_MAX;
    p.kernel_shape[0] = p.kernel_shape[1] = 2;
    p.strides[0] = p.strides[1] = 2;
    const DLTensor* fin[] = {&x};
    const DLTensor* fout[] = {&y};
    const DLTensor* bin[] = {&x, &y, &dy};
    const DLTensor* bout[] = {&dx};
    nnp_status st = nnp_op_execute(d.stream, NNP_OP_POOL_FORWARD, &p, 1, fin, 1, fout);
    std::string message = nnp_last_error_message();
    CAPTURE(message);
    CHECK(st == NNP_STATUS_INVALID_ARGUMENT);
    CHECK(message.find("overflows int64") != std::string::npos);
    st = nnp_op_execute(d.stream, NNP_OP_POOL_BACKWARD, &p, 3, bin, 1, bout);
    message = nnp_last_error_message();
    CHECK(st == NNP_STATUS_INVALID_ARGUMENT);
    CHECK(message.find("overflows int64") != std::string::npos);
    CHECK(nnp_stream_synchronize(d.stream) == NNP_STATUS_OK);
  });
}

// fuzz/regressions/cpu-sce-backward-label-cancellation: softmax_cross_entropy_backward where the
// label's probability is within 2^-24 of 1. dlogits[label] = g * (p_label - 1) computed as
// p - 1 in float32 is a multiple of 2^-24 (the cpu backend returned 5.96e-8 for 6.34e-8, NMSE
// 0.0018 against the reference); computed as -g * (the other classes' p) it keeps float
// precision. Logits [20, 0, 0]: 1 - p_label = 2 e^-20 / (1 + 2 e^-20) = 4.1e-9.
TEST_CASE("fuzz regression: softmax cross-entropy gradient of a label with p near 1") {
  for_each_device([](device_stream& d) {
    const float logits[3] = {20.0f, 0.0f, 0.0f};
    const int64_t label = 0;
    const float dloss = 1.0f;
    float dlogits[3] = {0, 0, 0};
    void *x_dev = nullptr, *l_dev = nullptr, *g_dev = nullptr, *dx_dev = nullptr;
    REQUIRE(nnp_malloc(d.device, sizeof logits, &x_dev) == NNP_STATUS_OK);
    REQUIRE(nnp_malloc(d.device, sizeof label, &l_dev) == NNP_STATUS_OK);
    REQUIRE(nnp_malloc(d.device, sizeof dloss, &g_dev) == NNP_STATUS_OK);
    REQUIRE(nnp_malloc(d.device, sizeof dlogits, &dx_dev) == NNP_STATUS_OK);
    REQUIRE(nnp_memcpy(d.device, x_dev, nullptr, logits, sizeof logits) == NNP_STATUS_OK);
    REQUIRE(nnp_memcpy(d.device, l_dev, nullptr, &label, sizeof label) == NNP_STATUS_OK);
    REQUIRE(nnp_memcpy(d.device, g_dev, nullptr, &dloss, sizeof dloss) == NNP_STATUS_OK);
    int64_t xshape[2] = {1, 3}, lshape[1] = {1};
    DLTensor x = tensor(d.dl, kF32, 2, xshape, x_dev), dx = tensor(d.dl, kF32, 2, xshape, dx_dev),
             l = tensor(d.dl, {kDLInt, 64, 1}, 1, lshape, l_dev),
             g = tensor(d.dl, kF32, 0, nullptr, g_dev);
    nnp_softmax_cross_entropy_params p{};
    p.struct_size = sizeof p;
    p.reduction = NNP_REDUCTION_MEAN;
    const DLTensor* in[] = {&x, &l, &g};
    const DLTensor* out[] = {&dx};
    REQUIRE(nnp_op_execute(d.stream, NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD, &p, 3, in, 1, out) ==
            NNP_STATUS_OK);
    REQUIRE(nnp_stream_synchronize(d.stream) == NNP_STATUS_OK);
    REQUIRE(nnp_memcpy(nullptr, dlogits, d.device, dx_dev, sizeof dlogits) == NNP_STATUS_OK);
    const double e = std::exp(-20.0), p_other = e / (1.0 + 2.0 * e);
    CHECK(std::fabs(dlogits[0] - (-2.0 * p_other)) <= 1e-5 * 2.0 * p_other);
    CHECK(std::fabs(dlogits[1] - p_other) <= 1e-5 * p_other);
    CHECK(std::fabs(dlogits[2] - p_other) <= 1e-5 * p_other);
    for (void* ptr : {x_dev, l_dev, g_dev, dx_dev}) CHECK(nnp_free(d.device, ptr) == NNP_STATUS_OK);
  });
}

// fuzz/regressions/batch-norm-empty-huge-batch: batch norm of x = [2^40, 3, 0, 2] (no elements)
// runs, since its statistics [3] have elements; the reference looped over N = 2^40 with an empty
// inner loop (a timeout), and so did the cpu backend's backward. M = 0: the statistics are NaN.
TEST_CASE("fuzz regression: batch norm of an empty batch with a huge N returns at once") {
  for_each_device([](device_stream& d) {
    int64_t xshape[4] = {int64_t{1} << 40, 3, 0, 2}, cshape[1] = {3};
    const float ones[3] = {1, 1, 1};
    std::vector<void*> bufs;
    auto channel = [&](const float* init) {
      void* p = nullptr;
      REQUIRE(nnp_malloc(d.device, sizeof ones, &p) == NNP_STATUS_OK);
      REQUIRE(nnp_memcpy(d.device, p, nullptr, init, sizeof ones) == NNP_STATUS_OK);
      bufs.push_back(p);
      return tensor(d.dl, kF32, 1, cshape, p);
    };
    DLTensor x = tensor(d.dl, kF32, 4, xshape, nullptr), y = x, dy = x, dx = x;
    DLTensor scale = channel(ones), bias = channel(ones), rmean = channel(ones),
             rvar = channel(ones), smean = channel(ones), sinv = channel(ones),
             dscale = channel(ones), dbias = channel(ones);
    nnp_batch_norm_params p{};
    p.struct_size = sizeof p;
    p.epsilon = 1e-5;
    p.momentum = 0.9;
    const DLTensor* fin[] = {&x, &scale, &bias};
    const DLTensor* fout[] = {&y, &rmean, &rvar, &smean, &sinv};
    nnp_status st =
        nnp_op_execute(d.stream, NNP_OP_BATCH_NORM_FORWARD_TRAINING, &p, 3, fin, 5, fout);
    CAPTURE(nnp_last_error_message());
    if (st == NNP_STATUS_UNSUPPORTED) return;
    REQUIRE(st == NNP_STATUS_OK);
    const DLTensor* bin[] = {&x, &dy, &scale, &smean, &sinv};
    const DLTensor* bout[] = {&dx, &dscale, &dbias};
    CHECK(nnp_op_execute(d.stream, NNP_OP_BATCH_NORM_BACKWARD, &p, 5, bin, 3, bout) ==
          NNP_STATUS_OK);
    REQUIRE(nnp_stream_synchronize(d.stream) == NNP_STATUS_OK);
    float mean[3], db[3];
    REQUIRE(nnp_memcpy(nullptr, mean, d.device, smean.data, sizeof mean) == NNP_STATUS_OK);
    REQUIRE(nnp_memcpy(nullptr, db, d.device, dbias.data, sizeof db) == NNP_STATUS_OK);
    for (int c = 0; c < 3; ++c) {
      CHECK(std::isnan(mean[c]));  // 0/0 over no elements
      CHECK(db[c] == 0.0f);        // a sum over no elements
    }
    for (void* b : bufs) CHECK(nnp_free(d.device, b) == NNP_STATUS_OK);
  });
}
