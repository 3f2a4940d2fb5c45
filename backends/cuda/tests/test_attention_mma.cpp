// The tensor-core attention tiles of the cuda backend (attention_mma_tiles.hpp), compiled for the
// host and run on an emulated GPU: every block of a grid runs as 128 cooperative threads (ucontext
// fibers, switched at barriers), shuffles and mma.sync are warp exchanges, and an mma multiplies
// the warp's fragments as the PTX ISA lays them out ("Matrix fragments for mma.m16n8k8", .tf32,
// and "... for mma.m16n8k16", .f16 / .bf16). Shared memory starts as NaN, so a read of shared
// memory that the tiles did not write shows in the results. The forward (Y, lse) and the
// backward (dQ, dK, dV) are checked against attention's definition in double on small
// geometries, in 3xTF32 and with float16 and bfloat16 operands: both layouts, grouped-query
// heads, the causal mask with Tq above and below Tk, an additive mask with a fully masked row,
// head dimensions padded to 32, 64 and 128, partial tiles. What this cannot check is the
// hardware itself (the fragment layouts are the emulation's as much as the tiles'); the GPU
// check runs the same tiles on the device ("attention mma").
#include "../attention_mma_tiles.hpp"

#include <doctest/doctest.h>
#include <ucontext.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <vector>

namespace {

using nnp::cuda::attn_dims;
namespace tiles = nnp::cuda::mma_tiles;

constexpr int kThreads = tiles::kMmaThreads;
constexpr int kWarps = kThreads / 32;

// ---- the emulated block -----------------------------------------------------------------------

struct emu_barrier {
  int count = 0;
  uint64_t generation = 0;
};

// A warp's exchange slots, two sets used in turn: a lane writes set p, waits at the warp barrier
// and reads set p; it writes set p again only after the next exchange's barrier, which every
// lane passes after its reads of set p.
struct emu_warp {
  emu_barrier bar;
  int parity[32] = {};
  float f[2][32];
  uint32_t a[2][32][4], b[2][32][2];
};

// ---- 16-bit floats on the host --------------------------------------------------------------

// v rounded to nearest even with `bits` significand bits (11 for float16, 8 for bfloat16) and
// the smallest exponent min_exp (-14, -126); no overflow in these tests.
double round_to(double v, int bits, int min_exp) {
  if (v == 0.0 || !std::isfinite(v)) return v;
  const int e = std::max(std::ilogb(v), min_exp);
  const double quantum = std::ldexp(1.0, e - (bits - 1));
  return std::nearbyint(v / quantum) * quantum;
}
float to_half(float v) { return static_cast<float>(round_to(v, 11, -14)); }
float to_bf16(float v) { return static_cast<float>(round_to(v, 8, -126)); }

// The bits of float16 value h (exactly representable).
uint16_t half_bits(float h) {
  const uint16_t sign = std::signbit(h) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(h));
  if (a == 0.0) return sign;
  if (a < std::ldexp(1.0, -14))
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(a / std::ldexp(1.0, -24)));
  const int e = std::ilogb(a);
  const auto m = static_cast<uint16_t>((a / std::ldexp(1.0, e) - 1.0) * 1024.0);
  return static_cast<uint16_t>(sign | ((e + 15) << 10) | m);
}
float half_value(uint16_t b) {
  const double sign = (b & 0x8000) != 0 ? -1.0 : 1.0;
  const int e = (b >> 10) & 0x1f, m = b & 0x3ff;
  if (e == 0) return static_cast<float>(sign * std::ldexp(m, -24));
  return static_cast<float>(sign * std::ldexp(1024 + m, e - 25));
}
uint16_t bf16_bits(float b) { return static_cast<uint16_t>(nnp::cuda::float_bits(b) >> 16); }
float bf16_value(uint16_t b) { return nnp::cuda::bits_float(uint32_t{b} << 16); }

struct emu_block;

// The execution context of one thread of the block (attention_mma_tiles.hpp's Ctx).
struct emu_ctx {
  emu_block* blk;
  int t;
  int tid() const { return t; }
  int64_t block(int axis) const;
  void sync_block();
  void sync_warp();
  float shfl_xor(float v, int lane_mask);
  void mma(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]);
  template <bool kBf16>
  uint32_t pack16(float lo, float hi) const {
    if (kBf16) return bf16_bits(to_bf16(lo)) | uint32_t{bf16_bits(to_bf16(hi))} << 16;
    return half_bits(to_half(lo)) | uint32_t{half_bits(to_half(hi))} << 16;
  }
  template <bool kBf16>
  void mma16(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]);
};

