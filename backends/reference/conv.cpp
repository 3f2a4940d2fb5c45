// conv.cpp — reference 2-D convolution, NCHW activations and OIHW filters (cuDNN / ONNX Conv:
// cross-correlation, no filter flip): forward, backward-data, backward-filter, backward-bias.
// Each output element is one gather loop with double accumulation:
//   y[n,k,p,q]  = b[k] + sum_{c,r,s} x[n, g*Cg + c, h(p,r), w(q,s)] * w[k,c,r,s]
//   dx[n,c,h,w] = sum_{k in group, r, s : h = p*sh - pt + r*dh, w = q*sw - pl + s*dw} dy * w
//   dw[k,c,r,s] = sum_{n,p,q} x[n, g*Cg + c, h(p,r), w(q,s)] * dy[n,k,p,q]
//   db[k]       = sum_{n,p,q} dy[n,k,p,q]
// with h(p,r) = p*stride_h - pad_top + r*dilation_h (likewise w), g = k / (K/groups),
// Cg = C/groups, and reads outside the input being 0: padding taps are zeros that take part in
// the products (0 * inf = NaN, as PyTorch; docs/ops.md, "Non-finite values").
#include "reference.hpp"

namespace ref {
namespace {

// Every size of one convolution, taken from x [N,C,H,W], w [K,Cg,R,S], y [N,K,P,Q].
struct conv_geometry {
  int64_t N, C, H, W, K, Cg, R, S, P, Q, Kg;
  int64_t sh, sw, pt, pl, dh, dw;

  // Element indices in x (and dx), w (and dw), y (and dy).
  int64_t x_at(int64_t n, int64_t c, int64_t h, int64_t w) const {
    return ((n * C + c) * H + h) * W + w;
  }
  int64_t w_at(int64_t k, int64_t c, int64_t r, int64_t s) const {
    return ((k * Cg + c) * R + r) * S + s;
  }
  int64_t y_at(int64_t n, int64_t k, int64_t p, int64_t q) const {
    return ((n * K + k) * P + p) * Q + q;
  }
  // The input row h(p, r) and column w(q, s) that output (p, q) reads through filter tap (r, s);
  // outside [0, H) x [0, W) when it falls in the padding.
  int64_t in_row(int64_t p, int64_t r) const { return p * sh - pt + r * dh; }
  int64_t in_col(int64_t q, int64_t s) const { return q * sw - pl + s * dw; }
};

conv_geometry geometry(const nnp_conv2d_params& p, const DLTensor& x, const DLTensor& w,
                       const DLTensor& y) {
  conv_geometry g{};
  g.N = x.shape[0];
  g.C = x.shape[1];
  g.H = x.shape[2];
  g.W = x.shape[3];
  g.K = w.shape[0];
  g.Cg = w.shape[1];
  g.R = w.shape[2];
  g.S = w.shape[3];
  g.P = y.shape[2];
  g.Q = y.shape[3];
  g.Kg = g.K / p.groups;  // output channels per group
  g.sh = p.stride_h;
  g.sw = p.stride_w;
  g.pt = p.pad_top;
  g.pl = p.pad_left;
  g.dh = p.dilation_h;
  g.dw = p.dilation_w;
  return g;
}

template <typename T>
void forward_t(const op_args& args) {
  const auto p = read_params<nnp_conv2d_params>(args.params);
  const DLTensor& X = *args.in(0);
  const DLTensor& Wt = *args.in(1);
  const DLTensor& Y = *args.out(0);
  const conv_geometry g = geometry(p, X, Wt, Y);
  const T* x = nnp::data_ptr<const T>(X);
  const T* w = nnp::data_ptr<const T>(Wt);
  const T* b = opt_in<T>(args, 2);
  T* y = nnp::data_ptr<T>(Y);

  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t k = 0; k < g.K; ++k) {
      const int64_t group = k / g.Kg;
      for (int64_t oh = 0; oh < g.P; ++oh)
        for (int64_t ow = 0; ow < g.Q; ++ow) {
          double acc = b != nullptr ? double(b[k]) : 0.0;
          for (int64_t c = 0; c < g.Cg; ++c)
            for (int64_t r = 0; r < g.R; ++r) {
              const int64_t ih = g.in_row(oh, r);
              const bool row_inside = ih >= 0 && ih < g.H;
              for (int64_t s = 0; s < g.S; ++s) {
                const int64_t iw = g.in_col(ow, s);
                const double wv = double(w[g.w_at(k, c, r, s)]);
                if (!row_inside || iw < 0 || iw >= g.W) {
                  acc += 0.0 * wv;  // padding: a zero that takes part (0 * inf = NaN)
                  continue;
                }
                const int64_t ic = group * g.Cg + c;
                acc += double(x[g.x_at(n, ic, ih, iw)]) * wv;
              }
            }
          y[g.y_at(n, k, oh, ow)] = static_cast<T>(acc);
        }
    }
}

template <typename T>
void backward_data_t(const op_args& args) {
  const auto p = read_params<nnp_conv2d_params>(args.params);
  const DLTensor& DY = *args.in(0);
  const DLTensor& Wt = *args.in(1);
  const DLTensor& DX = *args.out(0);
  const conv_geometry g = geometry(p, DX, Wt, DY);
  const T* dy = nnp::data_ptr<const T>(DY);
  const T* w = nnp::data_ptr<const T>(Wt);
  T* dx = nnp::data_ptr<T>(DX);

  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t ic = 0; ic < g.C; ++ic) {
      const int64_t group = ic / g.Cg, c = ic % g.Cg;
      for (int64_t ih = 0; ih < g.H; ++ih)
        for (int64_t iw = 0; iw < g.W; ++iw) {
          double acc = 0.0;
          for (int64_t k = group * g.Kg; k < (group + 1) * g.Kg; ++k)
            for (int64_t r = 0; r < g.R; ++r) {
              // ih = oh*sh - pt + r*dh  <=>  oh = (ih + pt - r*dh) / sh, when it divides.
              const int64_t th = ih + g.pt - r * g.dh;
              if (th < 0 || th % g.sh != 0) continue;
              const int64_t oh = th / g.sh;
              if (oh >= g.P) continue;
              for (int64_t s = 0; s < g.S; ++s) {
                const int64_t tw = iw + g.pl - s * g.dw;
                if (tw < 0 || tw % g.sw != 0) continue;
                const int64_t ow = tw / g.sw;
                if (ow >= g.Q) continue;
                acc += double(dy[g.y_at(n, k, oh, ow)]) * double(w[g.w_at(k, c, r, s)]);
              }
            }
          dx[g.x_at(n, ic, ih, iw)] = static_cast<T>(acc);
        }
    }
}

