// Knobs: each setting of a library declared once - key path, type, default, range or accepted
// values, one line of help - and bound to the struct field it fills. From that one declaration the
// struct keeps its own defaults, values are checked (errors name the key path), the experiment
// config reads and documents the key (experiments/src/schema.cpp composes its schema from the
// libraries' Knobs), and checkpoints write and read it as "key = value" text. A library declares a
// Knobs<ItsConfig> beside the struct; a struct that holds another nests that one's Knobs under a
// prefix ("grpo." + "epsilon_high").
#pragma once

#include <charconv>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace sparserl::datasets {

// An enum knob (a closed set of names) is a string knob with choices.
enum class KnobType { integer, real, boolean, string, string_list, integer_list, real_list };
std::string_view to_string(KnobType type);  // "integer", "number", "list of strings", ...

using KnobValue = std::variant<std::int64_t, double, bool, std::string, std::vector<std::string>,
                               std::vector<std::int64_t>, std::vector<double>>;

// A check beyond type, range and choices (a CPU list, a multiple of 4): nullopt when the value is
// fine, else what was expected.
using KnobValidator = std::function<std::optional<std::string>(const KnobValue&)>;

// The declaration of one knob, apart from the struct it fills: what a schema lists and checks.
struct KnobSpec {
  std::string path;  // key path: "epsilon_high", "grpo.epsilon_high", "sandbox.cpu_seconds"
  KnobType type = KnobType::integer;
  KnobValue default_value;
  std::string help;                  // one line
  std::optional<double> min, max;    // inclusive bounds of numbers and of list elements
  std::vector<std::string> choices;  // accepted strings (string, string_list); empty: any
  KnobValidator validator;
};

// nullopt when `value` fits `spec` (type, range, choices, validator), else what was expected:
// "value 0 is outside [1, 1000000]", "'mean' is not one of: token_mean, seq_mean_token_mean".
std::optional<std::string> check_knob(const KnobSpec& spec, const KnobValue& value);

// A real as configs and docs print it: the shortest text that reads back to the same double,
// "2.0" rather than "2".
std::string format_real(double value);

// The "key = value" text of checkpoints and `--set KEY=VALUE`: integers as written, reals with 17
// significant digits (they read back exactly), true / false, strings as they are. The parsers throw
// std::invalid_argument saying what was expected ("expected a number, got 'x'").
namespace knob_text {
std::string real(double value);
double parse_real(std::string_view text);
bool parse_boolean(std::string_view text);
std::string one_of(const std::vector<std::string>& choices);  // "a, b, c"
// The index of `text` among `choices`; std::invalid_argument "expected one of a, b, got 'x'".
std::size_t parse_choice(std::string_view text, const std::vector<std::string>& choices);
// A list of strings as one comma-separated text ("q_proj,v_proj"; "" is the empty list).
std::string join_list(const std::vector<std::string>& items);
std::vector<std::string> split_list(std::string_view text);

template <typename Int>
Int parse_integer(std::string_view text) {
  Int v{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    throw std::invalid_argument(std::string(std::is_signed_v<Int>
                                                ? "expected an integer"
                                                : "expected an unsigned integer") +
                                ", got '" + std::string(text) + "'");
  }
  return v;
}
}  // namespace knob_text

// One knob bound to a field of Owner: its declaration and the four ways to the field.
template <typename Owner>
struct KnobBinding {
  KnobSpec spec;  // spec.default_value is read from an Owner when Knobs::specs() is asked
  std::function<KnobValue(const Owner&)> get;
  std::function<void(Owner&, const KnobValue&)> set;  // a value of spec.type, already checked
  std::function<std::string(const Owner&)> text;
  std::function<void(Owner&, std::string_view)> parse;  // std::invalid_argument without the path
};

// The knobs of one struct, in declaration order.
template <typename Owner>
class Knobs {
 public:
  using Binding = KnobBinding<Owner>;

  // Adds a knob; std::logic_error when its path is taken.
  Knobs& add(Binding binding);