struct emu_block {
  int64_t idx[3] = {0, 0, 0};
  std::vector<float> smem;
  emu_barrier bar;
  emu_warp warps[kWarps];
  // The fibers: one per thread, the scheduler's context, the running fiber.
  ucontext_t main_ctx;
  ucontext_t fiber[kThreads];
  std::unique_ptr<char[]> stacks;
  bool done[kThreads] = {};
  int current = 0;
  std::function<void(emu_ctx&)> body;

  // Switches to the next thread that has not finished (round robin), or to the scheduler.
  void yield() {
    for (int i = 1; i <= kThreads; ++i) {
      const int n = (current + i) % kThreads;
      if (!done[n]) {
        const int from = current;
        current = n;
        if (n != from) swapcontext(&fiber[from], &fiber[n]);
        return;
      }
    }
  }
  // Waits until `members` threads have arrived at b.
  void wait(emu_barrier& b, int members) {
    const uint64_t gen = b.generation;
    if (++b.count == members) {
      b.count = 0;
      ++b.generation;
      return;
    }
    for (long spins = 0; b.generation == gen; ++spins) {
      if (spins > 100000000L) {
        std::fprintf(stderr, "emulated GPU: a barrier that never completes\n");
        std::abort();
      }
      yield();
    }
  }
};

emu_block* g_block = nullptr;  // the block the fibers run (one block at a time)
bool g_not_tf32 = false;       // whether an mma met an operand that is not TF32

void fiber_entry() {
  emu_block& blk = *g_block;
  const int t = blk.current;
  emu_ctx x{&blk, t};
  blk.body(x);
  blk.done[t] = true;
  // uc_link returns to the scheduler, which resumes the others.
}

int64_t emu_ctx::block(int axis) const { return blk->idx[axis]; }
void emu_ctx::sync_block() { blk->wait(blk->bar, kThreads); }
void emu_ctx::sync_warp() { blk->wait(blk->warps[t / 32].bar, 32); }

float emu_ctx::shfl_xor(float v, int lane_mask) {
  emu_warp& w = blk->warps[t / 32];
  const int lane = t % 32, p = w.parity[lane];
  w.parity[lane] ^= 1;
  w.f[p][lane] = v;
  blk->wait(w.bar, 32);
  return w.f[p][lane ^ lane_mask];
}

// c += A B over the warp: the lane's fragments go into the warp's slots, and once every lane's
// are there, the lane adds to its C elements ((g, 2 t), (g, 2 t + 1), (g + 8, 2 t),
// (g + 8, 2 t + 1), g = lane / 4, t = lane % 4) the K products A(w, p, row, k) B(w, p, k, col)
// in float32 in k order, reading the operands from slot set p of warp w.
template <int K, class AOf, class BOf>
void warp_mma(emu_ctx& x, float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
              const AOf& A, const BOf& B) {
  emu_warp& w = x.blk->warps[x.t / 32];
  const int lane = x.t % 32, p = w.parity[lane];
  w.parity[lane] ^= 1;
  for (int i = 0; i < 4; ++i) w.a[p][lane][i] = a[i];
  for (int i = 0; i < 2; ++i) w.b[p][lane][i] = b[i];
  x.blk->wait(w.bar, 32);
  const int g = lane / 4, tt = lane % 4;
  for (int e = 0; e < 4; ++e) {
    const int row = g + 8 * (e / 2), col = 2 * tt + e % 2;
    float acc = c[e];
    for (int k = 0; k < K; ++k) acc += A(w, p, row, k) * B(w, p, k, col);
    c[e] = acc;
  }
}

// mma.sync.m16n8k8 TF32: A (16 x 8) holds (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4) in lane
// 4 g + t; B (8 x 8) holds (k = t, n = g), (k = t + 4, n = g). TF32 operands times TF32
// operands are exact in float32.
void emu_ctx::mma(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  warp_mma<8>(
      *this, c, a, b,
      [](const emu_warp& w, int p, int row, int k) {
        const uint32_t bits = w.a[p][(row % 8) * 4 + k % 4][row / 8 + 2 * (k / 4)];
        g_not_tf32 |= (bits & 0x1fffu) != 0u;  // a TF32 operand has its low 13 bits 0
        return nnp::cuda::bits_float(bits);
      },
      [](const emu_warp& w, int p, int k, int n) {
        const uint32_t bits = w.b[p][n * 4 + k % 4][k / 4];
        g_not_tf32 |= (bits & 0x1fffu) != 0u;
        return nnp::cuda::bits_float(bits);
      });
}

