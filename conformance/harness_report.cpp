// harness_report.cpp — the report sink: every outcome (backend x op x dtype x case) is
// recorded here, then written as the JSON report, the Markdown table and the summary lines
// printed at the end of a run.
#include "harness.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

namespace conf {

// ---- report ---------------------------------------------------------------------------------
namespace {
std::mutex& report_mutex() {
  static std::mutex m;
  return m;
}
std::vector<report_entry>& entries() {
  static std::vector<report_entry> e;
  return e;
}
}  // namespace

const char* outcome_name(case_outcome o) {
  switch (o) {
    case case_outcome::pass:
      return "pass";
    case case_outcome::fail:
      return "fail";
    case case_outcome::unsupported:
      return "unsupported";
    case case_outcome::no_device:
      return "no_device";
  }
  return "?";
}

void report(const report_entry& e) {
  std::lock_guard<std::mutex> lock(report_mutex());
  entries().push_back(e);
}

bool write_report(const std::string& path) {
  using nlohmann::json;
  json j;
  j["tool"] = "nnplug-conformance";
  j["seed"] = options().seed;
  j["cases"] = options().cases;
  j["nnplug_version"] = nnp_version_string();
  j["abi_version"] =
      std::to_string(NNP_ABI_VERSION_MAJOR) + "." + std::to_string(NNP_ABI_VERSION_MINOR);
  json backends = json::array();
  auto describe = [](const device_entry& d) {
    json b;
    b["label"] = d.label;
    b["device"] = d.name;
    b["plugin"] = d.plugin;
    if (!d.plugin_version.empty()) b["plugin_version"] = d.plugin_version;
    if (!d.plugin_path.empty()) b["plugin_path"] = d.plugin_path;
    b["status"] = d.available ? "available" : d.failed ? "failed" : "no_device";
    if (!d.reason.empty()) b["reason"] = d.reason;
    return b;
  };
  for (const device_entry* d : backends_under_test()) backends.push_back(describe(*d));
  j["backends"] = backends;
  j["reference"] = describe(reference_device());
  json results = json::array();
  std::map<std::string, std::map<std::string, int>> summary;
  {
    std::lock_guard<std::mutex> lock(report_mutex());
    for (const auto& e : entries()) {
      json r;
      r["backend"] = e.backend;
      r["op"] = e.op;
      r["dtype"] = e.dtype;
      r["case"] = e.case_name;
      r["status"] = outcome_name(e.outcome);
      r["error"] = std::isfinite(e.error) ? json(e.error) : json(nullptr);
      r["threshold"] = e.threshold;
      if (!e.message.empty()) r["message"] = e.message;
      results.push_back(r);
      summary[e.backend][outcome_name(e.outcome)]++;
    }
  }
  j["results"] = results;
  j["summary"] = summary;
  std::ofstream f(path);
  if (!f) {
    std::fprintf(stderr, "nnplug-conformance: cannot write report %s\n", path.c_str());
    return false;
  }
  f << j.dump(1) << "\n";
  return static_cast<bool>(f);
}

bool write_markdown_report(const std::string& path) {
  struct cell_counts {
    std::map<case_outcome, int> count;  // entries per outcome
    double worst = 0;
    int of(case_outcome o) const {
      const auto it = count.find(o);
      return it == count.end() ? 0 : it->second;
    }
  };
  const std::vector<std::string> dtypes{"float32", "float64", "float16", "bfloat16", "*"};
  std::map<std::pair<std::string, std::string>, std::map<std::string, cell_counts>> table;
  {
    std::lock_guard<std::mutex> lock(report_mutex());
    for (const auto& e : entries()) {
      cell_counts& c = table[{e.backend, e.op}][e.dtype];
      ++c.count[e.outcome];
      if (e.outcome != case_outcome::unsupported && std::isfinite(e.error))
        c.worst = std::max(c.worst, e.error);
    }
  }
  std::ofstream f(path);
  if (!f) {
    std::fprintf(stderr, "nnplug-conformance: cannot write %s\n", path.c_str());
    return false;
  }
  f << "# nnplug-conformance report\n\n"
    << "seed " << options().seed << ", cases " << options().cases << ", nnplug "
    << nnp_version_string() << ", reference " << reference_device().name << "\n\n"
    << "Cells: passed/run (worst error: NMSE, or relative error for gradients); "
       "**FAIL n** = failed cases; unsupported = declared unsupported by the backend.\n\n"
    << "| backend | op | float32 | float64 | float16 | bfloat16 | other |\n"
    << "|---|---|---|---|---|---|---|\n";
  for (const auto& [key, cells] : table) {
    f << "| " << key.first << " | " << key.second << " |";
    for (const auto& dt : dtypes) {
      auto it = cells.find(dt);
      std::ostringstream cell;
      if (dt == "*") {  // entries that are not per float dtype (errors, threads, no device)
        int pass = 0, fail = 0, no_device = 0;
        for (const auto& [name, c] : cells) {
          if (name != "*" && std::find(dtypes.begin(), dtypes.end(), name) != dtypes.end())
            continue;
          pass += c.of(case_outcome::pass);
          fail += c.of(case_outcome::fail);
          no_device += c.of(case_outcome::no_device);
        }
        if (no_device)
          cell << "no device";
        else if (fail)
          cell << "**FAIL " << fail << "**";
        else if (pass)
          cell << pass << "/" << pass;
      } else if (it != cells.end()) {
        const cell_counts& c = it->second;
        const int pass = c.of(case_outcome::pass), fail = c.of(case_outcome::fail);
        const int run = pass + fail;
        if (fail)
          cell << "**FAIL " << fail << "** of " << run;
        else if (run)
          cell << pass << "/" << run << " (" << std::setprecision(2) << c.worst << ")";
        else if (c.of(case_outcome::unsupported))
          cell << "unsupported";
      }
      f << " " << cell.str() << " |";
    }
    f << "\n";
  }
  return static_cast<bool>(f);
}

void print_summary() {
  std::fflush(stdout);  // runner lines go to stderr: stdout stays clean for -r=junit / -r=xml
  std::lock_guard<std::mutex> lock(report_mutex());
  std::map<std::string, std::map<case_outcome, int>> counts;
  // Unsupported cases, grouped by backend and dtype: the ops and one reason.
  std::map<std::string, std::pair<std::set<std::string>, std::string>> unsupported;
  for (const auto& e : entries()) {
    counts[e.backend][e.outcome]++;
    if (e.outcome == case_outcome::unsupported) {
      auto& u = unsupported[e.backend + " " + e.dtype];
      if (u.first.empty()) u.second = e.message;
      u.first.insert(e.op);
    }
  }
  for (const auto& [key, u] : unsupported) {
    std::vector<std::string> ops(u.first.begin(), u.first.end());
    std::fprintf(stderr, "[nnplug-conformance] unsupported: %s: %zu ops (%s); e.g. %s\n",
                 key.c_str(), ops.size(), join(ops, ", ").c_str(), u.second.c_str());
  }
  for (const device_entry* d : backends_under_test()) {
    if (!d->available)
      std::fprintf(stderr, "[nnplug-conformance] %s: %s: %s\n", d->label.c_str(),
                   d->failed ? "FAILED" : "no device", d->reason.c_str());
  }
  for (auto& [backend, c] : counts) {
    if (c[case_outcome::no_device] > 0 && c[case_outcome::pass] + c[case_outcome::fail] == 0)
      continue;
    std::fprintf(stderr, "[nnplug-conformance] %s: %d passed, %d failed, %d unsupported\n",
                 backend.c_str(), c[case_outcome::pass], c[case_outcome::fail],
                 c[case_outcome::unsupported]);
  }
}

}  // namespace conf