template <typename T>
void backward_filter_t(const op_args& args) {
  const auto p = read_params<nnp_conv2d_params>(args.params);
  const DLTensor& X = *args.in(0);
  const DLTensor& DY = *args.in(1);
  const DLTensor& DW = *args.out(0);
  const conv_geometry g = geometry(p, X, DW, DY);
  const T* x = nnp::data_ptr<const T>(X);
  const T* dy = nnp::data_ptr<const T>(DY);
  T* dw = nnp::data_ptr<T>(DW);

  for (int64_t k = 0; k < g.K; ++k) {
    const int64_t group = k / g.Kg;
    for (int64_t c = 0; c < g.Cg; ++c)
      for (int64_t r = 0; r < g.R; ++r)
        for (int64_t s = 0; s < g.S; ++s) {
          double acc = 0.0;
          const int64_t ic = group * g.Cg + c;
          for (int64_t n = 0; n < g.N; ++n)
            for (int64_t oh = 0; oh < g.P; ++oh) {
              const int64_t ih = g.in_row(oh, r);
              const bool row_inside = ih >= 0 && ih < g.H;
              for (int64_t ow = 0; ow < g.Q; ++ow) {
                const int64_t iw = g.in_col(ow, s);
                const double d = double(dy[g.y_at(n, k, oh, ow)]);
                if (!row_inside || iw < 0 || iw >= g.W) {
                  acc += 0.0 * d;  // padding: a zero that takes part (0 * inf = NaN)
                  continue;
                }
                acc += double(x[g.x_at(n, ic, ih, iw)]) * d;
              }
            }
          dw[g.w_at(k, c, r, s)] = static_cast<T>(acc);
        }
  }
}

template <typename T>
void backward_bias_t(const op_args& args) {
  const DLTensor& DY = *args.in(0);
  const DLTensor& DB = *args.out(0);
  const int64_t N = DY.shape[0], K = DY.shape[1], PQ = DY.shape[2] * DY.shape[3];
  const T* dy = nnp::data_ptr<const T>(DY);
  T* db = nnp::data_ptr<T>(DB);
  const int64_t images = N * PQ == 0 ? 0 : N;  // no element: no loop over N (it may be huge)
  for (int64_t k = 0; k < K; ++k) {
    double acc = 0.0;
    for (int64_t n = 0; n < images; ++n)
      for (int64_t i = 0; i < PQ; ++i) acc += double(dy[(n * K + k) * PQ + i]);
    db[k] = static_cast<T>(acc);
  }
}

}  // namespace

REF_FLOAT_OP(conv2d_forward, forward_t, in(0))
REF_FLOAT_OP(conv2d_backward_data, backward_data_t, in(0))
REF_FLOAT_OP(conv2d_backward_filter, backward_filter_t, in(0))
REF_FLOAT_OP(conv2d_backward_bias, backward_bias_t, in(0))

}  // namespace ref
