"""nnplug._torch_cuda — nnplug.torch on CUDA tensors: the nnplug device a call's CUDA tensors
run on, one nnplug stream per nnplug device (created on first use, kept for the process, made
again after nnplug.shutdown()), and the call itself: the tensors pass zero-copy through DLPack
and the nnplug stream is ordered against PyTorch's current stream with CUDA events, without a
host synchronisation. nnplug.torch's module docstring ("On the GPU") and docs/abi.md ("Native
streams") say why events and not PyTorch's stream itself.

Per call, on the PyTorch device of the tensors, with ``cur = torch.cuda.current_stream()`` and
``ext = torch.cuda.ExternalStream(stream.native_handle)``:
  1. an event recorded on cur, waited for by ext (the call sees what PyTorch queued before);
  2. the op queued on the nnplug stream (nnplug.ops.execute with stream=: no synchronise);
  3. ``t.record_stream(ext)`` for every tensor the op touches (PyTorch's caching allocator does
     not hand their memory out again before ext's work is done);
  4. an event recorded on ext, waited for by cur (PyTorch's later work sees the results).
Errors of queued work stay with the nnplug stream until synchronize() (nnplug.torch.synchronize).
"""
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import torch

from . import _core
from ._abi import OpKind, Status
from ._array import _dtype_code, as_dltensor
from ._core import Device, Error, Stream, device_for_dldevice
from ._core import device as _nnp_device
from ._dlpack import _Held, _make_dltensor
from .ops import execute

DeviceLike = Union[str, Device]

# nnplug device -> (its stream for nnplug.torch, the PyTorch view of that stream's native handle)
_streams: Dict[Device, Tuple[Stream, Any]] = {}
_lock = threading.Lock()


def _dl(t: torch.Tensor) -> Tuple[int, int]:
    kind, index = t.__dlpack_device__()
    return (int(kind), int(index))


def call_device(fn: str, setting: DeviceLike, x: torch.Tensor) -> Device:
    """The nnplug device of a call on CUDA tensors (x: its first tensor). "auto" (the module
    default unless set_device changed it): the nnplug device whose memory is x's, i.e. cuda:N
    for x on cuda:N. Any other setting must be that device: a mismatch is INVALID_ARGUMENT."""
    dl = _dl(x)
    if isinstance(setting, str) and setting == "auto":
        try:
            return device_for_dldevice(dl)
        except Error as e:
            raise Error(e.status, f"nnplug.torch.{fn}: the tensors are on {x.device}, and no "
                        f"nnplug device uses that memory (is the cuda plugin built and loaded? "
                        f"nnplug.load_records() says why not): {e.message}") from None
    dev = _nnp_device(setting)
    if dev.dldevice != dl:
        raise Error(Status.INVALID_ARGUMENT,
                    f"nnplug.torch.{fn}: the tensors are on {x.device} but the nnplug device is "
                    f"{dev.name}: CUDA tensors run on the nnplug cuda device of the same index "
                    f"(cuda:{x.device.index}); pass that device or \"auto\"")
    return dev


def stream_for(dev: Device, where: torch.device) -> Tuple[Stream, Any]:
    """The nnplug stream of dev that nnplug.torch queues on, and a torch.cuda.ExternalStream
    over its native handle (on `where`, the PyTorch device of the same memory)."""
    entry = _streams.get(dev)
    if entry is not None and entry[0]._generation == _core._generation and entry[0]._handle:
        return entry
    with _lock:
        entry = _streams.get(dev)
        if entry is None or entry[0]._generation != _core._generation or not entry[0]._handle:
            for d in [d for d, (s, _) in _streams.items() if s._generation != _core._generation]:
                del _streams[d]  # streams of a session ended by nnplug.shutdown()
            s = dev.stream()
            entry = (s, torch.cuda.ExternalStream(s.native_handle, device=where))
            _streams[dev] = entry
        return entry


def _held(t: torch.Tensor) -> _Held:
    """t's DLTensor: through DLPack; an empty tensor as a compact descriptor of its own (PyTorch
    exports those with strides that nnplug does not take as compact)."""
    if t.numel() == 0:
        h = _make_dltensor(t.data_ptr() or None, _dl(t), _dtype_code(t.dtype), tuple(t.shape),
                           None)
        h.keep = (h.keep, t)
        return h
    return as_dltensor(t)


def run(fn: str, dev: Device, kind: OpKind, params: Any,
        inputs: Sequence[Optional[torch.Tensor]],
        outputs: Sequence[Optional[torch.Tensor]]) -> None:
    """Queues one op on dev's nnplug stream, ordered after PyTorch's current stream's work
    and before its later work (the steps of the module docstring); no host synchronisation."""
    ins = [None if t is None else t.detach() for t in inputs]
    outs = [None if t is None else t.detach() for t in outputs]
    touched: List[torch.Tensor] = [t for t in ins + outs if t is not None]
    where = touched[0].device
    # The cuda plugin makes its device current and leaves it so: PyTorch's current device is
    # restored on the way out (the same ordinal: both count devices as the CUDA runtime does).
    with torch.cuda.device(where):
        s, ext = stream_for(dev, where)
        cur = torch.cuda.current_stream(where)
        ready = torch.cuda.Event()
        ready.record(cur)
        ext.wait_event(ready)
        try:
            execute(kind, params, [None if t is None else _held(t) for t in ins],
                    [None if t is None else _held(t) for t in outs], stream=s)
        except Error as e:
            raise Error(e.status, f"nnplug.torch.{fn} on {dev.name}: {e.message}") from None
        for t in touched:
            t.record_stream(ext)
        done = torch.cuda.Event()
        done.record(ext)
        cur.wait_event(done)


def synchronize(dev: Optional[Device] = None) -> None:
    """Waits for the work nnplug.torch queued on dev's nnplug stream (every device's when None)
    and raises the first error of that work (nnplug.Error), each error once."""
    with _lock:
        live = [(d, s) for d, (s, _) in _streams.items()
                if s._generation == _core._generation and s._handle and (dev is None or d == dev)]
    for d, s in live:
        try:
            with torch.cuda.device(d.dldevice[1]):  # (PyTorch's current device restored)
                s.synchronize()
        except Error as e:
            raise Error(e.status, f"nnplug.torch: work queued on {d.name}: {e.message}") from None
