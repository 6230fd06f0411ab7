// bench/causal/worker_pinning.hpp: pins a Runtime's worker threads one per
// core, for the known-answer workloads whose known answers assume it
// (known_answer.hpp pins_workers). Used by coact-known-answer and the
// accuracy test (tests/causal/accuracy_test.cpp), so that the sweep, the
// really-faster program and the test all run the same placement.
//
// The runtime has no affinity option and names no threads, so the workers
// are found as the threads a Runtime's constructor started: take
// thread_ids() just before constructing it, then pin_new_threads() right
// after. Linux only (/proc/self/task, sched_setaffinity on a thread id).
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace coact::known_answer {

/// This process's thread ids (/proc/self/task), ascending; empty if the
/// directory cannot be read. Any thread.
inline std::vector<pid_t> thread_ids() {
  std::vector<pid_t> ids;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    const std::string name = e.path().filename().string();
    if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos) {
      ids.push_back(static_cast<pid_t>(std::stol(name)));
    }
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

/// Pins a just-constructed Runtime's `workers` worker threads one per CPU of
/// this process's affinity mask, in ascending CPU order: of the threads that
/// exist now but not in `before` (thread_ids() taken just before the Runtime
/// was constructed), the `workers` with the highest ids. Runtime's
/// constructor starts its workers last (runtime.cpp: after the sweep's
/// controller thread, if any), and Linux hands out thread ids in ascending
/// order. Returns whether it pinned all of them; does nothing and returns
/// false when the mask has fewer CPUs than `workers` or fewer new threads
/// exist; a failing sched_setaffinity stops it there (false; the threads
/// already pinned stay pinned). Call on the thread that constructed the
/// Runtime, before it starts other threads.
inline bool pin_new_threads(const std::vector<pid_t>& before, int workers) {
  if (workers <= 0) return false;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (::sched_getaffinity(0, sizeof(mask), &mask) != 0) return false;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &mask)) cpus.push_back(c);
  }
  std::vector<pid_t> fresh;
  for (pid_t t : thread_ids()) {
    if (!std::binary_search(before.begin(), before.end(), t)) fresh.push_back(t);
  }
  if (static_cast<int>(cpus.size()) < workers || static_cast<int>(fresh.size()) < workers) return false;
  const size_t first = fresh.size() - static_cast<size_t>(workers);
  for (size_t i = 0; i < static_cast<size_t>(workers); ++i) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[i], &one);
    if (::sched_setaffinity(fresh[first + i], sizeof(one), &one) != 0) return false;
  }
  return true;
}

}  // namespace coact::known_answer
