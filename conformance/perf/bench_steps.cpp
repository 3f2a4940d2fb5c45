// bench_steps.cpp — nnplug-bench --step: whole training steps (forward, backward, Adam) of the
// mlp and the cnn at batch 128 with nnplug ops, as examples/c/train runs them.
#include "bench.hpp"

#include <cmath>
#include <cstdio>
#include <deque>
#include <memory>

namespace nnp_bench {

// ---- whole training steps
// --------------------------------------------------------------------------
struct adam_state {
  dtensor *w, *g, *m, *v;
};

class trainer {
 public:
  explicit trainer(context& ctx) : ctx_(ctx) {}

  adam_state& param(std::vector<int64_t> shape, int64_t fan_in, int64_t fan_out, bool bias) {
    const float limit = bias ? 0.0f : std::sqrt(6.0f / static_cast<float>(fan_in + fan_out));
    adam_state s{&ctx_.make(shape, limit), &ctx_.make(shape), &ctx_.make(shape), &ctx_.make(shape)};
    params_.push_back(s);
    return params_.back();
  }
  void adam() {
    ++step_;
    const nnp_adam_params p{sizeof(p), 1e-3, 0.9, 0.999, 1e-8, 0.0, step_, 0, 0};
    for (adam_state& s : params_)
      check(nnp_adam_update(ctx_.stream, &p, &s.g->t, &s.w->t, &s.m->t, &s.v->t), "adam");
  }
  // y = x.W + b (W [in, out]).
  void dense_fwd(const DLTensor& x, const adam_state& w, const adam_state& b, const DLTensor& y) {
    const nnp_gemm_params p{sizeof(p), 0, 0, 1.0, 1.0};
    check(nnp_gemm(ctx_.stream, &p, &x, &w.w->t, &b.w->t, &y), "dense fwd");
  }
  // dW = x^T.dy, db = sum_rows dy, dx = dy.W^T (dx may be NULL).
  void dense_bwd(const DLTensor& x, const DLTensor& dy, const adam_state& w, const adam_state& b,
                 const DLTensor* dx) {
    const nnp_gemm_params pw{sizeof(pw), 1, 0, 1.0, 0.0};
    check(nnp_gemm(ctx_.stream, &pw, &x, &dy, nullptr, &w.g->t), "dense bwd w");
    nnp_reduce_params pr{};
    pr.struct_size = sizeof(pr);
    pr.op = NNP_REDUCE_SUM;
    pr.n_axes = 1;
    pr.axes[0] = 0;
    check(nnp_reduce(ctx_.stream, &pr, &dy, &b.g->t), "dense bwd b");
    if (dx != nullptr) {
      const nnp_gemm_params px{sizeof(px), 0, 1, 1.0, 0.0};
      check(nnp_gemm(ctx_.stream, &px, &dy, &w.w->t, nullptr, dx), "dense bwd x");
    }
  }
  void relu(const DLTensor& x) {
    const nnp_activation_params p{sizeof(p), NNP_ACTIVATION_RELU, 0, 0.0};
    check(nnp_activation_forward(ctx_.stream, &p, &x, &x), "relu");
  }
  void relu_bwd(const DLTensor& y, const DLTensor& dy) {  // y = relu output (> 0 iff x > 0)
    const nnp_activation_params p{sizeof(p), NNP_ACTIVATION_RELU, 0, 0.0};
    check(nnp_activation_backward(ctx_.stream, &p, &y, &dy, &dy), "relu bwd");
  }
  nnp_dropout_params dropout_params(double ratio, int64_t numel) {
    const nnp_dropout_params p{sizeof(p), ratio, 2024, offset_, 0};
    offset_ += static_cast<uint64_t>((numel + 3) / 4);
    return p;
  }
  // A hidden layer: a = relu(x.W + b), d = dropout(a). Returns the dropout's params, which its
  // backward needs.
  nnp_dropout_params dense_relu_dropout(const DLTensor& x, const adam_state& w, const adam_state& b,
                                        dtensor& a, dtensor& d, double ratio) {
    dense_fwd(x, w, b, a.t);
    relu(a.t);
    const nnp_dropout_params p = dropout_params(ratio, a.numel());
    check(nnp_dropout_forward(ctx_.stream, &p, &a.t, &d.t, nullptr), "dropout");
    return p;
  }
  // Its backward: g holds dL/dd and becomes dL/da in place; then dW, db and dx (dx may be NULL).
  void dense_relu_dropout_bwd(const nnp_dropout_params& p, const DLTensor& x, const DLTensor& a,
                              const DLTensor& g, const adam_state& w, const adam_state& b,
                              const DLTensor* dx) {
    check(nnp_dropout_backward(ctx_.stream, &p, &g, &g), "dropout bwd");
    relu_bwd(a, g);
    dense_bwd(x, g, w, b, dx);
  }
  void loss(const DLTensor& logits, const DLTensor& labels, const DLTensor& loss,
            const DLTensor& dloss, const DLTensor& dlogits) {
    const nnp_softmax_cross_entropy_params p{sizeof(p), NNP_REDUCTION_MEAN, 0, -100};
    check(nnp_softmax_cross_entropy_forward(ctx_.stream, &p, &logits, &labels, &loss, nullptr),
          "xent fwd");
    check(nnp_softmax_cross_entropy_backward(ctx_.stream, &p, &logits, &labels, &dloss, &dlogits),
          "xent bwd");
  }

