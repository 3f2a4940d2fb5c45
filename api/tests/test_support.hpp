// test_support.hpp — small helpers shared by the API tests (doctest): message checks, the
// reference device, host tensors, and scratch folders under the temporary directory.
#pragma once

#include <doctest/doctest.h>

#include <nnplug/nnplug.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

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
