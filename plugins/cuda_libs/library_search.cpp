// library_search.cpp — the run-time search for a CUDA library (nnplug/cuda_libs/
// library_search.hpp has the order): cuBLAS and cuDNN of the cuda backend, NCCL of the nccl
// communication plugin. Nothing here refers to one library in particular.
// Every dlopen is RTLD_NOW | RTLD_LOCAL: the libraries' symbols never leak into the process's
// global scope, and a library that cannot resolve its own dependencies fails here, with the
// dynamic linker's message, instead of at the first op.
#include <nnplug/cuda_libs/library_search.hpp>

#include <nnplug/kit/error.hpp>
#include <nnplug/kit/plugin.hpp>

#include <dlfcn.h>
#include <glob.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>

namespace nnp::cuda {
namespace {

std::vector<std::string> split(const char* s, const char* seps) {
  std::vector<std::string> out;
  if (s == nullptr) return out;
  std::string cur;
  for (const char* p = s;; ++p) {
    if (*p == '\0' || std::strchr(seps, *p) != nullptr) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
      if (*p == '\0') break;
    } else {
      cur += *p;
    }
  }
  return out;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += sep;
    out += v[i];
  }
  return out;
}

bool is_file(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_dir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) != nullptr ? std::string(buf) : p;
}

void add_unique(std::vector<std::string>& v, const std::string& s) {
  for (const std::string& x : v)
    if (x == s) return;
  v.push_back(s);
}

// Opens `what` (a path, or a soname for the dynamic linker) and checks it: every symbol of the
// spec, then spec.check. Returns the handle, or NULL with *error set (the candidate is closed).
void* try_open(const library_spec& spec, const std::string& what, std::string* error) {
  (void)dlerror();
  void* h = dlopen(what.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    *error = format("dlopen %s failed: %s", what.c_str(), e != nullptr ? e : "unknown error");
    return nullptr;
  }
  for (const char* const* s = spec.symbols; s != nullptr && *s != nullptr; ++s) {
    if (dlsym(h, *s) == nullptr) {
      *error = format("%s lacks %s (too old?)", what.c_str(), *s);
      dlclose(h);
      return nullptr;
    }
  }
  if (spec.check != nullptr) {
    const std::string why = spec.check(h);
    if (!why.empty()) {
      *error = format("%s: %s", what.c_str(), why.c_str());
      dlclose(h);
      return nullptr;
    }
  }
  return h;
}

std::string opened_path(void* h, const std::string& fallback) {
  struct link_map* lm = nullptr;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm != nullptr && lm->l_name != nullptr &&
      lm->l_name[0] != '\0')
    return lm->l_name;
  return fallback;
}

// Prefixes under which a Python environment may keep wheels (library_search.hpp).
std::vector<std::string> python_prefixes() {
  std::vector<std::string> out;
  for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"}) {
    const char* v = secure_getenv(var);
    if (v != nullptr && v[0] == '/') add_unique(out, v);
  }
  for (const std::string& dir : split(secure_getenv("PATH"), ":")) {
    if (dir[0] != '/') continue;
    if (::access((dir + "/python3").c_str(), X_OK) != 0) continue;
    const std::string real = real_path(dir);  // e.g. /bin -> /usr/bin
    const size_t slash = real.find_last_of('/');
    if (slash != std::string::npos && slash > 0) add_unique(out, real.substr(0, slash));
  }
  const char* home = secure_getenv("HOME");
  if (home != nullptr && home[0] == '/') add_unique(out, std::string(home) + "/.local");
  add_unique(out, "/usr/local");
  add_unique(out, "/usr");
  return out;
}

// Files <prefix>/lib*/python3*/{site,dist}-packages/nvidia/<subdir>/<soname>, in prefix order.
std::vector<std::string> pip_candidates(const library_spec& spec,
                                        const std::vector<std::string>& prefixes) {
  std::vector<std::string> out, seen;
  for (const std::string& prefix : prefixes) {
    for (const std::string& sub : spec.pip_subdirs) {
      const std::string pattern =
          prefix + "/lib{,64}/python3*/{site,dist}-packages/nvidia/" + sub + "/" + spec.soname;
      glob_t g;
      std::memset(&g, 0, sizeof(g));
      if (::glob(pattern.c_str(), GLOB_BRACE | GLOB_NOSORT, nullptr, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; ++i) {
          const std::string file = g.gl_pathv[i];
          const std::string real = real_path(file);
          bool dup = false;
          for (const std::string& s : seen) dup = dup || s == real;
          if (dup || !is_file(file)) continue;
          seen.push_back(real);
          out.push_back(file);
        }
      }
      ::globfree(&g);
    }
  }
  return out;
}

}  // namespace