 private:
  context& ctx_;
  std::deque<adam_state> params_;  // deque: references stay valid as it grows
  int64_t step_ = 0;
  uint64_t offset_ = 0;
};

double run_steps(context& ctx, const std::string& model, int steps) {
  const int64_t B = 128;
  trainer tr(ctx);
  dtensor& labels = ctx.labels(B, 10);
  dtensor& loss = ctx.make({});
  dtensor& dloss = ctx.make({});
  const float one = 1.0f;
  ctx.upload(dloss, &one);
  std::function<void()> step;
  std::vector<std::unique_ptr<view>> views;  // flattened views used by the steps

  if (model == "mlp") {
    dtensor& x = ctx.make({B, 784}, 1.0f);
    adam_state& w1 = tr.param({784, 512}, 784, 512, false);
    adam_state& b1 = tr.param({512}, 0, 0, true);
    adam_state& w2 = tr.param({512, 512}, 512, 512, false);
    adam_state& b2 = tr.param({512}, 0, 0, true);
    adam_state& w3 = tr.param({512, 10}, 512, 10, false);
    adam_state& b3 = tr.param({10}, 0, 0, true);
    dtensor &a1 = ctx.make({B, 512}), &d1 = ctx.make({B, 512}), &a2 = ctx.make({B, 512});
    dtensor &d2 = ctx.make({B, 512}), &logits = ctx.make({B, 10}), &dlogits = ctx.make({B, 10});
    dtensor &g2 = ctx.make({B, 512}), &g1 = ctx.make({B, 512});
    step = [&] {
      const nnp_dropout_params p1 = tr.dense_relu_dropout(x.t, w1, b1, a1, d1, 0.2);
      const nnp_dropout_params p2 = tr.dense_relu_dropout(d1.t, w2, b2, a2, d2, 0.2);
      tr.dense_fwd(d2.t, w3, b3, logits.t);
      tr.loss(logits.t, labels.t, loss.t, dloss.t, dlogits.t);
      tr.dense_bwd(d2.t, dlogits.t, w3, b3, &g2.t);
      tr.dense_relu_dropout_bwd(p2, d1.t, a2.t, g2.t, w2, b2, &g1.t);
      tr.dense_relu_dropout_bwd(p1, x.t, a1.t, g1.t, w1, b1, nullptr);
      tr.adam();
      ctx.sync();
    };
  } else if (model == "cnn") {
    dtensor& x = ctx.make({B, 1, 28, 28}, 1.0f);
    adam_state& c1w = tr.param({32, 1, 3, 3}, 9, 32 * 9, false);
    adam_state& c1b = tr.param({32}, 0, 0, true);
    adam_state& c2w = tr.param({64, 32, 3, 3}, 32 * 9, 64 * 9, false);
    adam_state& c2b = tr.param({64}, 0, 0, true);
    adam_state& w3 = tr.param({9216, 128}, 9216, 128, false);
    adam_state& b3 = tr.param({128}, 0, 0, true);
    adam_state& w4 = tr.param({128, 10}, 128, 10, false);
    adam_state& b4 = tr.param({10}, 0, 0, true);
    dtensor &y1 = ctx.make({B, 32, 26, 26}), &y2 = ctx.make({B, 64, 24, 24});
    dtensor &pool = ctx.make({B, 64, 12, 12}), &drop1 = ctx.make({B, 64, 12, 12});
    dtensor &a3 = ctx.make({B, 128}), &d3 = ctx.make({B, 128});
    dtensor &logits = ctx.make({B, 10}), &dlogits = ctx.make({B, 10});
    dtensor &g3 = ctx.make({B, 128}), &gd = ctx.make({B, 64, 12, 12});
    dtensor &g2 = ctx.make({B, 64, 24, 24}), &g1 = ctx.make({B, 32, 26, 26});
    views.push_back(std::make_unique<view>(drop1, std::vector<int64_t>{B, 9216}));
    views.push_back(std::make_unique<view>(gd, std::vector<int64_t>{B, 9216}));
    view &flat_drop = *views[0], &flat_gd = *views[1];
    const nnp_conv2d_params cp{sizeof(cp), 1, 1, 0, 0, 0, 0, 1, 1, 1, 0};
    const nnp_pool2d_params pp{sizeof(pp), NNP_POOL_MAX, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0};
    step = [&, cp, pp] {
      check(nnp_conv2d_forward(ctx.stream, &cp, &x.t, &c1w.w->t, &c1b.w->t, &y1.t), "conv1");
      tr.relu(y1.t);
      check(nnp_conv2d_forward(ctx.stream, &cp, &y1.t, &c2w.w->t, &c2b.w->t, &y2.t), "conv2");
      tr.relu(y2.t);
      check(nnp_pool2d_forward(ctx.stream, &pp, &y2.t, &pool.t), "pool");
      const nnp_dropout_params p1 = tr.dropout_params(0.25, pool.numel());
      check(nnp_dropout_forward(ctx.stream, &p1, &pool.t, &drop1.t, nullptr), "dropout");
      const nnp_dropout_params p2 = tr.dense_relu_dropout(flat_drop.t, w3, b3, a3, d3, 0.5);
      tr.dense_fwd(d3.t, w4, b4, logits.t);
      tr.loss(logits.t, labels.t, loss.t, dloss.t, dlogits.t);
      tr.dense_bwd(d3.t, dlogits.t, w4, b4, &g3.t);
      tr.dense_relu_dropout_bwd(p2, flat_drop.t, a3.t, g3.t, w3, b3, &flat_gd.t);
      check(nnp_dropout_backward(ctx.stream, &p1, &gd.t, &gd.t), "dropout bwd");
      check(nnp_pool2d_backward(ctx.stream, &pp, &y2.t, &pool.t, &gd.t, &g2.t), "pool bwd");
      tr.relu_bwd(y2.t, g2.t);
      check(nnp_conv2d_backward_bias(ctx.stream, &g2.t, &c2b.g->t), "conv2 bwd bias");
      check(nnp_conv2d_backward_filter(ctx.stream, &cp, &y1.t, &g2.t, &c2w.g->t), "conv2 bwd w");
      check(nnp_conv2d_backward_data(ctx.stream, &cp, &g2.t, &c2w.w->t, &g1.t), "conv2 bwd x");
      tr.relu_bwd(y1.t, g1.t);
      check(nnp_conv2d_backward_bias(ctx.stream, &g1.t, &c1b.g->t), "conv1 bwd bias");
      check(nnp_conv2d_backward_filter(ctx.stream, &cp, &x.t, &g1.t, &c1w.g->t), "conv1 bwd w");
      tr.adam();
      ctx.sync();
    };
  } else {
    throw std::runtime_error("unknown model '" + model + "' (mlp or cnn)");
  }

  const int warm = std::max(1, std::min(g_warmup, 3));
  for (int i = 0; i < warm; ++i) step();
  timings t = time_calls(steps, step);
  std::vector<double>&ms = t.wall_us, &cpu_ms = t.cpu_us;
  for (double& v : ms) v /= 1e3;
  for (double& v : cpu_ms) v /= 1e3;
  const double med = median(ms), cpu_med = median(cpu_ms);
  const double ips = 128.0 / (med / 1e3);
  const double epoch_s = std::ceil(60000.0 / 128.0) * med / 1e3;
  std::printf(
      "step %-4s batch 128: median %.2f ms/step (min %.2f, cpu %.2f) over %d steps = "
      "%.0f images/s ~ %.1f s per 60000-image epoch\n",
      model.c_str(), med, *std::min_element(ms.begin(), ms.end()), cpu_med, steps, ips, epoch_s);
  std::fflush(stdout);
  row r{
      "step " + model, "batch 128",  med * 1e3, *std::min_element(ms.begin(), ms.end()) * 1e3, ips,
      "images/s",      cpu_med * 1e3};
  g_rows.push_back(r);
  return med;
}

}  // namespace nnp_bench
