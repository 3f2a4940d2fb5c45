// The op table of libnnplug: the generated rows (api/src/generated/op_table.inc, from
// api/ops/ops.toml), lookup by kind, and nnp_op_kind_name.
#include "op_table.hpp"

#include "internal.hpp"
#include "validate_call.hpp"

#include <array>
#include <iterator>

namespace nnp::host {

#include "generated/op_table.inc"

const op_desc* find_op(int32_t kind) {
  // Every op call looks its kind up, some twice: kinds below kIndexed (all of nnplug's; the
  // table's values are small) go through an index built once; a scan of the rows, whose
  // descriptors span a cache line or two each, costs tens of ns for the kinds at its end.
  constexpr int32_t kIndexed = 1024;
  static const std::array<int16_t, kIndexed> index = [] {
    std::array<int16_t, kIndexed> ix;
    ix.fill(-1);
    for (size_t i = 0; i < std::size(k_ops); ++i)
      if (k_ops[i].kind >= 0 && k_ops[i].kind < kIndexed)
        ix[static_cast<size_t>(k_ops[i].kind)] = static_cast<int16_t>(i);
    return ix;
  }();
  if (kind >= 0 && kind < kIndexed) {
    const int16_t i = index[static_cast<size_t>(kind)];
    return i < 0 ? nullptr : &k_ops[i];
  }
  for (const op_desc& op : k_ops)
    if (op.kind == kind) return &op;
  return nullptr;
}

}  // namespace nnp::host

extern "C" NNP_API const char* nnp_op_kind_name(int32_t op_kind) {
  const nnp::host::op_desc* op = nnp::host::find_op(op_kind);
  return op != nullptr ? op->name : nullptr;
}
