// norm.cu — own kernels for batch normalisation (training, inference, backward; per channel over
// N, H, W as cuDNN's spatial mode; both running-variance rules of running_var_rule) and layer
// normalisation (forward, backward; ONNX). Both in float32, float16 and bfloat16: the statistics
// (and batch norm's per-channel scale, bias and gradients) are float32 in every dtype by the op
// table's accumulation rule, and 16-bit values are widened to float32 and rounded once. Statistics
// are two-pass (mean, then centred variance) in float32 with one block per channel (batch norm) or
// per row (layer norm) and shuffle-tree reductions; outputs are written in the same kernel. The
// formulas keep the reference's terms (backends/reference/norm.cpp), so non-finite inputs give its
// classes: y = (x - mean) * a + bias, never x * a + (bias - mean * a), which is inf - inf = NaN for
// an infinite scale; and the layer-norm gradient's g - mean(g) cancels exactly where it should
// (products rounded once).
#include "common.cuh"

#include <cmath>

namespace nnp::cuda {
namespace {

// x viewed as [N, C, HW]; element j of channel c (j in [0, N*HW)) is at
// (j / HW) * C * HW + c * HW + j % HW.
struct channel_view {
  int64_t N, C, HW;
  __device__ __forceinline__ int64_t at(int64_t c, int64_t j) const {
    return (j / HW) * C * HW + c * HW + j % HW;
  }
  __host__ __device__ __forceinline__ int64_t M() const { return N * HW; }
};

// One channel of batch-norm training, by the whole block. T is float, half or bf16 (x and y);
// the per-channel tensors are float32 in every dtype (the op table's accumulation rule).
// running_var_rule (var_rule): 0 updates the running variance with the unbiased var * M / (M - 1)
// (M = 1: var), 1 with the population var (ONNX).
template <typename T>
__device__ void bn_train_channel(const T* x, const float* scale, const float* bias, T* y,
                                 float* running_mean, float* running_var, float* saved_mean,
                                 float* saved_inv_std, channel_view v, float eps, float momentum,
                                 int var_rule, int64_t c) {
  const int64_t M = v.M();
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < M; j += blockDim.x) sum += to_f(x[v.at(c, j)]);
  const float mean = block_reduce(sum, sum_op(), 0.0f) / static_cast<float>(M);
  float sq = 0.0f;
  for (int64_t j = threadIdx.x; j < M; j += blockDim.x) {
    const float d = to_f(x[v.at(c, j)]) - mean;
    sq += d * d;
  }
  const float var = block_reduce(sq, sum_op(), 0.0f) / static_cast<float>(M);
  const float inv_std = 1.0f / sqrtf(var + eps);
  // (x - mean) * (scale * inv_std) + bias: the formula's terms. Folding the mean into the bias
  // (x * a + (bias - mean * a)) gives inf - inf = NaN for an infinite scale where the formula
  // gives +-inf.
  const float a = scale[c] * inv_std, b = bias[c];
  for (int64_t j = threadIdx.x; j < M; j += blockDim.x) {
    const int64_t k = v.at(c, j);
    y[k] = from_f<T>((to_f(x[k]) - mean) * a + b);
  }
  if (threadIdx.x == 0) {
    saved_mean[c] = mean;
    saved_inv_std[c] = inv_std;
    const float unbiased =
        M > 1 && var_rule == 0 ? var * static_cast<float>(M) / static_cast<float>(M - 1) : var;
    running_mean[c] = momentum * running_mean[c] + (1.0f - momentum) * mean;
    running_var[c] = momentum * running_var[c] + (1.0f - momentum) * unbiased;
  }
}

// Channels in a grid-stride loop (one block per channel; C may pass the grid's limit).
template <typename T>
__global__ void bn_train_kernel(const T* x, const float* scale, const float* bias, T* y,
                                float* running_mean, float* running_var, float* saved_mean,
                                float* saved_inv_std, channel_view v, float eps, float momentum,
                                int var_rule) {
  for (int64_t c = blockIdx.x; c < v.C; c += gridDim.x)
    bn_train_channel(x, scale, bias, y, running_mean, running_var, saved_mean, saved_inv_std, v,
                     eps, momentum, var_rule, c);
}

template <typename T>
__global__ void bn_inference_kernel(const T* x, const float* scale, const float* bias,
                                    const float* mean, const float* var, T* y, int64_t n, int64_t C,
                                    int64_t HW, float eps) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = (i / HW) % C;
    const float inv_std = 1.0f / sqrtf(var[c] + eps);
    y[i] = from_f<T>(scale[c] * (to_f(x[i]) - mean[c]) * inv_std + bias[c]);
  }
}

