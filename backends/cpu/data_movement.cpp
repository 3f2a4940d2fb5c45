// Data-movement ops of the cpu backend (ABI 1.2): concat, split, slice, slice_backward, gather
// (any dtype: whole elements are moved as bytes) and gather_backward (float32).
//
// Speed: every op is cut into contiguous runs that are moved with memcpy (rows of the tensor
// around the axis; for slice, the innermost sliced dimension merged with the full dimensions
// after it), and parallel_for spreads the runs over the device arena with about
// kBytesPerTask bytes per task; a single huge run (concat or split along axis 0) is itself
// cut into chunks. slice walks its rows like an odometer; slice_backward writes each row of dx
// once (zeros, then the row's blocks of dy) instead of a zero pass and a scatter pass.
// gather_backward is a deterministic scatter-add: a stable counting sort of
// the indices gives each row of dx its contributions in the order of indices, and the rows of
// dx are summed in parallel, each written once (no zero pass, no atomics).
#include "cpu_backend.hpp"

#include <nnplug/kit/data_movement.hpp>

#include <algorithm>
#include <vector>

namespace nnp::cpu {
namespace {

constexpr int64_t kBytesPerTask = 256 * 1024;

// data + byte_offset as nnp::data_ptr computes it (NULL stays NULL; integer arithmetic).
char* bytes_of(const DLTensor& t) { return nnp::data_ptr<char>(t); }

int64_t product(const DLTensor& t, int begin, int end) {
  int64_t n = 1;
  for (int i = begin; i < end; ++i) n *= t.shape[i];
  return n;
}

// Grain (in items) for items of `item_bytes` bytes each.
int64_t grain_for(int64_t item_bytes) {
  return std::max<int64_t>(1, kBytesPerTask / std::max<int64_t>(item_bytes, 1));
}

// memcpy of n bytes, split over the arena when large.
void parallel_memcpy(char* dst, const char* src, int64_t n) {
  if (n <= 0) return;
  const int64_t chunks = (n + kBytesPerTask - 1) / kBytesPerTask;
  parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
    const int64_t lo = b * kBytesPerTask, hi = std::min(n, e * kBytesPerTask);
    std::memcpy(dst + lo, src + lo, static_cast<size_t>(hi - lo));
  });
}

// Moves `rows` rows between a tensor cut into [outer, big_mid * inner] rows and a part of it
// [outer, part_mid * inner] that starts at `at` along the middle dimension: to_part = true
// copies big -> part (split), false part -> big (concat).
void move_part(char* big, int64_t big_mid, char* part, int64_t part_mid, int64_t at, int64_t outer,
               int64_t inner, size_t size, bool to_part) {
  const int64_t run = part_mid * inner * int64_t(size);
  if (run == 0 || outer == 0) return;
  auto big_row = [&](int64_t o) { return big + ((o * big_mid + at) * inner) * int64_t(size); };
  if (outer == 1) {
    if (to_part)
      parallel_memcpy(part, big_row(0), run);
    else
      parallel_memcpy(big_row(0), part, run);
    return;
  }
  parallel_for(outer, grain_for(run), [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      char* br = big_row(o);
      char* pr = part + o * run;
      std::memcpy(to_part ? pr : br, to_part ? br : pr, static_cast<size_t>(run));
    }
  });
}

