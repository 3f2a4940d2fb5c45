#!/usr/bin/env python3
"""make_onnx_models.py — exports ONNX models for nnplug.onnx (docs/onnx.md), locally, with
random weights and no download: the project's three training networks (mlp, cnn, vit:
scripts/bench/torch_models.py) and torchvision's ResNet-18, MobileNetV2 and a ViT.

    scripts/make_onnx_models.py [--out DIR] [--opset N] [--small] [--batch B] [NAME ...]

NAME is one of mlp, cnn, vit, resnet18, mobilenet_v2, vit_tiny (default: all). For each model
it writes DIR/NAME.onnx (batch dimension dynamic, named "batch") and DIR/NAME.npz: a sample
input batch (key "input") and PyTorch's output for it (key "expected:logits"), the file
`python -m nnplug.onnx check --expected` compares with. DIR defaults to build/onnx-models.

--small makes the test-sized versions: torchvision's models at 32x32 instead of 224x224 and a
two-layer ViT of width 32 on 8x8 patches (the project's own networks are small already: 28x28
Fashion-MNIST images). Batch normalisation layers get random running statistics and affine
parameters, so that they are not the identity. --no-fold exports without PyTorch's constant
folding and without merging batch normalisation into the convolution before it:
BatchNormalization nodes stay, and so do the shape computations.

Needs PyTorch and torchvision (Debian: python3-torch, python3-torchvision; PyTorch 1.13
exports opsets 13 to 17). api/python/tests/test_onnx.py imports build(), export_bytes() and
export() from this file.
"""
import argparse
import io
import os
import sys
from typing import Dict, Tuple

import numpy as np
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "bench"))
import torch_models  # noqa: E402  (scripts/bench/torch_models.py)

NAMES = ("mlp", "cnn", "vit", "resnet18", "mobilenet_v2", "vit_tiny")
INPUT_NAME, OUTPUT_NAME = "input", "logits"


def _randomize_batch_norm(model: nn.Module, gen: torch.Generator) -> None:
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            with torch.no_grad():
                m.running_mean.copy_(0.1 * torch.randn(c, generator=gen))
                m.running_var.copy_(0.5 + torch.rand(c, generator=gen))
                m.weight.copy_(1.0 + 0.1 * torch.randn(c, generator=gen))
                m.bias.copy_(0.1 * torch.randn(c, generator=gen))


