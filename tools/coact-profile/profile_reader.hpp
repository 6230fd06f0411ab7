// Reading the JSON-lines profile a sweep writes (coact/causal/profile_writer.hpp
// describes the records): the live reader `run` polls while the program runs,
// and the experiment list `validate` reads afterwards. Single-threaded; reads
// the file with ordinary buffered I/O and never writes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

#include <nlohmann/json.hpp>

namespace coact::profile_tool {

// What one child's sweep has written so far (records after its startup record).
struct Records {
  bool startup = false;
  nlohmann::json startup_record;  // the startup record itself
  uint64_t experiments = 0;
  uint64_t zero_speedup = 0;
  uint64_t experiment_ns = 0;                                // sum of experiment durations
  std::vector<std::pair<std::string, uint64_t>> per_region;  // experiments per region, first-seen order
  std::optional<nlohmann::json> names;
  std::vector<nlohmann::json> errors;
  std::vector<nlohmann::json> warnings;
  std::optional<nlohmann::json> summary;
  std::optional<nlohmann::json> estimates;
  std::optional<nlohmann::json>
      sampler;  // the "sampler" record (sweeps with --sampling)  // the last "estimates" record (the sweep's running ranking)
  std::optional<nlohmann::json> profile;  // the "profile" record (profile-only runs)
};

// Incremental reader: each poll() consumes the whole lines appended since the
// last one (a partial last line waits for the next poll); records count only
// after the last startup record whose pid is the child's. Lines that are not
// JSON objects with a "type" (padding records, blank lines of older files)
// are skipped.
class RecordReader {
 public:
  RecordReader(std::string path, uint64_t start) : path_(std::move(path)), pos_(start) {}

  // Reads what was appended; returns the number of new warning + error records.
  size_t poll(pid_t child);
  const Records& records() const { return r_; }

 private:
  void take(std::string_view line, pid_t child);

  std::string path_;
  uint64_t pos_;
  Records r_;
  size_t new_notes_ = 0;
};

// One experiment of a sweep profile.
struct Experiment {
  int chunk = 0;  // which startup record (0-based) it follows
  std::string region;
  double s = 0;            // virtual speedup, 0..1
  double rate = 0;         // progress visits per effective second (all points summed)
  uint64_t visits = 0;     // region visits
  uint64_t region_ns = 0;  // region exclusive time
};

// Every experiment of the JSON-lines file `path` (none if it cannot be read).
std::vector<Experiment> read_experiments(const std::string& path);

// Copies the JSON-lines profile `from` to `to` without the experiments of the
// chunks in `drop` (chunk = index of the startup record they follow). False if
// either file cannot be opened.
bool copy_without_chunks(const std::string& from, const std::string& to, const std::vector<int>& drop);

// The size of `path` in bytes, 0 if it does not exist.
uint64_t file_size(const std::string& path);

}  // namespace coact::profile_tool
