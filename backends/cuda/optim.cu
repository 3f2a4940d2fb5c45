// optim.cu — SGD (momentum, Nesterov, weight decay; PyTorch's torch.optim.SGD) and Adam / AdamW
// (PyTorch's formulas) as one fused elementwise kernel each, updating parameter and state in
// place; memory-bound (Adam: 28 bytes per parameter, one grid-stride pass over at most 32 blocks
// per multiprocessor: 3.1 TB/s on an H200).
//
// Numerics follow the reference (backends/reference/optimizer.cpp) operation by operation, in
// float32 with correctly rounded division and square root (nvcc's default: no fast math, no
// rsqrtf or precomputed reciprocals): every scalar the reference derives from the params in
// double (1 - beta1, 1 - beta2, 1 - dampening, 1 - lr * weight_decay and the bias corrections
// 1 - beta^step, std::pow) is computed in double and rounded once to float, never derived from
// rounded floats (1.0f - 0.999f is 1.3e-5 off 0.001).
//
// Adam's optional inputs step and lr (float32 device scalars, ABI 1.4) are read by the kernel
// when it runs, never copied to the host (a captured and replayed launch sees the values of its
// time): thread 0 of each block computes the per-call scalars from them in double, as the host
// does from the params, and shares them through shared memory. A step that is not a whole
// number >= 1 (0, -1, 1.5, NaN, Inf, 2^64, ...) is refused as the cpu backend refuses it: no
// thread writes anything, and the error goes to the stream's kernel error record (context.hpp),
// reported by stream_synchronize with cpu's message.
#include "common.cuh"

#include <algorithm>
#include <cmath>

namespace nnp::cuda {
namespace {

// damp1 = 1 - dampening, rounded once from double.
__global__ void sgd_kernel(const float* grad, float* param, float* buf, int64_t n, float lr,
                           float momentum, float damp1, float weight_decay, int nesterov) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const float w = param[i];
    float g = grad[i] + weight_decay * w;
    if (momentum != 0.0f) {
      const float b = momentum * buf[i] + damp1 * g;
      buf[i] = b;
      g = nesterov ? g + momentum * b : b;
    }
    param[i] = w - lr * g;
  }
}

// Adam's scalars: the float ones rounded once from the double values of the params.
struct adam_args {
  float lr;        // lr
  float bc1, bc2;  // 1 - beta1^step, 1 - beta2^step
  float decay;     // 1 - lr * weight_decay (AdamW)
  float beta1, beta2;
  float ob1, ob2;  // 1 - beta1, 1 - beta2
  float eps, wd;
  double beta1d, beta2d, wdd;  // beta1, beta2, weight_decay: for the step and lr inputs
  int adamw;
};

// step_in / lr_in: the optional device scalars; when given they replace the step (bc1, bc2) and
// lr (lr, decay) of `a`. errors: the record an invalid step is reported to.
__global__ void adam_kernel(const float* grad, float* param, float* m, float* v, int64_t n,
                            adam_args a, const float* step_in, const float* lr_in,
                            kernel_error_record* errors) {
  __shared__ float shared_scalars[4];
  __shared__ int shared_ok;
  if (step_in != nullptr || lr_in != nullptr) {  // the same for the whole grid
    if (threadIdx.x == 0) {
      int ok = 1;
      float bc1 = a.bc1, bc2 = a.bc2, lr = a.lr, decay = a.decay;
      if (step_in != nullptr) {
        const float step = *step_in;
        if (valid_step(step, 1.0f)) {
          bc1 = static_cast<float>(1.0 - pow(a.beta1d, static_cast<double>(step)));
          bc2 = static_cast<float>(1.0 - pow(a.beta2d, static_cast<double>(step)));
        } else {
          ok = 0;
          if (blockIdx.x == 0)
            report_kernel_error(errors, kKernelErrorAdamStep, static_cast<double>(step));
        }
      }
      if (lr_in != nullptr) {
        const double lrd = static_cast<double>(*lr_in);
        lr = static_cast<float>(lrd);
        decay = static_cast<float>(1.0 - lrd * a.wdd);
      }
      shared_scalars[0] = bc1;
      shared_scalars[1] = bc2;
      shared_scalars[2] = lr;
      shared_scalars[3] = decay;
      shared_ok = ok;
    }
    __syncthreads();
    if (shared_ok == 0) return;  // an invalid step: nothing is written
    a.bc1 = shared_scalars[0];
    a.bc2 = shared_scalars[1];
    a.lr = shared_scalars[2];
    a.decay = shared_scalars[3];
  }
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    float w = param[i];
    float g = grad[i];
    if (a.adamw)
      w *= a.decay;
    else
      g += a.wd * w;
    const float mi = a.beta1 * m[i] + a.ob1 * g;
    const float vi = a.beta2 * v[i] + a.ob2 * g * g;
    m[i] = mi;
    v[i] = vi;
    // The reference's order: lr * (m / bc1) / (sqrt(v / bc2) + eps), each step rounded.
    param[i] = w - a.lr * (mi / a.bc1) / (sqrtf(vi / a.bc2) + a.eps);
  }
}

