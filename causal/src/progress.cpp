// The progress-point registry: name -> point, points never freed.
#include <coact/causal/progress.hpp>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace coact::causal {

namespace {
// Guarded by mu. Leaked on purpose: points are visited from any thread at any
// time, static destruction included.
struct Registry {
  std::mutex mu;
  std::vector<ProgressPoint*> points;                       // registration order
  std::unordered_map<std::string, ProgressPoint*> by_name;  // every point
};
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

ProgressPoint* get_or_add(std::string_view name, ProgressKind kind, bool handler_completion) {
  Registry& r = registry();
  std::lock_guard lk(r.mu);
  std::string key(name);
  if (auto it = r.by_name.find(key); it != r.by_name.end()) {
    ProgressPoint* p = it->second;
    if (p->kind() != kind) {
      std::fprintf(stderr,
                   "coact causal: progress point '%s' is used both as a %s point and as a %s point "
                   "(COACT_PROGRESS vs COACT_BEGIN/COACT_END); give them different names\n",
                   key.c_str(), std::string(to_string(p->kind())).c_str(), std::string(to_string(kind)).c_str());
      std::abort();
    }
    return p;
  }
  auto* p = new ProgressPoint(key, kind, handler_completion);
  r.points.push_back(p);
  r.by_name.emplace(std::move(key), p);
  return p;
}
}  // namespace

std::string_view to_string(ProgressKind kind) noexcept {
  return kind == ProgressKind::throughput ? "throughput" : "latency";
}

ProgressPoint* progress_point(std::string_view name, ProgressKind kind) { return get_or_add(name, kind, false); }

ProgressPoint* handler_completion_point(std::string_view region_name) {
  return get_or_add(region_name, ProgressKind::throughput, true);
}

std::vector<ProgressPoint*> progress_points() {
  Registry& r = registry();
  std::lock_guard lk(r.mu);
  return r.points;
}

}  // namespace coact::causal
