// harness_cases.cpp — case files: parsing one case line into key/value tokens, the typed
// accessors of case_line, where the data lives (data_dir: NNPLUG_CONFORMANCE_DATA, the install
// tree or the source tree) and loading a family's cases from the ci, full or a given list.
#include "harness.hpp"

#include <doctest/doctest.h>
#include <unistd.h>
#include <sys/stat.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace conf {

// ---- case files -----------------------------------------------------------------------------
int64_t case_line::i(const std::string& k, int64_t def) const {
  auto it = kv.find(k);
  if (it == kv.end() || it->second.empty()) return def;
  return std::strtoll(it->second.c_str(), nullptr, 10);
}
double case_line::d(const std::string& k, double def) const {
  auto it = kv.find(k);
  if (it == kv.end() || it->second.empty()) return def;
  return std::strtod(it->second.c_str(), nullptr);
}
std::string case_line::s(const std::string& k, const std::string& def) const {
  auto it = kv.find(k);
  return it == kv.end() ? def : it->second;
}
std::vector<int64_t> case_line::dims(const std::string& k, std::vector<int64_t> def) const {
  auto it = kv.find(k);
  if (it == kv.end()) return def;
  std::vector<int64_t> out;
  if (it->second == "scalar" || it->second.empty()) return out;
  std::stringstream ss(it->second);
  std::string part;
  while (std::getline(ss, part, 'x')) out.push_back(std::strtoll(part.c_str(), nullptr, 10));
  return out;
}
std::vector<int64_t> case_line::list(const std::string& k) const {
  std::vector<int64_t> out;
  auto it = kv.find(k);
  if (it == kv.end()) return out;
  std::stringstream ss(it->second);
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (!part.empty()) out.push_back(std::strtoll(part.c_str(), nullptr, 10));
  }
  return out;
}

case_line parse_case(const std::string& line) {
  case_line c;
  std::istringstream is(line);
  std::string tok;
  std::vector<std::string> toks;
  while (is >> tok) {
    toks.push_back(tok);
    const auto eq = tok.find('=');
    if (eq != std::string::npos) {
      c.kv[tok.substr(0, eq)] = tok.substr(eq + 1);
      continue;
    }
    size_t p = 0;
    while (p < tok.size() && (std::islower(static_cast<unsigned char>(tok[p])) || tok[p] == '_'))
      ++p;
    c.kv[tok.substr(0, p)] = tok.substr(p);
  }
  c.text = join(toks, " ");
  return c;
}

namespace {
bool is_dir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool is_file(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
std::string exe_dir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}
}  // namespace

std::string data_dir() {
  static const std::string dir = [] {
    // Set means chosen: a wrong folder fails loudly (load_cases) instead of falling back.
    if (const char* env = std::getenv("NNPLUG_CONFORMANCE_DATA"); env && *env)
      return std::string(env);
    const std::string installed = exe_dir() + "/../share/nnplug/conformance";
    if (is_dir(installed + "/cases")) return installed;
#ifdef NNPLUG_CONFORMANCE_SOURCE_DIR
    if (is_dir(NNPLUG_CONFORMANCE_SOURCE_DIR "/cases"))
      return std::string(NNPLUG_CONFORMANCE_SOURCE_DIR);
#endif
    return installed;
  }();
  return dir;
}

std::vector<case_line> load_cases(const std::string& family) {
  const std::string& sel = options().cases;
  std::vector<std::string> candidates;
  if (is_dir(sel)) {
    candidates.push_back(sel + "/" + family + ".txt");
  } else {
    candidates.push_back(data_dir() + "/cases/" + sel + "/" + family + ".txt");
    if (sel != "ci") candidates.push_back(data_dir() + "/cases/ci/" + family + ".txt");
  }
  std::vector<case_line> out;
  for (const auto& path : candidates) {
    if (!is_file(path)) continue;
    std::ifstream f(path);
    std::string line;
    while (std::getline(f, line)) {
      const auto hash = line.find('#');
      if (hash != std::string::npos) line.resize(hash);
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      out.push_back(parse_case(line));
    }
    return out;
  }
  // A missing list must not pass vacuously: the family's cases did not run.
  if (options().allow_missing_cases)
    MESSAGE("no case file for '" << family << "' (looked for " << join(candidates, ", ")
                                 << "; --allow-missing-cases)");
  else
    FAIL_CHECK("no case file for '" << family << "' (looked for " << join(candidates, ", ")
                                    << "); set NNPLUG_CONFORMANCE_DATA to the folder holding "
                                       "cases/ and tolerances.txt, or pass --allow-missing-cases");
  return out;
}

}  // namespace conf
