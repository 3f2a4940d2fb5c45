"""vit.py — the small Vision Transformer of examples/c/vit.c on the nnplug Python package, for
train.py --model vit.

7x7 patches (16 tokens of 49 pixels) -> Linear(49, 64); a learned class token and position
embeddings (17 x 64, normal std 0.02); 4 pre-norm blocks of 4-head attention (nnplug's fused
attention op on the [B, T, H*D] layout) and a GELU MLP of 128, dropout 0.1 after the output
projection and after the MLP; LayerNorm of the class token -> Linear(64, 10). Linear weights
Glorot uniform in PyTorch's [out, in] layout (q, k, v with the fans of one [192, 64] qkv
weight), biases zero, LayerNorm eps 1e-5; 139 018 parameters. The class token and the patch
embeddings go into the token sequence, and the class token comes back out, through strided
views and nnplug.copy (no concat buffers). The gradients are views of one flat buffer
(ddp.GradientStorage); backward calls self.grad_ready on each as soon as it is complete, and
forward can compute a share of a global batch with that batch's dropout masks (train.py's
distributed mode).
"""
import math

import numpy as np

import nnplug
from ddp import GradientStorage

T, D, H, HID, P, NP, DEPTH = 17, 64, 4, 128, 49, 16, 4


class Params:
    """Every parameter with its gradient and Adam moments, on the device, and its name."""

    def __init__(self, dev, rng):
        self.dev, self.rng, self.items, self.names = dev, rng, [], []
        self.grads = None

    def add(self, name, shape, init, fans=None):
        if init == "glorot":
            limit = math.sqrt(6.0 / sum(fans))
            value = self.rng.uniform(-limit, limit, shape).astype(np.float32)
        elif init == "normal":
            value = (0.02 * self.rng.standard_normal(shape)).astype(np.float32)
        else:
            value = np.full(shape, 1.0 if init == "one" else 0.0, np.float32)
        p = [self.dev.to_device(value), None, self.dev.zeros(shape), self.dev.zeros(shape)]
        self.items.append(p)
        self.names.append(name)
        return p  # [value, grad (set by finish), m, v]

    def linear(self, name, n_out, n_in, fans=None):
        return (self.add(name + ".weight", (n_out, n_in), "glorot", fans or (n_in, n_out)),
                self.add(name + ".bias", (n_out,), "zero"))

    def finish(self):
        """Every gradient a view of one GradientStorage (in reverse parameter order)."""
        self.grads = GradientStorage(self.dev, [p[0].shape for p in self.items])
        for p, g in zip(self.items, self.grads.grads):
            p[1] = g


def linear_forward(x, wb, y, s):
    nnplug.gemm(x, wb[0][0], C=wb[1][0], trans_b=True, out=y, stream=s)


def linear_backward(x, dy, wb, dx, s, accumulate=False):
    nnplug.gemm(dy, x, trans_a=True, out=wb[0][1], stream=s)
    nnplug.reduce(dy, op="sum", axes=(0,), keepdims=False, out=wb[1][1], stream=s)
    if dx is not None:
        nnplug.gemm(dy, wb[0][0], C=dx if accumulate else None, out=dx, stream=s)


