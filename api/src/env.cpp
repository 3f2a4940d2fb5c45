// The environment of libnnplug: every variable it reads (NNPLUG_PLUGIN_PATH, NNPLUG_BACKEND,
// NNPLUG_LOG, NNPLUG_PROFILE) is read here, with secure_getenv. In a process started set-uid,
// set-gid or with file capabilities (the kernel sets AT_SECURE), secure_getenv answers NULL, so
// such a program never loads plugins from a folder the calling user names (docs/security.md).
#include "internal.hpp"

#include <cstdlib>

namespace nnp::host {

const char* env_value(const char* name) { return secure_getenv(name); }

}  // namespace nnp::host
