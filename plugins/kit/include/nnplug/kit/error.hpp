// nnplug/kit/error.hpp — the error type of nnplug's C++ code for plugins: nnp::error (an
// nnp_status and a message), nnp::fail / nnp::unsupported (throw one), nnp::format /
// nnp::vformat (printf into std::string). Defined once, in nnplug/geometry/error.hpp, which
// libnnplug uses too; slots turn errors into statuses with nnp::guard (nnplug/kit/plugin.hpp).
#pragma once

#include <nnplug/geometry/error.hpp>
