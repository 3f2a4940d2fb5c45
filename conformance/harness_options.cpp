// harness_options.cpp — the runner's options (filled in by main.cpp from the command line),
// --filter case selection, and join(), the string helper the other harness files share.
#include "harness.hpp"

namespace conf {

runner_options& options() {
  static runner_options o;
  return o;
}

bool case_selected(const std::string& case_name) {
  return options().filter.empty() || case_name.find(options().filter) != std::string::npos;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

}  // namespace conf