  template <typename Int>
  requires std::is_integral_v<Int> Knobs& integer(std::string path, Int Owner::*field,
                                                  std::string help,
                                                  std::optional<double> min = std::nullopt,
                                                  std::optional<double> max = std::nullopt);
  Knobs& real(std::string path, double Owner::*field, std::string help,
              std::optional<double> min = std::nullopt, std::optional<double> max = std::nullopt);
  Knobs& boolean(std::string path, bool Owner::*field, std::string help);
  Knobs& string(std::string path, std::string Owner::*field, std::string help,
                std::vector<std::string> choices = {});
  // A list of strings, each one of `choices` unless they are empty; its text form is
  // comma-separated (knob_text::join_list).
  Knobs& string_list(std::string path, std::vector<std::string> Owner::*field, std::string help,
                     std::vector<std::string> choices = {});
  // An enum: its accepted values by the names to_string(Enum) gives them (found by ADL).
  template <typename Enum>
  Knobs& choice(std::string path, Enum Owner::*field, std::string help, std::vector<Enum> values);
  // Attaches a validator to the most recently added knob.
  Knobs& validate(KnobValidator validator);

  // Every knob of `part` under "prefix." (an empty prefix keeps their paths), reached through a
  // member or through `access(owner)` -> Part& (a generic lambda, so that it serves const too).
  template <typename Part>
  Knobs& nest(const std::string& prefix, Part Owner::*member, const Knobs<Part>& part);
  template <typename Part, typename Access>
  Knobs& nest(const std::string& prefix, Access access, const Knobs<Part>& part);

  [[nodiscard]] const std::vector<Binding>& bindings() const { return bindings_; }
  [[nodiscard]] bool empty() const { return bindings_.empty(); }
  [[nodiscard]] const Binding* find(std::string_view path) const;
  // The knobs under "prefix." with the prefix taken off their paths, in declaration order; with
  // `only`, just those paths (relative to the prefix; an empty prefix takes them as they are), in
  // that order.
  [[nodiscard]] Knobs section(std::string_view prefix,
                              const std::vector<std::string>& only = {}) const;
  // The declarations, defaults read from `defaults` (the struct's own unless another is given).
  [[nodiscard]] std::vector<KnobSpec> specs(const Owner& defaults = Owner{}) const;

  [[nodiscard]] KnobValue get(const Owner& owner, std::string_view path) const;
  // Checks and sets a value; std::invalid_argument "PATH: why", or "unknown key 'PATH'".
  void set(Owner& owner, std::string_view path, const KnobValue& value) const;
  // The first knob whose value is out of its range or choices: "PATH: why"; nullopt when none is.
  [[nodiscard]] std::optional<std::string> check(const Owner& owner) const;
  // Every knob's text by path ("key = value" lines), and one knob set from its text (the type and
  // the choices are checked here, ranges by check()); std::invalid_argument "key 'PATH': why".
  [[nodiscard]] std::map<std::string, std::string> to_text(const Owner& owner) const;
  void set_text(Owner& owner, std::string_view path, std::string_view text) const;

 private:
  const Binding& at(std::string_view path) const;
  std::vector<Binding> bindings_;
};

// ---- Implementation ---------------------------------------------------------------------------

namespace knobs_detail {
inline std::string join(const std::string& prefix, const std::string& path) {
  return prefix.empty() ? path : prefix + "." + path;
}
}  // namespace knobs_detail

template <typename Owner>
Knobs<Owner>& Knobs<Owner>::add(Binding binding) {
  if (find(binding.spec.path) != nullptr) {
    throw std::logic_error("knob '" + binding.spec.path + "' declared twice");
  }
  bindings_.push_back(std::move(binding));
  return *this;
}

template <typename Owner>
template <typename Int>
requires std::is_integral_v<Int> Knobs<Owner>
&Knobs<Owner>::integer(std::string path, Int Owner::*field, std::string help,
                       std::optional<double> min, std::optional<double> max) {
  return add(
      {.spec = {std::move(path), KnobType::integer, {}, std::move(help), min, max, {}, {}},
       .get = [field](const Owner& o) { return KnobValue(static_cast<std::int64_t>(o.*field)); },
       .set = [field](
                  Owner& o,
                  const KnobValue& v) { o.*field = static_cast<Int>(std::get<std::int64_t>(v)); },
       .text = [field](const Owner& o) { return std::to_string(o.*field); },
       .parse = [field](
                    Owner& o,
                    std::string_view text) { o.*field = knob_text::parse_integer<Int>(text); }});
}

