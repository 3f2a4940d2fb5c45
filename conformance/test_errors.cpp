// test_errors.cpp — invalid calls, for every op kind (from the templates the family files
// register) on every backend: rank above NNP_MAX_DIMS, rank one lower, mismatched shape, wrong
// and mixed dtypes, tensor on another device, NULL and misaligned data, negative and
// overflowing sizes, NULL tensor, extra tensor, NULL params, too-small struct_size, a
// struct_size ending inside a field, all-zero params (where the op table's checks refuse 0)
// and each params field the table says must be 0 (reserved fields, unused array entries) set
// to 1. Each must return NNP_STATUS_INVALID_ARGUMENT with a non-empty
// nnp_last_error_message() and leave every output byte untouched, and nnp_op_supported must
// reject the same description (except NULL and misaligned data, allowed there). An unknown op
// kind must return NNP_STATUS_UNSUPPORTED.
#include <doctest/doctest.h>

#include "harness.hpp"
#include "op_table_cases.hpp"

#include <cstddef>
#include <cstring>
#include <limits>
#include <string>

namespace {
using namespace conf;

// The tensor a mutation breaks: the first input, or the first output for ops without inputs.
DLTensor* first_tensor(raw_call& r) { return r.in.empty() ? &r.out[0] : &r.in[0]; }
// The last output with rank >= 1 (its shape is determined by the inputs).
DLTensor* last_ranked_output(raw_call& r) {
  for (size_t i = r.out.size(); i-- > 0;)
    if (r.out_ptrs[i] && r.out[i].ndim > 0) return &r.out[i];
  return nullptr;
}
// Points t's shape at a private copy (the spec's shape must not change).
int64_t* own_shape(raw_call& r, DLTensor* t) {
  r.storage.emplace_back(t->shape, t->shape + t->ndim);
  t->shape = r.storage.back().data();
  return t->shape;
}

struct error_case {
  std::string name;
  // Returns false when the mutation does not apply to this op.
  std::function<bool(const call_spec&, raw_call&)> apply;
};

// The cases for a call of `kind`: those of every op, then one per params field the table says
// must be 0 (reserved fields, unused array entries).
std::vector<error_case> error_cases(int32_t kind) {
  std::vector<error_case> cases = {
      // The table says which: a field whose check refuses 0 (an enum whose 0 is UNDEFINED, a
      // minimum >= 1, a positive epsilon, a permutation).
      {"all-zero params (struct_size kept)",
       [](const call_spec& c, raw_call& r) {
         const table_op* op = find_table_op(c.kind);
         if (c.params.empty() || op == nullptr || !op->zeroed_params_invalid) return false;
         std::memset(r.param_bytes.data() + sizeof(size_t), 0,
                     r.param_bytes.size() - sizeof(size_t));
         return true;
       }},
      {"rank above NNP_MAX_DIMS",
       [](const call_spec&, raw_call& r) {
         DLTensor* t = first_tensor(r);
         r.storage.emplace_back(NNP_MAX_DIMS + 1, 1);
         t->shape = r.storage.back().data();
         t->ndim = NNP_MAX_DIMS + 1;
         t->strides = nullptr;
         return true;
       }},
      {"rank one lower",
       [](const call_spec& c, raw_call& r) {
         if (c.inputs.empty() || r.in[0].ndim == 0) return false;
         r.in[0].shape += 1;  // drop the leading dimension
         r.in[0].ndim -= 1;
         return true;
       }},
      {"mixed float dtypes (float64 among float32)",
       [](const call_spec& c, raw_call& r) {
         if (c.inputs.empty() || c.kind == NNP_OP_CAST) return false;  // cast mixes by design
         r.in[0].dtype = DLDataType{kDLFloat, 64, 1};
         return true;
       }},
      {"mismatched output shape",
       [](const call_spec& c, raw_call& r) {
         if (c.inputs.empty()) return false;  // fill: any output shape is valid
         DLTensor* t = last_ranked_output(r);
         if (!t) return false;
         own_shape(r, t)[0] += 1;
         return true;
       }},
      {"wrong dtype (int32)",
       [](const call_spec&, raw_call& r) {
         first_tensor(r)->dtype = DLDataType{kDLInt, 32, 1};
         return true;
       }},
      {"tensor on another device (kDLCUDA 7)",
       [](const call_spec&, raw_call& r) {
         first_tensor(r)->device = DLDevice{kDLCUDA, 7};
         return true;
       }},
      {"NULL data",
       [](const call_spec&, raw_call& r) {
         first_tensor(r)->data = nullptr;
         return true;
       }},
      // Aligned to the element size: kernels load whole elements.
      {"misaligned data",
       [](const call_spec&, raw_call& r) {
         DLTensor* t = first_tensor(r);
         int64_t n = 1;
         for (int d = 0; d < t->ndim; ++d) n *= t->shape[d];
         if (t->data == nullptr || n == 0 || t->dtype.bits < 16) return false;
         t->data = static_cast<char*>(t->data) + 1;
         return true;
       }},
      {"negative size",
       [](const call_spec&, raw_call& r) {
         DLTensor* t = first_tensor(r);
         if (t->ndim == 0) return false;
         own_shape(r, t)[0] = -1;
         return true;
       }},
      {"overflowing size",
       [](const call_spec&, raw_call& r) {
         DLTensor* t = first_tensor(r);
         if (t->ndim == 0) return false;
         int64_t* s = own_shape(r, t);
         if (t->ndim >= 2) {
           s[0] = int64_t{1} << 40;
           s[1] = int64_t{1} << 40;
         } else {
           s[0] = std::numeric_limits<int64_t>::max();
         }
         t->strides = nullptr;
         return true;
       }},
      {"NULL required tensor",
       [](const call_spec& c, raw_call& r) {
         if (c.inputs.empty()) return false;
         r.in_ptrs[0] = nullptr;
         return true;
       }},
      {"one tensor too many",
       [](const call_spec&, raw_call& r) {
         r.in_ptrs.push_back(first_tensor(r));
         return true;
       }},
      {"NULL params",
       [](const call_spec& c, raw_call& r) {
         if (c.params.empty()) return false;  // params may be NULL for this op
         r.params = nullptr;
         return true;
       }},
      {"struct_size too small",
       [](const call_spec& c, raw_call& r) {
         if (c.params.empty()) return false;
         const size_t small = sizeof(size_t) / 2;
         std::memcpy(r.param_bytes.data(), &small, sizeof(size_t));
         return true;
       }},
      // One byte short of the struct: the size ends inside the last field (every field is at
      // least 4 bytes), which must be refused, never read partly (docs/security.md).
      {"struct_size ends inside a field",
       [](const call_spec& c, raw_call& r) {
         if (c.params.empty()) return false;
         const size_t inside = c.params.size() - 1;
         std::memcpy(r.param_bytes.data(), &inside, sizeof(size_t));
         return true;
       }},
  };
  if (const table_op* op = find_table_op(kind))
    for (const table_zero_field& z : op->must_be_zero)
      cases.push_back(
          {std::string("params->") + z.name + " not 0", [z](const call_spec& c, raw_call& r) {
             if (c.params.empty() || z.offset + z.size > r.param_bytes.size()) return false;
             const int64_t one64 = 1;
             const int32_t one32 = 1;
             std::memcpy(r.param_bytes.data() + z.offset,
                         z.size == 8 ? static_cast<const void*>(&one64) : &one32, z.size);
             return true;
           }});
  return cases;
}

}  // namespace