// One channel of the batch-norm backward, by the whole block.
template <typename T>
__device__ void bn_backward_channel(const T* x, const T* dy, const float* scale,
                                    const float* saved_mean, const float* saved_inv_std, T* dx,
                                    float* dscale, float* dbias, channel_view v, int64_t c) {
  const int64_t M = v.M();
  const float mean = saved_mean[c], inv_std = saved_inv_std[c];
  float sdy = 0.0f, sdyx = 0.0f;
  for (int64_t j = threadIdx.x; j < M; j += blockDim.x) {
    const int64_t k = v.at(c, j);
    const float g = to_f(dy[k]);
    sdy += g;
    sdyx += g * (to_f(x[k]) - mean) * inv_std;
  }
  const float db = block_reduce(sdy, sum_op(), 0.0f);
  const float ds = block_reduce(sdyx, sum_op(), 0.0f);
  const float Mf = static_cast<float>(M);
  const float k0 = scale[c] * inv_std / Mf;
  for (int64_t j = threadIdx.x; j < M; j += blockDim.x) {
    const int64_t k = v.at(c, j);
    const float xhat = (to_f(x[k]) - mean) * inv_std;
    dx[k] = from_f<T>(k0 * (Mf * to_f(dy[k]) - db - xhat * ds));
  }
  if (threadIdx.x == 0) {
    dscale[c] = ds;
    dbias[c] = db;
  }
}

template <typename T>
__global__ void bn_backward_kernel(const T* x, const T* dy, const float* scale,
                                   const float* saved_mean, const float* saved_inv_std, T* dx,
                                   float* dscale, float* dbias, channel_view v) {
  for (int64_t c = blockIdx.x; c < v.C; c += gridDim.x)
    bn_backward_channel(x, dy, scale, saved_mean, saved_inv_std, dx, dscale, dbias, v, c);
}

// ---- layer norm: rows of length I, contiguous
// ----------------------------------------------------
// T is float, half or bf16 (x, scale, bias, y); the statistics are float32 in every dtype (the
// op table's accumulation rule), computed in float32, and y is rounded once to T.
template <typename T>
__global__ void ln_forward_kernel(const T* x, const T* scale, const T* bias, T* y, float* mean_out,
                                  float* inv_std_out, int64_t rows, int64_t I, float eps) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * I;
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < I; j += blockDim.x) sum += to_f(xr[j]);
    const float mean = block_reduce(sum, sum_op(), 0.0f) / static_cast<float>(I);
    float sq = 0.0f;
    for (int64_t j = threadIdx.x; j < I; j += blockDim.x) {
      const float d = to_f(xr[j]) - mean;
      sq += d * d;
    }
    const float var = block_reduce(sq, sum_op(), 0.0f) / static_cast<float>(I);
    const float inv_std = 1.0f / sqrtf(var + eps);
    for (int64_t j = threadIdx.x; j < I; j += blockDim.x)
      y[r * I + j] = from_f<T>((to_f(xr[j]) - mean) * inv_std * to_f(scale[j]) +
                               (bias != nullptr ? to_f(bias[j]) : 0.0f));
    if (threadIdx.x == 0) {
      if (mean_out != nullptr) mean_out[r] = mean;
      if (inv_std_out != nullptr) inv_std_out[r] = inv_std;
    }
  }
}

// dx = inv_std * ((g - mean(g)) - xhat * mean(g * xhat)), g = dy * scale. g is rounded once
// (__fmul_rn: never contracted into an FMA) and the same in both loops, so g - mean(g) is exactly
// 0 where the row's g are all equal (a row of one element: dx = 0 exactly, as the reference);
// an FMA of dy * scale - mean(g) would leave the product's rounding error, times inv_std.
template <typename T>
__global__ void ln_backward_dx_kernel(const T* x, const T* dy, const T* scale, const float* mean,
                                      const float* inv_std, T* dx, int64_t rows, int64_t I) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float mu = mean[r], is = inv_std[r];
    float sg = 0.0f, sgx = 0.0f;
    for (int64_t j = threadIdx.x; j < I; j += blockDim.x) {
      const float g = __fmul_rn(to_f(dy[r * I + j]), to_f(scale[j]));
      sg += g;
      sgx += g * ((to_f(x[r * I + j]) - mu) * is);
    }
    const float mg = block_reduce(sg, sum_op(), 0.0f) / static_cast<float>(I);
    const float mgx = block_reduce(sgx, sum_op(), 0.0f) / static_cast<float>(I);
    for (int64_t j = threadIdx.x; j < I; j += blockDim.x) {
      const float xhat = (to_f(x[r * I + j]) - mu) * is;
      const float g = __fmul_rn(to_f(dy[r * I + j]), to_f(scale[j]));
      dx[r * I + j] = from_f<T>(is * ((g - mg) - xhat * mgx));
    }
  }
}

