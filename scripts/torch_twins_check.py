#!/usr/bin/python3
"""torch_twins_check.py — trains one small CNN twice from the same initial weights, once in plain
PyTorch and once with its Conv2d, Linear and LayerNorm swapped for their nnplug.torch twins
(nnplug.torch.convert: same hyperparameters, forward and backward on nnplug), and checks that
every step's loss agrees.

  /usr/bin/python3 scripts/torch_twins_check.py [--device cpu|cuda] [--steps 50] [--tol 1e-3]

Model: conv(3->8, 3x3, pad 1) - relu - conv(8->8, 3x3, stride 2, pad 1) - relu - flatten -
LayerNorm(128) - linear(128->10), on 64 random 3x8x8 images with random labels among 10 classes
(seeded: torch.manual_seed(--seed)), in batches of 16, cross-entropy loss (PyTorch's, for both
runs), plain SGD (lr 0.05) for --steps steps.

--device cpu: CPU tensors, the twins on nnplug's cpu backend. --device cuda: the model and the
data are CUDA tensors on cuda:0 and the twins run on nnplug's cuda:0, queued on nnplug's stream
and ordered against PyTorch's by events (nnplug.torch, "On the GPU"); PyTorch's TF32 is switched
off (nnplug's is off by default) so that both runs compute in float32.

Prints one JSON line: device, steps, the largest absolute difference of a step's loss and its
step, both final losses, and "ok". Exit status 0 when every step agrees within --tol (absolute),
1 on a mismatch, 2 when the device or a package is missing.
"""
import argparse
import copy
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "api", "python"))  # source-tree use


def make_model(torch):
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 8, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.Flatten(), torch.nn.LayerNorm(128), torch.nn.Linear(128, 10))


def train(torch, model, xs, ts, steps, batch, sync):
    """Losses (floats) of `steps` SGD steps over (xs, ts) in batches, cycling; sync() after
    each step (nnplug.torch.synchronize for the twins: errors of queued work surface there)."""
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    n = xs.shape[0]
    for step in range(steps):
        i = (step * batch) % n
        x, t = xs[i:i + batch], ts[i:i + batch]
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), t)
        loss.backward()
        opt.step()
        sync()
        losses.append(float(loss.detach().cpu()))
    return losses


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--tol", type=float, default=1e-3, help="absolute tolerance per step")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.steps < 1:
        ap.error("--steps must be >= 1")
    try:
        import torch
        import nnplug
        import nnplug.torch as nt
    except ImportError as e:
        print(f"torch_twins_check: {e}", file=sys.stderr)
        return 2
    if args.device == "cuda":
        if not torch.cuda.is_available():
            print("torch_twins_check: PyTorch sees no CUDA device", file=sys.stderr)
            return 2
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        where, nnp_name = torch.device("cuda:0"), "cuda:0"
    else:
        where, nnp_name = torch.device("cpu"), "cpu"
    try:
        nnp_dev = nnplug.device(nnp_name)
    except nnplug.Error as e:
        print(f"torch_twins_check: no nnplug device {nnp_name}: {e}", file=sys.stderr)
        return 2

    torch.manual_seed(args.seed)
    plain = make_model(torch).to(where)
    twins = nt.convert(copy.deepcopy(plain), device=nnp_dev)
    swapped = [type(m).__name__ for m in twins.modules() if type(m).__module__ == nt.__name__]
    assert swapped == ["Conv2d", "Conv2d", "LayerNorm", "Linear"], swapped
    xs = torch.randn(64, 3, 8, 8).to(where)
    ts = torch.randint(0, 10, (64,)).to(where)

    ours = train(torch, twins, xs, ts, args.steps, 16, nt.synchronize)
    theirs = train(torch, plain, xs, ts, args.steps, 16, lambda: None)
    diffs = [abs(a - b) for a, b in zip(ours, theirs)]
    worst = max(range(len(diffs)), key=lambda i: diffs[i])
    ok = all(d <= args.tol for d in diffs)  # NaN fails too
    print(json.dumps({"device": args.device, "nnplug_device": nnp_dev.name, "steps": args.steps,
                      "max_abs_diff": diffs[worst], "at_step": worst, "tol": args.tol,
                      "final_loss_nnplug": ours[-1], "final_loss_torch": theirs[-1],
                      "first_loss": theirs[0], "ok": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
