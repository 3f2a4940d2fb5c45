// test_op_table.cpp — checks that come from the op table (api/ops/ops.toml, through
// generated/op_cases.inc), for every op kind on every backend under test:
//  - nnp_op_supported and nnp_op_execute agree for every kind and float dtype: OK in both,
//    or UNSUPPORTED in both (a backend that answers "supported" must run the call);
//  - every params field's check rejects the values the table says it must, in both calls,
//    with a message naming the field;
//  - nnp_op_infer_shapes gives the example's output shapes (literals of the table, not the
//    shape maths it uses) and refuses the outputs the table marks not inferable.
#include <doctest/doctest.h>

#include "harness.hpp"
#include "op_table_cases.hpp"

#include <cstring>
#include <string>
#include <vector>

namespace {
using namespace conf;

const std::pair<const char*, DLDataType> kFloatDtypes[] = {
    {"f32", {kDLFloat, 32, 1}},
    {"f64", {kDLFloat, 64, 1}},
    {"f16", {kDLFloat, 16, 1}},
    {"bf16", {kDLBfloat, 16, 1}},
};

// An example bound to device memory (zero-filled through nnp_memcpy: device memory may not be
// host-addressable), freed with the object.
struct device_call {
  nnp_device* dev;
  bound_example b;
  device_call(nnp_device* d, DLDevice dl, const table_example& e, DLDataType dt) : dev(d) {
    b = bind_example(e, dl, dt, [&](size_t bytes) -> void* {
      void* p = nullptr;
      if (nnp_malloc(dev, bytes == 0 ? 1 : bytes, &p) != NNP_STATUS_OK) return nullptr;
      const std::vector<uint8_t> zeros(bytes == 0 ? 1 : bytes, 0);
      nnp_memcpy(dev, p, nullptr, zeros.data(), zeros.size());
      return p;
    });
  }
  ~device_call() {
    for (void* p : b.data) nnp_free(dev, p);
  }
  device_call(const device_call&) = delete;
  device_call& operator=(const device_call&) = delete;
};

}  // namespace

TEST_CASE("op table: nnp_op_supported and nnp_op_execute agree for every kind and dtype") {
  for (device_entry* d : backends_under_test()) {
    if (!d->available) continue;
    for (const table_example& e : table_examples()) {
      for (const auto& dtype : kFloatDtypes) {  // no structured binding: CAPTURE is a lambda
        const char* const dt_name = dtype.first;
        const DLDataType dt = dtype.second;
        CAPTURE(d->name);
        const std::string op_name = e.name;
        CAPTURE(op_name);
        CAPTURE(dt_name);
        device_call c(d->dev, d->dl, e, dt);
        const bound_example& b = c.b;
        const nnp_status sup =
            nnp_op_supported(d->dev, e.kind, b.params, b.in_ptrs.size(), b.in_ptrs.data(),
                             b.out_ptrs.size(), b.out_ptrs.data());
        const std::string sup_msg = sup == NNP_STATUS_OK ? "" : nnp_last_error_message();
        nnp_status exe = nnp_op_execute(d->stream, e.kind, b.params, b.in_ptrs.size(),
                                        b.in_ptrs.data(), b.out_ptrs.size(), b.out_ptrs.data());
        const std::string exe_msg = exe == NNP_STATUS_OK ? "" : nnp_last_error_message();
        if (exe == NNP_STATUS_OK) exe = nnp_stream_synchronize(d->stream);
        CAPTURE(sup_msg);
        CAPTURE(exe_msg);
        CHECK((sup == NNP_STATUS_OK || sup == NNP_STATUS_UNSUPPORTED));
        CHECK(exe == sup);
        if (sup == NNP_STATUS_UNSUPPORTED) CHECK(!sup_msg.empty());
        const std::string name = std::string(e.name) + " supported==executed " + dt_name;
        report({d->name, e.name, dt_name, name,
                exe == sup ? (sup == NNP_STATUS_OK ? case_outcome::pass : case_outcome::unsupported)
                           : case_outcome::fail,
                0, 0, exe == sup ? sup_msg : "op_supported and op_execute disagree"});
      }
    }
  }
}

