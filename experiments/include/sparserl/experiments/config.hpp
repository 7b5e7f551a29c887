// The experiment configuration: one TOML file that fully describes a run. A Schema lists every key
// (dotted path, type, default, range or choices, one line of documentation); Config reads a file with
// toml++, checks it against the schema and fills in every default, so a resolved config names every
// value a run used. Unknown keys, wrong types and out-of-range values are ConfigErrors whose message
// starts with "FILE:LINE:" and names the key path. `--set section.key=value` overrides go through the
// same checks (the message names the override). docs/config.md is rendered from the schema and a
// test keeps the committed page equal to it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "sparserl/datasets/knobs.hpp"

namespace sparserl::experiments {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A key's type, value and declaration are the knobs' (datasets/knobs.hpp): the libraries declare
// their knobs once and the schema lists those declarations beside the experiments' own keys.
using ValueType = datasets::KnobType;
using Value = datasets::KnobValue;
using KeySpec = datasets::KnobSpec;  // path "sandbox.cpu_seconds", type, default, help, range

// A value as TOML spells it: 3, 0.5, true, "csr", ["a", "b"].
std::string to_toml_literal(const Value& value);

struct SectionSpec {
  std::string name;  // "sandbox", "agent.ppo"
  std::string doc;
};

class Schema {
 public:
  Schema& section(std::string name, std::string doc);
  // Adds a key of the most recent section; `name` is relative to it.
  Schema& integer(std::string name, std::int64_t def, std::string doc,
                  std::optional<double> min = std::nullopt, std::optional<double> max = std::nullopt);
  Schema& real(std::string name, double def, std::string doc, std::optional<double> min = std::nullopt,
               std::optional<double> max = std::nullopt);
  Schema& boolean(std::string name, bool def, std::string doc);
  Schema& string(std::string name, std::string def, std::string doc,
                 std::vector<std::string> choices = {});
  Schema& string_list(std::string name, std::vector<std::string> def, std::string doc,
                      std::vector<std::string> choices = {});
  Schema& integer_list(std::string name, std::vector<std::int64_t> def, std::string doc,
                       std::optional<double> min = std::nullopt, std::optional<double> max = std::nullopt);
  Schema& real_list(std::string name, std::vector<double> def, std::string doc,
                    std::optional<double> min = std::nullopt, std::optional<double> max = std::nullopt);
  // Attaches a validator to the most recently added key (its default must pass it).
  Schema& validate(std::function<std::optional<std::string>(const Value&)> validator);
  // Adds knobs a library declares (datasets/knobs.hpp) to the most recent section, their paths
  // relative to it, their defaults, ranges and help as declared.
  Schema& knobs(const std::vector<datasets::KnobSpec>& specs);
  // A section this build lacks (the learned agents' without LibTorch): a key under it is refused
  // saying why.
  Schema& unavailable(std::string section, std::string why);

  [[nodiscard]] const KeySpec* find(std::string_view path) const;
  [[nodiscard]] bool is_section(std::string_view path) const;
  [[nodiscard]] const std::vector<KeySpec>& keys() const { return keys_; }
  [[nodiscard]] const std::vector<SectionSpec>& sections() const { return sections_; }
  [[nodiscard]] const std::vector<std::pair<std::string, std::string>>& unavailable() const {
    return unavailable_;
  }

  // Checks a value against a key's type, range and choices; the error text names what was expected.
  [[nodiscard]] std::optional<std::string> check(const KeySpec& key, const Value& value) const;

  // The Markdown reference (docs/config.md): one table per section.
  [[nodiscard]] std::string render_markdown() const;

 private:
  Schema& add(KeySpec key);
  std::vector<SectionSpec> sections_;
  std::vector<KeySpec> keys_;
  std::vector<std::pair<std::string, std::string>> unavailable_;  // section, why
};

// The schema of every part of the project (schema.cpp).
const Schema& experiment_schema();

class Config {
 public:
  // Every key at its default.
  explicit Config(const Schema& schema = experiment_schema());

  // Reads and checks a TOML file, then applies the overrides ("a.b=value", value in TOML syntax or a
  // bare string) in order.
  static Config load(const std::filesystem::path& file, const std::vector<std::string>& overrides = {},
                     const Schema& schema = experiment_schema());
  // The same from text; `source` names it in messages.
  static Config parse(std::string_view text, const std::string& source,
                      const std::vector<std::string>& overrides = {},
                      const Schema& schema = experiment_schema());

  // Applies one "a.b=value" override; ConfigError names the override on a bad key or value.
  void set(std::string_view assignment);
  void set(const std::string& path, Value value);  // checked like a file's value

  [[nodiscard]] std::int64_t integer(std::string_view path) const;
  [[nodiscard]] double real(std::string_view path) const;
  [[nodiscard]] bool boolean(std::string_view path) const;
  [[nodiscard]] const std::string& string(std::string_view path) const;
  [[nodiscard]] const std::vector<std::string>& string_list(std::string_view path) const;
  [[nodiscard]] const std::vector<std::int64_t>& integer_list(std::string_view path) const;
  [[nodiscard]] const std::vector<double>& real_list(std::string_view path) const;
  [[nodiscard]] const Value& value(std::string_view path) const;
  // Keys whose value was given (file or override) rather than defaulted.
  [[nodiscard]] bool is_set(std::string_view path) const;

  // The resolved config: every key of the schema, by section, as TOML that parses back to an equal
  // Config.
  [[nodiscard]] std::string to_toml() const;
  [[nodiscard]] const Schema& schema() const { return *schema_; }
  [[nodiscard]] const std::string& source() const { return source_; }
  // The file load() read (empty for parse() and the defaults): relative paths of the config
  // resolve against its folder (runner.hpp, resolve_root).
  [[nodiscard]] const std::filesystem::path& file() const { return file_; }

  friend bool operator==(const Config& a, const Config& b) { return a.values_ == b.values_; }

 private:
  const KeySpec& spec(std::string_view path) const;
  const Schema* schema_;
  std::map<std::string, Value, std::less<>> values_;
  std::map<std::string, bool, std::less<>> given_;
  std::string source_;
  std::filesystem::path file_;
};

}  // namespace sparserl::experiments