// Makes f a fiber that runs fiber_entry on the stack [sp, sp + bytes) and returns to `back`
// (getcontext returns twice in principle: kept out of the functions with loops).
[[gnu::noinline]] void make_fiber(ucontext_t* f, char* sp, size_t bytes, ucontext_t* back) {
  REQUIRE(getcontext(f) == 0);
  f->uc_stack.ss_sp = sp;
  f->uc_stack.ss_size = bytes;
  f->uc_link = back;
  makecontext(f, fiber_entry, 0);
}

// mma.sync.m16n8k16, float16 or bfloat16: A (16 x 16) holds the pairs (g, 2t ..), (g + 8, 2t ..),
// (g, 2t + 8 ..), (g + 8, 2t + 8 ..) in lane 4 g + t, the lower column in the low half; B
// (16 x 8) the pairs (k = 2t .., n = g), (k = 2t + 8 .., n = g). Products of 16-bit values are
// exact in float32.
template <bool kBf16>
void emu_ctx::mma16(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  auto value = [](uint32_t word, int half) {
    const auto bits = static_cast<uint16_t>(half != 0 ? word >> 16 : word & 0xffffu);
    return kBf16 ? bf16_value(bits) : half_value(bits);
  };
  warp_mma<16>(
      *this, c, a, b,
      [&](const emu_warp& w, int p, int row, int k) {
        return value(w.a[p][(row % 8) * 4 + (k % 8) / 2][row / 8 + 2 * (k / 8)], k % 2);
      },
      [&](const emu_warp& w, int p, int k, int n) {
        return value(w.b[p][n * 4 + (k % 8) / 2][k / 8], k % 2);
      });
}

// Runs body on every block of grid (x, y, z), each with `floats` floats of shared memory.
void launch(const unsigned (&grid)[3], int floats, const std::function<void(emu_ctx&)>& body) {
  constexpr size_t kStack = 64 * 1024;
  for (unsigned bz = 0; bz < grid[2]; ++bz)
    for (unsigned by = 0; by < grid[1]; ++by)
      for (unsigned bx = 0; bx < grid[0]; ++bx) {
        auto blk = std::make_unique<emu_block>();
        blk->idx[0] = bx;
        blk->idx[1] = by;
        blk->idx[2] = bz;
        blk->smem.assign(static_cast<size_t>(floats), std::numeric_limits<float>::quiet_NaN());
        blk->body = body;
        blk->stacks.reset(new char[kStack * kThreads]);
        g_block = blk.get();
        for (int t = 0; t < kThreads; ++t)
          make_fiber(&blk->fiber[t], blk->stacks.get() + kStack * static_cast<size_t>(t), kStack,
                     &blk->main_ctx);
        // Start thread 0; whenever a thread finishes, resume the next one that has not.
        for (;;) {
          int next = -1;
          for (int i = 0; i < kThreads && next < 0; ++i)
            if (!blk->done[(blk->current + i) % kThreads]) next = (blk->current + i) % kThreads;
          if (next < 0) break;
          blk->current = next;
          swapcontext(&blk->main_ctx, &blk->fiber[next]);
        }
        g_block = nullptr;
      }
}

// ---- attention by its definition, in double ---------------------------------------------------

struct geometry {
  int64_t b, hq, hkv, tq, tk, d, dv;
  bool packed, causal, mask;
  float scale;
};

struct tensors {
  std::vector<float> q, k, v, mask, dy;
};

// The element strides of a [B, H, T, width] tensor in either layout.
void strides(const geometry& g, int64_t h, int64_t t, int64_t width, int64_t& sb, int64_t& sh,
             int64_t& sr) {
  if (g.packed) {  // [B, T, H * width]
    sb = t * h * width;
    sh = width;
    sr = h * width;
  } else {
    sb = h * t * width;
    sh = t * width;
    sr = width;
  }
}

