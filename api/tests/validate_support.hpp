// validate_support.hpp — helpers shared by the validation tests (test_validate.cpp,
// test_validate_ops.cpp): tensor descriptions with owned shapes, the fixture device fx_ok:0, and
// the checks that a description passed validation (CHECK_VALID) or was refused naming its
// argument (CHECK_INVALID).
//
// fx_ok:0's op_supported answers UNSUPPORTED for everything but float32 fill (it has one kernel
// row). So a description that passes validation reaches the plugin and comes back UNSUPPORTED with
// the plugin's message (which the host prefixes "fx_ok: "), while an invalid one stops in
// libnnplug with INVALID_ARGUMENT and a message naming the argument: each case tells the two apart
// without depending on any real backend.
#pragma once

#include <doctest/doctest.h>

#include <nnplug/nnplug.h>

#include <deque>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace nnp_test {

inline constexpr DLDataType kF32{kDLFloat, 32, 1};
inline constexpr DLDataType kF64{kDLFloat, 64, 1};
inline constexpr DLDataType kI64{kDLInt, 64, 1};
inline constexpr DLDataType kU8{kDLUInt, 8, 1};

// Tensor descriptions with owned shapes (data NULL: nnp_op_supported allows it).
class descs {
 public:
  DLTensor* operator()(std::vector<int64_t> shape, DLDataType dtype = kF32) {
    shapes_.push_back(std::move(shape));
    DLTensor t{};
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = static_cast<int32_t>(shapes_.back().size());
    t.shape = shapes_.back().data();
    t.dtype = dtype;
    tensors_.push_back(t);
    return &tensors_.back();
  }
  int64_t* strides(std::vector<int64_t> s) {
    shapes_.push_back(std::move(s));
    return shapes_.back().data();
  }

 private:
  std::deque<std::vector<int64_t>> shapes_;
  std::deque<DLTensor> tensors_;
};

inline nnp_device* fixture_device() {
#ifdef NNPLUG_FIXTURE_DIR
  const std::string path = std::string(NNPLUG_FIXTURE_DIR) + "/libnnplug-fx_ok.so";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return nullptr;
  if (nnp_load_plugin(path.c_str(), nullptr) != NNP_STATUS_OK) return nullptr;
  nnp_device* dev = nullptr;
  if (nnp_get_device("fx_ok:0", &dev) != NNP_STATUS_OK) return nullptr;
  return dev;
#else
  return nullptr;
#endif
}

#define NNP_NEED_FIXTURE()                                                   \
  nnp_device* dev = nnp_test::fixture_device();                              \
  if (dev == nullptr) {                                                      \
    MESSAGE("fixture plugin fx_ok not available; validation cases skipped"); \
    return;                                                                  \
  }

inline nnp_status ask(nnp_device* dev, int32_t kind, const void* params,
                      std::vector<const DLTensor*> in, std::vector<const DLTensor*> out) {
  return nnp_op_supported(dev, kind, params, in.size(), in.empty() ? nullptr : in.data(),
                          out.size(), out.empty() ? nullptr : out.data());
}

// Valid: validation passed and the plugin was asked (it says UNSUPPORTED with its message).
#define CHECK_VALID(...)                                                   \
  do {                                                                     \
    const nnp_status st_ = nnp_test::ask(dev, __VA_ARGS__);                \
    INFO("message: " << nnp_last_error_message());                         \
    CHECK(st_ == NNP_STATUS_UNSUPPORTED);                                  \
    CHECK(std::string(nnp_last_error_message()).rfind("fx_ok: ", 0) == 0); \
  } while (0)

// Invalid: INVALID_ARGUMENT, and the message starts with the op and contains each word.
inline void check_invalid(nnp_status st, const char* op, std::initializer_list<const char*> words) {
  const std::string msg = nnp_last_error_message();
  INFO("message: " << msg);
  CHECK(st == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(msg.rfind(std::string(op) + ": ", 0) == 0);
  for (const char* w : words)
    CHECK_MESSAGE(msg.find(w) != std::string::npos, "missing: " << std::string(w));
}
#define CHECK_INVALID(op, words, ...) \
  nnp_test::check_invalid(nnp_test::ask(dev, __VA_ARGS__), op, words)
#define W(...) \
  { __VA_ARGS__ }

template <typename P>
P params_of() {
  P p{};
  p.struct_size = sizeof(P);
  return p;
}

// The gemm cases' starting point: Y [2, 4] = A [2, 3] . B [3, 4], alpha 1.
struct gemm_2x3x4 {
  nnp_gemm_params p;
  DLTensor *a, *b, *y;
};
inline gemm_2x3x4 gemm_carrier(descs& d) {
  auto p = params_of<nnp_gemm_params>();
  p.alpha = 1.0;
  return {p, d({2, 3}), d({3, 4}), d({2, 4})};
}

}  // namespace nnp_test
