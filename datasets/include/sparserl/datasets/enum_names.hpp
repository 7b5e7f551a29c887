// The names of a closed set of values - an enum's spellings in configs, files, logs and on the
// command line - kept in one table, so that printing and parsing can never disagree and a new value
// is named in one place. Every library's to_string / parse_* pair is a lookup in such a table:
//
//   constexpr auto kTaskOrders = datasets::enum_names<TaskOrder>(
//       {{TaskOrder::sequential, "sequential"}, {TaskOrder::shuffled, "shuffled"}});
//   std::string_view to_string(TaskOrder o) { return kTaskOrders.name(o); }
//   std::optional<TaskOrder> parse_task_order(std::string_view s) { return kTaskOrders.parse(s); }
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace sparserl::datasets {

template <class Enum, std::size_t N>
struct EnumNames {
  std::array<std::pair<Enum, std::string_view>, N> entries;

  // The value's name; `unknown` for a value the table lacks (an out-of-range cast).
  [[nodiscard]] constexpr std::string_view name(Enum value, std::string_view unknown = "?") const {
    for (const auto& [v, text] : entries) {
      if (v == value) return text;
    }
    return unknown;
  }

  // The value named `text` exactly; nullopt for none.
  [[nodiscard]] constexpr std::optional<Enum> parse(std::string_view text) const {
    for (const auto& [v, name] : entries) {
      if (name == text) return v;
    }
    return std::nullopt;
  }

  // Every name in table order, for messages that list what is accepted: "a, b or c".
  [[nodiscard]] std::string list(std::string_view last_separator = " or ") const {
    std::string out;
    for (std::size_t i = 0; i < N; ++i) {
      if (i > 0) out += i + 1 == N ? last_separator : std::string_view(", ");
      out += entries[i].second;
    }
    return out;
  }
};

// A table from its entries, the count deduced: enum_names<Op>({{Op::spmv, "spmv"}, ...}).
template <class Enum, std::size_t N>
constexpr EnumNames<Enum, N> enum_names(const std::pair<Enum, std::string_view> (&entries)[N]) {
  EnumNames<Enum, N> table{};
  for (std::size_t i = 0; i < N; ++i) table.entries[i] = entries[i];
  return table;
}

}  // namespace sparserl::datasets
