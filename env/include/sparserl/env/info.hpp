// Info: the environment's `info` dictionary, in insertion order, with typed values. At the end of
// an episode it carries every EvalResult field (as "eval.<field>", nested structs as
// "eval.compile.<field>" ...), the reward breakdown ("reward.<term>"), and the episode's facts; see
// docs/environment.md for the keys.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "sparserl/reward/eval_result.hpp"
#include "sparserl/reward/reward.hpp"

namespace sparserl::env {

using InfoValue = std::variant<bool, std::int64_t, double, std::string>;

class Info {
 public:
  // Sets (or replaces) a key. Booleans stay booleans, every integer type becomes int64, every
  // floating type double, and anything else a string.
  void set_value(std::string key, InfoValue value);
  template <typename T>
  void set(std::string key, const T& value) {
    if constexpr (std::is_same_v<T, bool>) {
      set_value(std::move(key), InfoValue(value));
    } else if constexpr (std::is_integral_v<T>) {
      set_value(std::move(key), InfoValue(static_cast<std::int64_t>(value)));
    } else if constexpr (std::is_floating_point_v<T>) {
      set_value(std::move(key), InfoValue(static_cast<double>(value)));
    } else {
      set_value(std::move(key), InfoValue(std::string(value)));
    }
  }

  [[nodiscard]] const InfoValue* find(std::string_view key) const;
  [[nodiscard]] bool contains(std::string_view key) const { return find(key) != nullptr; }
  // The value as the type asked for; std::out_of_range naming the key when it is absent or of
  // another type (an int64 is readable as double).
  [[nodiscard]] bool get_bool(std::string_view key) const;
  [[nodiscard]] std::int64_t get_int(std::string_view key) const;
  [[nodiscard]] double get_double(std::string_view key) const;
  [[nodiscard]] const std::string& get_string(std::string_view key) const;

  [[nodiscard]] const std::vector<std::pair<std::string, InfoValue>>& entries() const {
    return entries_;
  }
  [[nodiscard]] std::size_t size() const { return entries_.size(); }
  [[nodiscard]] bool empty() const { return entries_.empty(); }
  // A flat JSON object, keys in insertion order.
  [[nodiscard]] std::string to_json() const;

 private:
  std::vector<std::pair<std::string, InfoValue>> entries_;
};

// Every field of an EvalResult under "eval." (the names of EvalResult::to_json(), nested with
// dots).
void add_eval_result(Info& info, const reward::EvalResult& result);
// Every term of a RewardBreakdown under "reward.".
void add_reward_breakdown(Info& info, const reward::RewardBreakdown& breakdown);

}  // namespace sparserl::env