template <typename Owner>
Knobs<Owner>& Knobs<Owner>::real(std::string path, double Owner::*field, std::string help,
                                 std::optional<double> min, std::optional<double> max) {
  return add({.spec = {std::move(path), KnobType::real, {}, std::move(help), min, max, {}, {}},
              .get = [field](const Owner& o) { return KnobValue(o.*field); },
              .set =
                  [field](Owner& o, const KnobValue& v) {
                    const auto* i = std::get_if<std::int64_t>(&v);
                    o.*field = i != nullptr ? static_cast<double>(*i) : std::get<double>(v);
                  },
              .text = [field](const Owner& o) { return knob_text::real(o.*field); },
              .parse = [field](Owner& o,
                               std::string_view text) { o.*field = knob_text::parse_real(text); }});
}

template <typename Owner>
Knobs<Owner>& Knobs<Owner>::boolean(std::string path, bool Owner::*field, std::string help) {
  return add(
      {.spec = {std::move(path), KnobType::boolean, {}, std::move(help), {}, {}, {}, {}},
       .get = [field](const Owner& o) { return KnobValue(o.*field); },
       .set = [field](Owner& o, const KnobValue& v) { o.*field = std::get<bool>(v); },
       .text = [field](const Owner& o) { return std::string(o.*field ? "true" : "false"); },
       .parse = [field](Owner& o,
                        std::string_view text) { o.*field = knob_text::parse_boolean(text); }});
}

template <typename Owner>
Knobs<Owner>& Knobs<Owner>::string(std::string path, std::string Owner::*field, std::string help,
                                   std::vector<std::string> choices) {
  const std::vector<std::string> accepted = choices;
  return add(
      {.spec =
           {std::move(path), KnobType::string, {}, std::move(help), {}, {}, std::move(choices), {}},
       .get = [field](const Owner& o) { return KnobValue(o.*field); },
       .set = [field](Owner& o, const KnobValue& v) { o.*field = std::get<std::string>(v); },
       .text = [field](const Owner& o) { return o.*field; },
       .parse =
           [field, accepted](Owner& o, std::string_view text) {
             if (!accepted.empty()) (void)knob_text::parse_choice(text, accepted);
             o.*field = std::string(text);
           }});
}

template <typename Owner>
Knobs<Owner>& Knobs<Owner>::string_list(std::string path, std::vector<std::string> Owner::*field,
                                        std::string help, std::vector<std::string> choices) {
  const std::vector<std::string> accepted = choices;
  return add(
      {.spec = {std::move(path), KnobType::string_list, {}, std::move(help), {}, {},
                std::move(choices), {}},
       .get = [field](const Owner& o) { return KnobValue(o.*field); },
       .set = [field](Owner& o,
                      const KnobValue& v) { o.*field = std::get<std::vector<std::string>>(v); },
       .text = [field](const Owner& o) { return knob_text::join_list(o.*field); },
       .parse =
           [field, accepted](Owner& o, std::string_view text) {
             std::vector<std::string> items = knob_text::split_list(text);
             if (!accepted.empty()) {
               for (const std::string& item : items) (void)knob_text::parse_choice(item, accepted);
             }
             o.*field = std::move(items);
           }});
}

template <typename Owner>
template <typename Enum>
Knobs<Owner>& Knobs<Owner>::choice(std::string path, Enum Owner::*field, std::string help,
                                   std::vector<Enum> values) {
  std::vector<std::string> names;
  for (Enum e : values) names.emplace_back(to_string(e));
  return add(
      {.spec = {std::move(path), KnobType::string, {}, std::move(help), {}, {}, names, {}},
       .get = [field](const Owner& o) { return KnobValue(std::string(to_string(o.*field))); },
       .set =
           [field, values, names](Owner& o, const KnobValue& v) {
             o.*field = values[knob_text::parse_choice(std::get<std::string>(v), names)];
           },
       .text = [field](const Owner& o) { return std::string(to_string(o.*field)); },
       .parse =
           [field, values, names](Owner& o, std::string_view text) {
             o.*field = values[knob_text::parse_choice(text, names)];
           }});
}

