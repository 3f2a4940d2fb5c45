// bench_ops.cpp — nnplug-bench's per-op rows: the three models' ops at batch 128, square
// GEMMs, a ResNet convolution, attention and the dispatch cost.
#include "bench.hpp"

#include <cmath>
#include <cstdio>

namespace nnp_bench {

// The dtypes of the GEMM, attention and layer-norm rows, with the suffix of their row names:
// float32 (none), float16 (" f16"), bfloat16 (" bf16").
struct row_dtype {
  const char* suffix;
  DLDataType dt;
};
const row_dtype kRowDtypes[] = {{"", f32()}, {" f16", f16()}, {" bf16", bf16()}};

void bench_ops(context& ctx) {
  // GEMM rows through nnplug.
  for (const gemm_shape& s : model_gemms()) {
    const gemm_operands g = make_gemm(ctx, s);
    dtensor &a = g.a, &b = g.b, &y = g.y;
    const nnp_gemm_params p = g.p;
    const std::string name = std::string("gemm ") + s.what + " " + gemm_kind(s);
    measure(name,
            "M=" + std::to_string(s.m) + " N=" + std::to_string(s.n) + " K=" + std::to_string(s.k),
            2.0 * s.m * s.n * s.k, 0, [&] {
              check(nnp_gemm(ctx.stream, &p, &a.t, &b.t, nullptr, &y.t), "gemm");
              ctx.sync();
            });
  }
  // Batched matmul at attention shapes: 128 sequences x 4 heads, 17 tokens, head size 16.
  // Scores Q K^T ([512, 17, 16] x [512, 16, 17]) and the same with K stored [512, 17, 16]
  // (trans_b = 1), then the weighted values P V ([512, 17, 17] x [512, 17, 16]).
  {
    const int64_t bh = 128 * 4, t = 17, d = 16;
    dtensor& q = ctx.make({bh, t, d}, 1.0f);
    dtensor& kt = ctx.make({bh, d, t}, 1.0f);
    dtensor& k = ctx.make({bh, t, d}, 1.0f);
    dtensor& s = ctx.make({bh, t, t});
    dtensor& v = ctx.make({bh, t, d}, 1.0f);
    dtensor& o = ctx.make({bh, t, d});
    const nnp_matmul_params nn{sizeof(nn), 0, 0}, nt{sizeof(nt), 0, 1};
    const double flops = 2.0 * bh * t * t * d;
    measure("matmul attention q.kT", dims({bh, t, d}) + " x " + dims({bh, d, t}), flops, 0, [&] {
      check(nnp_matmul(ctx.stream, &nn, &q.t, &kt.t, &s.t), "matmul");
      ctx.sync();
    });
    measure("matmul attention q.k trans_b", dims({bh, t, d}) + " x " + dims({bh, t, d}) + " tb1",
            flops, 0, [&] {
              check(nnp_matmul(ctx.stream, &nt, &q.t, &k.t, &s.t), "matmul");
              ctx.sync();
            });
    measure("matmul attention p.v", dims({bh, t, t}) + " x " + dims({bh, t, d}), flops, 0, [&] {
      check(nnp_matmul(ctx.stream, &nn, &s.t, &v.t, &o.t), "matmul");
      ctx.sync();
    });
  }
  // The cnn's convolutions at batch 128.
  struct conv_layer {
    const char* name;
    int64_t c, h, k;
  };
  const int64_t batch = 128;
  for (const conv_layer& l :
       {conv_layer{"cnn.conv1", 1, 28, 32}, conv_layer{"cnn.conv2", 32, 26, 64}}) {
    const int64_t out = l.h - 2;
    dtensor& x = ctx.make({batch, l.c, l.h, l.h}, 1.0f);
    dtensor& w = ctx.make({l.k, l.c, 3, 3}, 0.1f);
    dtensor& b = ctx.make({l.k}, 0.1f);
    dtensor& y = ctx.make({batch, l.k, out, out});
    dtensor& dy = ctx.make({batch, l.k, out, out}, 1.0f);
    dtensor& dx = ctx.make({batch, l.c, l.h, l.h});
    dtensor& dw = ctx.make({l.k, l.c, 3, 3});
    dtensor& db = ctx.make({l.k});
    const nnp_conv2d_params p{sizeof(p), 1, 1, 0, 0, 0, 0, 1, 1, 1, 0};
    const double flops = 2.0 * batch * l.k * out * out * l.c * 9;
    const std::string shape = dims({batch, l.c, l.h, l.h}) + " k" + std::to_string(l.k) + " 3x3";
    measure(std::string("conv fwd ") + l.name, shape, flops, 0, [&] {
      check(nnp_conv2d_forward(ctx.stream, &p, &x.t, &w.t, &b.t, &y.t), "conv fwd");
      ctx.sync();
    });
    measure(std::string("conv bwd_data ") + l.name, shape, flops, 0, [&] {
      check(nnp_conv2d_backward_data(ctx.stream, &p, &dy.t, &w.t, &dx.t), "conv bwd data");
      ctx.sync();
    });
    measure(std::string("conv bwd_filter ") + l.name, shape, flops, 0, [&] {
      check(nnp_conv2d_backward_filter(ctx.stream, &p, &x.t, &dy.t, &dw.t), "conv bwd filter");
      ctx.sync();
    });
    measure(std::string("conv bwd_bias ") + l.name, dims({batch, l.k, out, out}), 0,
            4.0 * batch * l.k * out * out, [&] {
              check(nnp_conv2d_backward_bias(ctx.stream, &dy.t, &db.t), "conv bwd bias");
              ctx.sync();
            });
  }

  // N-D convolution and transposed convolution (ABI 1.2): a 1-D and a 3-D conv, a 2-D conv
  // transpose (stride 2, the decoder's upsampling). A backend without them (UNSUPPORTED) gets
  // a note instead of rows (measure()).
  const auto measure_nd = [&](const std::string& name, const std::string& shape, double flops,
                              const std::function<nnp_status()>& call) {
    measure(name, shape, flops, 0, [&] {
      check(call(), name.c_str());
      ctx.sync();
    });
  };
  {
    // 1-D: [32, 64, 1024], k64, kernel 5, pads 2 (same size)
    nnp_conv_params p{};
    p.struct_size = sizeof p;
    p.pads[0] = p.pads[1] = 2;
    dtensor& x = ctx.make({32, 64, 1024}, 1.0f);
    dtensor& w = ctx.make({64, 64, 5}, 0.1f);
    dtensor& b = ctx.make({64}, 0.1f);
    dtensor& y = ctx.make({32, 64, 1024});
    const double flops = 2.0 * 32 * 64 * 1024 * 64 * 5;
    measure_nd("conv_nd fwd 1-D", dims({32, 64, 1024}) + " k64 5", flops,
               [&] { return nnp_conv_forward(ctx.stream, &p, &x.t, &w.t, &b.t, &y.t); });
  }
  {
    // 3-D: [4, 16, 16, 24, 24], k32, 3x3x3, pads 1 (same size)
    nnp_conv_params p{};
    p.struct_size = sizeof p;
    for (int i = 0; i < 6; ++i) p.pads[i] = 1;
    dtensor& x = ctx.make({4, 16, 16, 24, 24}, 1.0f);
    dtensor& w = ctx.make({32, 16, 3, 3, 3}, 0.1f);
    dtensor& b = ctx.make({32}, 0.1f);
    dtensor& y = ctx.make({4, 32, 16, 24, 24});
    dtensor& dy = ctx.make({4, 32, 16, 24, 24}, 1.0f);
    dtensor& dx = ctx.make({4, 16, 16, 24, 24});
    dtensor& dw = ctx.make({32, 16, 3, 3, 3});
    const double flops = 2.0 * 4 * 32 * 16 * 24 * 24 * 16 * 27;
    const std::string shape = dims({4, 16, 16, 24, 24}) + " k32 3x3x3";
    measure_nd("conv_nd fwd 3-D", shape, flops,
               [&] { return nnp_conv_forward(ctx.stream, &p, &x.t, &w.t, &b.t, &y.t); });
    measure_nd("conv_nd bwd_data 3-D", shape, flops,
               [&] { return nnp_conv_backward_data(ctx.stream, &p, &dy.t, &w.t, &dx.t); });
    measure_nd("conv_nd bwd_filter 3-D", shape, flops,
               [&] { return nnp_conv_backward_filter(ctx.stream, &p, &x.t, &dy.t, &dw.t); });
  }
  {
    // 2-D conv transpose: [32, 64, 16, 16] -> [32, 32, 32, 32], kernel 4x4, stride 2, pads 1
    nnp_conv_transpose_params p{};
    p.struct_size = sizeof p;
    p.strides[0] = p.strides[1] = 2;
    for (int i = 0; i < 4; ++i) p.pads[i] = 1;
    dtensor& x = ctx.make({32, 64, 16, 16}, 1.0f);
    dtensor& w = ctx.make({64, 32, 4, 4}, 0.1f);
    dtensor& b = ctx.make({32}, 0.1f);
    dtensor& y = ctx.make({32, 32, 32, 32});
    dtensor& dy = ctx.make({32, 32, 32, 32}, 1.0f);
    dtensor& dx = ctx.make({32, 64, 16, 16});
    dtensor& dw = ctx.make({64, 32, 4, 4});
    const double flops = 2.0 * 32 * 64 * 16 * 16 * 32 * 16;
    const std::string shape = dims({32, 64, 16, 16}) + " k32 4x4 s2";
    measure_nd("conv_transpose fwd 2-D", shape, flops,
               [&] { return nnp_conv_transpose_forward(ctx.stream, &p, &x.t, &w.t, &b.t, &y.t); });
    measure_nd("conv_transpose bwd_data 2-D", shape, flops, [&] {
      return nnp_conv_transpose_backward_data(ctx.stream, &p, &dy.t, &w.t, &dx.t);
    });
    measure_nd("conv_transpose bwd_filter 2-D", shape, flops, [&] {
      return nnp_conv_transpose_backward_filter(ctx.stream, &p, &x.t, &dy.t, &dw.t);
    });
  }

  // Max-pool 2x2, relu, dropout on the cnn's activations.
  {
    dtensor& x = ctx.make({batch, 64, 24, 24}, 1.0f);
    dtensor& y = ctx.make({batch, 64, 12, 12});
    dtensor& dy = ctx.make({batch, 64, 12, 12}, 1.0f);
    dtensor& dx = ctx.make({batch, 64, 24, 24});
    const nnp_pool2d_params pp{sizeof(pp), NNP_POOL_MAX, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0};
    const double in_bytes = 4.0 * x.numel(), out_bytes = 4.0 * y.numel();
    measure("maxpool2 fwd", dims({batch, 64, 24, 24}), 0, in_bytes + out_bytes, [&] {
      check(nnp_pool2d_forward(ctx.stream, &pp, &x.t, &y.t), "pool fwd");
      ctx.sync();
    });
    measure("maxpool2 bwd", dims({batch, 64, 24, 24}), 0, 2 * in_bytes + 2 * out_bytes, [&] {
      check(nnp_pool2d_backward(ctx.stream, &pp, &x.t, &y.t, &dy.t, &dx.t), "pool bwd");
      ctx.sync();
    });
    const nnp_activation_params ap{sizeof(ap), NNP_ACTIVATION_RELU, 0, 0.0};
    measure("relu fwd", dims({batch, 64, 24, 24}), 0, 2 * in_bytes, [&] {
      check(nnp_activation_forward(ctx.stream, &ap, &x.t, &dx.t), "relu fwd");
      ctx.sync();
    });
    measure("relu bwd", dims({batch, 64, 24, 24}), 0, 3 * in_bytes, [&] {
      check(nnp_activation_backward(ctx.stream, &ap, &x.t, &dx.t, &dx.t), "relu bwd");
      ctx.sync();
    });
    nnp_dropout_params dp{sizeof(dp), 0.25, 42, 0, 0};
    measure("dropout fwd", dims({batch, 9216}), 0, 2 * out_bytes, [&] {
      check(nnp_dropout_forward(ctx.stream, &dp, &y.t, &y.t, nullptr), "dropout fwd");
      ctx.sync();
    });
  }

  // N-D pooling (pool_forward / pool_backward): a 1-D max-pool (kernel 3, stride 2, padding 1;
  // with Indices) and a 3-D max-pool (3x3x3, stride 2, padding 1) and average pool (2x2x2).
  {
    struct nd_case {
      const char* name;
      std::vector<int64_t> x, y;
      int32_t mode, k[3], s[3], pads[6];
      bool indices;
    };
    const std::vector<nd_case> cases{
        {"maxpool1d k3s2",
         {batch, 64, 1024},
         {batch, 64, 512},
         NNP_POOL_MAX,
         {3},
         {2},
         {1, 1},
         true},
        {"maxpool3d k3s2",
         {8, 32, 16, 32, 32},
         {8, 32, 8, 16, 16},
         NNP_POOL_MAX,
         {3, 3, 3},
         {2, 2, 2},
         {1, 1, 1, 1, 1, 1},
         false},
        {"avgpool3d k2s2",
         {8, 32, 16, 32, 32},
         {8, 32, 8, 16, 16},
         NNP_POOL_AVERAGE,
         {2, 2, 2},
         {2, 2, 2},
         {0},
         false},
    };
    const auto shape_of = [](const std::vector<int64_t>& d) {
      std::string r;
      for (int64_t v : d) r += (r.empty() ? "" : "x") + std::to_string(v);
      return r;
    };
    for (const nd_case& c : cases) {
      nnp_pool_params pp{};
      pp.struct_size = sizeof(pp);
      pp.mode = c.mode;
      const size_t k = c.x.size() - 2;
      for (size_t i = 0; i < k; ++i) {
        pp.kernel_shape[i] = c.k[i];
        pp.strides[i] = c.s[i];
        pp.pads[i] = c.pads[i];
        pp.pads[k + i] = c.pads[k + i];
      }
      dtensor& x = ctx.make(c.x, 1.0f);
      dtensor& y = ctx.make(c.y);
      dtensor& dy = ctx.make(c.y, 1.0f);
      dtensor& dx = ctx.make(c.x);
      dtensor* idx = c.indices ? &ctx.make(c.y, 0.0f, i64()) : nullptr;
      const double in_bytes = 4.0 * x.numel(), out_bytes = 4.0 * y.numel();
      measure(std::string(c.name) + " fwd", shape_of(c.x), 0,
              in_bytes + out_bytes * (c.indices ? 3 : 1), [&] {
                check(nnp_pool_forward(ctx.stream, &pp, &x.t, &y.t, idx ? &idx->t : nullptr),
                      "pool_nd fwd");
                ctx.sync();
              });
      measure(std::string(c.name) + " bwd", shape_of(c.x), 0, 2 * in_bytes + 2 * out_bytes, [&] {
        check(nnp_pool_backward(ctx.stream, &pp, &x.t, &y.t, &dy.t, &dx.t), "pool_nd bwd");
        ctx.sync();
      });
    }
  }

  // The vit's layer norm (float32, and float16/bfloat16 where the device runs them: rows
  // "layer_norm fwd vit f16", ...; their statistics are float32, the op table's accumulation
  // rule of ABI 1.10) and GELU on its 128 * 17 token rows.
  {
    const int64_t rows = 128 * 17;
    for (const row_dtype& ty : kRowDtypes) {
      const DLDataType dt = ty.dt;
      dtensor& x = ctx.make({rows, 64}, 1.0f, dt);
      dtensor& y = ctx.make({rows, 64}, 0.0f, dt);
      dtensor& scale = ctx.make({64}, 1.0f, dt);
      dtensor& bias = ctx.make({64}, 0.1f, dt);
      dtensor& mean = ctx.make({rows, 1}, 0.0f, dt.bits == 16 ? f32() : dt);
      dtensor& inv = ctx.make({rows, 1}, 0.0f, dt.bits == 16 ? f32() : dt);
      dtensor& dx = ctx.make({rows, 64}, 0.0f, dt);
      dtensor& ds = ctx.make({64}, 0.0f, dt);
      dtensor& db = ctx.make({64}, 0.0f, dt);
      const nnp_layer_norm_params lp{sizeof(lp), -1, 0, 1e-5};
      const DLTensor* in[] = {&x.t, &scale.t, &bias.t};
      const DLTensor* out[] = {&y.t, &mean.t, &inv.t};
      if (dt.bits == 16 &&
          nnp_op_supported(ctx.dev, NNP_OP_LAYER_NORM_FORWARD, &lp, 3, in, 3, out) != NNP_STATUS_OK)
        continue;
      const double bytes = dt.bits / 8.0 * rows * 64;
      measure(std::string("layer_norm fwd vit") + ty.suffix, dims({rows, 64}), 0, 2 * bytes, [&] {
        check(
            nnp_layer_norm_forward(ctx.stream, &lp, &x.t, &scale.t, &bias.t, &y.t, &mean.t, &inv.t),
            "layer norm fwd");
        ctx.sync();
      });
      measure(std::string("layer_norm bwd vit") + ty.suffix, dims({rows, 64}), 0, 3 * bytes, [&] {
        check(nnp_layer_norm_backward(ctx.stream, &lp, &x.t, &y.t, &scale.t, &mean.t, &inv.t, &dx.t,
                                      &ds.t, &db.t),
              "layer norm bwd");
        ctx.sync();
      });
    }
    dtensor& h = ctx.make({rows, 128}, 0.5f);
    dtensor& g = ctx.make({rows, 128});
    const nnp_activation_params gp{sizeof(gp), NNP_ACTIVATION_GELU_ERF, 0, 0.0};
    measure("gelu fwd vit", dims({rows, 128}), 0, 8.0 * rows * 128, [&] {
      check(nnp_activation_forward(ctx.stream, &gp, &h.t, &g.t), "gelu fwd");
      ctx.sync();
    });
    measure("gelu bwd vit", dims({rows, 128}), 0, 12.0 * rows * 128, [&] {
      check(nnp_activation_backward(ctx.stream, &gp, &h.t, &g.t, &g.t), "gelu bwd");
      ctx.sync();
    });
    // A linear layer's bias gradient: the sum of dy [rows, 128] over its rows.
    dtensor& gb = ctx.make({128});
    nnp_reduce_params rp{};
    rp.struct_size = sizeof rp;
    rp.op = NNP_REDUCE_SUM;
    rp.keepdims = 0;
    rp.n_axes = 1;
    rp.axes[0] = 0;
    measure("reduce sum rows vit", dims({rows, 128}), 0, 4.0 * rows * 128, [&] {
      check(nnp_reduce(ctx.stream, &rp, &h.t, &gb.t), "reduce sum rows");
      ctx.sync();
    });
  }

  // Softmax cross-entropy on [128, 10].
  {
    dtensor& logits = ctx.make({batch, 10}, 2.0f);
    dtensor& labels = ctx.labels(batch, 10);
    dtensor& loss = ctx.make({});
    dtensor& dloss = ctx.make({});
    const float one = 1.0f;
    ctx.upload(dloss, &one);
    dtensor& dlogits = ctx.make({batch, 10});
    const nnp_softmax_cross_entropy_params p{sizeof(p), NNP_REDUCTION_MEAN, 0, -100};
    measure("softmax_xent fwd", dims({batch, 10}), 0, 4.0 * batch * 10, [&] {
      check(
          nnp_softmax_cross_entropy_forward(ctx.stream, &p, &logits.t, &labels.t, &loss.t, nullptr),
          "xent fwd");
      ctx.sync();
    });
    measure("softmax_xent bwd", dims({batch, 10}), 0, 8.0 * batch * 10, [&] {
      check(nnp_softmax_cross_entropy_backward(ctx.stream, &p, &logits.t, &labels.t, &dloss.t,
                                               &dlogits.t),
            "xent bwd");
      ctx.sync();
    });
  }

  // Transposes (ONNX Transpose, float32) of the vit's attention run node by node at batch 32:
  // the qkv split [32, 17, 3, 4, 16] -> [3, 32, 4, 17, 16], heads <-> tokens [32, 4, 17, 16] ->
  // [32, 17, 4, 16], K^T [32, 4, 17, 16] -> [32, 4, 16, 17]; and a large swap of the last two
  // axes, [64, 256, 256]. GB/s counts the bytes read and written once.
  {
    struct transpose_case {
      std::vector<int64_t> x;
      std::vector<int32_t> perm;
    };
    const std::vector<transpose_case> cases{{{32, 17, 3, 4, 16}, {2, 0, 3, 1, 4}},
                                            {{32, 4, 17, 16}, {0, 2, 1, 3}},
                                            {{32, 4, 17, 16}, {0, 1, 3, 2}},
                                            {{64, 256, 256}, {0, 2, 1}}};
    for (const transpose_case& c : cases) {
      std::vector<int64_t> yshape;
      nnp_transpose_params p{};
      p.struct_size = sizeof(p);
      std::string shape, perm;
      for (size_t i = 0; i < c.perm.size(); ++i) {
        p.perm[i] = c.perm[i];
        yshape.push_back(c.x[size_t(c.perm[i])]);
        shape += (i ? "x" : "") + std::to_string(c.x[i]);
        perm += (i ? "," : "") + std::to_string(c.perm[i]);
      }
      dtensor& x = ctx.make(c.x, 1.0f);
      dtensor& y = ctx.make(yshape);
      measure("transpose perm=" + perm, shape, 0, 8.0 * x.numel(), [&] {
        check(nnp_transpose(ctx.stream, &p, &x.t, &y.t), "transpose");
        ctx.sync();
      });
    }
  }

  // Adam on the cnn's parameter count (one flat tensor).
  {
    const int64_t n = 32 * 9 + 32 + 64 * 32 * 9 + 64 + 9216 * 128 + 128 + 128 * 10 + 10;
    dtensor& g = ctx.make({n}, 0.01f);
    dtensor& w = ctx.make({n}, 0.1f);
    dtensor& m = ctx.make({n});
    dtensor& v = ctx.make({n});
    nnp_adam_params p{sizeof(p), 1e-3, 0.9, 0.999, 1e-8, 0.0, 1, 0, 0};
    measure("adam", std::to_string(n) + " params", 0, 28.0 * n, [&] {
      check(nnp_adam_update(ctx.stream, &p, &g.t, &w.t, &m.t, &v.t), "adam");
      ctx.sync();
      ++p.step;
    });
  }
}

// Square GEMMs of n (the classic BLAS figure; the large set adds 2048 and 4096), in float32,
// and in float16 and bfloat16 (rows "gemm N f16", "gemm N bf16") where the device runs them.
void bench_square_gemms(context& ctx, const std::vector<int64_t>& sizes) {
  for (const int64_t n : sizes) {
    for (const row_dtype& ty : kRowDtypes) {
      const std::string name = "gemm " + std::to_string(n) + ty.suffix;
      if (!g_filter.empty() && name.find(g_filter) == std::string::npos) continue;
      dtensor& a = ctx.make({n, n}, 1.0f, ty.dt);
      dtensor& b = ctx.make({n, n}, 1.0f, ty.dt);
      dtensor& y = ctx.make({n, n}, 0.0f, ty.dt);
      const nnp_gemm_params p{sizeof(p), 0, 0, 1.0, 0.0};
      const DLTensor* in[] = {&a.t, &b.t};
      const DLTensor* out[] = {&y.t};
      if (ty.dt.bits == 16 &&
          nnp_op_supported(ctx.dev, NNP_OP_GEMM, &p, 2, in, 1, out) != NNP_STATUS_OK)
        continue;
      measure(name, "M=N=K=" + std::to_string(n), 2.0 * n * n * n, 0, [&] {
        check(nnp_gemm(ctx.stream, &p, &a.t, &b.t, nullptr, &y.t), "gemm");
        ctx.sync();
      });
    }
  }
}

// A ResNet-style 3x3 convolution (the large set): batch 8, 64 -> 64 channels at 56x56, pad 1,
// stride 1 (ResNet-18/34's conv2_x layers): forward, backward-data and backward-filter.
void bench_resnet_conv(context& ctx) {
  const int64_t n = 8, c = 64, k = 64, hw = 56;
  dtensor& x = ctx.make({n, c, hw, hw}, 1.0f);
  dtensor& w = ctx.make({k, c, 3, 3}, 0.1f);
  dtensor& b = ctx.make({k}, 0.1f);
  dtensor& y = ctx.make({n, k, hw, hw});
  dtensor& dy = ctx.make({n, k, hw, hw}, 1.0f);
  dtensor& dx = ctx.make({n, c, hw, hw});
  dtensor& dw = ctx.make({k, c, 3, 3});
  const nnp_conv2d_params p{sizeof(p), 1, 1, 1, 1, 1, 1, 1, 1, 1, 0};
  const double flops = 2.0 * n * k * hw * hw * c * 9;
  const std::string shape = dims({n, c, hw, hw}) + " k64 3x3 p1";
  measure("conv fwd resnet56", shape, flops, 0, [&] {
    check(nnp_conv2d_forward(ctx.stream, &p, &x.t, &w.t, &b.t, &y.t), "conv fwd");
    ctx.sync();
  });
  measure("conv bwd_data resnet56", shape, flops, 0, [&] {
    check(nnp_conv2d_backward_data(ctx.stream, &p, &dy.t, &w.t, &dx.t), "conv bwd data");
    ctx.sync();
  });
  measure("conv bwd_filter resnet56", shape, flops, 0, [&] {
    check(nnp_conv2d_backward_filter(ctx.stream, &p, &x.t, &dy.t, &dw.t), "conv bwd filter");
    ctx.sync();
  });
}

// A reduction over all axes of 16 Mi float32 elements (the large set): a loss or a norm over a
// whole tensor; the cuda backend splits it over many blocks.
void bench_full_reduce(context& ctx) {
  const int64_t n = 4096;
  dtensor& x = ctx.make({n, n}, 1.0f);
  dtensor& y = ctx.make({});
  nnp_reduce_params rp{};
  rp.struct_size = sizeof rp;
  rp.op = NNP_REDUCE_SUM;
  rp.keepdims = 0;
  rp.n_axes = 0;  // all axes (ONNX)
  measure("reduce sum all 16M", dims({n, n}), 0, 4.0 * n * n, [&] {
    check(nnp_reduce(ctx.stream, &rp, &x.t, &y.t), "reduce sum all");
    ctx.sync();
  });
}

// Attention at the named shapes ("vit", "T256", "T1024"), in float32, float16 and bfloat16.
void bench_attention(context& ctx, const std::vector<std::string>& which) {
  // Attention (rank-4 [B, H, T, D]): the vit's blocks (B 128, 4 heads of 16, 17 tokens) and
  // longer sequences. Forward 4*B*H*T^2*D flops (two matmuls); backward 10*B*H*T^2*D (S
  // recomputed, then dP, dV, dQ, dK). The 16-bit rows are named with their dtype and left out
  // where the device does not run 16-bit attention.
  struct attention_shape {
    const char* name;
    int64_t b, h, t, d;
  };
  for (const attention_shape& a :
       {attention_shape{"vit", 128, 4, 17, 16}, attention_shape{"T256", 8, 8, 256, 64},
        attention_shape{"T1024", 2, 8, 1024, 64}}) {
    if (std::find(which.begin(), which.end(), a.name) == which.end()) continue;
    for (const row_dtype& ty : kRowDtypes) {
      const DLDataType dt = ty.dt;
      dtensor& q = ctx.make({a.b, a.h, a.t, a.d}, 1.0f, dt);
      dtensor& k = ctx.make({a.b, a.h, a.t, a.d}, 1.0f, dt);
      dtensor& v = ctx.make({a.b, a.h, a.t, a.d}, 1.0f, dt);
      dtensor& y = ctx.make({a.b, a.h, a.t, a.d}, 0.0f, dt);
      // float32 in a 16-bit call (the op table's accumulation rule, ABI 1.9)
      dtensor& lse = ctx.make({a.b, a.h, a.t}, 0.0f, dt.bits == 16 ? f32() : dt);
      dtensor& dy = ctx.make({a.b, a.h, a.t, a.d}, 1.0f, dt);
      dtensor& dq = ctx.make({a.b, a.h, a.t, a.d}, 0.0f, dt);
      dtensor& dk = ctx.make({a.b, a.h, a.t, a.d}, 0.0f, dt);
      dtensor& dv = ctx.make({a.b, a.h, a.t, a.d}, 0.0f, dt);
      nnp_attention_params p{};
      p.struct_size = sizeof p;
      // The 16-bit rows only where the device runs them (cuda); the float32 rows always.
      const DLTensor* fwd_in[] = {&q.t, &k.t, &v.t};
      const DLTensor* fwd_out[] = {&y.t, &lse.t};
      if (dt.bits == 16 && nnp_op_supported(ctx.dev, NNP_OP_ATTENTION_FORWARD, &p, 3, fwd_in, 2,
                                            fwd_out) != NNP_STATUS_OK)
        continue;
      const double fwd = 4.0 * a.b * a.h * a.t * a.t * a.d;
      const std::string shape = dims({a.b, a.h, a.t, a.d});
      measure(std::string("attention fwd ") + a.name + ty.suffix, shape, fwd, 0, [&] {
        check(nnp_attention_forward(ctx.stream, &p, &q.t, &k.t, &v.t, nullptr, &y.t, &lse.t),
              "attention fwd");
        ctx.sync();
      });
      measure(std::string("attention bwd ") + a.name + ty.suffix, shape, 2.5 * fwd, 0, [&] {
        check(nnp_attention_backward(ctx.stream, &p, &q.t, &k.t, &v.t, nullptr, &y.t, &dy.t, &lse.t,
                                     &dq.t, &dk.t, &dv.t),
              "attention bwd");
        ctx.sync();
      });
    }
  }
}

void bench_dispatch(context& ctx) {
  // Dispatch overhead: a 1-element FILL through the full C API (validation included).
  if (g_filter.empty() || std::string("dispatch").find(g_filter) != std::string::npos) {
    dtensor& one = ctx.make({1});
    const nnp_fill_params p{sizeof(p), 1.0};
    const int calls = 200000;
    timings t = time_calls(5, [&] {
      for (int i = 0; i < calls; ++i) check(nnp_fill(ctx.stream, &p, &one.t), "fill");
      ctx.sync();
    });
    std::vector<double>&per_call = t.wall_us, &cpu_per_call = t.cpu_us;
    for (double& us : per_call) us /= calls;
    for (double& us : cpu_per_call) us /= calls;
    row r{"dispatch (fill 1 element)",
          "nnp_op_execute",
          median(per_call),
          *std::min_element(per_call.begin(), per_call.end()),
          0,
          "",
          median(cpu_per_call)};
    print_row(r);
    g_rows.push_back(r);
  }
}

}  // namespace nnp_bench
