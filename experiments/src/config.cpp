// Schema checks, TOML reading with toml++, overrides and the resolved TOML (config.hpp).
#include "sparserl/experiments/config.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <toml++/toml.h>

namespace sparserl::experiments {
namespace {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string_view last_component(std::string_view path) {
  const auto dot = path.rfind('.');
  return dot == std::string_view::npos ? path : path.substr(dot + 1);
}

// The closest key: by edit distance of the whole path, or of the last component (a key placed in
// the wrong section).
std::string suggestion(const Schema& schema, std::string_view path) {
  for (const auto& [section, why] : schema.unavailable()) {
    const bool under = path.size() > section.size() && path[section.size()] == '.' &&
                       path.substr(0, section.size()) == section;
    if (path == section || under) return " (" + why + ")";
  }
  std::string best;
  std::size_t best_d = 4;
  for (const KeySpec& k : schema.keys()) {
    const std::size_t d = std::min(edit_distance(k.path, path),
                                   edit_distance(last_component(k.path), last_component(path)) + 1);
    if (d < best_d) {
      best_d = d;
      best = k.path;
    }
  }
  return best.empty() ? std::string() : " (did you mean '" + best + "'?)";
}

std::string where(const std::string& source, const toml::node& node) {
  const auto& region = node.source();
  return source + ":" + std::to_string(region.begin.line) + ": ";
}

std::string toml_type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    default: return "a date or time";
  }
}

// Converts a TOML node to the key's type; nullopt with `why` on a type mismatch.
std::optional<Value> convert(const KeySpec& key, const toml::node& node, std::string& why) {
  auto element = [&](const toml::node& n, ValueType t) -> std::optional<Value> {
    if (t == ValueType::integer && n.is_integer()) return Value(*n.value<std::int64_t>());
    if (t == ValueType::real && (n.is_floating_point() || n.is_integer())) return Value(*n.value<double>());
    if (t == ValueType::boolean && n.is_boolean()) return Value(*n.value<bool>());
    if (t == ValueType::string && n.is_string()) return Value(*n.value<std::string>());
    return std::nullopt;
  };
  auto list = [&](ValueType elem, auto tag) -> std::optional<Value> {
    using T = decltype(tag);
    const toml::array* arr = node.as_array();
    if (arr == nullptr) return std::nullopt;
    std::vector<T> out;
    for (const toml::node& n : *arr) {
      auto v = element(n, elem);
      if (!v) {
        why = "an element is " + toml_type_name(n) + ", expected " + std::string(to_string(elem)) + "s";
        return std::nullopt;
      }
      out.push_back(std::get<T>(*v));
    }
    return Value(std::move(out));
  };
  std::optional<Value> out;
  switch (key.type) {
    case ValueType::integer:
    case ValueType::real:
    case ValueType::boolean:
    case ValueType::string: out = element(node, key.type); break;
    case ValueType::string_list: out = list(ValueType::string, std::string()); break;
    case ValueType::integer_list: out = list(ValueType::integer, std::int64_t()); break;
    case ValueType::real_list: out = list(ValueType::real, double()); break;
  }
  if (!out && why.empty()) {
    why = "expected " + std::string(to_string(key.type)) + ", got " + toml_type_name(node);
  }
  return out;
}

// True when `path` is a key of `section` itself (not of a subsection).
bool directly_under(const std::string& path, const std::string& section) {
  return path.size() > section.size() && path.compare(0, section.size(), section) == 0 &&
         path[section.size()] == '.' && path.find('.', section.size() + 1) == std::string::npos;
}

}  // namespace

