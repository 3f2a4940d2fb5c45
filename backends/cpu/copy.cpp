// Strided copies on the CPU: copy (NNP_OP_COPY: any non-negative source strides, 0 repeats an
// element; any non-overlapping destination strides) and transpose (NNP_OP_TRANSPOSE, ONNX
// Transpose with `perm`). Both are one strided copy y[j] = x[offset(j)] of elements of 1, 2, 4
// or 8 bytes of any dtype (whole elements are moved as bits), strides in elements.
//
// Speed: the dimensions are ordered by destination stride (largest first) and coalesced
// (size-1 dimensions dropped, neighbours contiguous in both tensors merged), so the innermost
// dimension is the destination's most contiguous one and as long as possible. Then one of two
// loops, both over work units spread over the device arena with about kCopyBytesPerTask bytes
// of output per task (smaller copies stay on the calling thread):
//  - rows, when the source's innermost stride is 1 or no other dimension reads it more
//    closely: each innermost row is one contiguous copy or an element loop, the row kernel
//    chosen once per call (fixed-size moves for rows of 16 to 128 bytes: the vit's attention
//    transposes move rows of 64 bytes; inline 16-byte moves up to 256 bytes; memcpy beyond).
//    The second-innermost dimension is a counted loop, the ones above it an odometer (one
//    division per dimension per task, then additions). A row longer than a task is cut into
//    pieces;
//  - tiles, when the source's innermost stride is not 1 and another dimension has a smaller
//    source stride (a real transpose, e.g. perm [0, 1, 3, 2] or [1, 0]): that dimension and
//    the innermost one are copied as 2-D blocks, whole when at most kSmallBlockBytes (in L1),
//    else in square tiles of kTileBytes a side (16 x 16 float32), so every cache line a tile
//    touches is used whole. Elements of 2, 4 and 8 bytes with unit strides on both sides go
//    through SSE2 register transposes (8x8, 4x4, 2x2; SSE2 is part of the plugin's x86-64
//    baseline), 1-byte elements and the edges element by element.
// docs/cpu-backend.md has the measured figures.
#include "cpu_backend.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cstring>