// At most 32 blocks per multiprocessor (four waves of resident blocks, each thread then updates
// several elements): on an H200 this streams 3.1 TB/s against 2.6 for one block per 256
// elements, and it spreads the per-block scalars of the step and lr inputs (two double pows)
// over more elements (with one block per 256 elements they cost a third of the speed).
unsigned adam_blocks(const stream& s, int64_t n) {
  const int64_t sms = devices().devices[static_cast<size_t>(s.device)].multiprocessors;
  return std::min<unsigned>(grid_for(n), static_cast<unsigned>(std::max<int64_t>(1, 32 * sms)));
}

}  // namespace

void op_sgd(stream& s, const op_call& c) {
  const auto p = read_params<nnp_sgd_params>(c.params);
  const DLTensor& param = *c.out(0);
  const int64_t n = numel(param);
  if (n == 0) return;
  const DLTensor* buf = c.out(1);
  if (p.momentum != 0.0 && buf == nullptr)
    fail(NNP_STATUS_INVALID_ARGUMENT, "sgd: momentum_buffer is required when momentum != 0");
  sgd_kernel<<<grid_for(n), kThreads, 0, s.handle>>>(
      data_ptr<const float>(*c.in(0)), data_ptr<float>(param),
      buf != nullptr ? data_ptr<float>(*buf) : nullptr, n, static_cast<float>(p.lr),
      static_cast<float>(p.momentum), static_cast<float>(1.0 - p.dampening),
      static_cast<float>(p.weight_decay), p.nesterov);
  NNP_CUDA_CHECK_LAUNCH();
}

void op_adam(stream& s, const op_call& c) {
  const auto p = read_params<nnp_adam_params>(c.params);
  const DLTensor& param = *c.out(0);
  const int64_t n = numel(param);
  const DLTensor* step_in = c.in(1);
  const DLTensor* lr_in = c.in(2);
  // Without elements there is nothing to update, but a step input is still checked (the
  // reference refuses an invalid one whatever the size): one block that only checks.
  if (n == 0 && step_in == nullptr) return;
  adam_args a{};
  // The params' step and lr (replaced in the kernel by the inputs when given).
  const double step = static_cast<double>(p.step);
  a.lr = static_cast<float>(p.lr);
  a.bc1 = static_cast<float>(1.0 - std::pow(p.beta1, step));
  a.bc2 = static_cast<float>(1.0 - std::pow(p.beta2, step));
  a.decay = static_cast<float>(1.0 - p.lr * p.weight_decay);
  a.beta1 = static_cast<float>(p.beta1);
  a.beta2 = static_cast<float>(p.beta2);
  a.ob1 = static_cast<float>(1.0 - p.beta1);
  a.ob2 = static_cast<float>(1.0 - p.beta2);
  a.eps = static_cast<float>(p.epsilon);
  a.wd = static_cast<float>(p.weight_decay);
  a.beta1d = p.beta1;
  a.beta2d = p.beta2;
  a.wdd = p.weight_decay;
  a.adamw = p.adamw;
  adam_kernel<<<adam_blocks(s, n), kThreads, 0, s.handle>>>(
      data_ptr<const float>(*c.in(0)), data_ptr<float>(param), data_ptr<float>(*c.out(1)),
      data_ptr<float>(*c.out(2)), n, a,
      step_in != nullptr ? data_ptr<const float>(*step_in) : nullptr,
      lr_in != nullptr ? data_ptr<const float>(*lr_in) : nullptr, s.kernel_errors());
  NNP_CUDA_CHECK_LAUNCH();
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kOptimOps[] = {
    {NNP_OP_SGD_UPDATE,  kit::f32,         on_stream<op_sgd>},
    {NNP_OP_ADAM_UPDATE, kit::f32,         on_stream<op_adam>},
};
// clang-format on
extern const kit::op_row_list kOptimRows = kit::row_list(kOptimOps);

}  // namespace nnp::cuda