std::string to_toml_literal(const Value& value) {
  struct Visitor {
    std::string operator()(std::int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return datasets::format_real(v); }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::string& v) const { return quote(v); }
    std::string operator()(const std::vector<std::string>& v) const {
      std::string out = "[";
      for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + quote(v[i]);
      return out + "]";
    }
    std::string operator()(const std::vector<std::int64_t>& v) const {
      std::string out = "[";
      for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
      return out + "]";
    }
    std::string operator()(const std::vector<double>& v) const {
      std::string out = "[";
      for (std::size_t i = 0; i < v.size(); ++i) {
        out += (i ? ", " : "") + datasets::format_real(v[i]);
      }
      return out + "]";
    }
  };
  return std::visit(Visitor{}, value);
}

// ---------------------------------------------------------------------------------------------------
// Schema

Schema& Schema::section(std::string name, std::string doc) {
  sections_.push_back({std::move(name), std::move(doc)});
  return *this;
}

Schema& Schema::add(KeySpec key) {
  if (sections_.empty()) throw std::logic_error("schema key '" + key.path + "' outside a section");
  key.path = sections_.back().name + "." + key.path;
  if (find(key.path) != nullptr) throw std::logic_error("schema key '" + key.path + "' defined twice");
  if (auto bad = check(key, key.default_value)) {
    throw std::logic_error("schema default of '" + key.path + "': " + *bad);
  }
  keys_.push_back(std::move(key));
  return *this;
}

Schema& Schema::integer(std::string name, std::int64_t def, std::string doc, std::optional<double> min,
                        std::optional<double> max) {
  return add({std::move(name), ValueType::integer, def, std::move(doc), min, max, {}, {}});
}
Schema& Schema::real(std::string name, double def, std::string doc, std::optional<double> min,
                     std::optional<double> max) {
  return add({std::move(name), ValueType::real, def, std::move(doc), min, max, {}, {}});
}
Schema& Schema::boolean(std::string name, bool def, std::string doc) {
  return add({std::move(name), ValueType::boolean, def, std::move(doc), {}, {}, {}, {}});
}
Schema& Schema::string(std::string name, std::string def, std::string doc, std::vector<std::string> choices) {
  return add({std::move(name), ValueType::string, std::move(def), std::move(doc), {}, {}, std::move(choices), {}});
}
Schema& Schema::string_list(std::string name, std::vector<std::string> def, std::string doc,
                            std::vector<std::string> choices) {
  return add({std::move(name), ValueType::string_list, std::move(def), std::move(doc), {}, {},
              std::move(choices), {}});
}
Schema& Schema::integer_list(std::string name, std::vector<std::int64_t> def, std::string doc,
                             std::optional<double> min, std::optional<double> max) {
  return add({std::move(name), ValueType::integer_list, std::move(def), std::move(doc), min, max, {}, {}});
}
Schema& Schema::real_list(std::string name, std::vector<double> def, std::string doc, std::optional<double> min,
                          std::optional<double> max) {
  return add({std::move(name), ValueType::real_list, std::move(def), std::move(doc), min, max, {}, {}});
}

Schema& Schema::validate(std::function<std::optional<std::string>(const Value&)> validator) {
  if (keys_.empty()) throw std::logic_error("schema validator without a key");
  KeySpec& key = keys_.back();
  key.validator = std::move(validator);
  if (auto bad = check(key, key.default_value)) {
    throw std::logic_error("schema default of '" + key.path + "': " + *bad);
  }
  return *this;
}

Schema& Schema::unavailable(std::string section, std::string why) {
  unavailable_.emplace_back(std::move(section), std::move(why));
  return *this;
}

Schema& Schema::knobs(const std::vector<datasets::KnobSpec>& specs) {
  for (const datasets::KnobSpec& spec : specs) add(spec);
  return *this;
}

const KeySpec* Schema::find(std::string_view path) const {
  for (const KeySpec& k : keys_) {
    if (k.path == path) return &k;
  }
  return nullptr;
}

bool Schema::is_section(std::string_view path) const {
  return std::any_of(sections_.begin(), sections_.end(), [&](const SectionSpec& s) {
    return s.name == path || (s.name.size() > path.size() && s.name.compare(0, path.size(), path) == 0 &&
                              s.name[path.size()] == '.');
  });
}

