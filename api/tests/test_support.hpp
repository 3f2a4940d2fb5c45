// test_support.hpp — small helpers shared by the API tests (doctest): message checks, the
// reference device, load records and checks of them, host tensors, and scratch folders under the
// temporary directory.
#pragma once

#include <doctest/doctest.h>

#include <nnplug/nnplug.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace nnp_test {

// Whether `text` (an error message) contains `part`.
inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The reference device (loading the default plugins); fails the test case without it.
inline nnp_device* reference_device() {
  nnp_device* dev = nullptr;
  const nnp_status st = nnp_get_device("reference", &dev);
  if (st != NNP_STATUS_OK) FAIL("reference device not found: " << nnp_last_error_message());
  return dev;
}

// One load record, copied out of libnnplug (nnp_get_load_records).
struct rec {
  std::string path, name, reason;
  int32_t state, status;
};

// The load records so far, in order.
inline std::vector<rec> records() {
  size_t n = 0;
  REQUIRE(nnp_get_load_records(nullptr, &n) == NNP_STATUS_OK);
  std::vector<nnp_load_record> raw(n);
  for (auto& r : raw) r.struct_size = sizeof(r);
  REQUIRE(nnp_get_load_records(raw.data(), &n) == NNP_STATUS_OK);
  std::vector<rec> out;
  for (const auto& r : raw) out.push_back({r.path, r.name, r.reason, r.state, r.status});
  return out;
}

// The first record of plugin `name`, or NULL.
inline const rec* find_name(const std::vector<rec>& rs, const std::string& name) {
  for (const auto& r : rs)
    if (r.name == name) return &r;
  return nullptr;
}

// Plugin `name` has a record in `rs` (required) in state LOADED.
inline void check_loaded(const std::vector<rec>& rs, const std::string& name) {
  const rec* r = find_name(rs, name);
  REQUIRE(r != nullptr);
  CHECK(r->state == NNP_LOAD_LOADED);
}

// Plugin `name` has a record in `rs` (required) in state FAILED with `status` and a reason that
// contains `reason_part` (the reason is shown on failure).
inline void check_failed(const std::vector<rec>& rs, const std::string& name, int32_t status,
                         const std::string& reason_part) {
  const rec* r = find_name(rs, name);
  REQUIRE(r != nullptr);
  CAPTURE(r->reason);
  CHECK(r->state == NNP_LOAD_FAILED);
  CHECK(r->status == status);
  CHECK(contains(r->reason, reason_part));
}

// A compact tensor of host memory (kDLCPU): no strides, no byte offset.
inline DLTensor host_tensor(void* data, DLDataType dtype, int ndim, int64_t* shape) {
  DLTensor t{};
  t.data = data;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = ndim;
  t.dtype = dtype;
  t.shape = shape;
  return t;
}

// A fresh folder <tmp>/nnplug_<tag>_<pid> (mode 0755, emptied first), removed with its
// contents when the object goes away.
struct scratch_dir {
  std::filesystem::path dir;
  explicit scratch_dir(const std::string& tag)
      : dir(std::filesystem::temp_directory_path() /
            ("nnplug_" + tag + "_" + std::to_string(getpid()))) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::filesystem::create_directories(dir);
    std::filesystem::permissions(dir, std::filesystem::perms(0755));
  }
  // A subfolder (mode 0755), created if needed.
  std::filesystem::path folder(const std::string& name) const {
    const std::filesystem::path p = dir / name;
    std::filesystem::create_directories(p);
    std::filesystem::permissions(p, std::filesystem::perms(0755));
    return p;
  }
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
};

}  // namespace nnp_test
