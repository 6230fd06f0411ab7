// dedup/pass_context.hpp: the state one archiving pass shares between its
// actors and the driver (PassContext), and errno_text. Private to the
// pipeline's files (reader.cpp, stages.cpp, index.cpp, writer.cpp,
// pipeline.cpp); pipeline.hpp only forward-declares PassContext.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "dedup/pipeline.hpp"

namespace coact::dedup {

/// The text of errno value `e` (strerror), for failure and warning messages.
inline std::string errno_text(int e) { return std::strerror(e); }

/// State shared by the actors of one pass and the driver. Lives as long as
/// the longest holder (an actor may outlive a failed pass's driver frame).
struct PassContext {
  ArchiveOptions opt;
  std::filesystem::path root;
  std::string tmp_path;
  /// Files never to read: the archive being written and its previous pass.
  std::vector<std::pair<dev_t, ino_t>> skip_inodes;
  /// Set on failure or when the driver gives up: handlers drop their work.
  /// Written by fail()/driver, read relaxed by handlers (a late read costs
  /// one more handler's work, never a wrong archive: the driver discards it).
  std::atomic<bool> aborted{false};

  std::mutex mu;      // guards the fields below
  std::string error;  // first failure
  bool done = false;  // the Writer finalized the archive
  PassStats stats;

  void warn(const std::string& m) {
    static std::mutex warn_mu;
    std::lock_guard lk(warn_mu);
    if (opt.warn)
      opt.warn(m);
    else
      std::fprintf(stderr, "coact-dedup: warning: %s\n", m.c_str());
  }
  void fail(Runtime& rt, const std::string& m) {
    {
      std::lock_guard lk(mu);
      if (error.empty()) error = m;
    }
    aborted.store(true, std::memory_order_relaxed);
    rt.request_stop();
  }
  bool is_aborted() const { return aborted.load(std::memory_order_relaxed); }
};

}  // namespace coact::dedup