// y[j] = x[j * stride] for j < n, elements of `size` bytes.
template <typename T>
void gather_strided_t(char* y, const char* x, int64_t n, int64_t stride) {
  T* yt = reinterpret_cast<T*>(y);
  const T* xt = reinterpret_cast<const T*>(x);
  for (int64_t j = 0; j < n; ++j) yt[j] = xt[j * stride];
}
template <typename T>
void scatter_strided_t(char* x, const char* y, int64_t n, int64_t stride) {
  T* xt = reinterpret_cast<T*>(x);
  const T* yt = reinterpret_cast<const T*>(y);
  for (int64_t j = 0; j < n; ++j) xt[j * stride] = yt[j];
}
// to_y: y[j] = x[j*stride]; else x[j*stride] = y[j].
void strided_run(char* y, char* x, int64_t n, int64_t stride, size_t size, bool to_y) {
  switch (size) {
    case 1:
      return to_y ? gather_strided_t<uint8_t>(y, x, n, stride)
                  : scatter_strided_t<uint8_t>(x, y, n, stride);
    case 2:
      return to_y ? gather_strided_t<uint16_t>(y, x, n, stride)
                  : scatter_strided_t<uint16_t>(x, y, n, stride);
    case 4:
      return to_y ? gather_strided_t<uint32_t>(y, x, n, stride)
                  : scatter_strided_t<uint32_t>(x, y, n, stride);
    case 8:
      return to_y ? gather_strided_t<uint64_t>(y, x, n, stride)
                  : scatter_strided_t<uint64_t>(x, y, n, stride);
    default:
      for (int64_t j = 0; j < n; ++j) {
        char* xe = x + j * stride * int64_t(size);
        char* ye = y + j * int64_t(size);
        std::memcpy(to_y ? ye : xe, to_y ? xe : ye, size);
      }
  }
}

// The slice of x (shape X) as rows: dimensions after k are kept whole and merge into blocks of
// `inner` elements; a row is one index of dims 0..k-1 and holds count_k blocks.
struct slice_rows {
  int k = -1;  // the last dimension the slice does not keep whole (-1: the identity)
  int64_t inner = 1, total = 0, rows = 0, row_elems = 0;
  int64_t xstride[NNP_MAX_DIMS] = {};
};
slice_rows rows_of(const DLTensor& X, const nnp::slice_dim* dims) {
  slice_rows s;
  s.total = 1;
  for (int d = 0; d < X.ndim; ++d) s.total *= dims[d].count;
  s.k = X.ndim - 1;
  while (s.k >= 0 && dims[s.k].start == 0 && dims[s.k].step == 1 && dims[s.k].count == X.shape[s.k])
    s.inner *= X.shape[s.k--];
  int64_t st = 1;
  for (int d = X.ndim - 1; d >= 0; --d) {
    s.xstride[d] = st;
    st *= X.shape[d];
  }
  if (s.k >= 0 && s.total > 0) {
    s.row_elems = dims[s.k].count * s.inner;
    s.rows = s.total / s.row_elems;
  }
  return s;
}

// Copies the count_k blocks of one row between x (at element xo) and y (at element yo).
void move_row(const slice_rows& s, const nnp::slice_dim& dk, char* x, int64_t xo, char* y,
              int64_t yo, size_t size, bool to_y) {
  const int64_t esize = int64_t(size);
  char* yr = y + yo * esize;
  char* xr = x + xo * esize;
  if (dk.step == 1) {
    std::memcpy(to_y ? yr : xr, to_y ? xr : yr, static_cast<size_t>(s.row_elems * esize));
  } else if (s.inner == 1) {
    strided_run(yr, xr, dk.count, dk.step, size, to_y);
  } else {
    const int64_t block = s.inner * esize;
    for (int64_t j = 0; j < dk.count; ++j) {
      char* yb = yr + j * block;
      char* xb = xr + j * dk.step * s.inner * esize;
      std::memcpy(to_y ? yb : xb, to_y ? xb : yb, static_cast<size_t>(block));
    }
  }
}

// y = x[slice]: rows of y in parallel; each task finds its first row's x offset once, then
// steps through the rows like an odometer over dims 0..k-1.
void slice_forward(const DLTensor& X, const nnp::slice_dim* dims, char* x, char* y) {
  const size_t size = dtype_size(X.dtype);
  const slice_rows s = rows_of(X, dims);
  if (s.total == 0) return;
  if (s.k < 0) return parallel_memcpy(y, x, s.total * int64_t(size));
  const int k = s.k;
  parallel_for(s.rows, grain_for(s.row_elems * int64_t(size)), [&](int64_t b, int64_t e) {
    int64_t j[NNP_MAX_DIMS] = {}, rest = b, xo = dims[k].start * s.xstride[k];
    for (int d = k - 1; d >= 0; --d) {
      j[d] = rest % dims[d].count;
      rest /= dims[d].count;
      xo += (dims[d].start + j[d] * dims[d].step) * s.xstride[d];
    }
    for (int64_t r = b; r < e; ++r) {
      move_row(s, dims[k], x, xo, y, r * s.row_elems, size, /*to_y=*/true);
      for (int d = k - 1; d >= 0; --d) {  // next row
        xo += dims[d].step * s.xstride[d];
        if (++j[d] < dims[d].count) break;
        xo -= dims[d].count * dims[d].step * s.xstride[d];
        j[d] = 0;
      }
    }
  });
}

