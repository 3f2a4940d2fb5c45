// param_bytes.hpp — an op's params struct as the bytes an op call carries, shared by the
// conformance harness's call_spec (conformance/harness.hpp) and the op table's examples
// (op_table_cases.hpp).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace conf {

template <typename P>
std::vector<uint8_t> param_bytes(const P& p) {
  std::vector<uint8_t> bytes(sizeof(P));
  std::memcpy(bytes.data(), &p, sizeof(P));
  return bytes;
}

}  // namespace conf