class ViT:
    def __init__(self, dev, max_batch, seed):
        rng = np.random.default_rng(seed)
        self.dev, self.seed, self.offset = dev, seed, 0
        ps = self.store = Params(dev, rng)
        self.embed = ps.linear("embed", D, P)
        self.cls = ps.add("cls", (1, 1, D), "zero")
        self.pos = ps.add("pos", (1, T, D), "normal")
        self.blocks = []
        for i in range(DEPTH):
            pre = f"blocks.{i}."
            b = {"ln1": (ps.add(pre + "ln1.weight", (D,), "one"),
                         ps.add(pre + "ln1.bias", (D,), "zero"))}
            for name in ("q", "k", "v"):
                b[name] = ps.linear(pre + name, D, D, fans=(D, 3 * D))
            b["proj"] = ps.linear(pre + "proj", D, D)
            b["ln2"] = (ps.add(pre + "ln2.weight", (D,), "one"),
                        ps.add(pre + "ln2.bias", (D,), "zero"))
            b["fc1"], b["fc2"] = ps.linear(pre + "fc1", HID, D), ps.linear(pre + "fc2", D, HID)
            for name, width in (("h_in", D), ("y1", D), ("q_", D), ("k_", D), ("v_", D),
                                ("a", D), ("h_mid", D), ("y2", D), ("f1", HID), ("g", HID),
                                ("mean1", 1), ("inv1", 1), ("mean2", 1), ("inv2", 1)):
                b[name] = dev.empty((max_batch * T, width))
            b["lse"] = dev.empty((max_batch, H, T))
            self.blocks.append(b)
        self.ln = (ps.add("ln.weight", (D,), "one"), ps.add("ln.bias", (D,), "zero"))
        self.head = ps.linear("head", 10, D)
        ps.finish()
        self.names = ps.names
        self.params = [p[0] for p in ps.items]
        self.adam_state = [(p[2], p[3]) for p in ps.items]
        self.grads = ps.grads
        self.grad_ready = lambda grad: None  # backward's hook (ddp.GradientReducer.ready)
        self.first, self.n_global = 0, None  # this forward's share of a global batch
        B = max_batch
        self.patches, self.emb = dev.empty((B * NP, P)), dev.empty((B * NP, D))
        self.h_out, self.o = dev.empty((B * T, D)), dev.empty((B * T, D))
        self.cls_tok, self.z = dev.empty((B, D)), dev.empty((B, D))
        self.zmean, self.zinv = dev.empty((B, 1)), dev.empty((B, 1))
        self.dh, self.dtmp, self.d64 = (dev.empty((B * T, D)) for _ in range(3))
        self.d128 = dev.empty((B * T, HID))
        self.dq, self.dk, self.dv, self.da = (dev.empty((B * T, D)) for _ in range(4))
        self.dz, self.dcls = dev.empty((B, D)), dev.empty((B, D))
        self.logits, self.dlogits = dev.empty((B, 10)), dev.empty((B, 10))
        self.loss, self.dloss = dev.empty(()), dev.to_device(np.float32(1.0))

    @staticmethod
    def v(arr, *shape):
        return arr.view(shape)

    @staticmethod
    def tokens(seq, n, t, count):
        """Tokens t..t+count of every sequence of a [n*T, D] array: a strided [n, count, D]."""
        return seq.view((n, count, D), t * D, (T * D, D, 1))

    def dropout(self, x, n_el, s):
        """Dropout of the n_el = n * T * D elements of x (n images); a share of a global batch
        takes the masks its images get in the whole batch (T * D per image: a whole number of
        Philox counters)."""
        kw = dict(ratio=0.1, seed=self.seed, offset=self.offset + self.first * T * D // 4)
        self.offset += ((n_el if self.n_global is None else self.n_global * T * D) + 3) // 4
        nnplug.dropout_forward(x, out=x, stream=s, **kw)
        self.drop.append(kw)

    def skip_dropout(self, n_global):
        """Advances the Philox offset as a training forward pass over a global batch of
        n_global images would (a rank without images in this batch)."""
        self.offset += 2 * DEPTH * ((n_global * T * D + 3) // 4)

    def ready(self, *params):
        for p in params:
            self.grad_ready(p[1])

    def forward(self, x, n, s, training, first=0, n_global=None):
        """Logits of the n images of x: images [first, first + n) of a global batch of
        n_global when it is given (dropout masks as in the whole batch)."""
        self.first, self.n_global = first, n_global
        v, rows = self.v, n * T
        xi = x.reshape(n, 4, 7, 4, 7)
        nnplug.transpose(xi, perm=(0, 1, 3, 2, 4), out=v(self.patches, n, 4, 4, 7, 7),
                         stream=s)
        linear_forward(v(self.patches, n * NP, P), self.embed, v(self.emb, n * NP, D), s)
        h = self.blocks[0]["h_in"]
        nnplug.copy(self.cls[0].view((n, 1, D), 0, (0, 0, 1)), out=self.tokens(h, n, 0, 1),
                    stream=s)
        nnplug.copy(v(self.emb, n, NP, D), out=self.tokens(h, n, 1, NP), stream=s)
        nnplug.add(v(h, n, T, D), v(self.pos[0], T, D), out=v(h, n, T, D), stream=s)
        self.drop = []
        for i, b in enumerate(self.blocks):
            out = self.blocks[i + 1]["h_in"] if i + 1 < DEPTH else self.h_out
            nnplug.layer_norm_forward(v(b["h_in"], rows, D), b["ln1"][0][0], bias=b["ln1"][1][0],
                                      out=(v(b["y1"], rows, D), v(b["mean1"], rows, 1),
                                           v(b["inv1"], rows, 1)), stream=s)
            for name in ("q", "k", "v"):
                linear_forward(v(b["y1"], rows, D), b[name], v(b[name + "_"], rows, D), s)
            nnplug.attention_forward(v(b["q_"], n, T, D), v(b["k_"], n, T, D),
                                     v(b["v_"], n, T, D), q_num_heads=H, kv_num_heads=H,
                                     out=(v(b["a"], n, T, D), v(b["lse"], n, H, T)), stream=s)
            linear_forward(v(b["a"], rows, D), b["proj"], v(self.o, rows, D), s)
            if training:
                self.dropout(v(self.o, rows * D), rows * D, s)
            nnplug.add(v(b["h_in"], rows, D), v(self.o, rows, D), out=v(b["h_mid"], rows, D),
                       stream=s)
            nnplug.layer_norm_forward(v(b["h_mid"], rows, D), b["ln2"][0][0], bias=b["ln2"][1][0],
                                      out=(v(b["y2"], rows, D), v(b["mean2"], rows, 1),
                                           v(b["inv2"], rows, 1)), stream=s)
            linear_forward(v(b["y2"], rows, D), b["fc1"], v(b["f1"], rows, HID), s)
            nnplug.activation_forward(v(b["f1"], rows * HID), function="gelu_erf",
                                      out=v(b["g"], rows * HID), stream=s)
            linear_forward(v(b["g"], rows, HID), b["fc2"], v(self.o, rows, D), s)
            if training:
                self.dropout(v(self.o, rows * D), rows * D, s)
            nnplug.add(v(b["h_mid"], rows, D), v(self.o, rows, D), out=v(out, rows, D), stream=s)
        nnplug.copy(self.tokens(self.h_out, n, 0, 1), out=v(self.cls_tok, n, 1, D), stream=s)
        nnplug.layer_norm_forward(v(self.cls_tok, n, D), self.ln[0][0], bias=self.ln[1][0],
                                  out=(v(self.z, n, D), v(self.zmean, n, 1),
                                       v(self.zinv, n, 1)), stream=s)
        linear_forward(v(self.z, n, D), self.head, v(self.logits, n, 10), s)

    def backward(self, x, labels, n, s):
        v, rows = self.v, n * T
        nnplug.softmax_cross_entropy_forward(v(self.logits, n, 10), labels, out=self.loss,
                                             stream=s)
        nnplug.softmax_cross_entropy_backward(v(self.logits, n, 10), labels, self.dloss,
                                              out=v(self.dlogits, n, 10), stream=s)
        linear_backward(v(self.z, n, D), v(self.dlogits, n, 10), self.head, v(self.dz, n, D), s)
        self.ready(*self.head)
        nnplug.layer_norm_backward(v(self.cls_tok, n, D), v(self.dz, n, D), self.ln[0][0],
                                   v(self.zmean, n, 1), v(self.zinv, n, 1),
                                   out=(v(self.dcls, n, D), self.ln[0][1], self.ln[1][1]),
                                   stream=s)
        self.ready(*self.ln)
        nnplug.fill(value=0.0, out=v(self.dh, rows * D), stream=s)
        nnplug.copy(v(self.dcls, n, 1, D), out=self.tokens(self.dh, n, 0, 1), stream=s)
        dh, dtmp, d64, d128 = (v(a, rows, D) for a in (self.dh, self.dtmp, self.d64,
                                                       self.d128))
        d128 = v(self.d128, rows, HID)
        for i in reversed(range(DEPTH)):
            b = self.blocks[i]
            nnplug.dropout_backward(dh, out=d64, stream=s, **self.drop[2 * i + 1])
            linear_backward(v(b["g"], rows, HID), d64, b["fc2"], d128, s)
            self.ready(*b["fc2"])
            nnplug.activation_backward(v(b["f1"], rows, HID), d128, function="gelu_erf",
                                       out=d128, stream=s)
            linear_backward(v(b["y2"], rows, D), d128, b["fc1"], d64, s)
            self.ready(*b["fc1"])
            nnplug.layer_norm_backward(v(b["h_mid"], rows, D), d64, b["ln2"][0][0],
                                       v(b["mean2"], rows, 1), v(b["inv2"], rows, 1),
                                       out=(dtmp, b["ln2"][0][1], b["ln2"][1][1]), stream=s)
            self.ready(*b["ln2"])
            nnplug.add(dh, dtmp, out=dh, stream=s)
            nnplug.dropout_backward(dh, out=d64, stream=s, **self.drop[2 * i])
            linear_backward(v(b["a"], rows, D), d64, b["proj"], v(self.da, rows, D), s)
            self.ready(*b["proj"])
            nnplug.attention_backward(
                v(b["q_"], n, T, D), v(b["k_"], n, T, D), v(b["v_"], n, T, D),
                v(b["a"], n, T, D), v(self.da, n, T, D), v(b["lse"], n, H, T),
                q_num_heads=H, kv_num_heads=H,
                out=(v(self.dq, n, T, D), v(self.dk, n, T, D), v(self.dv, n, T, D)), stream=s)
            for j, (name, grad) in enumerate((("q", self.dq), ("k", self.dk), ("v", self.dv))):
                linear_backward(v(b["y1"], rows, D), v(grad, rows, D), b[name], d64, s,
                                accumulate=j > 0)
                self.ready(*b[name])
            nnplug.layer_norm_backward(v(b["h_in"], rows, D), d64, b["ln1"][0][0],
                                       v(b["mean1"], rows, 1), v(b["inv1"], rows, 1),
                                       out=(dtmp, b["ln1"][0][1], b["ln1"][1][1]), stream=s)
            self.ready(*b["ln1"])
            nnplug.add(dh, dtmp, out=dh, stream=s)
        nnplug.reduce(v(self.dh, n, T, D), op="sum", axes=(0,), keepdims=True,
                      out=v(self.pos[1], 1, T, D), stream=s)
        nnplug.copy(v(self.pos[1], 1, 1, D), out=v(self.cls[1], 1, 1, D), stream=s)
        self.ready(self.pos, self.cls)
        nnplug.copy(self.tokens(self.dh, n, 1, NP), out=v(self.emb, n, NP, D), stream=s)
        linear_backward(v(self.patches, n * NP, P), v(self.emb, n * NP, D), self.embed, None, s)
        self.ready(*self.embed)

    def adam(self, step, lr, s):
        for w, g, m, vv in self.store.items:
            nnplug.adam_update(g, w, m, vv, step=step, lr=lr, beta1=0.9, beta2=0.999,
                               epsilon=1e-8, stream=s)