attn_dims dims_of(const geometry& g) {
  attn_dims a{};
  a.batch = g.b, a.hq = g.hq, a.hkv = g.hkv, a.tq = g.tq, a.tk = g.tk, a.d = g.d, a.dv = g.dv;
  a.scale = g.scale;
  a.causal = g.causal ? 1 : 0;
  strides(g, g.hq, g.tq, g.d, a.qb, a.qh, a.qr);
  strides(g, g.hkv, g.tk, g.d, a.kb, a.kh, a.kr);
  strides(g, g.hkv, g.tk, g.dv, a.vb, a.vh, a.vr);
  strides(g, g.hq, g.tq, g.dv, a.yb, a.yh, a.yr);
  // The mask [1, Hq, Tq, Tk], broadcast over the batch.
  a.m0 = 0, a.m1 = g.tq * g.tk, a.m2 = g.tk, a.m3 = 1;
  return a;
}

struct results {
  std::vector<double> y, lse, dq, dk, dv;
};

results by_definition(const geometry& g, const attn_dims& a, const tensors& in) {
  results r;
  r.y.assign(in.q.size() / static_cast<size_t>(g.d) * static_cast<size_t>(g.dv), 0.0);
  r.lse.assign(static_cast<size_t>(g.b * g.hq * g.tq), 0.0);
  r.dq.assign(in.q.size(), 0.0);
  r.dk.assign(in.k.size(), 0.0);
  r.dv.assign(in.v.size(), 0.0);
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t b = 0; b < g.b; ++b)
    for (int64_t h = 0; h < g.hq; ++h) {
      const int64_t kh = h / (g.hq / g.hkv);
      for (int64_t i = 0; i < g.tq; ++i) {
        std::vector<double> s(static_cast<size_t>(g.tk), -inf), p(s.size(), 0.0);
        double mx = -inf;
        for (int64_t j = 0; j < g.tk; ++j) {
          if (g.causal && j > i) continue;
          double dot = 0.0;
          for (int64_t e = 0; e < g.d; ++e)
            dot += double(in.q[b * a.qb + h * a.qh + i * a.qr + e]) *
                   in.k[b * a.kb + kh * a.kh + j * a.kr + e];
          double x = g.scale * dot;
          if (g.mask) x += in.mask[h * a.m1 + i * a.m2 + j];
          s[j] = x;
          mx = std::max(mx, x);
        }
        const size_t row = static_cast<size_t>((b * g.hq + h) * g.tq + i);
        if (mx == -inf) {  // fully masked: Y = 0, lse = -inf, no gradient
          r.lse[row] = -inf;
          continue;
        }
        double sum = 0.0;
        for (int64_t j = 0; j < g.tk; ++j) sum += s[j] == -inf ? 0.0 : std::exp(s[j] - mx);
        r.lse[row] = mx + std::log(sum);
        for (int64_t j = 0; j < g.tk; ++j) p[j] = s[j] == -inf ? 0.0 : std::exp(s[j] - r.lse[row]);
        std::vector<double> dp(s.size(), 0.0);
        double delta = 0.0;
        for (int64_t e = 0; e < g.dv; ++e) {
          double y = 0.0;
          for (int64_t j = 0; j < g.tk; ++j) y += p[j] * in.v[b * a.vb + kh * a.vh + j * a.vr + e];
          r.y[b * a.yb + h * a.yh + i * a.yr + e] = y;
          delta += y * in.dy[b * a.yb + h * a.yh + i * a.yr + e];
        }
        for (int64_t j = 0; j < g.tk; ++j)
          for (int64_t e = 0; e < g.dv; ++e)
            dp[j] += double(in.dy[b * a.yb + h * a.yh + i * a.yr + e]) *
                     in.v[b * a.vb + kh * a.vh + j * a.vr + e];
        for (int64_t j = 0; j < g.tk; ++j) {
          const double ds = g.scale * p[j] * (dp[j] - delta);
          for (int64_t e = 0; e < g.d; ++e) {
            r.dq[b * a.qb + h * a.qh + i * a.qr + e] +=
                ds * in.k[b * a.kb + kh * a.kh + j * a.kr + e];
            r.dk[b * a.kb + kh * a.kh + j * a.kr + e] +=
                ds * in.q[b * a.qb + h * a.qh + i * a.qr + e];
          }
          for (int64_t e = 0; e < g.dv; ++e)
            r.dv[b * a.vb + kh * a.vh + j * a.vr + e] +=
                p[j] * in.dy[b * a.yb + h * a.yh + i * a.yr + e];
        }
      }
    }
  return r;
}

// ---- the tiles on the emulated GPU --------------------------------------------------------------