def build(name: str, small: bool = False, seed: int = 0) -> Tuple[nn.Module, Tuple[int, ...]]:
    """(model in eval mode with random weights, input shape without the batch dimension)."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 1)
    if name in ("mlp", "cnn", "vit"):
        return torch_models.build(name).eval(), (1, 28, 28)
    import torchvision  # Debian: python3-torchvision
    side = 32 if small else 224
    if name == "resnet18":
        model = torchvision.models.resnet18(num_classes=10 if small else 1000)
    elif name == "mobilenet_v2":
        model = torchvision.models.mobilenet_v2(num_classes=10 if small else 1000)
    elif name == "vit_tiny":
        # ViT-Ti/16 (Touvron et al. 2021: width 192, 3 heads, 12 layers, MLP 768); small: two
        # layers of width 32 on 8x8 patches of a 32x32 image.
        if small:
            cfg = dict(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32,
                       mlp_dim=64, num_classes=10)
        else:
            cfg = dict(image_size=224, patch_size=16, num_layers=12, num_heads=3,
                       hidden_dim=192, mlp_dim=768, num_classes=1000)
        model = torchvision.models.VisionTransformer(**cfg)
        with torch.no_grad():  # torchvision zeroes the class token and the head: randomise
            model.class_token.normal_(0.0, 0.02, generator=gen)
            model.heads.head.weight.normal_(0.0, 0.05, generator=gen)
    else:
        raise ValueError(f"unknown model {name!r}; one of {', '.join(NAMES)}")
    _randomize_batch_norm(model, gen)
    return model.eval(), (3, side, side)


def export_bytes(model: nn.Module, x: torch.Tensor, opset: int = 17, fold: bool = True) -> bytes:
    """The ONNX model of `model` traced on x, the batch dimension dynamic. fold=False: no
    constant folding and no Conv+BatchNorm fusion (TrainingMode.PRESERVE of a model in eval
    mode exports BatchNormalization in inference mode)."""
    import inspect
    import warnings
    f = io.BytesIO()
    # The TorchScript exporter on every PyTorch version (1.13 has no other; from 2.9 on the
    # default is the dynamo exporter, which needs onnxscript and writes other node patterns).
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters \
        else {}
    with warnings.catch_warnings():  # tracer warnings about Python asserts on shapes
        warnings.simplefilter("ignore")
        torch.onnx.export(model, x, f, opset_version=opset, input_names=[INPUT_NAME],
                          output_names=[OUTPUT_NAME], do_constant_folding=fold,
                          training=torch.onnx.TrainingMode.EVAL if fold else
                          torch.onnx.TrainingMode.PRESERVE,
                          dynamic_axes={INPUT_NAME: {0: "batch"}, OUTPUT_NAME: {0: "batch"}},
                          **legacy)
    return f.getvalue()


def to_float16(data: bytes) -> bytes:
    """The model with every float32 initializer, constant, input, output and value_info in
    float16: a float16 model as converters such as onnxconverter-common's float16 pass make
    (without their keep-float32 lists: every node computes in float16)."""
    import onnx
    from onnx import TensorProto, numpy_helper
    m = onnx.load_from_string(data)
    g = m.graph

    def half(t: "onnx.TensorProto") -> "onnx.TensorProto":
        return numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name)
    for init in g.initializer:
        if init.data_type == TensorProto.FLOAT:
            init.CopyFrom(half(init))
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT16
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(half(a.t))
    return m.SerializeToString()


def export(name: str, out_dir: str, small: bool = False, batch: int = 2, opset: int = 17,
           fold: bool = True, seed: int = 0) -> Tuple[str, str]:
    """Writes out_dir/name.onnx and out_dir/name.npz; returns their paths."""
    model, shape = build(name, small, seed)
    x = torch.randn((batch,) + shape, generator=torch.Generator().manual_seed(seed + 2))
    data = export_bytes(model, x, opset, fold)
    with torch.no_grad():
        y = model(x)
    os.makedirs(out_dir, exist_ok=True)
    onnx_path = os.path.join(out_dir, name + ".onnx")
    npz_path = os.path.join(out_dir, name + ".npz")
    with open(onnx_path, "wb") as f:
        f.write(data)
    arrays: Dict[str, np.ndarray] = {INPUT_NAME: x.numpy(), "expected:" + OUTPUT_NAME: y.numpy()}
    np.savez(npz_path, **arrays)
    return onnx_path, npz_path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", metavar="NAME",
                    help=f"models to export (default: all of {', '.join(NAMES)})")
    ap.add_argument("--out", default=os.path.join(HERE, os.pardir, "build", "onnx-models"),
                    help="output folder (default: build/onnx-models)")
    ap.add_argument("--opset", type=int, default=17, help="ONNX opset, 13 to 17 (default 17)")
    ap.add_argument("--small", action="store_true", help="test-sized torchvision models")
    ap.add_argument("--batch", type=int, default=2, help="batch of the sample input (default 2)")
    ap.add_argument("--no-fold", dest="fold", action="store_false",
                    help="export without PyTorch's constant folding")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = ap.parse_args()
    if not 13 <= args.opset <= 17:
        ap.error(f"--opset {args.opset}: nnplug.onnx reads opset 13 and later, and PyTorch "
                 f"{torch.__version__} exports up to 17")
    unknown = [n for n in args.names if n not in NAMES]
    if unknown:
        ap.error(f"unknown model {unknown[0]!r}; one of {', '.join(NAMES)}")
    out = os.path.normpath(args.out)
    for name in args.names or NAMES:
        onnx_path, npz_path = export(name, out, args.small, args.batch, args.opset, args.fold,
                                     args.seed)
        print(f"{name}: {onnx_path} ({os.path.getsize(onnx_path)} bytes), {npz_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