std::optional<std::string> Schema::check(const KeySpec& key, const Value& value) const {
  return datasets::check_knob(key, value);
}

std::string Schema::render_markdown() const {
  std::ostringstream out;
  out << "# Configuration reference\n\n"
      << "Generated by `sparserl config --markdown` from the schema in\n"
      << "experiments/src/schema.cpp, which lists the knobs each library declares beside its\n"
      << "struct (datasets/knobs.hpp: the env's, the agents', each learning algorithm's in the\n"
      << "algorithm's own file) and the runner's own keys; a test keeps this page equal to it.\n"
      << "Every key has the default shown; a config file sets only what it changes. Unknown\n"
      << "keys, wrong types and out-of-range values are errors that name the key path and the\n"
      << "file line. Override any key on the command line with `--set section.key=value`.\n";
  for (const SectionSpec& s : sections_) {
    out << "\n## [" << s.name << "]\n\n" << s.doc << "\n\n| key | type | default | allowed | meaning |\n"
        << "|---|---|---|---|---|\n";
    for (const KeySpec& k : keys_) {
      if (!directly_under(k.path, s.name)) continue;
      std::string allowed;
      if (!k.choices.empty()) {
        for (std::size_t i = 0; i < k.choices.size(); ++i) allowed += (i ? ", " : "") + k.choices[i];
      } else if (k.min || k.max) {
        allowed = (k.min ? datasets::format_real(*k.min) : std::string("-inf")) + " .. " +
                  (k.max ? datasets::format_real(*k.max) : std::string("inf"));
        if (k.type == ValueType::integer || k.type == ValueType::integer_list) {
          allowed = (k.min ? std::to_string(static_cast<long long>(*k.min)) : std::string("-inf")) + " .. " +
                    (k.max ? std::to_string(static_cast<long long>(*k.max)) : std::string("inf"));
        }
      }
      out << "| `" << k.path.substr(s.name.size() + 1) << "` | " << to_string(k.type) << " | `"
          << to_toml_literal(k.default_value) << "` | " << allowed << " | " << k.help << " |\n";
    }
  }
  return out.str();
}

// ---------------------------------------------------------------------------------------------------
// Config

Config::Config(const Schema& schema) : schema_(&schema) {
  for (const KeySpec& k : schema.keys()) values_.emplace(k.path, k.default_value);
}

const KeySpec& Config::spec(std::string_view path) const {
  const KeySpec* k = schema_->find(path);
  if (k == nullptr) throw ConfigError("unknown config key '" + std::string(path) + "'");
  return *k;
}

Config Config::load(const std::filesystem::path& file, const std::vector<std::string>& overrides,
                    const Schema& schema) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(file.string() + ": cannot read the config file");
  std::ostringstream text;
  text << in.rdbuf();
  Config config = parse(text.str(), file.string(), overrides, schema);
  config.file_ = file;
  return config;
}

Config Config::parse(std::string_view text, const std::string& source, const std::vector<std::string>& overrides,
                     const Schema& schema) {
  Config config(schema);
  config.source_ = std::string(text);
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    throw ConfigError(source + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description()));
  }
  // Walks tables; every leaf must be a schema key, every table a schema section (or a prefix of one).
  auto walk = [&](auto&& self, const toml::table& table, const std::string& prefix) -> void {
    for (const auto& [key, node] : table) {
      const std::string path = prefix.empty() ? std::string(key.str()) : prefix + "." + std::string(key.str());
      const KeySpec* spec = schema.find(path);
      if (spec == nullptr) {
        if (const toml::table* sub = node.as_table(); sub != nullptr && schema.is_section(path)) {
          self(self, *sub, path);
          continue;
        }
        const char* what = node.is_table() ? "unknown section" : "unknown key";
        throw ConfigError(where(source, node) + what + " '" + path + "'" + suggestion(schema, path));
      }
      std::string why;
      std::optional<Value> value = convert(*spec, node, why);
      if (!value) throw ConfigError(where(source, node) + "key '" + path + "': " + why);
      if (spec->type == ValueType::real && std::holds_alternative<std::int64_t>(*value)) {
        value = static_cast<double>(std::get<std::int64_t>(*value));
      }
      if (auto bad = schema.check(*spec, *value)) {
        throw ConfigError(where(source, node) + "key '" + path + "': " + *bad);
      }
      config.values_[path] = std::move(*value);
      config.given_[path] = true;
    }
  };
  walk(walk, root, "");
  for (const std::string& o : overrides) config.set(o);
  return config;
}