TEST_CASE("errors: invalid arguments") {
  std::vector<device_entry*> devices = backends_under_test();
  for (device_entry* d : devices) {
    if (!d->available) continue;
    for (const op_template& t : op_templates()) {
      const call_spec call = t.make();
      // Sanity: the template itself is valid.
      const run_result ok = run_op(*d, call, dtype_id::f32);
      CHECK_MESSAGE((ok.status == NNP_STATUS_OK || ok.status == NNP_STATUS_UNSUPPORTED),
                    d->name << ": " << t.name << " template failed: " << ok.message);
      for (const error_case& e : error_cases(call.kind)) {
        bool applies = true;
        nnp_status supported = NNP_STATUS_OK;
        std::string supported_msg;
        // Data pointers are checked when a call runs, not by nnp_op_supported.
        const bool data_case = e.name == "NULL data" || e.name == "misaligned data";
        const run_result r = run_op(*d, call, dtype_id::f32, nullptr, [&](raw_call& raw) {
          applies = e.apply(call, raw);
          // nnp_op_supported must reject the same description (data may be NULL there).
          if (applies && !data_case) {
            supported =
                nnp_op_supported(d->dev, raw.kind, raw.params, raw.in_ptrs.size(),
                                 raw.in_ptrs.data(), raw.out_ptrs.size(), raw.out_ptrs.data());
            supported_msg = nnp_last_error_message();
          }
        });
        if (!applies) continue;
        std::string problem;
        if (!data_case && supported != NNP_STATUS_INVALID_ARGUMENT)
          problem = std::string("nnp_op_supported returned ") + nnp_status_string(supported) +
                    " instead of invalid argument" +
                    (supported_msg.empty() ? "" : ": " + supported_msg);
        else if (r.status != NNP_STATUS_INVALID_ARGUMENT)
          problem = std::string("returned ") + nnp_status_string(r.status) +
                    " instead of invalid argument" + (r.message.empty() ? "" : ": " + r.message);
        else if (r.message.empty())
          problem = "empty nnp_last_error_message()";
        else if (!r.outputs_untouched)
          problem = "an output was modified by a rejected call";
        const std::string name = t.name + " errors " + e.name + " f32";
        report({d->name, t.name, "*", name,
                problem.empty() ? case_outcome::pass : case_outcome::fail, 0, 0,
                problem.empty() ? r.message : problem});
        CHECK_MESSAGE(problem.empty(), d->name << ": " << name << ": " << problem);
      }
    }
  }
}