// dscale[j] = sum_r dy * xhat, dbias[j] = sum_r dy, in two deterministic passes (no atomics):
// pass 1, a grid of (column tiles of 32) x (row chunks), block 32 x 8: each block sums its
// chunk's rows for its 32 columns (coalesced over j; 8 rows in flight per column) and writes one
// partial per column and chunk; pass 2 adds the chunks' partials per column in a fixed order. A
// single thread per column looping over all rows (rows = 2176 in the vit) was latency-bound.
constexpr int kLnColumns = 32, kLnRowsInFlight = 8;
template <typename T>
__global__ void ln_backward_params_partial_kernel(const T* x, const T* dy, const float* mean,
                                                  const float* inv_std, float* part_ds,
                                                  float* part_db, int64_t rows, int64_t I,
                                                  int64_t rows_per_chunk) {
  __shared__ float sds[kLnRowsInFlight][kLnColumns + 1], sdb[kLnRowsInFlight][kLnColumns + 1];
  const int64_t j = int64_t{blockIdx.x} * kLnColumns + threadIdx.x;
  const int64_t chunk = blockIdx.y;
  const int64_t r0 = chunk * rows_per_chunk;
  const int64_t r1 = r0 + rows_per_chunk < rows ? r0 + rows_per_chunk : rows;
  float ds = 0.0f, db = 0.0f;
  if (j < I) {
    auto add_row = [&](float g, float xv, float mu, float is) {
      ds += g * ((xv - mu) * is);
      db += g;
    };
    int64_t r = r0 + threadIdx.y;
    // Two rows' loads in flight before their (in-order) accumulation.
    for (; r + kLnRowsInFlight < r1; r += 2 * kLnRowsInFlight) {
      const int64_t r2 = r + kLnRowsInFlight;
      const float g0 = to_f(dy[r * I + j]), x0 = to_f(x[r * I + j]), m0 = mean[r], s0 = inv_std[r];
      const float g1 = to_f(dy[r2 * I + j]), x1 = to_f(x[r2 * I + j]), m1 = mean[r2],
                  s1 = inv_std[r2];
      add_row(g0, x0, m0, s0);
      add_row(g1, x1, m1, s1);
    }
    for (; r < r1; r += kLnRowsInFlight)
      add_row(to_f(dy[r * I + j]), to_f(x[r * I + j]), mean[r], inv_std[r]);
  }
  sds[threadIdx.y][threadIdx.x] = ds;
  sdb[threadIdx.y][threadIdx.x] = db;
  __syncthreads();
  if (threadIdx.y == 0 && j < I) {
    for (int k = 1; k < kLnRowsInFlight; ++k) {
      ds += sds[k][threadIdx.x];
      db += sdb[k][threadIdx.x];
    }
    part_ds[chunk * I + j] = ds;
    part_db[chunk * I + j] = db;
  }
}

// Pass 2: a warp per column adds its chunks' partials in a fixed order (warp_combine_strided);
// a thread per column walking them one load after the other was a chain of 34 load latencies.
template <typename T>
__global__ void ln_backward_params_final_kernel(const float* part_ds, const float* part_db,
                                                T* dscale, T* dbias, int64_t chunks, int64_t I) {
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x >> 5);
  for (int64_t j = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) >> 5; j < I; j += warps) {
    const float ds = warp_combine_strided(part_ds + j, chunks, I, sum_op(), 0.0f);
    const float db = warp_combine_strided(part_db + j, chunks, I, sum_op(), 0.0f);
    if ((threadIdx.x & 31) != 0) continue;
    dscale[j] = from_f<T>(ds);
    if (dbias != nullptr) dbias[j] = from_f<T>(db);
  }
}

