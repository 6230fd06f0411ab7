// The source scope (SourceScope, symbolizer.hpp): which source paths are
// the program's (default: outside system directories and coact's own library
// sources; or the user's '%' wildcard patterns, Coz's syntax). Read by the
// symbolizer when it decides which objects and CUs to read and which frames
// attribute a sample; no state.
#include "detail/symbolizer_impl.hpp"

namespace coact::causal {

namespace {

// Coz's wildcard match: '%' matches any run of characters (libcoz/util.h).
bool wildcard_match(std::string_view s, std::string_view p) {
  size_t si = 0, pi = 0, star = std::string_view::npos, mark = 0;
  while (si < s.size()) {
    if (pi < p.size() && p[pi] == '%') {
      star = pi++;
      mark = si;
    } else if (pi < p.size() && p[pi] == s[si]) {
      ++pi;
      ++si;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '%') ++pi;
  return pi == p.size();
}

bool starts_with_dir(std::string_view path, std::string_view dir) {
  return !dir.empty() && path.size() > dir.size() && path.substr(0, dir.size()) == dir && path[dir.size()] == '/';
}

}  // namespace

bool SourceScope::matches_pattern(std::string_view path) const {
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return wildcard_match(path, p); });
}

SourceScope SourceScope::parse(std::string_view csv) {
  SourceScope s;
  size_t i = 0;
  while (i <= csv.size()) {
    const size_t j = std::min(csv.find(',', i), csv.size());
    std::string_view item = csv.substr(i, j - i);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) s.patterns.emplace_back(item);
    i = j + 1;
  }
  return s;
}

bool SourceScope::contains(std::string_view path) const {
  if (path.empty() || path.front() == '<') return false;  // <built-in>, <artificial>
  if (!patterns.empty()) {
    return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return wildcard_match(path, p); });
  }
  if (starts_with_dir(path, "/usr")) return false;
  // coact's own library sources: under the source tree coact was built from,
  // installed headers (include/coact/<lib>/), and the same library file
  // compiled in another checkout of coact (a shared compiler cache can hand
  // out objects whose paths name another tree: "<x>/runtime/src/f.cpp" is
  // coact's if "<root>/runtime/src/f.cpp" exists).
  const std::string_view root = COACT_SOURCE_ROOT;
  for (const char* lib : {"runtime", "causal", "calibrate"}) {
    const std::string dir = std::string("/") + lib + "/";
    if (!root.empty() && starts_with_dir(path, std::string(root) + "/" + lib)) return false;
    if (path.find(std::string("/include/coact/") + lib + "/") != std::string_view::npos) return false;
    for (const char* sub : {"src/", "include/coact/"}) {
      const size_t at = path.rfind(dir + sub);
      if (at != std::string_view::npos && !root.empty() &&
          std::filesystem::exists(std::string(root) + std::string(path.substr(at)))) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace coact::causal