template <typename Owner>
Knobs<Owner>& Knobs<Owner>::validate(KnobValidator validator) {
  if (bindings_.empty()) throw std::logic_error("knob validator without a knob");
  bindings_.back().spec.validator = std::move(validator);
  return *this;
}

template <typename Owner>
template <typename Part>
Knobs<Owner>& Knobs<Owner>::nest(const std::string& prefix, Part Owner::*member,
                                 const Knobs<Part>& part) {
  return nest(
      prefix, [member](auto& owner) -> auto& { return owner.*member; }, part);
}

template <typename Owner>
template <typename Part, typename Access>
Knobs<Owner>& Knobs<Owner>::nest(const std::string& prefix, Access access,
                                 const Knobs<Part>& part) {
  for (const KnobBinding<Part>& b : part.bindings()) {
    KnobSpec spec = b.spec;
    spec.path = knobs_detail::join(prefix, spec.path);
    add({.spec = std::move(spec),
         .get = [access, get = b.get](const Owner& o) { return get(access(o)); },
         .set = [access, set = b.set](Owner& o, const KnobValue& v) { set(access(o), v); },
         .text = [access, text = b.text](const Owner& o) { return text(access(o)); },
         .parse = [access, parse = b.parse](Owner& o,
                                            std::string_view t) { parse(access(o), t); }});
  }
  return *this;
}

template <typename Owner>
const KnobBinding<Owner>* Knobs<Owner>::find(std::string_view path) const {
  for (const Binding& b : bindings_) {
    if (b.spec.path == path) return &b;
  }
  return nullptr;
}

template <typename Owner>
const KnobBinding<Owner>& Knobs<Owner>::at(std::string_view path) const {
  const Binding* b = find(path);
  if (b == nullptr) throw std::invalid_argument("unknown key '" + std::string(path) + "'");
  return *b;
}

template <typename Owner>
Knobs<Owner> Knobs<Owner>::section(std::string_view prefix,
                                   const std::vector<std::string>& only) const {
  const std::string lead = prefix.empty() ? std::string() : std::string(prefix) + ".";
  Knobs out;
  auto take = [&](const Binding& b) {
    Binding copy = b;
    copy.spec.path = b.spec.path.substr(lead.size());
    out.add(std::move(copy));
  };
  if (only.empty()) {
    for (const Binding& b : bindings_) {
      if (b.spec.path.compare(0, lead.size(), lead) == 0) take(b);
    }
  } else {
    for (const std::string& path : only) take(at(lead + path));
  }
  return out;
}

template <typename Owner>
std::vector<KnobSpec> Knobs<Owner>::specs(const Owner& defaults) const {
  std::vector<KnobSpec> out;
  for (const Binding& b : bindings_) {
    out.push_back(b.spec);
    out.back().default_value = b.get(defaults);
  }
  return out;
}

template <typename Owner>
KnobValue Knobs<Owner>::get(const Owner& owner, std::string_view path) const {
  return at(path).get(owner);
}

template <typename Owner>
void Knobs<Owner>::set(Owner& owner, std::string_view path, const KnobValue& value) const {
  const Binding& b = at(path);
  if (auto why = check_knob(b.spec, value)) {
    throw std::invalid_argument(std::string(path) + ": " + *why);
  }
  b.set(owner, value);
}

template <typename Owner>
std::optional<std::string> Knobs<Owner>::check(const Owner& owner) const {
  for (const Binding& b : bindings_) {
    if (auto why = check_knob(b.spec, b.get(owner))) return b.spec.path + ": " + *why;
  }
  return std::nullopt;
}

template <typename Owner>
std::map<std::string, std::string> Knobs<Owner>::to_text(const Owner& owner) const {
  std::map<std::string, std::string> out;
  for (const Binding& b : bindings_) out[b.spec.path] = b.text(owner);
  return out;
}

template <typename Owner>
void Knobs<Owner>::set_text(Owner& owner, std::string_view path, std::string_view text) const {
  const Binding& b = at(path);
  try {
    b.parse(owner, text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("key '" + std::string(path) + "': " + e.what());
  }
}

}  // namespace sparserl::datasets
