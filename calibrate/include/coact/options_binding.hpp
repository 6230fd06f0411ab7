// coact/options_binding.hpp: a subsystem's option group — which member of
// its settings struct holds each of its declared keys (coact/options.hpp).
// A subsystem writes one table of bindings beside the code that reads it
// (causal/src/option_fields.cpp for causal::Options, runtime/src/tuning.cpp
// for SchedulerTuning); reading its struct from resolved values, printing
// it back as keys (a child's environment) and listing its fields are then
// loops over that table, not code written once per key.
//
//   constexpr std::array kTuning{
//       options::bind<&SchedulerTuning::workers>("COACT_WORKERS"),
//       options::bind<&SchedulerTuning::peer_steal>("COACT_PEER_STEAL"),
//   };
//   SchedulerTuning t;
//   options::read_all(std::span(kTuning), t, values);
//
// bind<&S::member>(key) works for bool, unsigned integers, std::chrono
// durations (the key's unit is the duration's), std::string,
// std::vector<std::string> (a list key) and std::optional of an unsigned
// integer (an integer key that accepts "auto": nullopt). A member of another
// type, or one that needs a check the declaration cannot express, gets its
// own read/text functions in a Binding written out by hand.
// The key's type, range, default and help stay in the declaration table;
// a binding never re-states them. Each group's test checks that every key
// of its group has exactly one binding (bound_keys_missing).
//
// Threads: tables are immutable; every function here is pure (any thread).
#pragma once

#include <chrono>
#include <concepts>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <coact/options.hpp>

namespace coact::options {

/// One declared key bound to a member (or members) of a settings struct S.
template <class S>
struct Binding {
  std::string_view key;  ///< environment spelling of a declared key
  /// Sets the member from resolved values (validated against the
  /// declaration already); throws option_error for a value the member
  /// cannot hold.
  void (*read)(S& s, const Values& v, std::string_view key);
  /// The member as the key's canonical text ("10", "true", "a,b", "auto").
  std::string (*text)(const S& s);
  /// Exported even at its default by tools that hand a child its settings.
  bool always_exported = false;

  /// The key's declaration. Throws std::logic_error if it has none (a
  /// binding of an undeclared key is a programming error).
  const Key& declared() const {
    const Key* k = find(key);
    if (k == nullptr) throw std::logic_error("coact options: " + std::string(key) + " is bound but not declared");
    return *k;
  }
};

/// How a member of type T holds a key's resolved value and prints it back.
template <class T>
struct Codec;

template <>
struct Codec<bool> {
  static void read(bool& m, const Values& v, std::string_view k) { m = v.boolean(k); }
  static std::string text(bool m) { return m ? "true" : "false"; }
};

template <>
struct Codec<std::string> {
  static void read(std::string& m, const Values& v, std::string_view k) { m = v.text(k); }
  static std::string text(const std::string& m) { return m; }
};

template <>
struct Codec<std::vector<std::string>> {
  static void read(std::vector<std::string>& m, const Values& v, std::string_view k) { m = v.list(k); }
  static std::string text(const std::vector<std::string>& m) {
    std::string out;
    for (const std::string& s : m) out += (out.empty() ? "" : ",") + s;
    return out;
  }
};

template <std::unsigned_integral T>
struct Codec<T> {
  static void read(T& m, const Values& v, std::string_view k) { m = static_cast<T>(*v.integer(k)); }
  static std::string text(T m) { return std::to_string(m); }
};

template <class Rep, class Period>
struct Codec<std::chrono::duration<Rep, Period>> {
  using D = std::chrono::duration<Rep, Period>;
  static void read(D& m, const Values& v, std::string_view k) { m = D(static_cast<Rep>(*v.integer(k))); }
  static std::string text(D m) { return std::to_string(m.count()); }
};

// An integer key that accepts "auto": nullopt = auto.
template <std::unsigned_integral T>
struct Codec<std::optional<T>> {
  static void read(std::optional<T>& m, const Values& v, std::string_view k) {
    const std::optional<uint64_t> n = v.integer(k);
    m = n ? std::optional<T>(static_cast<T>(*n)) : std::nullopt;
  }
  static std::string text(const std::optional<T>& m) { return m ? std::to_string(*m) : "auto"; }
};

namespace binding_detail {
template <class S, class T>
S struct_of(T S::*);
template <class S, class T>
T member_of(T S::*);
}  // namespace binding_detail

/// The settings struct and member type of a pointer to member.
template <auto Member>
using struct_t = decltype(binding_detail::struct_of(Member));
template <auto Member>
using member_t = decltype(binding_detail::member_of(Member));

/// A member's read and text through its Codec (also for hand-written bindings
/// that add a check after the plain read).
template <auto Member>
void read_member(struct_t<Member>& s, const Values& v, std::string_view key) {
  Codec<member_t<Member>>::read(s.*Member, v, key);
}
template <auto Member>
std::string member_text(const struct_t<Member>& s) {
  return Codec<member_t<Member>>::text(s.*Member);
}

/// The binding of `key` to Member, read and written by the member's Codec.
template <auto Member>
constexpr Binding<struct_t<Member>> bind(std::string_view key, bool always_exported = false) {
  return Binding<struct_t<Member>>{key, &read_member<Member>, &member_text<Member>, always_exported};
}

/// Reads every bound key into `s`, in table order (a binding that depends on
/// another member comes after it).
template <class S>
void read_all(std::span<const Binding<S>> table, S& s, const Values& v) {
  for (const Binding<S>& b : table) b.read(s, v, b.key);
}

/// The keys of `group` (coact/options.hpp keys()) with no binding in `table`,
/// except those in `unbound` (keys the group reads without a member). For
/// each group's test: empty when the table is complete.
template <class S>
std::vector<std::string_view> bound_keys_missing(std::span<const Binding<S>> table, std::string_view group,
                                                 std::span<const std::string_view> unbound = {}) {
  std::vector<std::string_view> missing;
  for (const Key& k : keys()) {
    if (k.group != group) continue;
    bool found = false;
    for (std::string_view u : unbound) found = found || u == k.name;
    for (const Binding<S>& b : table) found = found || b.key == k.name;
    if (!found) missing.push_back(k.name);
  }
  return missing;
}

}  // namespace coact::options