void Config::set(std::string_view assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    throw ConfigError("override '" + std::string(assignment) + "': expected section.key=value");
  }
  std::string path(assignment.substr(0, eq));
  while (!path.empty() && path.back() == ' ') path.pop_back();
  std::string raw(assignment.substr(eq + 1));
  while (!raw.empty() && raw.front() == ' ') raw.erase(raw.begin());
  const KeySpec* spec = schema_->find(path);
  if (spec == nullptr) {
    throw ConfigError("override '" + std::string(assignment) + "': unknown key '" + path + "'" +
                      suggestion(*schema_, path));
  }
  std::optional<Value> value;
  std::string why;
  try {
    toml::table t = toml::parse("v = " + raw);
    value = convert(*spec, *t.get("v"), why);
  } catch (const toml::parse_error&) {
    why = "'" + raw + "' is not a valid " + std::string(to_string(spec->type));
  }
  if (!value && spec->type == ValueType::string) value = raw;  // a bare word is a string
  if (!value) throw ConfigError("override '" + std::string(assignment) + "': " + why);
  if (spec->type == ValueType::real && std::holds_alternative<std::int64_t>(*value)) {
    value = static_cast<double>(std::get<std::int64_t>(*value));
  }
  if (auto bad = schema_->check(*spec, *value)) {
    throw ConfigError("override '" + std::string(assignment) + "': " + *bad);
  }
  values_[path] = std::move(*value);
  given_[path] = true;
}

void Config::set(const std::string& path, Value value) {
  const KeySpec& k = spec(path);
  if (k.type == ValueType::real && std::holds_alternative<std::int64_t>(value)) {
    value = static_cast<double>(std::get<std::int64_t>(value));
  }
  if (auto bad = schema_->check(k, value)) throw ConfigError("key '" + path + "': " + *bad);
  values_[path] = std::move(value);
  given_[path] = true;
}

const Value& Config::value(std::string_view path) const {
  spec(path);
  return values_.find(path)->second;
}

bool Config::is_set(std::string_view path) const { return given_.find(path) != given_.end(); }

std::int64_t Config::integer(std::string_view path) const { return std::get<std::int64_t>(value(path)); }
double Config::real(std::string_view path) const { return std::get<double>(value(path)); }
bool Config::boolean(std::string_view path) const { return std::get<bool>(value(path)); }
const std::string& Config::string(std::string_view path) const { return std::get<std::string>(value(path)); }
const std::vector<std::string>& Config::string_list(std::string_view path) const {
  return std::get<std::vector<std::string>>(value(path));
}
const std::vector<std::int64_t>& Config::integer_list(std::string_view path) const {
  return std::get<std::vector<std::int64_t>>(value(path));
}
const std::vector<double>& Config::real_list(std::string_view path) const {
  return std::get<std::vector<double>>(value(path));
}

std::string Config::to_toml() const {
  std::ostringstream out;
  out << "# Resolved configuration: every key of the schema with the value this run used.\n";
  for (const SectionSpec& s : schema_->sections()) {
    out << "\n[" << s.name << "]\n";
    for (const KeySpec& k : schema_->keys()) {
      if (!directly_under(k.path, s.name)) continue;
      out << k.path.substr(s.name.size() + 1) << " = " << to_toml_literal(values_.find(k.path)->second)
          << "\n";
    }
  }
  return out.str();
}

}  // namespace sparserl::experiments