namespace nnp::cpu {
namespace {

// Bytes of output per task (the same figure as data_movement.cpp's kBytesPerTask): below it a
// copy runs on the calling thread, where entering the arena would cost more than it saves.
constexpr int64_t kCopyBytesPerTask = 256 * 1024;
// The side of a tile in bytes: one 64-byte cache line of the elements of either tensor.
constexpr int64_t kTileBytes = 64;
// A 2-D block up to this size is copied as one tile (source and destination fit in L1).
constexpr int64_t kSmallBlockBytes = 8 * 1024;

// The coalesced iteration space (iter_shape): dim[i] with source strides st[0][i] and
// destination strides st[1][i], in elements; the last dimension is the innermost.
using copy_plan = iter_shape;

// The dimensions ordered by destination stride, largest first (stable; any order copies the
// same elements, as the destination does not overlap itself or the source), then coalesced.
copy_plan make_plan(const DLTensor& Y, const int64_t* xs, const int64_t* ys) {
  int order[NNP_MAX_DIMS];
  for (int i = 0; i < Y.ndim; ++i) order[i] = i;
  std::stable_sort(order, order + Y.ndim, [&](int a, int b) { return ys[a] > ys[b]; });
  iter_shape s;
  s.rank = Y.ndim;
  for (int k = 0; k < Y.ndim; ++k) {
    s.dim[k] = Y.shape[order[k]];
    s.st[0][k] = xs[order[k]];
    s.st[1][k] = ys[order[k]];
  }
  return coalesce(s, 2);
}

// Copies n bytes between buffers that do not overlap: memcpy when long, else inline moves of
// 16, 8, 4, 2 and 1 bytes (a call to memcpy costs as much as a short row).
inline void copy_bytes(char* d, const char* s, size_t n) {
  if (n > 256) {
    std::memcpy(d, s, n);
    return;
  }
  for (; n >= 16; n -= 16, d += 16, s += 16) std::memcpy(d, s, 16);
  if (n & 8) {
    std::memcpy(d, s, 8);
    d += 8;
    s += 8;
  }
  if (n & 4) {
    std::memcpy(d, s, 4);
    d += 4;
    s += 4;
  }
  if (n & 2) {
    std::memcpy(d, s, 2);
    d += 2;
    s += 2;
  }
  if (n & 1) *d = *s;
}

// Calls row(x_offset, y_offset) (elements) for the rows [b, e) of the plan's outer dimensions
// (all but the innermost, row-major): the second-innermost dimension is a counted loop with its
// strides in registers, the odometer carries the ones above it.
template <typename Row>
inline void for_rows(const copy_plan& p, int64_t b, int64_t e, const Row& row) {
  const int m = p.rank - 2;
  if (m < 0) {  // a single row
    row(int64_t{0}, int64_t{0});
    return;
  }
  const int64_t dm = p.dim[m], xm = p.st[0][m], ym = p.st[1][m];
  odometer w(m, 2, p.dim, p.st, b / dm);
  int64_t i = b % dm;
  for (int64_t r = b; r < e; w.next()) {
    const int64_t cnt = std::min(dm - i, e - r);
    int64_t xo = w.off[0] + i * xm, yo = w.off[1] + i * ym;
    for (int64_t c = 0; c < cnt; ++c, xo += xm, yo += ym) row(xo, yo);
    r += cnt;
    i = 0;
  }
}

// Rows of len elements, in parallel, each row(x_offset, y_offset).
template <typename T, typename Row>
void run_rows(const copy_plan& p, int64_t len, const Row& row) {
  int64_t rows = 1;
  for (int i = 0; i < p.rank - 1; ++i) rows *= p.dim[i];
  const int64_t grain = std::max<int64_t>(1, kCopyBytesPerTask / (len * int64_t(sizeof(T))));
  parallel_for(rows, grain, [&](int64_t b, int64_t e) { for_rows(p, b, e, row); });
}

// Rows: y[i * ty] = x[i * tx] along the innermost dimension, the row kernel chosen once per
// call (fixed-size moves for contiguous rows of 16 to 128 bytes). A row longer than a task is
// cut into pieces of one task each.
// Rows of kBytes each (a size the compiler copies with fixed moves).
template <size_t kBytes, typename T>
void run_fixed_rows(const copy_plan& p, int64_t len, const T* x, T* y) {
  run_rows<T>(p, len, [x, y](int64_t xo, int64_t yo) { std::memcpy(y + yo, x + xo, kBytes); });
}

template <typename T>
void copy_rows(const copy_plan& p, const T* x, T* y) {
  const int last = p.rank - 1;
  const int64_t len = p.dim[last], tx = p.st[0][last], ty = p.st[1][last];
  const int64_t task = std::max<int64_t>(1, kCopyBytesPerTask / int64_t(sizeof(T)));
  if (len > task) {
    int64_t rows = 1;
    for (int i = 0; i < last; ++i) rows *= p.dim[i];
    const int64_t pieces = (len + task - 1) / task;
    parallel_for(rows * pieces, 1, [&](int64_t b, int64_t e) {
      odometer w(last, 2, p.dim, p.st, b / pieces);
      int64_t k = b % pieces;
      for (int64_t u = b; u < e; ++u) {
        const int64_t i0 = k * task, n = std::min(task, len - i0);
        const T* xr = x + w.off[0] + i0 * tx;
        T* yr = y + w.off[1] + i0 * ty;
        if (tx == 1 && ty == 1) {
          std::memcpy(yr, xr, sizeof(T) * static_cast<size_t>(n));
        } else {
          for (int64_t i = 0; i < n; ++i) yr[i * ty] = xr[i * tx];
        }
        if (++k == pieces) {
          k = 0;
          w.next();
        }
      }
    });
    return;
  }
  if (tx == 1 && ty == 1) {
    switch (sizeof(T) * static_cast<size_t>(len)) {
      case 16:
        return run_fixed_rows<16>(p, len, x, y);
      case 32:
        return run_fixed_rows<32>(p, len, x, y);
      case 64:
        return run_fixed_rows<64>(p, len, x, y);
      case 128:
        return run_fixed_rows<128>(p, len, x, y);
      default: {
        const size_t bytes = sizeof(T) * static_cast<size_t>(len);
        return run_rows<T>(p, len, [x, y, bytes](int64_t xo, int64_t yo) {
          copy_bytes(reinterpret_cast<char*>(y + yo), reinterpret_cast<const char*>(x + xo), bytes);
        });
      }
    }
  }
  if (ty == 1) {
    return run_rows<T>(p, len, [x, y, len, tx](int64_t xo, int64_t yo) {
      const T* xr = x + xo;
      T* yr = y + yo;
      for (int64_t i = 0; i < len; ++i) yr[i] = xr[i * tx];
    });
  }
  run_rows<T>(p, len, [x, y, len, tx, ty](int64_t xo, int64_t yo) {
    const T* xr = x + xo;
    T* yr = y + yo;
    for (int64_t i = 0; i < len; ++i) yr[i * ty] = xr[i * tx];
  });
}

#if defined(__SSE2__)
// A block of 16 / sizeof(T) x 16 / sizeof(T) elements through SSE2 registers (rows of 16
// bytes): y[l + k * yk] = x[k + l * xl] for k, l in [0, 16 / sizeof(T)).
inline void transpose_sse(const uint64_t* x, int64_t xl, uint64_t* y, int64_t yk) {
  const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x));
  const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + xl));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(y), _mm_unpacklo_epi64(r0, r1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(y + yk), _mm_unpackhi_epi64(r0, r1));
}
inline void transpose_sse(const uint32_t* x, int64_t xl, uint32_t* y, int64_t yk) {
  __m128i r[4];
  for (int i = 0; i < 4; ++i) r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i * xl));
  const __m128i t0 = _mm_unpacklo_epi32(r[0], r[1]), t1 = _mm_unpackhi_epi32(r[0], r[1]);
  const __m128i t2 = _mm_unpacklo_epi32(r[2], r[3]), t3 = _mm_unpackhi_epi32(r[2], r[3]);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(y), _mm_unpacklo_epi64(t0, t2));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(y + yk), _mm_unpackhi_epi64(t0, t2));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(y + 2 * yk), _mm_unpacklo_epi64(t1, t3));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(y + 3 * yk), _mm_unpackhi_epi64(t1, t3));
}
inline void transpose_sse(const uint16_t* x, int64_t xl, uint16_t* y, int64_t yk) {
  __m128i r[8], a[8], b[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i * xl));
  for (int i = 0; i < 4; ++i) {  // a[2i]: k 0-3 of rows 2i, 2i+1 interleaved; a[2i+1]: k 4-7
    a[2 * i] = _mm_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h) {  // b[4h + j]: k 2j, 2j+1 of rows 4h..4h+3
    b[4 * h + 0] = _mm_unpacklo_epi32(a[4 * h], a[4 * h + 2]);
    b[4 * h + 1] = _mm_unpackhi_epi32(a[4 * h], a[4 * h + 2]);
    b[4 * h + 2] = _mm_unpacklo_epi32(a[4 * h + 1], a[4 * h + 3]);
    b[4 * h + 3] = _mm_unpackhi_epi32(a[4 * h + 1], a[4 * h + 3]);
  }
  for (int j = 0; j < 4; ++j) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + 2 * j * yk),
                     _mm_unpacklo_epi64(b[j], b[4 + j]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + (2 * j + 1) * yk),
                     _mm_unpackhi_epi64(b[j], b[4 + j]));
  }
}
#endif

