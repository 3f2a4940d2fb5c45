"""torch_models.py — the PyTorch twins of examples/c/train's three networks, for the benchmark
yardstick (scripts/benchmark.sh) and scripts/torch-ddp-bench.py. Benchmark-only: nnplug itself
never imports PyTorch.

  mlp  examples/c/model.c: 784 -> 512, ReLU, dropout 0.2 -> 512, ReLU, dropout 0.2 -> 10
  cnn  examples/c/model.c (the Keras example): conv 32 3x3, ReLU, conv 64 3x3, ReLU,
       max-pool 2, dropout 0.25, dense 9216 -> 128, ReLU, dropout 0.5, dense 128 -> 10
  vit  examples/c/vit.c and examples/python/vit.py: 7x7 patches (16 tokens of 49 pixels) ->
       Linear(49, 64); a learned class token first and learned position embeddings (17 x 64,
       normal std 0.02); 4 pre-norm blocks of 4-head attention (one qkv Linear(64, 192), scale
       1/4, output projection, dropout 0.1) and a GELU MLP of 128 (exact GELU, dropout 0.1);
       LayerNorm of the class token -> Linear(64, 10); LayerNorm eps 1e-5.

Weights Glorot uniform (fans include the kernel area), biases zero, as nnplug's train. The
parameter counts must equal nnplug's (PARAMETERS; build() asserts them).
"""
import math

import torch
import torch.nn.functional as F
from torch import nn

# nnplug's counts (train prints them: "model vit (139018 parameters)").
PARAMETERS = {"mlp": 669_706, "cnn": 1_199_882, "vit": 139_018}


def mlp():
    return nn.Sequential(
        nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Dropout(0.2), nn.Linear(512, 512),
        nn.ReLU(), nn.Dropout(0.2), nn.Linear(512, 10))


def cnn():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Dropout(0.25), nn.Flatten(), nn.Linear(9216, 128), nn.ReLU(), nn.Dropout(0.5),
        nn.Linear(128, 10))


T, D, H, HID, P, NP, DEPTH = 17, 64, 4, 128, 49, 16, 4


class Block(nn.Module):
    """x += Dropout(Proj(Attention(LN(x)))); x += Dropout(fc2(GELU(fc1(LN(x)))))."""

    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D, eps=1e-5)
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.ln2 = nn.LayerNorm(D, eps=1e-5)
        self.fc1 = nn.Linear(D, HID)
        self.fc2 = nn.Linear(HID, D)
        self.drop = nn.Dropout(0.1)
        # PyTorch 2.x's fused attention when there is one; plain matmul + softmax otherwise.
        self.sdpa = getattr(F, "scaled_dot_product_attention", None)

    def attention(self, x):
        b = x.shape[0]
        q, k, v = self.qkv(x).reshape(b, T, 3, H, D // H).permute(2, 0, 3, 1, 4)
        if self.sdpa is not None:
            a = self.sdpa(q, k, v)
        else:
            s = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(D // H))
            a = torch.matmul(torch.softmax(s, dim=-1), v)
        return self.proj(a.transpose(1, 2).reshape(b, T, D))

    def forward(self, x):
        x = x + self.drop(self.attention(self.ln1(x)))
        return x + self.drop(self.fc2(F.gelu(self.fc1(self.ln2(x)))))


class ViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(P, D)
        self.cls = nn.Parameter(torch.zeros(1, 1, D))
        self.pos = nn.Parameter(0.02 * torch.randn(1, T, D))
        self.blocks = nn.Sequential(*[Block() for _ in range(DEPTH)])
        self.ln = nn.LayerNorm(D, eps=1e-5)
        self.head = nn.Linear(D, 10)

    def forward(self, x):
        b = x.shape[0]
        # [b, 1, 28, 28] as [b, 4, 7, 4, 7] -> [b, 4, 4, 7, 7]: 16 patches of 49 pixels
        patches = x.reshape(b, 4, 7, 4, 7).permute(0, 1, 3, 2, 4).reshape(b, NP, P)
        h = torch.cat([self.cls.expand(b, 1, D), self.embed(patches)], dim=1) + self.pos
        h = self.blocks(h)
        return self.head(self.ln(h[:, 0]))


def vit():
    return ViT()


def glorot_(model):
    """Glorot-uniform weights of every Linear and Conv2d (fans with the kernel area), zero biases;
    the qkv weight [192, 64] gets the fans 64 and 192, as nnplug's q, k and v weights."""
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)
    return model


def count(model):
    return sum(p.numel() for p in model.parameters())


def build(name):
    """The named network, initialised; its parameter count checked against nnplug's."""
    model = glorot_({"mlp": mlp, "cnn": cnn, "vit": vit}[name]())
    n = count(model)
    if n != PARAMETERS[name]:
        raise AssertionError(f"PyTorch {name} has {n} parameters, nnplug's {PARAMETERS[name]}")
    return model