channel_view view_of(const DLTensor& x) {
  channel_view v{x.shape[0], x.shape[1], 1};
  for (int d = 2; d < x.ndim; ++d) v.HW *= x.shape[d];
  return v;
}

float* f32(const DLTensor* t) { return t != nullptr ? data_ptr<float>(*t) : nullptr; }
template <typename T>
T* typed(const DLTensor* t) {
  return t != nullptr ? data_ptr<T>(*t) : nullptr;
}

// Blocks for the per-channel kernels: one per channel up to 2^20 (they loop over the rest).
unsigned channel_blocks(int64_t C) {
  return static_cast<unsigned>(C < (int64_t{1} << 20) ? C : (int64_t{1} << 20));
}

// Layer norm's x as rows (the axes before p.axis) of I elements (the axes from p.axis on).
struct ln_rows {
  int64_t rows, I;
};

ln_rows ln_rows_of(const DLTensor& x, const nnp_layer_norm_params& p) {
  const int axis = normalize_axis(p.axis, x.ndim);
  if (axis < 0)
    fail(NNP_STATUS_INVALID_ARGUMENT, format("layer norm axis %d out of range", p.axis));
  ln_rows r{1, 1};
  for (int d = 0; d < axis; ++d) r.rows *= x.shape[d];
  for (int d = axis; d < x.ndim; ++d) r.I *= x.shape[d];
  return r;
}

// Blocks for the per-row kernels: one per row up to 2^20 (they loop over the rest).
unsigned ln_blocks(int64_t rows) {
  return static_cast<unsigned>(rows < (1 << 20) ? rows : (1 << 20));
}

// One block per row, as many warps as the row fills (up to kThreads): a short row (the vit's
// 64) leaves no idle warps waiting at the block reductions.
int ln_threads(int64_t I) {
  return I >= kThreads ? kThreads : I <= 32 ? 32 : static_cast<int>((I + 31) / 32 * 32);
}

}  // namespace

void op_batch_norm_forward_training(stream& s, const op_call& c) {
  const auto p = read_params<nnp_batch_norm_params>(c.params);
  const channel_view v = view_of(*c.in(0));
  if (v.C == 0) return;
  // M = 0 runs too: the kernel's sums over no element give 0/0 = NaN statistics and running
  // values (docs/ops.md), and its loops over M do nothing.
  dispatch_float(elem_of(c.in(0)->dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    bn_train_kernel<T><<<channel_blocks(v.C), kThreads, 0, s.handle>>>(
        typed<T>(c.in(0)), f32(c.in(1)), f32(c.in(2)), typed<T>(c.out(0)), f32(c.out(1)),
        f32(c.out(2)), f32(c.out(3)), f32(c.out(4)), v, static_cast<float>(p.epsilon),
        static_cast<float>(p.momentum), p.running_var_rule);
    NNP_CUDA_CHECK_LAUNCH();
  });
}

void op_batch_norm_forward_inference(stream& s, const op_call& c) {
  const auto p = read_params<nnp_batch_norm_params>(c.params);
  const DLTensor& x = *c.in(0);
  const channel_view v = view_of(x);
  const int64_t n = numel(x);  // 0 also when C = 0
  if (n == 0) return;
  dispatch_float(elem_of(x.dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    bn_inference_kernel<T><<<grid_for(n), kThreads, 0, s.handle>>>(
        typed<T>(c.in(0)), f32(c.in(1)), f32(c.in(2)), f32(c.in(3)), f32(c.in(4)),
        typed<T>(c.out(0)), n, v.C, v.HW, static_cast<float>(p.epsilon));
    NNP_CUDA_CHECK_LAUNCH();
  });
}

void op_batch_norm_backward(stream& s, const op_call& c) {
  const channel_view v = view_of(*c.in(0));
  if (v.C == 0) return;
  dispatch_float(elem_of(c.in(0)->dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    bn_backward_kernel<T><<<channel_blocks(v.C), kThreads, 0, s.handle>>>(
        typed<T>(c.in(0)), typed<T>(c.in(1)), f32(c.in(2)), f32(c.in(3)), f32(c.in(4)),
        typed<T>(c.out(0)), f32(c.out(1)), f32(c.out(2)), v);
    NNP_CUDA_CHECK_LAUNCH();
  });
}