// dx = 0 except dx[slice] = dy, in one pass: dx's own rows (index of dims 0..k-1, each
// shape[k] * inner elements) in parallel; a row the slice does not touch is zeroed, a row it
// touches is zeroed and then gets its count_k blocks of dy, while it is in cache.
void slice_scatter(const DLTensor& DX, const nnp::slice_dim* dims, char* dx, char* dy) {
  const size_t size = dtype_size(DX.dtype);
  const int64_t esize = int64_t(size);
  const slice_rows s = rows_of(DX, dims);
  const int64_t n = numel(DX);
  if (n == 0) return;
  if (s.k < 0) return parallel_memcpy(dx, dy, n * esize);
  const int k = s.k;
  const int64_t dx_row = DX.shape[k] * s.inner;  // elements of one dx row
  const int64_t dx_rows = n / dx_row;
  parallel_for(dx_rows, grain_for(dx_row * esize), [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      char* row = dx + p * dx_row * esize;
      std::memset(row, 0, static_cast<size_t>(dx_row * esize));  // zero bytes: 0 in any dtype
      if (s.total == 0) continue;
      // p's index along dims 0..k-1 -> dy's row, if the slice reads from this row.
      int64_t rest = p, r = 0, scale = 1;
      bool in = true;
      for (int d = k - 1; d >= 0 && in; --d) {
        const int64_t i = rest % DX.shape[d], off = i - dims[d].start;
        rest /= DX.shape[d];
        const int64_t jd = off / dims[d].step;
        in = off % dims[d].step == 0 && jd >= 0 && jd < dims[d].count;
        r += jd * scale;
        scale *= dims[d].count;
      }
      if (in)
        move_row(s, dims[k], row, dims[k].start * s.inner, dy, r * s.row_elems, size,
                 /*to_y=*/false);
    }
  });
}

}  // namespace

namespace {

// Concat (the parts are the inputs, the whole the output) or split (the other way round): part k
// covers rows [at, at + its extent) of the whole along the axis.
void move_parts(const op_call& c, int32_t axis_param, bool to_part) {
  const DLTensor& W = to_part ? *c.in(0) : *c.out(0);
  const size_t parts = to_part ? c.n_outputs : c.n_inputs;
  const int axis = normalize_axis(axis_param, W.ndim);
  const int64_t outer = product(W, 0, axis), inner = product(W, axis + 1, W.ndim);
  const size_t size = dtype_size(W.dtype);
  int64_t at = 0;
  for (size_t k = 0; k < parts; ++k) {
    const DLTensor& P = to_part ? *c.out(k) : *c.in(k);
    move_part(bytes_of(W), W.shape[axis], bytes_of(P), P.shape[axis], at, outer, inner, size,
              to_part);
    at += P.shape[axis];
  }
}

}  // namespace

void concat(const op_call& c) {
  move_parts(c, c.params_as<nnp_concat_params>().axis, /*to_part=*/false);
}

void split(const op_call& c) {
  move_parts(c, c.params_as<nnp_split_params>().axis, /*to_part=*/true);
}

void slice(const op_call& c) {
  const DLTensor& X = *c.in(0);
  nnp::slice_dim dims[NNP_MAX_DIMS];
  nnp::resolve_slice(c.params_as<nnp_slice_params>(), X.ndim, X.shape, dims, nullptr);
  slice_forward(X, dims, bytes_of(X), bytes_of(*c.out(0)));
}

