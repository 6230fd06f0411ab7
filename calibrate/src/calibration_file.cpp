// Calibration file: JSON (de)serialisation, default path, tolerant load, atomic save.
#include <coact/calibrate/calibration_file.hpp>
#include <coact/options.hpp>

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <coact/calibrate/tsc.hpp>

namespace coact::calibrate {
namespace {

using nlohmann::json;

const json& require(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) throw std::runtime_error(fmt::format("missing key \"{}\"", key));
  return *it;
}

uint64_t require_uint(const json& j, const char* key, uint64_t lo, uint64_t hi) {
  const json& v = require(j, key);
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
    throw std::runtime_error(fmt::format("\"{}\" must be a non-negative integer, got {}", key, v.dump()));
  }
  const uint64_t x = v.get<uint64_t>();
  if (x < lo || x > hi) {
    throw std::runtime_error(fmt::format("\"{}\" = {} is out of range {}..{}", key, x, lo, hi));
  }
  return x;
}

std::string require_string(const json& j, const char* key) {
  const json& v = require(j, key);
  if (!v.is_string()) throw std::runtime_error(fmt::format("\"{}\" must be a string, got {}", key, v.dump()));
  return v.get<std::string>();
}

}  // namespace

std::string to_json(const Calibration& c) {
  // ordered_json keeps the schema's key order, which makes the file readable.
  nlohmann::ordered_json j;
  j["schema"] = kCalibrationSchema;
  j["tsc_hz"] = c.tsc_hz;
  j["invariant_tsc"] = c.invariant_tsc;
  j["handoff_cost_ns"] = c.handoff_cost_ns;
  j["wake_break_even_ns"] = c.wake_break_even_ns;
  j["cores"] = c.cores;
  j["cpu_model"] = c.cpu_model;
  j["measured_at"] = c.measured_at;
  return j.dump(2) + "\n";
}

Calibration calibration_from_json(const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw std::runtime_error(fmt::format("not valid JSON: {}", e.what()));
  }
  if (!j.is_object()) throw std::runtime_error("top level is not a JSON object");
  const json& schema = require(j, "schema");
  if (!schema.is_number_integer() || schema.get<int64_t>() != kCalibrationSchema) {
    throw std::runtime_error(
        fmt::format("\"schema\" = {} is not the supported schema {}", schema.dump(), kCalibrationSchema));
  }
  Calibration c;
  c.tsc_hz = require_uint(j, "tsc_hz", kMinTscHz, kMaxTscHz);
  const json& inv = require(j, "invariant_tsc");
  if (!inv.is_boolean()) throw std::runtime_error(fmt::format("\"invariant_tsc\" must be a bool, got {}", inv.dump()));
  c.invariant_tsc = inv.get<bool>();
  c.handoff_cost_ns = require_uint(j, "handoff_cost_ns", 1, 100'000'000);
  c.wake_break_even_ns = require_uint(j, "wake_break_even_ns", 1, 1'000'000'000);
  c.cores = static_cast<uint32_t>(require_uint(j, "cores", 1, 1'000'000));
  c.cpu_model = require_string(j, "cpu_model");
  c.measured_at = require_string(j, "measured_at");
  return c;
}

std::filesystem::path default_calibration_path() {
  return default_calibration_path(options::process().text("COACT_CALIBRATION_FILE"),
                                  [](const char* key) -> const char* { return std::getenv(key); });
}

std::filesystem::path default_calibration_path(const std::string& configured,
                                               const std::function<const char*(const char*)>& env) {
  const auto nonempty = [&](const char* key) -> const char* {
    const char* v = env(key);
    return (v != nullptr && *v != '\0') ? v : nullptr;
  };
  if (!configured.empty()) return std::filesystem::path(configured);
  if (const char* x = nonempty("XDG_CACHE_HOME")) return std::filesystem::path(x) / "coact" / "calibration.json";
  if (const char* home = nonempty("HOME")) return std::filesystem::path(home) / ".cache" / "coact" / "calibration.json";
  // getpwuid_r: reentrant, so this stays callable from any thread.
  struct passwd pw {};
  struct passwd* result = nullptr;
  char buf[4096];
  if (getpwuid_r(getuid(), &pw, buf, sizeof buf, &result) == 0 && result != nullptr && result->pw_dir != nullptr &&
      *result->pw_dir != '\0') {
    return std::filesystem::path(result->pw_dir) / ".cache" / "coact" / "calibration.json";
  }
  return {};
}

std::optional<Calibration> load_calibration(const std::filesystem::path& path, std::ostream& warn) {
  const auto problem = [&](const std::string& what) {
    warn << fmt::format("coact: warning: ignoring calibration file '{}': {}\n", path.string(), what);
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return std::nullopt;  // no calibration yet: not a problem
    problem(fmt::format("cannot open: {}", std::strerror(err)));
    return std::nullopt;
  }
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      problem(fmt::format("read error: {}", std::strerror(err)));
      return std::nullopt;
    }
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > (1u << 20)) {
      ::close(fd);
      problem("larger than 1 MiB");
      return std::nullopt;
    }
  }
  ::close(fd);
  try {
    return calibration_from_json(text);
  } catch (const std::exception& e) {
    problem(e.what());
    return std::nullopt;
  }
}

std::optional<Calibration> load_calibration(const std::filesystem::path& path) {
  // Several boot-time readers (tsc_hz, initial_handoff_cost) load the same
  // file: say each distinct problem once per process, not once per reader.
  std::ostringstream warn;
  auto result = load_calibration(path, warn);
  if (!warn.str().empty()) {
    static std::mutex mu;
    static std::set<std::string> said;  // guarded by mu
    std::lock_guard lock(mu);
    if (said.insert(warn.str()).second) std::cerr << warn.str() << std::flush;
  }
  return result;
}

std::optional<Calibration> load_calibration() {
  const auto path = default_calibration_path();
  if (path.empty()) return std::nullopt;
  return load_calibration(path);
}

void save_calibration(const Calibration& c, const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  const auto fail = [&](const std::string& what, int err) {
    throw std::runtime_error(
        fmt::format("coact: cannot write calibration file '{}': {}: {}", path.string(), what, std::strerror(err)));
  };
  if (path.empty() || path.filename().empty()) fail("not a file path", EINVAL);
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail(fmt::format("create directory '{}'", dir.string()), ec.value());

  const std::string text = to_json(c);
  std::string tmpl = (dir / ("." + path.filename().string() + ".XXXXXX")).string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) fail("create temporary", errno);
  const auto abandon = [&](const std::string& what) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmpl.c_str());
    fail(what, err);
  };
  if (::fchmod(fd, 0644) != 0) abandon("chmod temporary");
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      abandon("write temporary");
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) abandon("fsync temporary");
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmpl.c_str());
    fail("close temporary", err);
  }
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmpl.c_str());
    fail("rename temporary into place", err);
  }
}

std::string current_cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) break;
      auto start = line.find_first_not_of(" \t", colon + 1);
      return start == std::string::npos ? std::string("unknown") : line.substr(start);
    }
  }
  return "unknown";
}

uint32_t online_cores() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1u : static_cast<uint32_t>(n);
}

std::string iso8601_utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace coact::calibrate
