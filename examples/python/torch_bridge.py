#!/usr/bin/python3
"""torch_bridge.py — swap one layer of a small PyTorch model to nnplug (nnplug.torch) and
check that the model gives the same loss and gradients, then check the swapped layer's
gradients with torch.autograd.gradcheck (float64 on the reference backend).

  /usr/bin/python3 examples/python/torch_bridge.py [--device cpu]

--device: the nnplug device of the float32 comparison ("auto" by default); the gradcheck
always runs on the reference backend, the one that computes in float64.
"""
import argparse
import copy
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "api", "python"))  # source-tree use

import nnplug  # noqa: E402
import nnplug.torch as nt  # noqa: E402


class Net(torch.nn.Module):
    """conv -> relu -> flatten -> layer norm -> linear, for 1x8x8 images and 10 classes."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3, stride=2, padding=1)
        self.norm = torch.nn.LayerNorm(64)
        self.fc = torch.nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(self.norm(torch.relu(self.conv(x)).flatten(1)))


def loss_and_grads(model, x, t):
    model.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), t)
    loss.backward()
    return loss.item(), [p.grad.clone() for p in model.parameters()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="auto", help="nnplug device of the float32 run")
    args = ap.parse_args()
    torch.manual_seed(0)

    # 1. float32: the model as it is, then with its conv swapped to nnplug
    model = Net()
    x, t = torch.randn(8, 1, 8, 8), torch.randint(0, 10, (8,))
    loss0, grads0 = loss_and_grads(model, x, t)
    swapped = copy.deepcopy(model)
    swapped.conv = nt.from_module(swapped.conv, device=args.device)  # same parameters
    loss1, grads1 = loss_and_grads(swapped, x, t)
    worst = max((a - b).abs().max().item() for a, b in zip(grads0, grads1))
    print(f"torch loss {loss0:.6f}, with conv on nnplug {nt.get_device(args.device).name}: "
          f"{loss1:.6f}; largest gradient difference {worst:.2e}")
    if abs(loss0 - loss1) > 1e-4 or worst > 1e-4:
        sys.exit("FAILED: the swapped model differs")
    print("same loss and gradients")

    # 2. float64 on the reference backend: gradcheck of the swapped layer's function
    ref = nnplug.device("reference")
    conv = swapped.conv
    xd = torch.randn(2, 1, 5, 5, dtype=torch.float64, requires_grad=True)
    w = conv.weight.detach().double().requires_grad_()
    b = conv.bias.detach().double().requires_grad_()
    ok = torch.autograd.gradcheck(
        lambda x, w, b: nt.conv2d(x, w, b, conv.stride, conv.padding, device=ref), (xd, w, b))
    if not ok:
        sys.exit("FAILED: gradcheck")
    print("gradcheck passed (conv2d, float64, reference)")


if __name__ == "__main__":
    main()