void slice_backward(const op_call& c) {
  const DLTensor& DX = *c.out(0);
  nnp::slice_dim dims[NNP_MAX_DIMS];
  nnp::resolve_slice(c.params_as<nnp_slice_params>(), DX.ndim, DX.shape, dims, nullptr);
  slice_scatter(DX, dims, bytes_of(DX), bytes_of(*c.in(0)));
}

void gather(const op_call& c) {
  const DLTensor &D = *c.in(0), &I = *c.in(1), &Y = *c.out(0);
  const int axis = normalize_axis(c.params_as<nnp_gather_params>().axis, D.ndim);
  const int64_t outer = product(D, 0, axis), mid = D.shape[axis];
  const int64_t inner = product(D, axis + 1, D.ndim), n = numel(I);
  const int64_t* idx = data_ptr<const int64_t>(I);
  nnp::check_gather_indices("gather", idx, n, mid);
  const int64_t run = inner * int64_t(dtype_size(D.dtype));
  if (run == 0) return;
  const char* d = bytes_of(D);
  char* y = bytes_of(Y);
  parallel_for(outer * n, grain_for(run), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t o = r / n, k = r % n;
      const int64_t row = idx[k] < 0 ? idx[k] + mid : idx[k];
      std::memcpy(y + r * run, d + (o * mid + row) * run, static_cast<size_t>(run));
    }
  });
}

void gather_backward(const op_call& c) {
  const DLTensor &DY = *c.in(0), &I = *c.in(1), &DX = *c.out(0);
  const int axis = normalize_axis(c.params_as<nnp_gather_params>().axis, DX.ndim);
  const int64_t outer = product(DX, 0, axis), mid = DX.shape[axis];
  const int64_t inner = product(DX, axis + 1, DX.ndim), n = numel(I);
  const int64_t* idx = data_ptr<const int64_t>(I);
  nnp::check_gather_indices("gather_backward", idx, n, mid);
  // Stable counting sort: order[first[r] .. first[r+1]) = the k with idx(k) = r, ascending.
  std::vector<int64_t> first(static_cast<size_t>(mid) + 1, 0), order(static_cast<size_t>(n));
  auto row_of = [&](int64_t k) { return idx[k] < 0 ? idx[k] + mid : idx[k]; };
  for (int64_t k = 0; k < n; ++k) ++first[static_cast<size_t>(row_of(k)) + 1];
  for (int64_t r = 0; r < mid; ++r) first[size_t(r) + 1] += first[size_t(r)];
  {
    std::vector<int64_t> next(first.begin(), first.end() - 1);
    for (int64_t k = 0; k < n; ++k) order[static_cast<size_t>(next[size_t(row_of(k))]++)] = k;
  }
  const float* dy = f32(&DY);
  float* dx = f32(&DX);
  parallel_for(outer * mid, grain_for(inner * int64_t(sizeof(float))), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t o = r / mid, row = r % mid;
      float* out = dx + r * inner;
      std::fill(out, out + inner, 0.0f);
      for (int64_t s = first[size_t(row)]; s < first[size_t(row) + 1]; ++s) {
        const float* src = dy + (o * n + order[size_t(s)]) * inner;
        for (int64_t i = 0; i < inner; ++i) out[i] += src[i];
      }
    }
  });
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kDataMovementOps[] = {
    {NNP_OP_CONCAT,          nnp::kit::any,  concat},
    {NNP_OP_SPLIT,           nnp::kit::any,  split},
    {NNP_OP_SLICE,           nnp::kit::any,  slice},
    {NNP_OP_SLICE_BACKWARD,  nnp::kit::any,  slice_backward},
    {NNP_OP_GATHER,          nnp::kit::any,  gather},
    {NNP_OP_GATHER_BACKWARD, kit::f32,            gather_backward},
};
// clang-format on
extern const kit::op_row_list kDataMovementRows = kit::row_list(kDataMovementOps);

}  // namespace nnp::cpu
