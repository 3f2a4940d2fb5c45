// harness_compare.cpp — comparing a backend's output with the reference's: NMSE over finite
// positions with the NaN and Inf rules (NaN only where the reference has NaN, Inf in the same
// position with the same sign), and exact comparison for integers and masks.
#include "harness.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace conf {

// ---- comparison -----------------------------------------------------------------------------
comparison compare_nmse(const std::vector<double>& got, const std::vector<double>& want,
                        double threshold) {
  comparison c;
  if (got.size() != want.size()) {
    c.ok = false;
    c.error = std::numeric_limits<double>::infinity();
    c.detail = "size " + std::to_string(got.size()) + " != " + std::to_string(want.size());
    return c;
  }
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double a = got[i], b = want[i];
    if (std::isnan(b)) {
      if (!std::isnan(a) && c.ok) {
        c.ok = false;
        c.detail =
            "element " + std::to_string(i) + ": got " + std::to_string(a) + ", reference NaN";
      }
      continue;
    }
    if (std::isnan(a)) {
      if (c.ok) {
        c.ok = false;
        c.detail = "element " + std::to_string(i) + ": NaN (reference " + std::to_string(b) + ")";
      }
      continue;
    }
    if (std::isinf(a) || std::isinf(b)) {
      if (a != b && c.ok) {
        c.ok = false;
        c.detail = "element " + std::to_string(i) + ": got " + std::to_string(a) + ", reference " +
                   std::to_string(b) + " (Inf must match)";
      }
      continue;
    }
    num += (a - b) * (a - b);
    den += b * b;
  }
  c.error = num / std::max(den, 1e-30);
  if (!c.ok && c.error == 0) c.error = std::numeric_limits<double>::infinity();
  if (c.ok && !(c.error <= threshold)) {
    c.ok = false;
    size_t worst = 0;
    double worst_diff = -1;
    for (size_t i = 0; i < got.size(); ++i) {
      const double diff = std::fabs(got[i] - want[i]);
      if (std::isfinite(diff) && diff > worst_diff) {
        worst_diff = diff;
        worst = i;
      }
    }
    std::ostringstream os;
    os << "NMSE " << c.error << " > " << threshold << " (largest difference at element " << worst
       << ": got " << got[worst] << ", reference " << want[worst] << ")";
    c.detail = os.str();
  }
  return c;
}

comparison compare_exact(const std::vector<double>& got, const std::vector<double>& want) {
  comparison c;
  if (got.size() != want.size()) {
    c.ok = false;
    c.error = std::numeric_limits<double>::infinity();
    c.detail = "size mismatch";
    return c;
  }
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool same = got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i]));
    if (!same) {
      if (bad == 0)
        c.detail = "element " + std::to_string(i) + ": got " + std::to_string(got[i]) +
                   ", reference " + std::to_string(want[i]);
      ++bad;
    }
  }
  c.error = static_cast<double>(bad);
  c.ok = bad == 0;
  if (!c.ok) c.detail = std::to_string(bad) + " mismatching elements; first " + c.detail;
  return c;
}

}  // namespace conf
