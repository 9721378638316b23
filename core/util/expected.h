// A minimal expected<T, E> (C++20 has no std::expected). Errors in conform are values: a parse,
// decode or I/O failure is returned, never thrown, so a hostile peer cannot unwind the stack.
#pragma once

#include <cassert>
#include <type_traits>
#include <utility>
#include <variant>

namespace conform {

template <class E>
struct Unexpected {
  E error;
};
template <class E>
Unexpected<std::decay_t<E>> unexpected(E&& e) {
  return {std::forward<E>(e)};
}

template <class T, class E>
class Expected {
 public:
  Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  template <class G>
  Expected(Unexpected<G> u) : v_(std::in_place_index<1>, E(std::move(u.error))) {}

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { assert(has_value()); return std::get<0>(v_); }
  const T& value() const& { assert(has_value()); return std::get<0>(v_); }
  T&& value() && { assert(has_value()); return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  E& error() & { assert(!has_value()); return std::get<1>(v_); }
  const E& error() const& { assert(!has_value()); return std::get<1>(v_); }

 private:
  std::variant<T, E> v_;
};

// Expected<void, E>: success carries nothing.
struct Ok {};

}  // namespace conform
