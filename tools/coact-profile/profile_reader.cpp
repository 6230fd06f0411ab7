// Reading a sweep's JSON-lines profile (profile_reader.hpp).
#include "profile_reader.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>

namespace coact::profile_tool {

using json = nlohmann::json;

uint64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

size_t RecordReader::poll(pid_t child) {
  new_notes_ = 0;
  std::ifstream in(path_, std::ios::binary);
  if (!in) return 0;
  in.seekg(0, std::ios::end);
  const auto size = static_cast<uint64_t>(in.tellg());
  if (size < pos_) pos_ = 0;  // the child truncated a partial tail below our start
  in.seekg(static_cast<std::streamoff>(pos_));
  std::string chunk(size - pos_, '\0');
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  chunk.resize(static_cast<size_t>(in.gcount()));
  const size_t last_nl = chunk.rfind('\n');
  if (last_nl == std::string::npos) return 0;
  size_t begin = 0;
  while (begin <= last_nl) {
    const size_t nl = chunk.find('\n', begin);
    take(std::string_view(chunk).substr(begin, nl - begin), child);
    begin = nl + 1;
  }
  pos_ += last_nl + 1;
  return new_notes_;
}

void RecordReader::take(std::string_view line, pid_t child) {
  const size_t first = line.find_first_not_of(" \t\r");
  if (first == std::string_view::npos || line[first] != '{') return;
  const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) return;
  const std::string type = j["type"];
  if (type == "startup") {
    if (j.value("pid", -1L) == static_cast<long>(child)) {
      r_ = Records{};
      r_.startup = true;
      r_.startup_record = j;
    }
    return;
  }
  if (!r_.startup) return;
  if (type == "experiment") {
    ++r_.experiments;
    if (j.value("speedup", 1.0) == 0.0) ++r_.zero_speedup;
    r_.experiment_ns += j.value("duration_ns", uint64_t{0});
    const std::string region = j.value("region", "");
    auto it =
        std::find_if(r_.per_region.begin(), r_.per_region.end(), [&](const auto& p) { return p.first == region; });
    if (it == r_.per_region.end()) {
      r_.per_region.emplace_back(region, 1);
    } else {
      ++it->second;
    }
  } else if (type == "names") {
    r_.names = j;
  } else if (type == "error") {
    r_.errors.push_back(j);
    ++new_notes_;
  } else if (type == "warning") {
    r_.warnings.push_back(j);
    ++new_notes_;
  } else if (type == "summary") {
    r_.summary = j;
  } else if (type == "estimates") {
    r_.estimates = j;
  } else if (type == "sampler") {
    r_.sampler = j;
  } else if (type == "profile") {
    r_.profile = j;
  }
}

namespace {
// Calls f(line, json) for each JSON-object line of `in`, with the chunk index.
template <class F>
void for_each_record(std::istream& in, F&& f) {
  std::string line;
  int chunk = -1;
  while (std::getline(in, line)) {
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] != '{') {
      f(line, json(), chunk);
      continue;
    }
    const json j = json::parse(line, nullptr, false);
    if (j.is_object() && j.value("type", "") == "startup") ++chunk;
    f(line, j, chunk);
  }
}
}  // namespace

std::vector<Experiment> read_experiments(const std::string& path) {
  std::vector<Experiment> out;
  std::ifstream in(path);
  for_each_record(in, [&](const std::string&, const json& j, int chunk) {
    if (!j.is_object() || j.value("type", "") != "experiment" || chunk < 0) return;
    Experiment e;
    e.chunk = chunk;
    e.region = j.value("region", "");
    e.s = j.value("speedup", 0.0);
    uint64_t progress = 0;
    if (j.contains("progress") && j["progress"].is_object()) {
      for (const auto& [k, v] : j["progress"].items()) {
        if (v.is_number()) progress += v.get<uint64_t>();
      }
    }
    const double eff = static_cast<double>(j.value("effective_ns", uint64_t{0})) / 1e9;
    e.rate = eff > 0 ? static_cast<double>(progress) / eff : 0;
    e.visits = j.value("visits", uint64_t{0});
    e.region_ns = j.value("region_ns", uint64_t{0});
    out.push_back(std::move(e));
  });
  return out;
}

bool copy_without_chunks(const std::string& from, const std::string& to, const std::vector<int>& drop) {
  std::ifstream in(from);
  std::ofstream out(to, std::ios::trunc);
  if (!in || !out) return false;
  for_each_record(in, [&](const std::string& line, const json& j, int chunk) {
    if (j.is_object() && j.value("type", "") == "experiment" &&
        std::find(drop.begin(), drop.end(), chunk) != drop.end()) {
      return;
    }
    out << line << '\n';
  });
  return static_cast<bool>(out);
}

}  // namespace coact::profile_tool
