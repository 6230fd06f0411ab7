// Calling reports/coact_reports/estimate.py (estimator.hpp).
#include "estimator.hpp"

#include <sys/stat.h>
#include <sys/wait.h>

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tool.hpp"

namespace coact::profile_tool {

namespace {
bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
}  // namespace

std::string reports_pythonpath() {
  const std::string src = source_dir();
  if (!src.empty() && is_dir(src + "/reports/coact_reports")) return src + "/reports";
  const std::string installed = self_dir() + "/../share/coact/python";
  if (is_dir(installed + "/coact_reports")) return installed;
  return {};
}

std::vector<Prediction> run_estimator(const std::vector<std::string>& profiles, const std::vector<double>& at,
                                      const EstimateOptions& opt, const std::string& log) {
  const std::string path = reports_pythonpath();
  if (path.empty()) {
    throw std::runtime_error(
        "the estimator (the coact_reports Python package) was found neither in the source tree (reports/) nor "
        "under the install prefix (share/coact/python)");
  }
  std::vector<std::string> args{opt.python, "-m", "coact_reports.estimate"};
  args.insert(args.end(), profiles.begin(), profiles.end());
  args.insert(args.end(), {"--json", "--min-points", std::to_string(opt.min_points)});
  if (opt.degree == 1) args.insert(args.end(), {"--fit", "line"});
  for (double s : at) {
    args.push_back("--at");
    args.push_back(fmt::format("{}", s));
  }
  for (const auto& p : opt.points) {
    args.push_back("-p");
    args.push_back(p);
  }
  const char* old = std::getenv("PYTHONPATH");
  const std::string pp = path + (old != nullptr && *old != '\0' ? ":" + std::string(old) : "");
  std::vector<std::string> env = child_env({{"PYTHONPATH", pp}});
  std::erase_if(env, [&](const std::string& kv) { return kv.starts_with("PYTHONPATH=") && kv != "PYTHONPATH=" + pp; });
  const ChildResult r = run_child(args, env, log);
  if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 1) return {};  // a data error: no curve (in the log)
  if (!exited_ok(r)) {
    throw std::runtime_error(fmt::format("the estimator ({} -m coact_reports.estimate, PYTHONPATH={}) failed{}",
                                         opt.python, path, log.empty() ? "" : " (see " + log + ")"));
  }
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  if (!j.is_object() || !j.contains("regions")) {
    throw std::runtime_error("the estimator printed no JSON object with \"regions\"");
  }
  double systematic = 0;
  if (const auto e = j.find("estimator"); e != j.end() && e->is_object()) {
    if (const auto v = e->find("systematic"); v != e->end() && v->is_number()) systematic = v->get<double>();
  }
  std::vector<Prediction> out;
  for (const auto& reg : j["regions"]) {
    for (const auto& p : reg.value("predictions", nlohmann::json::array())) {
      Prediction x;
      x.region = reg.value("region", "");
      x.point = reg.value("point", "");
      x.curve_experiments = reg.value("experiments", 0);
      x.runs = reg.value("runs", 0);
      x.interval = reg.value("interval", "");
      x.systematic = systematic;
      x.s = p.value("s", 0.0);
      x.value = p.contains("program_speedup") && p["program_speedup"].is_number() ? p["program_speedup"].get<double>()
                                                                                  : std::nan("");
      x.experiments = p.value("experiments", 0);
      x.lo = x.hi = std::nan("");
      if (const auto ci = p.find("ci");
          ci != p.end() && ci->is_array() && ci->size() == 2 && (*ci)[0].is_number() && (*ci)[1].is_number()) {
        x.lo = (*ci)[0].get<double>();
        x.hi = (*ci)[1].get<double>();
      }
      out.push_back(std::move(x));
    }
  }
  return out;
}

std::string systematic_note(double k) {
  return k > 0 ? fmt::format(", with the profiler's own error ({:g} %)", k * 100) : std::string();
}

const Prediction* find_prediction(const std::vector<Prediction>& p, const std::string& region, double s) {
  for (const auto& x : p) {
    if (x.region == region && std::abs(x.s - s) < 1e-6) return &x;
  }
  return nullptr;
}

}  // namespace coact::profile_tool
