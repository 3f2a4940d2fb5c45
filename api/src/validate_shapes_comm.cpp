// Shape rules of the ABI 1.3 collectives: all_reduce, broadcast, all_gather (nnplug_ops.h).
// The contract of a shape rule: validate_call.hpp. The communicator itself was checked with the
// params (a live handle); that it is bound to the stream's device is checked at dispatch
// (comm.cpp).
#include "internal.hpp"
#include "validate_call.hpp"

#include <string>

namespace nnp::host {

void shapes_all_reduce(call& c, const void* params) {
  const auto& p = params_of<nnp_all_reduce_params>(params);
  if (p.op != NNP_REDUCE_SUM && p.op != NNP_REDUCE_MEAN && p.op != NNP_REDUCE_MAX &&
      p.op != NNP_REDUCE_MIN)
    c.fail("params->op: expected SUM (1), MEAN (2), MAX (3) or MIN (4), got " +
           std::to_string(p.op));
  c.output_shape(0, shape_of(c.in(0)), "(x's shape)");
}

void shapes_broadcast(call& c, const void* params) {
  const auto& p = params_of<nnp_broadcast_params>(params);
  const int32_t size = comm_size_of(p.comm);
  if (p.root < 0 || (size > 0 && p.root >= size))
    c.fail("params->root: expected a rank in [0, " + std::to_string(size) + "), got " +
           std::to_string(p.root));
  c.output_shape(0, shape_of(c.in(0)), "(x's shape)");
}

void shapes_all_gather(call& c, const void* params) {
  const auto& p = params_of<nnp_all_gather_params>(params);
  const DLTensor* x = c.in(0);
  if (x->ndim < 1)
    c.fail(c.in_label(0) + ": expected rank >= 1 (gathered along axis 0), got a scalar");
  const int32_t size = comm_size_of(p.comm);
  if (size < 1) c.fail("params->comm: the communicator was destroyed during the call");
  shape_t y = shape_of(x);
  if (y[0] > INT64_MAX / size)
    c.fail(c.in_label(0) + ": size * x.shape[0] = " + std::to_string(size) + " * " +
           std::to_string(y[0]) + " overflows int64");
  y[0] *= size;
  c.output_shape(0, y, "([size * n, ...])");
}

}  // namespace nnp::host
