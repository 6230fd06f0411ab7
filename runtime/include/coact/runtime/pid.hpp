// coact/runtime/pid.hpp: Pid, an actor's untyped address (slot id + epoch).
//
// A Pid names one incarnation of an actor: the registry reuses slot ids, and
// bumps the slot's epoch each time, so a Pid whose epoch is stale never
// resolves to the newer actor in the same slot. Plain value; any thread.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>

namespace coact {

/// Untyped actor address: registry slot `id` and its incarnation `epoch`.
/// epoch 0 is never issued, so a default-constructed Pid is invalid.
struct Pid {
  uint32_t id = 0;
  uint32_t epoch = 0;

  constexpr bool valid() const noexcept { return epoch != 0; }
  friend constexpr auto operator<=>(const Pid&, const Pid&) = default;
};

}  // namespace coact

template <>
struct std::hash<coact::Pid> {
  size_t operator()(const coact::Pid& p) const noexcept {
    return std::hash<uint64_t>{}((uint64_t{p.id} << 32) | p.epoch);
  }
};
