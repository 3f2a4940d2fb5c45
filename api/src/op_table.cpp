// The op table of libnnplug: the generated rows (api/src/generated/op_table.inc, from
// api/ops/ops.toml), lookup by kind, and nnp_op_kind_name.
#include "op_table.hpp"

#include "internal.hpp"
#include "validate_call.hpp"

namespace nnp::host {

#include "generated/op_table.inc"

const op_desc* find_op(int32_t kind) {
  // Kinds are sparse and few: a linear scan over NNP_OP_KIND_COUNT rows is a few ns.
  for (const op_desc& op : k_ops)
    if (op.kind == kind) return &op;
  return nullptr;
}

}  // namespace nnp::host

extern "C" NNP_API const char* nnp_op_kind_name(int32_t op_kind) {
  const nnp::host::op_desc* op = nnp::host::find_op(op_kind);
  return op != nullptr ? op->name : nullptr;
}