bool env_flag(const char* name) {
  const char* v = secure_getenv(name);
  return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
}

void* library_symbol(const loaded_library& lib, const char* name) {
  return lib.handle != nullptr ? dlsym(lib.handle, name) : nullptr;
}

loaded_library open_library(const library_spec& spec) {
  loaded_library lib;
  const char* steps_env = secure_getenv("NNPLUG_CUDA_LIB_SEARCH");
  std::vector<std::string> steps = split(steps_env, ",: ");
  if (steps.empty()) steps = {"path", "soname", "pip", "build"};
  std::vector<std::string> tried;  // one entry per place looked at, in order
  // The host prefixes the plugin's name to the message ("cuda: cuBLAS from ...").
  auto found = [&](void* h, const std::string& what, const char* how) {
    lib.handle = h;
    lib.path = opened_path(h, what);
    host_log(NNP_LOG_INFO, format("%s from %s (%s), version %s", spec.title, lib.path.c_str(), how,
                                  spec.version(h).c_str()));
  };
  for (const std::string& step : steps) {
    std::string error;
    if (step == "path") {
      const std::vector<std::string> dirs = split(secure_getenv("NNPLUG_CUDA_LIB_PATH"), ":");
      if (dirs.empty()) continue;
      for (const std::string& dir : dirs) {
        const std::string file = dir + "/" + spec.soname;
        if (void* h = try_open(spec, file, &error)) {
          found(h, file, "NNPLUG_CUDA_LIB_PATH");
          return lib;
        }
        tried.push_back(error + " (NNPLUG_CUDA_LIB_PATH)");
      }
    } else if (step == "soname") {
      if (void* h = try_open(spec, spec.soname, &error)) {
        found(h, spec.soname, "dynamic linker");
        return lib;
      }
      tried.push_back(error);
    } else if (step == "pip") {
      const std::vector<std::string> prefixes = python_prefixes();
      const std::vector<std::string> files = pip_candidates(spec, prefixes);
      for (const std::string& file : files) {
        if (void* h = try_open(spec, file, &error)) {
          found(h, file, "Python wheel");
          return lib;
        }
        tried.push_back(error + " (Python wheel)");
      }
      if (files.empty()) {
        std::vector<std::string> subs;
        for (const std::string& s : spec.pip_subdirs) subs.push_back("site-packages/nvidia/" + s);
        tried.push_back(format("no Python wheel: no %s in %s under %s", spec.soname,
                               join(subs, " or ").c_str(), join(prefixes, ", ").c_str()));
      }
    } else if (step == "build") {
      if (spec.build_dir == nullptr || spec.build_dir[0] == '\0') continue;
      const std::string file = std::string(spec.build_dir) + "/" + spec.soname;
      if (!is_dir(spec.build_dir)) {
        tried.push_back(format("%s (configure-time folder) is gone", spec.build_dir));
        continue;
      }
      if (void* h = try_open(spec, file, &error)) {
        found(h, file, "configure-time folder");
        return lib;
      }
      tried.push_back(error + " (configure-time folder)");
    } else {
      tried.push_back(format("unknown NNPLUG_CUDA_LIB_SEARCH step '%s' ignored", step.c_str()));
    }
  }
  std::string why =
      tried.empty() ? std::string("NNPLUG_CUDA_LIB_SEARCH has no usable step") : tried.front();
  if (tried.size() > 1) {
    tried.erase(tried.begin());
    why += "; also tried: " + join(tried, "; ");
  }
  lib.reason = format("%s not found: %s; set NNPLUG_CUDA_LIB_PATH to the folder holding %s",
                      spec.title, why.c_str(), spec.soname);
  return lib;
}

}  // namespace nnp::cuda
