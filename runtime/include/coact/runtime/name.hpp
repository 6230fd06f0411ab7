// coact/runtime/name.hpp: Name<M>, a typed name for "whoever handles M under
// this name", resolved at send time (Runtime::register_name / Runtime::send).
// Plain value; any thread.
#pragma once

#include <string>
#include <utility>

namespace coact {

template <class M>
class Name {
 public:
  explicit Name(std::string name) : name_(std::move(name)) {}
  const std::string& str() const noexcept { return name_; }

 private:
  std::string name_;
};

}  // namespace coact
