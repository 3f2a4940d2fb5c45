"""Communicators from Python (nnplug.communicator; nnplug.h "communicators"): the self
transport on every host-side device, the collectives' signatures and results, and the errors
of bad arguments. The MPI transport runs under mpirun in comm/tests and in the distributed
examples."""
import numpy as np
import pytest

import nnplug

HOST_SIDE = ["reference", "cpu", "sim"]


@pytest.mark.parametrize("name", HOST_SIDE)
def test_self_communicator_collectives(name):
    dev = nnplug.device(name)
    with nnplug.communicator(dev) as comm:
        assert (comm.rank, comm.size) == (0, 1)
        assert comm.device == dev
        assert "self" in comm.description
        x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5
        for op in ("sum", "mean", "max", "min", nnplug.ReduceOp.SUM):
            np.testing.assert_array_equal(nnplug.all_reduce(x, comm=comm, op=op), x)
        y = np.full_like(x, 7.0)
        assert nnplug.all_reduce(x, comm=comm, out=y) is y
        np.testing.assert_array_equal(y, x)
        np.testing.assert_array_equal(nnplug.broadcast(x, comm=comm, root=0), x)
        g = nnplug.all_gather(x, comm=comm)
        assert g.shape == (3, 4)
        np.testing.assert_array_equal(g, x)
        # in place on device memory
        d = dev.to_device(x)
        nnplug.all_reduce(d, comm=comm, op="mean", out=d)
        np.testing.assert_array_equal(d.numpy(), x)
        assert nnplug.supported("all_reduce", x, comm=comm, device=dev) is None  # None: runs


def test_collective_errors():
    dev = nnplug.device("cpu")
    x = np.ones((2, 2), np.float32)
    comm = nnplug.communicator(dev)
    with pytest.raises(nnplug.InvalidArgumentError, match="root"):
        nnplug.broadcast(x, comm=comm, root=1)
    with pytest.raises(nnplug.InvalidArgumentError, match="params->op"):
        nnplug.all_reduce(x, comm=comm, op="l2")
    with pytest.raises(nnplug.InvalidArgumentError, match="not one of"):
        nnplug.all_reduce(x, comm=comm, op="product")
    with pytest.raises(nnplug.InvalidArgumentError, match="nnplug.Communicator"):
        nnplug.all_reduce(x, comm=42)
    with pytest.raises(TypeError):
        nnplug.all_reduce(x)  # comm is a required keyword
    with pytest.raises(nnplug.InvalidArgumentError, match="bound to device cpu:0"):
        nnplug.all_reduce(x, comm=comm, device="reference")
    comm.destroy()
    with pytest.raises(nnplug.InvalidArgumentError, match="destroyed"):
        nnplug.all_reduce(x, comm=comm)
    with pytest.raises(nnplug.InvalidArgumentError, match="not one of self, mpi, nccl"):
        nnplug.communicator(dev, "gloo")
    with pytest.raises(nnplug.InvalidArgumentError, match="mpi_comm"):
        nnplug.communicator(dev, "mpi")
    with pytest.raises(nnplug.InvalidArgumentError, match="unique_id"):
        nnplug.communicator(dev, "nccl", rank=0, size=1)
    # nccl_unique_id on a cpu device: refused for the device when the nccl plugin is
    # installed (it serves cuda devices), else not found
    with pytest.raises((nnplug.NotFoundError, nnplug.InvalidArgumentError),
                       match="cuda devices|libnnplug-comm-nccl.so"):
        nnplug.nccl_unique_id(dev)
