// The few-channel backward-data sum of the cuda backend (conv_direct.hpp), compiled for the host:
// on random 1-, 2- and 3-d geometries (strides, dilations, asymmetric padding, with and without
// a bias) every input element equals backward-data's definition, dx[n, c, i] = bias[c] + the sum
// over m, r and o with o * stride - pad + r * dil = i of dy[n, m, o] * w[m, c, r]. The operands
// are small integers, so every sum is exact in float32 whatever its order and the comparison
// is exact; and where it applies (small_backward_data_takes).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "../conv_direct.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace {

using nnp::cuda::direct_geom;

// dx by the definition: scatter every product of dy and w to the input position it reads.
std::vector<float> backward_data_by_definition(const direct_geom& g, const std::vector<float>& dy,
                                               const std::vector<float>& w, const float* bias) {
  std::vector<float> dx(static_cast<size_t>(g.n * g.ci * g.in_size));
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t c = 0; c < g.ci; ++c)
      for (int64_t i = 0; i < g.in_size; ++i)
        dx[static_cast<size_t>((n * g.ci + c) * g.in_size + i)] = bias != nullptr ? bias[c] : 0.0f;
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t m = 0; m < g.co; ++m)
      for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
        for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
          for (int64_t o2 = 0; o2 < g.out[2]; ++o2)
            for (int64_t c = 0; c < g.ci; ++c)
              for (int64_t r0 = 0; r0 < g.k[0]; ++r0)
                for (int64_t r1 = 0; r1 < g.k[1]; ++r1)
                  for (int64_t r2 = 0; r2 < g.k[2]; ++r2) {
                    const int64_t i0 = o0 * g.stride[0] - g.pad[0] + r0 * g.dil[0];
                    const int64_t i1 = o1 * g.stride[1] - g.pad[1] + r1 * g.dil[1];
                    const int64_t i2 = o2 * g.stride[2] - g.pad[2] + r2 * g.dil[2];
                    if (i0 < 0 || i0 >= g.in[0] || i1 < 0 || i1 >= g.in[1] || i2 < 0 ||
                        i2 >= g.in[2])
                      continue;
                    const float d = dy[static_cast<size_t>((n * g.co + m) * g.out_size +
                                                           (o0 * g.out[1] + o1) * g.out[2] + o2)];
                    const float wv = w[static_cast<size_t>((m * g.ci + c) * g.k_size +
                                                           (r0 * g.k[1] + r1) * g.k[2] + r2)];
                    dx[static_cast<size_t>((n * g.ci + c) * g.in_size +
                                           (i0 * g.in[1] + i1) * g.in[2] + i2)] += d * wv;
                  }
  return dx;
}

}  // namespace

TEST_CASE("cuda few-channel backward-data: the definition on random geometries") {
  std::mt19937 rng(20261128);
  const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int checked = 0, with_gaps = 0;
  for (int it = 0; it < 400; ++it) {
    direct_geom g{};
    const int spatial = pick(1, 3);
    g.n = pick(1, 2);
    g.ci = pick(1, nnp::cuda::kSmallBwdChannels);
    g.co = pick(1, 6);
    g.cig = g.ci;
    g.cog = g.co;
    for (int a = 0; a < 3; ++a) {
      g.in[a] = g.k[a] = g.out[a] = g.stride[a] = g.dil[a] = 1;
      g.pad[a] = 0;
      if (a < 3 - spatial) continue;
      g.k[a] = pick(1, 3);
      g.stride[a] = pick(1, 3);
      g.dil[a] = pick(1, 2);
      g.pad[a] = pick(0, 2);
      const int64_t pad_end = pick(0, 2), extent = g.dil[a] * (g.k[a] - 1) + 1;
      g.in[a] = pick(1, 8) + extent;
      g.out[a] = (g.in[a] + g.pad[a] + pad_end - extent) / g.stride[a] + 1;
    }
    g.in_size = g.in[0] * g.in[1] * g.in[2];
    g.k_size = g.k[0] * g.k[1] * g.k[2];
    g.out_size = g.out[0] * g.out[1] * g.out[2];
    REQUIRE(nnp::cuda::small_backward_data_takes(g));
    std::vector<float> dy(static_cast<size_t>(g.n * g.co * g.out_size)),
        w(static_cast<size_t>(g.co * g.ci * g.k_size)), bias(static_cast<size_t>(g.ci));
    for (float& v : dy) v = static_cast<float>(pick(-4, 4));
    for (float& v : w) v = static_cast<float>(pick(-4, 4));
    for (float& v : bias) v = static_cast<float>(pick(-4, 4));
    const float* b = it % 2 == 0 ? bias.data() : nullptr;
    const std::vector<float> want = backward_data_by_definition(g, dy, w, b);
    const auto dy_at = [&](int64_t i) { return dy[static_cast<size_t>(i)]; };
    const auto bias_at = [&](int64_t c) { return b != nullptr ? b[c] : 0.0f; };
    for (int64_t idx = 0; idx < g.n * g.ci * g.in_size; ++idx) {
      const float got = nnp::cuda::small_backward_data_element<nnp::cuda::kSmallBwdTaps>(
          g, idx, w.data(), dy_at, bias_at);
      INFO("iteration " << it << ", element " << idx);
      REQUIRE(got == want[static_cast<size_t>(idx)]);
    }
    ++checked;
    with_gaps += g.stride[2] > 1 || g.stride[1] > 1 || g.stride[0] > 1;
  }
  CHECK(checked == 400);
  CHECK(with_gaps > 100);  // strided geometries, where some taps read no output, were among them
}

TEST_CASE("cuda few-channel backward-data: where it applies") {
  direct_geom g{};
  g.n = 1;
  g.ci = g.cig = 1;
  g.co = g.cog = 32;
  g.k_size = 9;
  g.out_size = 26 * 26;
  CHECK(nnp::cuda::small_backward_data_takes(g));  // the cnn's conv1
  direct_geom grouped = g;
  grouped.ci = 2;
  grouped.co = 32;
  grouped.cig = 1;
  grouped.cog = 16;
  CHECK_FALSE(nnp::cuda::small_backward_data_takes(grouped));
  direct_geom wide = g;
  wide.ci = wide.cig = nnp::cuda::kSmallBwdChannels + 1;
  CHECK_FALSE(nnp::cuda::small_backward_data_takes(wide));
  direct_geom big_filter = g;
  big_filter.co = big_filter.cog = 256;  // 256 x 1 x 9 > kSmallBwdWeights
  CHECK_FALSE(nnp::cuda::small_backward_data_takes(big_filter));
  direct_geom many_taps = g;
  many_taps.k_size = 5 * 5 * 2;
  CHECK_FALSE(nnp::cuda::small_backward_data_takes(many_taps));
}
