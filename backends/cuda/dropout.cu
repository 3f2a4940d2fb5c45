// dropout.cu — dropout forward/backward with the counter-based Philox4x32-10 mask of
// nnplug/kit/philox.hpp (nnp::dropout_keep_bits4), so masks are bit-identical to the reference
// and CPU backends. The mask is regenerated in backward instead of being stored. One thread per
// 4 elements (one Philox block), memory-bound.
//
// The optional step input (a float32 device scalar, ABI 1.4) is read by the kernel when it
// runs, never copied to the host: the counter offset is offset + step * offset_per_step. A step
// that is not a whole number >= 0 below 2^64 (-1, 1.5, NaN, Inf, 2^64, ...) is refused as the
// cpu backend refuses it: every thread checks it, none writes anything, and the error goes to
// the stream's kernel error record (context.hpp), reported by stream_synchronize with cpu's
// message.
#include "common.cuh"

#include <nnplug/kit/philox.hpp>
#include <nnplug/kit/step.hpp>

namespace nnp::cuda {
namespace {

template <typename T>
__global__ void dropout_kernel(const T* x, T* y, uint8_t* mask, int64_t n, uint64_t seed,
                               uint64_t offset, uint32_t threshold, T scale, const float* step_in,
                               uint64_t offset_per_step, int error_code,
                               kernel_error_record* errors) {
  if (step_in != nullptr) {
    const float step = *step_in;
    if (!valid_step(step, 0.0f)) {  // the same in every thread: none writes
      if (blockIdx.x == 0 && threadIdx.x == 0)
        report_kernel_error(errors, error_code, static_cast<double>(step));
      return;
    }
    offset = nnp::dropout_step_offset(offset, offset_per_step, static_cast<uint64_t>(step));
  }
  const int64_t blocks = (n + 3) / 4;
  const float sc = to_f(scale);
  for (int64_t b = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; b < blocks;
       b += int64_t{gridDim.x} * blockDim.x) {
    const uint32_t bits =
        nnp::dropout_keep_bits4(seed, offset, static_cast<uint64_t>(b), threshold);
    for (int j = 0; j < 4; ++j) {
      const int64_t i = 4 * b + j;
      if (i >= n) break;
      const bool keep = (bits >> j) & 1u;
      // x * scale in float32 is exact for 16-bit types, so rounding once gives T's product.
      y[i] = keep ? from_f<T>(to_f(x[i]) * sc) : from_f<T>(0.0f);
      if (mask != nullptr) mask[i] = keep ? 1 : 0;
    }
  }
}

// Forward and backward differ only in the mask (forward's optional output 1; backward has none)
// and in the error code of an invalid step.
void run_dropout(stream& s, const op_call& c, const DLTensor* mask, int error_code) {
  const auto p = read_params<nnp_dropout_params>(c.params);
  const DLTensor& x = *c.in(0);
  const DLTensor& y = *c.out(0);
  const int64_t n = numel(x);
  const DLTensor* step = c.in(1);
  // Without elements there is nothing to write, but a step input is still checked (the
  // reference refuses an invalid one whatever the size): one block that only checks.
  if (n == 0 && step == nullptr) return;
  const uint32_t threshold = nnp::dropout_threshold(p.ratio);
  dispatch_float(elem_of(x.dtype), [&](auto tg) {
    using T = typename decltype(tg)::type;
    const T scale = nnp::dropout_scale<T>(p.ratio);
    dropout_kernel<<<grid_for((n + 3) / 4), kThreads, 0, s.handle>>>(
        data_ptr<const T>(x), data_ptr<T>(y), mask != nullptr ? data_ptr<uint8_t>(*mask) : nullptr,
        n, p.seed, p.offset, threshold, scale,
        step != nullptr ? data_ptr<const float>(*step) : nullptr, p.offset_per_step, error_code,
        s.kernel_errors());
  });
  NNP_CUDA_CHECK_LAUNCH();
}

}  // namespace

void op_dropout_forward(stream& s, const op_call& c) {
  run_dropout(s, c, c.out(1), kKernelErrorDropoutForwardStep);
}

void op_dropout_backward(stream& s, const op_call& c) {
  run_dropout(s, c, nullptr, kKernelErrorDropoutBackwardStep);
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kDropoutOps[] = {
    {NNP_OP_DROPOUT_FORWARD,  kHalfFloats, on_stream<op_dropout_forward>},
    {NNP_OP_DROPOUT_BACKWARD, kHalfFloats, on_stream<op_dropout_backward>},
};
// clang-format on
extern const kit::op_row_list kDropoutRows = kit::row_list(kDropoutOps);

}  // namespace nnp::cuda
