// runtime/src/message_kind.cpp: message-kind ids and demangled names.
#include <coact/runtime/message_kind.hpp>

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

namespace coact {

namespace {
std::mutex g_kinds_mu;
std::vector<const std::type_info*>& kinds() {  // guarded by g_kinds_mu; index = id - 1
  static std::vector<const std::type_info*> v;
  return v;
}
}  // namespace

namespace detail {
uint32_t register_kind(const std::type_info& type) {
  std::lock_guard lk(g_kinds_mu);
  auto& v = kinds();
  for (size_t i = 0; i < v.size(); ++i) {
    if (*v[i] == type) return uint32_t(i + 1);
  }
  v.push_back(&type);
  return uint32_t(v.size());
}
}  // namespace detail

std::string demangle(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> p(abi::__cxa_demangle(type.name(), nullptr, nullptr, &status), std::free);
  return status == 0 && p ? std::string(p.get()) : std::string(type.name());
}

std::string kind_name(uint32_t id) {
  std::lock_guard lk(g_kinds_mu);
  auto& v = kinds();
  if (id == 0 || id > v.size()) return "?";
  return demangle(*v[id - 1]);
}

}  // namespace coact