// One block: y[k * yk + l * yl] = x[k * xk + l * xl] for k in [0, kn), l in [0, ln). With
// elements of 2, 4 or 8 bytes and xk = yl = 1, its 16-byte square sub-blocks go through SSE2
// register transposes and only the edges element by element.
template <typename T>
inline void copy_block(const T* x, int64_t xk, int64_t xl, T* y, int64_t yk, int64_t yl, int64_t kn,
                       int64_t ln) {
  int64_t kv = 0, lv = 0;  // [0, kv) x [0, lv) is done
#if defined(__SSE2__)
  if constexpr (sizeof(T) >= 2) {
    if (xk == 1 && yl == 1) {
      constexpr int64_t kLanes = 16 / int64_t(sizeof(T));
      kv = kn - kn % kLanes;
      lv = ln - ln % kLanes;
      for (int64_t k = 0; k < kv; k += kLanes)
        for (int64_t l = 0; l < lv; l += kLanes)
          transpose_sse(x + k + l * xl, xl, y + k * yk + l, yk);
    }
  }
#endif
  for (int64_t k = 0; k < kn; ++k) {
    const T* xr = x + k * xk;
    T* yr = y + k * yk;
    const int64_t l0 = k < kv ? lv : 0;
    if (yl == 1) {
      for (int64_t l = l0; l < ln; ++l) yr[l] = xr[l * xl];
    } else {
      for (int64_t l = l0; l < ln; ++l) yr[l * yl] = xr[l * xl];
    }
  }
}

