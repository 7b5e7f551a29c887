// The names of an enum's values - their spellings in configs, files, logs and on the command line -
// kept in one table, so that printing and parsing can never disagree and a new value is named in
// one place. Every library's to_string / parse_* pair is a lookup in such a table. The enumerators
// are consecutive, and the table names them in order between the first and the last, which it is
// given too: a list of the wrong length does not compile.
//
//   constexpr auto kTaskOrders = datasets::enum_names<TaskOrder::sequential, TaskOrder::weighted>(
//       {"sequential", "shuffled", "weighted"});
//   std::string_view to_string(TaskOrder o) { return kTaskOrders.name(o); }
//   std::optional<TaskOrder> parse_task_order(std::string_view s) { return kTaskOrders.parse(s); }
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace sparserl::datasets {

template <auto First, std::size_t N>
struct EnumNames {
  using Enum = decltype(First);
  using Value = std::underlying_type_t<Enum>;

  std::array<std::string_view, N> names;

  // The value's name; `unknown` for a value outside the table (an out-of-range cast).
  [[nodiscard]] constexpr std::string_view name(Enum value, std::string_view unknown = "?") const {
    const auto i = static_cast<Value>(value) - static_cast<Value>(First);
    return i >= 0 && static_cast<std::size_t>(i) < N ? names[static_cast<std::size_t>(i)] : unknown;
  }

  // The value named `text` exactly; nullopt for none.
  [[nodiscard]] constexpr std::optional<Enum> parse(std::string_view text) const {
    for (std::size_t i = 0; i < N; ++i) {
      if (names[i] == text)
        return static_cast<Enum>(static_cast<Value>(First) + static_cast<Value>(i));
    }
    return std::nullopt;
  }

  // Every name in order, for messages that list what is accepted: "a, b or c".
  [[nodiscard]] std::string list(std::string_view last_separator = " or ") const {
    std::string out;
    for (std::size_t i = 0; i < N; ++i) {
      if (i > 0) out += i + 1 == N ? last_separator : std::string_view(", ");
      out += names[i];
    }
    return out;
  }
};

// The table of the enumerators First..Last, named in order.
template <auto First, auto Last, std::size_t N>
constexpr EnumNames<First, N> enum_names(const std::string_view (&names)[N]) {
  static_assert(std::is_same_v<decltype(First), decltype(Last)>, "First and Last of one enum");
  using Value = std::underlying_type_t<decltype(First)>;
  static_assert(static_cast<Value>(Last) - static_cast<Value>(First) + 1 == static_cast<Value>(N),
                "one name per enumerator from First to Last");
  EnumNames<First, N> table{};
  for (std::size_t i = 0; i < N; ++i) table.names[i] = names[i];
  return table;
}

}  // namespace sparserl::datasets
