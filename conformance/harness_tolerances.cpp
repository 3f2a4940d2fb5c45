// harness_tolerances.cpp — NMSE thresholds: built-in defaults, then the rules of
// tolerances.txt and of every --tolerances file ("op dtype nmse", '*' matches any; an exact op
// beats '*', later rules win among equally specific ones).
#include "harness.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <tuple>

namespace conf {

// ---- tolerances -----------------------------------------------------------------------------
namespace {
std::vector<std::tuple<std::string, std::string, double>>& tolerance_rules() {
  static std::vector<std::tuple<std::string, std::string, double>> rules{
      {"*", "float64", 1e-20},
      {"*", "float32", 1e-9},
      {"*", "float16", 1e-5},
      {"*", "bfloat16", 1e-4},
      {"gradient", "float64", 1e-6}};
  return rules;
}
bool read_tolerance_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) {
    std::fprintf(stderr, "nnplug-conformance: cannot read tolerances file %s\n", path.c_str());
    return false;
  }
  std::string line;
  int lineno = 0;
  while (std::getline(f, line)) {
    ++lineno;
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream is(line);
    std::string op, dtype, value;
    if (!(is >> op)) continue;
    char* end = nullptr;
    double v = 0;
    if (is >> dtype >> value) v = std::strtod(value.c_str(), &end);
    if (dtype.empty() || !end || *end != '\0' || !(v >= 0)) {
      std::fprintf(stderr, "%s:%d: expected 'op dtype nmse'\n", path.c_str(), lineno);
      return false;
    }
    tolerance_rules().emplace_back(op, dtype, v);
  }
  return true;
}
}  // namespace

bool load_tolerances() {
  bool ok = true;
  const std::string def = data_dir() + "/tolerances.txt";
  struct stat st;
  if (stat(def.c_str(), &st) == 0) {
    ok = read_tolerance_file(def) && ok;
  } else if (!options().allow_missing_cases) {
    std::fprintf(stderr,
                 "nnplug-conformance: %s not found (set NNPLUG_CONFORMANCE_DATA to the folder "
                 "holding cases/ and tolerances.txt, or pass --allow-missing-cases)\n",
                 def.c_str());
    return false;
  }
  for (const auto& f : options().tolerance_files) ok = read_tolerance_file(f) && ok;
  return ok;
}

double tolerance(const std::string& op, const std::string& dtype) {
  double best = -1;
  int best_rank = -1;
  // Later rules win among equally specific ones; an exact op beats '*'.
  for (const auto& [o, d, v] : tolerance_rules()) {
    if ((o != "*" && o != op) || (d != "*" && d != dtype)) continue;
    const int rank = (o != "*" ? 2 : 0) + (d != "*" ? 1 : 0);
    if (rank >= best_rank) {
      best_rank = rank;
      best = v;
    }
  }
  return best < 0 ? 1e-9 : best;
}
double tolerance(const std::string& op, dtype_id dtype) { return tolerance(op, dt_name(dtype)); }

}  // namespace conf