// Tiles: dimension kd of the plan (tile rows) and the innermost one (tile columns). A 2-D
// block of at most kSmallBlockBytes is one tile (it sits in L1 whole); a larger one is cut into
// square tiles of kTileBytes a side. The work units are the other dimensions x strips of tile
// rows x pieces of the columns (whole tiles, about one task each).
template <typename T>
void copy_tiles(const copy_plan& p, int kd, const T* x, T* y) {
  const int last = p.rank - 1;
  const int64_t nk = p.dim[kd], nl = p.dim[last];
  const int64_t xk = p.st[0][kd], yk = p.st[1][kd], xl = p.st[0][last], yl = p.st[1][last];
  const bool small = nk * nl * int64_t(sizeof(T)) <= kSmallBlockBytes;
  const int64_t side_k = small ? nk : kTileBytes / int64_t(sizeof(T));
  const int64_t side_l = small ? nl : kTileBytes / int64_t(sizeof(T));
  // The outer walk: the other dimensions, then the strips of kd.
  copy_plan outer;
  for (int i = 0; i < last; ++i) {
    if (i == kd) continue;
    outer.dim[outer.rank] = p.dim[i];
    outer.st[0][outer.rank] = p.st[0][i];
    outer.st[1][outer.rank] = p.st[1][i];
    ++outer.rank;
  }
  outer.dim[outer.rank] = (nk + side_k - 1) / side_k;
  outer.st[0][outer.rank] = side_k * xk;
  outer.st[1][outer.rank] = side_k * yk;
  ++outer.rank;
  int64_t strips = 1;
  for (int i = 0; i < outer.rank; ++i) strips *= outer.dim[i];
  const int64_t task = std::max<int64_t>(1, kCopyBytesPerTask / int64_t(sizeof(T)));
  const int64_t piece = std::min(nl, std::max<int64_t>(1, task / (side_k * side_l)) * side_l);
  const int64_t pieces = (nl + piece - 1) / piece;
  parallel_for(strips * pieces, std::max<int64_t>(1, task / (side_k * piece)),
               [&](int64_t b, int64_t e) {
                 odometer w(outer.rank, 2, outer.dim, outer.st, b / pieces);
                 int64_t c = b % pieces;
                 for (int64_t u = b; u < e; ++u) {
                   const int64_t kn = std::min(side_k, nk - w.idx[outer.rank - 1] * side_k);
                   const int64_t l1 = std::min(nl, (c + 1) * piece);
                   for (int64_t l0 = c * piece; l0 < l1; l0 += side_l)
                     copy_block(x + w.off[0] + l0 * xl, xk, xl, y + w.off[1] + l0 * yl, yk, yl, kn,
                                std::min(side_l, l1 - l0));
                   if (++c == pieces) {
                     c = 0;
                     w.next();
                   }
                 }
               });
}