void op_layer_norm_forward(stream& s, const op_call& c) {
  const auto p = read_params<nnp_layer_norm_params>(c.params);
  const ln_rows shape = ln_rows_of(*c.in(0), p);
  const int64_t rows = shape.rows, I = shape.I;  // (a lambda cannot capture structured bindings)
  // I = 0: the kernel writes NaN statistics (0/0, docs/ops.md) and no y.
  const bool nan_stats = rows > 0 && I == 0 && (c.out(1) != nullptr || c.out(2) != nullptr);
  if ((rows == 0 || I == 0) && !nan_stats) return;  // nothing to normalise
  dispatch_float(elem_of(c.in(0)->dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    ln_forward_kernel<T><<<ln_blocks(rows), ln_threads(I), 0, s.handle>>>(
        typed<T>(c.in(0)), typed<T>(c.in(1)), typed<T>(c.in(2)), typed<T>(c.out(0)), f32(c.out(1)),
        f32(c.out(2)), rows, I, static_cast<float>(p.epsilon));
    NNP_CUDA_CHECK_LAUNCH();
  });
}

void op_layer_norm_backward(stream& s, const op_call& c) {
  const auto p = read_params<nnp_layer_norm_params>(c.params);
  const ln_rows shape = ln_rows_of(*c.in(0), p);
  const int64_t rows = shape.rows, I = shape.I;
  const size_t elem_bytes = static_cast<size_t>(c.in(0)->dtype.bits / 8);
  if (rows == 0 || I == 0) {
    // Nothing to normalise; parameter gradients of an empty batch are zero (all-zero bits in
    // every float dtype).
    if (I > 0) {
      NNP_CUDA_CHECK(cudaMemsetAsync(typed<char>(c.out(1)), 0, elem_bytes * I, s.handle));
      if (c.out(2) != nullptr)
        NNP_CUDA_CHECK(cudaMemsetAsync(typed<char>(c.out(2)), 0, elem_bytes * I, s.handle));
    }
    return;
  }
  // Row chunks of at least 64 rows, at most 256 chunks, and at most 2^16 - 1 (gridDim.y).
  int64_t chunks = rows / 64;
  if (chunks < 1) chunks = 1;
  if (chunks > 256) chunks = 256;
  const int64_t rows_per_chunk = (rows + chunks - 1) / chunks;
  chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
  const int64_t tiles = (I + kLnColumns - 1) / kLnColumns;
  if (tiles > INT32_MAX) unsupported("layer_norm_backward: more than 2^31 column tiles");
  float* part = static_cast<float*>(
      s.scratch(kScratchTemp0, sizeof(float) * 2 * static_cast<size_t>(chunks * I)));
  dispatch_float(elem_of(c.in(0)->dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    ln_backward_dx_kernel<T><<<ln_blocks(rows), ln_threads(I), 0, s.handle>>>(
        typed<T>(c.in(0)), typed<T>(c.in(1)), typed<T>(c.in(2)), f32(c.in(3)), f32(c.in(4)),
        typed<T>(c.out(0)), rows, I);
    NNP_CUDA_CHECK_LAUNCH();
    ln_backward_params_partial_kernel<T>
        <<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(chunks)),
           dim3(kLnColumns, kLnRowsInFlight), 0, s.handle>>>(
            typed<T>(c.in(0)), typed<T>(c.in(1)), f32(c.in(3)), f32(c.in(4)), part,
            part + chunks * I, rows, I, rows_per_chunk);
    NNP_CUDA_CHECK_LAUNCH();
    ln_backward_params_final_kernel<T><<<grid_for(I * 32), kThreads, 0, s.handle>>>(
        part, part + chunks * I, typed<T>(c.out(1)), typed<T>(c.out(2)), chunks, I);
    NNP_CUDA_CHECK_LAUNCH();
  });
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kNormOps[] = {
    {NNP_OP_BATCH_NORM_FORWARD_TRAINING,  kHalfFloats,       on_stream<op_batch_norm_forward_training>},
    {NNP_OP_BATCH_NORM_FORWARD_INFERENCE, kHalfFloats,       on_stream<op_batch_norm_forward_inference>},
    {NNP_OP_BATCH_NORM_BACKWARD,          kHalfFloats,       on_stream<op_batch_norm_backward>},
    {NNP_OP_LAYER_NORM_FORWARD,           kHalfFloats,       on_stream<op_layer_norm_forward>},
    {NNP_OP_LAYER_NORM_BACKWARD,          kHalfFloats,       on_stream<op_layer_norm_backward>},
};
// clang-format on
extern const kit::op_row_list kNormRows = kit::row_list(kNormOps);

}  // namespace nnp::cuda