template <int HD, class M>
results by_tiles(const geometry& g, const attn_dims& a, const tensors& in) {
  std::vector<float> y(in.q.size() / static_cast<size_t>(g.d) * static_cast<size_t>(g.dv),
                       std::numeric_limits<float>::quiet_NaN());
  std::vector<float> lse(static_cast<size_t>(g.b * g.hq * g.tq),
                         std::numeric_limits<float>::quiet_NaN());
  const float* mask = g.mask ? in.mask.data() : nullptr;
  const unsigned qtiles[3] = {static_cast<unsigned>((g.tq + tiles::kT - 1) / tiles::kT),
                              static_cast<unsigned>(g.hq), static_cast<unsigned>(g.b)};
  const unsigned ktiles[3] = {static_cast<unsigned>((g.tk + tiles::kT - 1) / tiles::kT),
                              static_cast<unsigned>(g.hkv), static_cast<unsigned>(g.b)};
  launch(qtiles, tiles::forward_floats<HD>(), [&](emu_ctx& x) {
    tiles::forward_tile<HD, M>(x, x.blk->smem.data(), a, in.q.data(), in.k.data(), in.v.data(),
                               mask, y.data(), lse.data());
  });
  // delta_i = dY_i . Y_i in float32 (attention_delta's kernel on the device).
  std::vector<float> delta(lse.size(), 0.0f);
  for (int64_t b = 0; b < g.b; ++b)
    for (int64_t h = 0; h < g.hq; ++h)
      for (int64_t i = 0; i < g.tq; ++i) {
        float acc = 0.0f;
        for (int64_t e = 0; e < g.dv; ++e) {
          const int64_t o = b * a.yb + h * a.yh + i * a.yr + e;
          acc = std::fma(in.dy[o], y[o], acc);
        }
        delta[(b * g.hq + h) * g.tq + i] = acc;
      }
  std::vector<float> dq(in.q.size(), std::numeric_limits<float>::quiet_NaN());
  std::vector<float> dk(in.k.size(), std::numeric_limits<float>::quiet_NaN());
  std::vector<float> dv(in.v.size(), std::numeric_limits<float>::quiet_NaN());
  launch(ktiles, tiles::backward_floats<HD>(), [&](emu_ctx& x) {
    tiles::dkdv_tile<HD, M>(x, x.blk->smem.data(), a, in.q.data(), in.k.data(), in.v.data(), mask,
                            in.dy.data(), lse.data(), delta.data(), dk.data(), dv.data());
  });
  launch(qtiles, tiles::backward_floats<HD>(), [&](emu_ctx& x) {
    tiles::dq_tile<HD, M>(x, x.blk->smem.data(), a, in.q.data(), in.k.data(), in.v.data(), mask,
                          in.dy.data(), lse.data(), delta.data(), dq.data());
  });
  results r;
  r.y.assign(y.begin(), y.end());
  r.lse.assign(lse.begin(), lse.end());
  r.dq.assign(dq.begin(), dq.end());
  r.dk.assign(dk.begin(), dk.end());
  r.dv.assign(dv.begin(), dv.end());
  return r;
}

// The largest error of got against want, relative to want's largest magnitude; equal
// infinities count as 0, a NaN or a lone infinity as infinite.
double max_error(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  double scale = 0.0, err = 0.0;
  for (double w : want)
    if (std::isfinite(w)) scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i]) && got[i] == want[i]) continue;
    const double e = std::fabs(got[i] - want[i]);
    err = std::max(err, std::isnan(e) ? std::numeric_limits<double>::infinity() : e);
  }
  return err / (scale > 0.0 ? scale : 1.0);
}

// The arithmetic of a run: float32 in 3xTF32, or 16-bit operands.
enum class math { f32, f16, bf16 };

template <int HD>
results by_tiles(const geometry& g, const attn_dims& a, const tensors& in, math m) {
  switch (m) {
    case math::f16:
      return by_tiles<HD, tiles::half_math<false>>(g, a, in);
    case math::bf16:
      return by_tiles<HD, tiles::half_math<true>>(g, a, in);
    default:
      return by_tiles<HD, tiles::tf32x3_math>(g, a, in);
  }
}

