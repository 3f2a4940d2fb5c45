// main.cpp — entry point of nnplug-conformance: parses the runner's own options, hands the
// rest to doctest (filters such as -tc=, reporters such as -r=junit), loads the backends,
// runs the suite and writes the JSON report.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "harness.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

void print_usage() {
  std::printf(
      "nnplug-conformance — checks an nnplug backend against the reference backend\n"
      "\n"
      "Runner options:\n"
      "  --backend NAME        backend (plugin name, or device 'name:i') to test; repeatable\n"
      "  --plugin PATH         load a plugin library and test it; repeatable\n"
      "                        (default: every loadable backend except the reference)\n"
      "  --reference NAME      the oracle backend (default: reference)\n"
      "  --seed N              seed of the random inputs (default 20240611; printed at start)\n"
      "  --cases ci|full|DIR   case lists to run (default: ci); a family whose case file\n"
      "                        is missing fails, naming the paths tried\n"
      "  --allow-missing-cases a missing case file is a note, not a failure (for a DIR\n"
      "                        that holds some families on purpose)\n"
      "  --filter TEXT         run only numerics/gradient cases whose name contains TEXT,\n"
      "                        e.g. --filter 'conv2d_forward n2 c3 h7'\n"
      "  --tolerances FILE     extra 'op dtype nmse' rules, applied after tolerances.txt;\n"
      "                        repeatable\n"
      "  --report FILE.json    write a JSON report (backend x op x dtype x case)\n"
      "  --markdown FILE.md    write a Markdown table (backend x op x dtype)\n"
      "  --shutdown            call nnp_shutdown() before exiting (checks plugin teardown)\n"
      "  --help                this text, then doctest's options\n"
      "Every other option goes to doctest, e.g. -tc='conv*' -r=junit -s.\n"
      "See docs/conformance.md.\n\n");
}

// Accepts "--opt value" and "--opt=value". Returns true if argv[i] was one of ours.
bool take(const std::string& name, int argc, char** argv, int& i, std::string* value) {
  const std::string a = argv[i];
  if (a == name) {
    if (i + 1 >= argc) {
      std::fprintf(stderr, "nnplug-conformance: %s needs a value\n", name.c_str());
      std::exit(2);
    }
    *value = argv[++i];
    return true;
  }
  if (a.rfind(name + "=", 0) == 0) {
    *value = a.substr(name.size() + 1);
    return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  conf::runner_options& o = conf::options();
  std::vector<char*> rest{argv[0]};
  bool help = false;
  for (int i = 1; i < argc; ++i) {
    std::string v;
    if (take("--backend", argc, argv, i, &v)) {
      o.backends.push_back(v);
    } else if (take("--plugin", argc, argv, i, &v)) {
      o.plugins.push_back(v);
    } else if (take("--reference", argc, argv, i, &v)) {
      o.reference = v;
    } else if (take("--seed", argc, argv, i, &v)) {
      char* end = nullptr;
      o.seed = std::strtoull(v.c_str(), &end, 0);
      if (v.empty() || *end != '\0') {
        std::fprintf(stderr, "nnplug-conformance: --seed needs an integer, got '%s'\n", v.c_str());
        return 2;
      }
    } else if (take("--report", argc, argv, i, &v)) {
      o.report = v;
    } else if (take("--markdown", argc, argv, i, &v)) {
      o.markdown = v;
    } else if (take("--filter", argc, argv, i, &v)) {
      o.filter = v;
    } else if (take("--cases", argc, argv, i, &v)) {
      o.cases = v;
    } else if (take("--tolerances", argc, argv, i, &v)) {
      o.tolerance_files.push_back(v);
    } else if (std::strcmp(argv[i], "--shutdown") == 0) {
      o.shutdown = true;
    } else if (std::strcmp(argv[i], "--allow-missing-cases") == 0) {
      o.allow_missing_cases = true;
    } else {
      const std::string a = argv[i];
      if (a == "--help" || a == "-h" || a == "-?") help = true;
      rest.push_back(argv[i]);
    }
  }
  if (help) print_usage();

  doctest::Context ctx;
  ctx.applyCommandLine(static_cast<int>(rest.size()), rest.data());
  if (ctx.shouldExit()) return ctx.run();  // --help, --list-test-cases, ...

  std::fprintf(stderr, "[nnplug-conformance] seed %llu, cases %s, nnplug %s, ABI %d.%d\n",
               static_cast<unsigned long long>(o.seed), o.cases.c_str(), nnp_version_string(),
               NNP_ABI_VERSION_MAJOR, NNP_ABI_VERSION_MINOR);
  std::fprintf(stderr, "[nnplug-conformance] data: %s\n", conf::data_dir().c_str());
  if (!conf::load_tolerances()) return 2;
  if (!conf::setup_devices()) return 1;
  std::fprintf(stderr, "[nnplug-conformance] reference: %s\n",
               conf::reference_device().name.c_str());
  for (const conf::device_entry* d : conf::backends_under_test()) {
    std::fprintf(stderr, "[nnplug-conformance] backend %s: %s%s%s\n", d->label.c_str(),
                 d->available ? d->name.c_str()
                 : d->failed  ? "FAILED"
                              : "no device",
                 d->available ? "" : ": ", d->available ? "" : d->reason.c_str());
  }
  std::fflush(stdout);

  int rc = ctx.run();
  // A backend that could not be loaded or found fails the run whatever the test filters.
  for (const conf::device_entry* d : conf::backends_under_test())
    if (d->failed && rc == 0) rc = 1;
  conf::print_summary();
  if (!o.report.empty() && !conf::write_report(o.report) && rc == 0) rc = 1;
  if (!o.markdown.empty() && !conf::write_markdown_report(o.markdown) && rc == 0) rc = 1;
  conf::release_devices();
  // Without --shutdown the plugins stay loaded until exit, as nnplug.h allows.
  if (o.shutdown) {
    const nnp_status s = nnp_shutdown();
    if (s != NNP_STATUS_OK) {
      std::fprintf(stderr, "nnplug-conformance: nnp_shutdown: %s: %s\n", nnp_status_string(s),
                   nnp_last_error_message());
      if (rc == 0) rc = 1;
    }
  }
  return rc;
}
