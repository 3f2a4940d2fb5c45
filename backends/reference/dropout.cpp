// dropout.cpp — reference dropout, forward and backward, with the counter-based mask shared by
// every backend (nnp::dropout_keep in nnplug/kit/philox.hpp, the rule of nnplug_ops.h):
//   keep_i = (philox4x32_10({lo(c), hi(c), 0, 0}, {lo(seed), hi(seed)})[i % 4] >> 8)
//            >= (uint32_t)(ratio * 2^24),   c = offset + i / 4
//   y_i  = keep_i ? x_i * scale : 0,   scale = (T)(1 / (1 - ratio)), the product taken in T
//   dx_i = keep_i ? dy_i * scale : 0   (the mask is regenerated from the same params)
// y may alias x and dx may alias dy (elementwise). With the optional step input (float32,
// ABI 1.4) the counter offset is offset + step * offset_per_step, step read when the op runs
// and refused unless a whole number >= 0 (nnplug/kit/step.hpp).
#include "reference.hpp"

#include <nnplug/kit/philox.hpp>
#include <nnplug/kit/step.hpp>

namespace ref {
namespace {

// out_i = keep_i ? in_i * scale : 0, and mask_i = keep_i when a mask is wanted.
template <typename T>
void apply_mask(const nnp_dropout_params& p, const DLTensor& in, const DLTensor& out,
                const DLTensor* mask) {
  const uint32_t threshold = nnp::dropout_threshold(p.ratio);
  const T scale = nnp::dropout_scale<T>(p.ratio);
  const T* x = nnp::data_ptr<const T>(in);
  T* y = nnp::data_ptr<T>(out);
  uint8_t* m = mask != nullptr ? nnp::data_ptr<uint8_t>(*mask) : nullptr;
  const int64_t n = nnp::numel(in);
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = nnp::dropout_keep(p.seed, p.offset, static_cast<uint64_t>(i), threshold);
    const T xi = x[i];
    y[i] = keep ? static_cast<T>(xi * scale) : T(0);
    if (m != nullptr) m[i] = keep ? 1 : 0;
  }
}

// The call's params with the offset its step input gives (params unchanged without one).
nnp_dropout_params params_at_step(const op_args& a, const char* op) {
  auto p = read_params<nnp_dropout_params>(a.params);
  if (const float* step = opt_in<float>(a, 1))
    p.offset = nnp::dropout_step_offset(p.offset, p.offset_per_step,
                                        static_cast<uint64_t>(nnp::checked_step(op, *step, 0.0f)));
  return p;
}

}  // namespace

void dropout_forward(const op_args& a) {
  const auto p = params_at_step(a, "dropout_forward");
  dispatch_float(*a.in(0),
                 [&](auto t) { apply_mask<decltype(t)>(p, *a.in(0), *a.out(0), a.out(1)); });
}
void dropout_backward(const op_args& a) {
  const auto p = params_at_step(a, "dropout_backward");
  dispatch_float(*a.in(0),
                 [&](auto t) { apply_mask<decltype(t)>(p, *a.in(0), *a.out(0), nullptr); });
}

// The rows of this file's kernels (rows.hpp lists the files).
// clang-format off
const nnp::kit::op_row kDropoutOps[] = {
    {NNP_OP_DROPOUT_FORWARD,  kFloats,        dropout_forward},
    {NNP_OP_DROPOUT_BACKWARD, kFloats,        dropout_backward},
};
// clang-format on
extern const nnp::kit::op_row_list kDropoutRows = nnp::kit::row_list(kDropoutOps);

}  // namespace ref