void check(const geometry& g, unsigned seed, math m = math::f32) {
  CAPTURE(g.b);
  CAPTURE(g.hq);
  CAPTURE(g.hkv);
  CAPTURE(g.tq);
  CAPTURE(g.tk);
  CAPTURE(g.d);
  CAPTURE(g.dv);
  CAPTURE(g.packed);
  CAPTURE(g.causal);
  CAPTURE(g.mask);
  CAPTURE(static_cast<int>(m));
  const attn_dims a = dims_of(g);
  std::mt19937 rng(seed);
  std::normal_distribution<float> n01(0.0f, 1.0f);
  // 16-bit calls: the operands are 16-bit values (their float32 copies reach the tiles).
  auto storage = [m](float v) {
    return m == math::f16 ? to_half(v) : m == math::bf16 ? to_bf16(v) : v;
  };
  tensors in;
  auto fill = [&](std::vector<float>& t, int64_t count) {
    t.resize(static_cast<size_t>(count));
    for (float& x : t) x = storage(n01(rng));
  };
  fill(in.q, g.b * g.hq * g.tq * g.d);
  fill(in.k, g.b * g.hkv * g.tk * g.d);
  fill(in.v, g.b * g.hkv * g.tk * g.dv);
  fill(in.dy, g.b * g.hq * g.tq * g.dv);
  if (g.mask) {
    fill(in.mask, g.hq * g.tq * g.tk);
    // Some hidden keys, and row 1 of head 0 fully masked.
    for (size_t i = 0; i < in.mask.size(); i += 7) in.mask[i] = -INFINITY;
    for (int64_t j = 0; j < g.tk; ++j) in.mask[static_cast<size_t>(1 * g.tk + j)] = -INFINITY;
  }
  const results want = by_definition(g, a, in);
  g_not_tf32 = false;
  const int hd = std::max(g.d, g.dv) <= 32 ? 32 : std::max(g.d, g.dv) <= 64 ? 64 : 128;
  const results got = hd == 32   ? by_tiles<32>(g, a, in, m)
                      : hd == 64 ? by_tiles<64>(g, a, in, m)
                                 : by_tiles<128>(g, a, in, m);
  // 3xTF32 products and float32 sums: within a few float32 roundings of the largest terms
  // (1e-7 to 8e-7 in these cases; TF32 products alone would be near 1e-3). 16-bit: P and dS
  // rounded to the type (float16 2^-11, bfloat16 2^-8 relative), the sums float32: up to
  // 3.3e-4 (float16) and 2.8e-3 (bfloat16) in these cases.
  CHECK_FALSE(g_not_tf32);
  const double tol = m == math::f16 ? 1e-3 : m == math::bf16 ? 8e-3 : 5e-6;
  CHECK(max_error(got.y, want.y) <= tol);
  CHECK(max_error(got.lse, want.lse) <= tol);
  CHECK(max_error(got.dq, want.dq) <= tol);
  CHECK(max_error(got.dk, want.dk) <= tol);
  CHECK(max_error(got.dv, want.dv) <= tol);
  if (g.mask) {  // the fully masked row: Y = 0 and lse = -inf exactly
    CHECK(got.lse[1] == -std::numeric_limits<double>::infinity());
    for (int64_t e = 0; e < g.dv; ++e) CHECK(got.y[static_cast<size_t>(a.yr + e)] == 0.0);
  }
}

}  // namespace

TEST_CASE("attention mma tiles (emulated): one partial tile, head dimension 32") {
  check({1, 1, 1, 5, 7, 16, 16, false, false, false, 0.25f}, 1);
}

TEST_CASE("attention mma tiles (emulated): several tiles, grouped heads, packed layout") {
  check({2, 4, 2, 70, 66, 20, 24, true, false, false, 0.2f}, 2);
}

TEST_CASE("attention mma tiles (emulated): causal with Tq != Tk, an additive mask, D = 64") {
  check({1, 2, 1, 80, 72, 64, 40, false, true, true, 0.125f}, 3);
}

TEST_CASE("attention mma tiles (emulated): head dimensions padded to 128") {
  check({1, 1, 1, 65, 65, 72, 100, false, false, true, 0.1f}, 4);
}

TEST_CASE("attention mma tiles (emulated): causal with fewer query rows than keys, packed") {
  check({1, 2, 1, 40, 100, 32, 32, true, true, false, 0.17f}, 5);
}

TEST_CASE("attention mma tiles (emulated): float16 and bfloat16 operands") {
  for (const math m : {math::f16, math::bf16}) {
    check({2, 4, 2, 70, 66, 20, 24, true, false, false, 0.2f}, 6, m);
    check({1, 2, 1, 80, 72, 64, 40, false, true, true, 0.125f}, 7, m);
    check({1, 1, 1, 65, 65, 72, 100, false, false, true, 0.1f}, 8, m);
  }
}