template <typename T>
void strided_copy_t(const copy_plan& p, const void* src, void* dst) {
  const T* x = static_cast<const T*>(src);
  T* y = static_cast<T*>(dst);
  const int last = p.rank - 1;
  const int64_t xl = p.st[0][last];
  // Tiles when another dimension reads the source more closely than the innermost one.
  int kd = -1;
  if (xl > 1) {
    for (int i = 0; i < last; ++i)
      if (p.st[0][i] > 0 && p.st[0][i] < xl && p.dim[i] > 1 && (kd < 0 || p.st[0][i] < p.st[0][kd]))
        kd = i;
  }
  if (kd >= 0) return copy_tiles(p, kd, x, y);
  copy_rows(p, x, y);
}

// Copies y[j] = x[offset(j)] for y's shape, with per-dimension strides of x and y (elements).
void strided_copy(const DLTensor& Y, const int64_t* xstrides, const int64_t* ystrides,
                  const void* x, void* y) {
  if (numel(Y) == 0) return;
  const copy_plan p = make_plan(Y, xstrides, ystrides);
  switch (dtype_size(Y.dtype)) {
    case 1:
      return strided_copy_t<uint8_t>(p, x, y);
    case 2:
      return strided_copy_t<uint16_t>(p, x, y);
    case 4:
      return strided_copy_t<uint32_t>(p, x, y);
    case 8:
      return strided_copy_t<uint64_t>(p, x, y);
    default:
      unsupported("cpu copies elements of 1, 2, 4 or 8 bytes only");
  }
}

void compact_strides(const DLTensor& t, int64_t* st) {
  int64_t s = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    st[i] = s;
    s *= t.shape[i];
  }
}
void strides_of(const DLTensor& t, int64_t* st) {
  if (t.strides == nullptr) return compact_strides(t, st);
  for (int i = 0; i < t.ndim; ++i) st[i] = t.strides[i];
}
// data + byte_offset as nnp::data_ptr computes it (NULL stays NULL; integer arithmetic).
const void* byte_ptr(const DLTensor& t) { return nnp::data_ptr<const char>(t); }

// copy and transpose move elements of 1, 2, 4 or 8 bytes of any dtype.
void check_element_size(const op_call& c) {
  for (const DLTensor* t : {c.in(0), c.out(0)}) {
    if (t == nullptr) continue;
    const size_t s = dtype_size(t->dtype);
    if (t->dtype.lanes != 1 || (s != 1 && s != 2 && s != 4 && s != 8))
      unsupported("cpu copies elements of 1, 2, 4 or 8 bytes only");
  }
}

}  // namespace

void copy(const op_call& c) {
  const DLTensor &X = *c.in(0), &Y = *c.out(0);
  int64_t xs[NNP_MAX_DIMS], ys[NNP_MAX_DIMS];
  strides_of(X, xs);
  strides_of(Y, ys);
  strided_copy(Y, xs, ys, byte_ptr(X), const_cast<void*>(byte_ptr(Y)));
}

void transpose(const op_call& c) {
  const auto& p = c.params_as<nnp_transpose_params>();
  const DLTensor &X = *c.in(0), &Y = *c.out(0);
  int64_t xs[NNP_MAX_DIMS], permuted[NNP_MAX_DIMS], ys[NNP_MAX_DIMS];
  compact_strides(X, xs);
  compact_strides(Y, ys);
  for (int k = 0; k < Y.ndim; ++k) permuted[k] = xs[p.perm[k]];
  strided_copy(Y, permuted, ys, byte_ptr(X), const_cast<void*>(byte_ptr(Y)));
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kCopyOps[] = {
    {NNP_OP_COPY,      nnp::kit::any, copy,      check_element_size},
    {NNP_OP_TRANSPOSE, nnp::kit::any, transpose, check_element_size},
};
// clang-format on
extern const kit::op_row_list kCopyRows = kit::row_list(kCopyOps);

}  // namespace nnp::cpu