TEST_CASE("op table: every params field's check rejects its out-of-range values") {
  std::vector<table_example> examples = table_examples();
  for (device_entry* d : backends_under_test()) {
    if (!d->available) continue;
    for (const table_field_case& f : table_field_cases()) {
      const table_example* e = nullptr;
      for (const table_example& x : examples)
        if (x.kind == f.kind) e = &x;
      REQUIRE(e != nullptr);
      CAPTURE(d->name);
      const std::string op_name = f.op, field = f.field, why = f.why;
      CAPTURE(op_name);
      CAPTURE(field);
      CAPTURE(why);
      table_example bad = *e;
      uint8_t* at = bad.params.data() + f.offset;
      switch (f.type) {
        case 'i': {
          const int32_t v = static_cast<int32_t>(f.bad);
          std::memcpy(at, &v, sizeof v);
          break;
        }
        case 'l': {
          const int64_t v = static_cast<int64_t>(f.bad);
          std::memcpy(at, &v, sizeof v);
          break;
        }
        case 'u': {
          const uint64_t v = static_cast<uint64_t>(f.bad);
          std::memcpy(at, &v, sizeof v);
          break;
        }
        default:
          std::memcpy(at, &f.bad, sizeof f.bad);
      }
      device_call c(d->dev, d->dl, bad, DLDataType{kDLFloat, 32, 1});
      const bound_example& b = c.b;
      const nnp_status sup =
          nnp_op_supported(d->dev, bad.kind, b.params, b.in_ptrs.size(), b.in_ptrs.data(),
                           b.out_ptrs.size(), b.out_ptrs.data());
      const std::string sup_msg = nnp_last_error_message();
      const nnp_status exe = nnp_op_execute(d->stream, bad.kind, b.params, b.in_ptrs.size(),
                                            b.in_ptrs.data(), b.out_ptrs.size(), b.out_ptrs.data());
      const std::string exe_msg = nnp_last_error_message();
      CHECK(sup == NNP_STATUS_INVALID_ARGUMENT);
      CHECK(exe == NNP_STATUS_INVALID_ARGUMENT);
      CHECK(sup_msg.find(std::string("params->") + f.field) != std::string::npos);
      CHECK(exe_msg.find(std::string("params->") + f.field) != std::string::npos);
      report({d->name, f.op, "f32", std::string(f.op) + " params->" + f.field + " = " + f.why,
              exe == NNP_STATUS_INVALID_ARGUMENT ? case_outcome::pass : case_outcome::fail, 0, 0,
              exe_msg});
    }
  }
}

TEST_CASE("op table: nnp_op_infer_shapes gives every example's output shapes") {
  for (const table_example& e : table_examples()) {
    const std::string op_name = e.name;
    CAPTURE(op_name);
    const bound_example b = bind_example(e, DLDevice{kDLCPU, 0}, DLDataType{kDLFloat, 32, 1},
                                         [](size_t) -> void* { return nullptr; });
    std::vector<nnp_shape> shapes(e.out.size());
    const nnp_status st = nnp_op_infer_shapes(e.kind, b.params, b.in_ptrs.size(), b.in_ptrs.data(),
                                              shapes.size(), shapes.data());
    if (!e.inferable) {  // the table says the inputs do not determine an output
      CHECK(st == NNP_STATUS_UNSUPPORTED);
      CHECK(std::string(nnp_last_error_message()).find("cannot be inferred") != std::string::npos);
      continue;
    }
    REQUIRE_MESSAGE(st == NNP_STATUS_OK, nnp_last_error_message());
    for (size_t i = 0; i < e.out.size(); ++i) {
      CAPTURE(i);
      const std::vector<int64_t> got(shapes[i].dims, shapes[i].dims + shapes[i].ndim);
      CHECK(got == e.out[i].shape);
      const DLDataType want = e.out[i].dtype == 'l'   ? DLDataType{kDLInt, 64, 1}
                              : e.out[i].dtype == 'u' ? DLDataType{kDLUInt, 8, 1}
                                                      : DLDataType{kDLFloat, 32, 1};
      if (e.kind != NNP_OP_CAST)
        CHECK((shapes[i].dtype.code == want.code && shapes[i].dtype.bits == want.bits));
    }
  }
  // Bad inputs get the validator's INVALID_ARGUMENT and leave out_shapes untouched.
  const table_example gemm = table_examples().front();
  REQUIRE(gemm.kind == NNP_OP_GEMM);
  table_example bad = gemm;
  bad.in[1].shape = {5, 4};  // K mismatch
  const bound_example b = bind_example(bad, DLDevice{kDLCPU, 0}, DLDataType{kDLFloat, 32, 1},
                                       [](size_t) -> void* { return nullptr; });
  nnp_shape y{};
  y.ndim = -7;
  CHECK(nnp_op_infer_shapes(bad.kind, b.params, 3, b.in_ptrs.data(), 1, &y) ==
        NNP_STATUS_INVALID_ARGUMENT);
  CHECK(std::string(nnp_last_error_message()).find("K = 3") != std::string::npos);
  CHECK(y.ndim == -7);
  CHECK(nnp_op_infer_shapes(12345, nullptr, 0, nullptr, 0, nullptr) == NNP_STATUS_UNSUPPORTED);
}