// A struct_size past the end of the struct (a newer caller's, or a hostile one) is read as the
// struct this library knows: the same status and bit-identical outputs as the call with the
// exact size, on every backend (the host hands plugins a bounded copy: docs/security.md).
TEST_CASE("errors: struct_size larger than the struct") {
  for (device_entry* d : backends_under_test()) {
    if (!d->available) continue;
    for (const op_template& t : op_templates()) {
      const call_spec call = t.make();
      if (call.params.empty()) continue;
      const run_result exact = run_op(*d, call, dtype_id::f32);
      for (size_t size : {size_t{4096}, size_t{1} << 63, std::numeric_limits<size_t>::max()}) {
        const run_result r = run_op(*d, call, dtype_id::f32, nullptr, [size](raw_call& raw) {
          std::memcpy(raw.param_bytes.data(), &size, sizeof size);
        });
        std::string problem;
        if (r.status != exact.status)
          problem = std::string("returned ") + nnp_status_string(r.status) + " where the exact " +
                    "struct_size gives " + nnp_status_string(exact.status) + ": " + r.message;
        else if (r.outputs.size() != exact.outputs.size())
          problem = "a different number of outputs";
        for (size_t i = 0; problem.empty() && i < r.outputs.size(); ++i)
          if (r.outputs[i].size() != exact.outputs[i].size() ||
              (!r.outputs[i].empty() && std::memcmp(r.outputs[i].data(), exact.outputs[i].data(),
                                                    r.outputs[i].size() * sizeof(double)) != 0))
            problem = "output " + std::to_string(i) + " differs from the exact struct_size's";
        if (problem.empty() && !r.problems.empty()) problem = r.problems.front();
        const std::string name = t.name + " struct_size " + std::to_string(size) + " f32";
        report({d->name, t.name, "*", name,
                problem.empty() ? case_outcome::pass : case_outcome::fail, 0, 0, problem});
        CHECK_MESSAGE(problem.empty(), d->name << ": " << name << ": " << problem);
      }
    }
  }
}

TEST_CASE("errors: unknown op kind") {
  for (device_entry* d : backends_under_test()) {
    if (!d->available) continue;
    REQUIRE(!op_templates().empty());
    const call_spec call = op_templates().front().make();
    for (int32_t kind : {9999, 0x10000 + 12345}) {
      const run_result r =
          run_op(*d, call, dtype_id::f32, nullptr, [kind](raw_call& raw) { raw.kind = kind; });
      const std::string name = "unknown op kind " + std::to_string(kind);
      const bool ok =
          r.status == NNP_STATUS_UNSUPPORTED && !r.message.empty() && r.outputs_untouched;
      report({d->name, "unknown_op", "*", name, ok ? case_outcome::pass : case_outcome::fail, 0, 0,
              ok ? r.message : std::string("returned ") + nnp_status_string(r.status)});
      CHECK_MESSAGE(ok, d->name << ": " << name << ": status "
                                << std::string(nnp_status_string(r.status)) << ", message '"
                                << r.message << "'");
      CHECK(nnp_op_kind_name(kind) == nullptr);
    }
  }
}
