// Dropout on the CPU (NNP_OP_DROPOUT_FORWARD / _BACKWARD), float32: y = keep ? x * scale : 0
// with the keep mask of Philox4x32-10 (nnplug_ops.h, nnplug/kit/philox.hpp).
//
// Speed: one streaming pass split into ~32k-element TBB tasks. Dropout draws one Philox4x32-10
// block per 4 elements (the same stream as the reference: bit-identical masks); blocks are
// independent, so it parallelises with no shared state. The forward's keep mask stays in a
// per-stream cache (4 slots), so the backward with the same params reads it instead of running
// Philox again. With the optional step input (float32, ABI 1.4) the counter offset is
// offset + step * offset_per_step, step read inside the call (the op runs there) and refused
// unless a whole number >= 0 (nnplug/kit/step.hpp); the cache is keyed by that offset.
#include "cpu_backend.hpp"

#include <nnplug/kit/philox.hpp>
#include <nnplug/kit/step.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace nnp::cpu {

namespace {

// Philox4x32-10 for kLanes consecutive counters at once (the same arithmetic as
// nnplug/kit/philox.hpp, lane by lane): written as loops over lanes so the compiler turns
// the 32x32->64-bit products into SIMD multiplies (pmuludq) instead of one block at a time.
constexpr int kLanes = 8;

// AVX2 clone where the CPU has it (8 lanes of 32x32->64 multiplies per instruction pair).
NNP_CPU_AVX2_CLONES
void philox_keep_masks(uint64_t seed, uint64_t first_counter, uint32_t threshold,
                       uint32_t* keep /* [4 * kLanes]: all ones = keep, 0 = drop */) {
  uint32_t c0[kLanes], c1[kLanes], c2[kLanes], c3[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    const uint64_t c = first_counter + static_cast<uint64_t>(l);
    c0[l] = static_cast<uint32_t>(c);
    c1[l] = static_cast<uint32_t>(c >> 32);
    c2[l] = 0;
    c3[l] = 0;
  }
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    for (int l = 0; l < kLanes; ++l) {
      const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0[l];
      const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2[l];
      const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
      const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
      const uint32_t n0 = hi1 ^ c1[l] ^ k0, n2 = hi0 ^ c3[l] ^ k1;
      c0[l] = n0;
      c1[l] = lo1;
      c2[l] = n2;
      c3[l] = lo0;
    }
  }
  // element 4*l + w of the group takes word w of counter l
  for (int l = 0; l < kLanes; ++l) {
    keep[4 * l + 0] = 0u - static_cast<uint32_t>((c0[l] >> 8) >= threshold);
    keep[4 * l + 1] = 0u - static_cast<uint32_t>((c1[l] >> 8) >= threshold);
    keep[4 * l + 2] = 0u - static_cast<uint32_t>((c2[l] >> 8) >= threshold);
    keep[4 * l + 3] = 0u - static_cast<uint32_t>((c3[l] >> 8) >= threshold);
  }
}

