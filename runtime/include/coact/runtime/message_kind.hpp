// coact/runtime/message_kind.hpp: process-wide ids and readable names for
// message kinds (types) and actor types. Any thread; registration takes a
// mutex once per type, lookups of an id are a function-local static.
#pragma once

#include <cstdint>
#include <string>
#include <typeinfo>

namespace coact {
namespace detail {
uint32_t register_kind(const std::type_info& type);
}  // namespace detail

/// Stable (for this process) id of message kind M; ids start at 1. Inlined
/// into every envelope construction (a guard check and a load), so a send
/// makes no call for it.
template <class M>
[[gnu::always_inline]] inline uint32_t kind_id() {
  static const uint32_t id = detail::register_kind(typeid(M));
  return id;
}

/// Demangled name of a message kind id ("?" for an unknown id).
std::string kind_name(uint32_t id);

/// Demangled name of any type.
std::string demangle(const std::type_info& type);

}  // namespace coact
