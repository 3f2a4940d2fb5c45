"""nnplug shortcuts: add, sub, mul, div — nnplug.binary with the op fixed (numpy broadcasting,
ONNX Add, Sub, Mul, Div). Same arguments as binary, without `op`."""
from typing import Any

from ._call import DeviceLike, OutLike, StreamLike, TensorLike
from .ops import binary

__all__ = ["add", "sub", "mul", "div"]


def add(a: TensorLike, b: TensorLike, *, out: OutLike = None, stream: StreamLike = None,
        device: DeviceLike = None) -> Any:
    """y = a + b with numpy broadcasting (nnplug.binary, op="add")."""
    return binary(a, b, op="add", out=out, stream=stream, device=device)


def sub(a: TensorLike, b: TensorLike, *, out: OutLike = None, stream: StreamLike = None,
        device: DeviceLike = None) -> Any:
    """y = a - b with numpy broadcasting (nnplug.binary, op="sub")."""
    return binary(a, b, op="sub", out=out, stream=stream, device=device)


def mul(a: TensorLike, b: TensorLike, *, out: OutLike = None, stream: StreamLike = None,
        device: DeviceLike = None) -> Any:
    """y = a * b with numpy broadcasting (nnplug.binary, op="mul")."""
    return binary(a, b, op="mul", out=out, stream=stream, device=device)


def div(a: TensorLike, b: TensorLike, *, out: OutLike = None, stream: StreamLike = None,
        device: DeviceLike = None) -> Any:
    """y = a / b with numpy broadcasting (nnplug.binary, op="div")."""
    return binary(a, b, op="div", out=out, stream=stream, device=device)