#ifdef NNP_CPU_X86_KERNELS
// philox_keep_masks with AVX2 intrinsics: GCC vectorises the loops above, but extracts the
// 32-bit halves of the 64-bit products with cross-lane permutes (vpermq, vperm2i128), and the
// kernel ran at 37 cycles per counter block on AMD Zen 3. Here the products of the even and the
// odd lanes (vpmuludq) are recombined with in-lane shifts and blends, and the four words of the
// eight counters are interleaved into element order by a 4 x 8 transpose at the end.
NNP_CPU_AVX2_FMA void philox_keep_masks_avx2(uint64_t seed, uint64_t first_counter,
                                             uint32_t threshold, uint32_t* keep) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  // counters first_counter + l: low words wrap into the high word at 2^32
  const __m256i lo_base = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(first_counter)));
  __m256i c0 = _mm256_add_epi32(lo_base, lane);
  const __m256i wrapped =  // lanes whose low word wrapped: c0 < lo_base (unsigned)
      _mm256_cmpgt_epi32(_mm256_xor_si256(lo_base, _mm256_set1_epi32(INT32_MIN)),
                         _mm256_xor_si256(c0, _mm256_set1_epi32(INT32_MIN)));
  __m256i c1 = _mm256_sub_epi32(
      _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(first_counter >> 32))), wrapped);
  __m256i c2 = _mm256_setzero_si256(), c3 = _mm256_setzero_si256();
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(0xCD9E8D57u));
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    // 32 x 32 -> 64-bit products of every lane: even lanes, then odd lanes shifted down
    const __m256i e0 = _mm256_mul_epu32(c0, m0),
                  o0 = _mm256_mul_epu32(_mm256_srli_epi64(c0, 32), m0);
    const __m256i e1 = _mm256_mul_epu32(c2, m1),
                  o1 = _mm256_mul_epu32(_mm256_srli_epi64(c2, 32), m1);
    const __m256i hi0 = _mm256_blend_epi32(_mm256_srli_epi64(e0, 32), o0, 0xAA);
    const __m256i lo0 = _mm256_blend_epi32(e0, _mm256_slli_epi64(o0, 32), 0xAA);
    const __m256i hi1 = _mm256_blend_epi32(_mm256_srli_epi64(e1, 32), o1, 0xAA);
    const __m256i lo1 = _mm256_blend_epi32(e1, _mm256_slli_epi64(o1, 32), 0xAA);
    const __m256i n0 =
        _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32(static_cast<int>(k0)));
    const __m256i n2 =
        _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32(static_cast<int>(k1)));
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
  }
  // keep = (word >> 8) >= threshold, as all ones; (word >> 8) < 2^24, so a signed compare with
  // threshold - 1 (threshold <= 2^24) is exact, threshold 0 included
  const __m256i t = _mm256_set1_epi32(static_cast<int>(threshold) - 1);
  const __m256i w0 = _mm256_cmpgt_epi32(_mm256_srli_epi32(c0, 8), t);
  const __m256i w1 = _mm256_cmpgt_epi32(_mm256_srli_epi32(c1, 8), t);
  const __m256i w2 = _mm256_cmpgt_epi32(_mm256_srli_epi32(c2, 8), t);
  const __m256i w3 = _mm256_cmpgt_epi32(_mm256_srli_epi32(c3, 8), t);
  // element 4 l + w takes word w of counter l: transpose [4 words][8 counters]
  const __m256i a0 = _mm256_unpacklo_epi32(w0, w1), a1 = _mm256_unpackhi_epi32(w0, w1);
  const __m256i a2 = _mm256_unpacklo_epi32(w2, w3), a3 = _mm256_unpackhi_epi32(w2, w3);
  const __m256i b0 = _mm256_unpacklo_epi64(a0, a2);  // counters 0 | 4
  const __m256i b1 = _mm256_unpackhi_epi64(a0, a2);  // counters 1 | 5
  const __m256i b2 = _mm256_unpacklo_epi64(a1, a3);  // counters 2 | 6
  const __m256i b3 = _mm256_unpackhi_epi64(a1, a3);  // counters 3 | 7
  auto* out = reinterpret_cast<__m256i*>(keep);
  _mm256_storeu_si256(out + 0, _mm256_permute2x128_si256(b0, b1, 0x20));
  _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(b2, b3, 0x20));
  _mm256_storeu_si256(out + 2, _mm256_permute2x128_si256(b0, b1, 0x31));
  _mm256_storeu_si256(out + 3, _mm256_permute2x128_si256(b2, b3, 0x31));
}
#endif

// The keep masks of 4 kLanes elements from counter first_counter: the intrinsics kernel where
// the CPU has AVX2 (and FMA, the gate of every intrinsics kernel of this backend), else the
// loops above. Both agree bit for bit with nnplug/kit/philox.hpp (the conformance suite
// compares the masks with the reference's).
void keep_masks(uint64_t seed, uint64_t first_counter, uint32_t threshold, uint32_t* keep) {
#ifdef NNP_CPU_X86_KERNELS
  if (cpu_avx2_fma()) {
    philox_keep_masks_avx2(seed, first_counter, threshold, keep);
    return;
  }
#endif
  philox_keep_masks(seed, first_counter, threshold, keep);
}

// Forward: y = keep ? x * scale : 0 from Philox; the keep bytes go to `mask` (the optional
// output) and/or `cache` (the stream's mask cache), either may be NULL.
void dropout_generate(const nnp_dropout_params& p, const float* x, float* y, uint8_t* mask,
                      uint8_t* cache, int64_t n) {
  const uint32_t threshold = dropout_threshold(p.ratio);
  const float scale = dropout_scale<float>(p.ratio);
  constexpr int64_t kGroup = 4 * kLanes;  // elements per philox_keep_masks call
  const int64_t groups = (n + kGroup - 1) / kGroup;
  parallel_for(groups, kElementwiseGrain / kGroup, [&](int64_t gb, int64_t ge) {
    alignas(64) uint32_t keep[kGroup];
    alignas(64) uint32_t out[kGroup];
    for (int64_t g = gb; g < ge; ++g) {
      const int64_t i0 = g * kGroup, len = std::min(kGroup, n - i0);
      keep_masks(p.seed, p.offset + static_cast<uint64_t>(g * kLanes), threshold, keep);
      // y = keep ? x * scale : 0 as a bit mask (dropped NaN/Inf inputs give 0, as the rule
      // says), through a stack buffer so it vectorises even when y aliases x.
      for (int64_t j = 0; j < len; ++j) {
        const float v = x[i0 + j] * scale;
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        out[j] = bits & keep[j];
      }
      std::memcpy(y + i0, out, static_cast<size_t>(len) * sizeof(float));
      if (mask != nullptr)
        for (int64_t j = 0; j < len; ++j) mask[i0 + j] = static_cast<uint8_t>(keep[j] & 1u);
      if (cache != nullptr)
        for (int64_t j = 0; j < len; ++j) cache[i0 + j] = static_cast<uint8_t>(keep[j] & 1u);
    }
  });
}

// y = keep ? x * scale : 0 from stored keep bytes (backward with a cached mask).
void dropout_from_mask(const nnp_dropout_params& p, const float* x, float* y, const uint8_t* keep,
                       int64_t n) {
  const float scale = dropout_scale<float>(p.ratio);
  map_elements(y, n, [=](int64_t i) {
    const float v = x[i] * scale;
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    bits &= 0u - static_cast<uint32_t>(keep[i]);
    float r;
    std::memcpy(&r, &bits, 4);
    return r;
  });
}

// Masks up to this many elements are cached per stream (4 slots: 64 MiB at most).
constexpr int64_t kMaxCachedMask = int64_t{16} << 20;

bool same_mask(const dropout_mask& m, const nnp_dropout_params& p, int64_t n) {
  return m.n == n && m.seed == p.seed && m.offset == p.offset && m.ratio == p.ratio;
}

// The call's params with the offset its step input gives (params unchanged without one).
nnp_dropout_params params_at_step(const op_call& c, const char* op) {
  auto p = c.params_as<nnp_dropout_params>();
  if (const float* step = f32(c.in(1)))
    p.offset = dropout_step_offset(p.offset, p.offset_per_step,
                                   static_cast<uint64_t>(checked_step(op, *step, 0.0f)));
  return p;
}

}  // namespace

void dropout_forward(const op_call& c) {
  const auto p = params_at_step(c, "dropout_forward");
  const DLTensor* mask = c.out(1);
  uint8_t* mask_out = mask != nullptr ? data_ptr<uint8_t>(*mask) : nullptr;
  const int64_t n = numel(*c.in(0));
  if (stream_of(c) == nullptr || n == 0 || n > kMaxCachedMask) {
    dropout_generate(p, f32(c.in(0)), f32(c.out(0)), mask_out, nullptr, n);
    return;
  }
  // Keep the mask for the backward pass, in the least recently used slot.
  stream_state& st = *stream_of(c);
  dropout_mask* slot = &st.masks[0];
  for (dropout_mask& m : st.masks)
    if (m.last_use < slot->last_use) slot = &m;
  slot->n = -1;  // invalid until filled
  slot->keep.resize(static_cast<size_t>(n));
  dropout_generate(p, f32(c.in(0)), f32(c.out(0)), mask_out, slot->keep.data(), n);
  slot->seed = p.seed;
  slot->offset = p.offset;
  slot->ratio = p.ratio;
  slot->n = n;
  slot->last_use = ++st.clock;
}

void dropout_backward(const op_call& c) {
  const auto p = params_at_step(c, "dropout_backward");
  const int64_t n = numel(*c.in(0));
  if (stream_of(c) != nullptr) {
    for (dropout_mask& m : stream_of(c)->masks) {
      if (same_mask(m, p, n)) {
        m.last_use = ++stream_of(c)->clock;
        dropout_from_mask(p, f32(c.in(0)), f32(c.out(0)), m.keep.data(), n);
        return;
      }
    }
  }
  dropout_generate(p, f32(c.in(0)), f32(c.out(0)), nullptr, nullptr, n);
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kDropoutOps[] = {
    {NNP_OP_DROPOUT_FORWARD,  kit::f32,            dropout_forward},
    {NNP_OP_DROPOUT_BACKWARD, kit::f32,            dropout_backward},
};
// clang-format on
extern const kit::op_row_list kDropoutRows = kit::row_list(kDropoutOps);

}  // namespace nnp::cpu
