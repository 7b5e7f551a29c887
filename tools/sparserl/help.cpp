// The help layout declared in help.hpp. It reads only what CLI11 2.1 and 2.4 both expose about an
// App and its Options (names, type name, description, default, required, expected count, excludes).
#include "help.hpp"

#include <algorithm>
#include <set>
#include <sstream>
#include <vector>

namespace sparserl::tools {
namespace {

constexpr std::size_t kWidth = 100;
// A container option expects up to 2^29 values (CLI11's expected_max_vector_size); an option
// expecting a fixed few (--compare A B) is not repeatable.
constexpr int kMany = 1 << 20;

bool repeatable(const CLI::Option* o) { return o->get_items_expected_max() >= kMany; }
bool takes_value(const CLI::Option* o) { return o->get_expected_max() != 0; }  // not a flag

// The type name without what validators append after ':' ("N", not "N:INT in [1 - 10]").
std::string placeholder(const CLI::Option* o) {
  const std::string type = o->get_type_name();
  return type.substr(0, type.find(':'));
}

// What validators append to the type name: the accepted values of a checked option, without the
// type a range names ("in [1 - 10]", not "INT in [1 - 10]").
std::string accepted(const CLI::Option* o) {
  const std::string type = o->get_type_name();
  const std::size_t colon = type.find(':');
  if (colon == std::string::npos) return {};
  std::string text = type.substr(colon + 1);
  const std::size_t in = text.find(" in [");
  if (in != std::string::npos && text.find(' ') == in) text.erase(0, in + 1);
  return text;
}

// An argument as a usage line spells it: "--out DIR", "--json", "CONFIG", "RUN_DIR...".
std::string word(const CLI::Option* o) {
  if (!o->nonpositional()) return o->get_name(true) + (repeatable(o) ? "..." : "");
  std::string w = "--" + o->get_lnames().front();
  if (takes_value(o)) w += " " + placeholder(o);
  return w;
}

// Positionals first, then the options, each in the order declared; --help left out.
std::vector<const CLI::Option*> arguments(const CLI::App& app) {
  std::vector<const CLI::Option*> out =
      app.get_options([](const CLI::Option* o) { return !o->nonpositional(); });
  for (const CLI::Option* o : app.get_options()) {
    if (o->nonpositional() && o != app.get_help_ptr()) out.push_back(o);
  }
  return out;
}

std::vector<const CLI::App*> subcommands_of(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App*) { return true; });
}

// `words` appended to `out`, whose last line ends at `column`, wrapped at kWidth with continuation
// lines indented by `indent`; `at_start` when nothing stands on that line yet.
std::string wrap_words(std::string out, std::size_t column, bool at_start,
                       const std::vector<std::string>& words, std::size_t indent) {
  for (const std::string& w : words) {
    if (!at_start && column + 1 + w.size() > kWidth) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
      at_start = true;
    }
    if (!at_start) {
      out += ' ';
      ++column;
    }
    out += w;
    column += w.size();
    at_start = false;
  }
  return out;
}

// `text` from column `indent` on, wrapped at kWidth; a newline in it starts a new line.
std::string wrap_text(const std::string& text, std::size_t indent) {
  std::string out;
  std::istringstream lines(text);
  bool first = true;
  for (std::string line; std::getline(lines, line); first = false) {
    std::vector<std::string> words;
    std::istringstream in(line);
    for (std::string w; in >> w;) words.push_back(w);
    if (!first) out += "\n" + std::string(indent, ' ');
    out = wrap_words(std::move(out), indent, true, words, indent);
  }
  return out;
}

// The left column of the argument and option list: "-h, --help", "--out DIR", "CONFIG", indented.
std::string left_column(const CLI::Option* o) {
  if (!o->nonpositional()) return "  " + word(o);
  std::string names;
  for (const std::string& s : o->get_snames()) names += (names.empty() ? "-" : ", -") + s;
  for (const std::string& l : o->get_lnames()) names += (names.empty() ? "--" : ", --") + l;
  return "  " + names + (takes_value(o) ? " " + placeholder(o) : "");
}

// One line (or more) of the argument and option list, the help starting at `column`: the left
// column, the description, then its default, accepted values and whether it is required.
std::string entry(const CLI::Option* o, std::size_t column) {
  const std::string left = left_column(o);
  std::string text = o->get_description();
  std::vector<std::string> notes;
  // The default taken from the bound variable, unless the help says it in words (default: the
  // checkpoint's) or there is none to speak of (a required option, an empty list: [] in CLI11
  // 2.1, {} in 2.4).
  const std::string fallback = o->get_default_str();
  if (takes_value(o) && !o->get_required() && !fallback.empty() && fallback != "[]" &&
      fallback != "{}" && text.find("default") == std::string::npos) {
    notes.push_back("default " + fallback);
  }
  if (!accepted(o).empty()) notes.push_back(accepted(o));
  if (o->get_required()) notes.emplace_back("required");
  if (!notes.empty()) {
    std::string joined;
    for (const std::string& n : notes) joined += (joined.empty() ? "" : "; ") + n;
    text += (text.empty() ? "(" : " (") + joined + ")";
  }
  if (left.size() + 2 > column) {
    return left + "\n" + std::string(column, ' ') + wrap_text(text, column);
  }
  return left + std::string(column - left.size(), ' ') + wrap_text(text, column);
}

std::string indented(const std::string& text, std::size_t indent) {
  std::string out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    out += (line.empty() ? "" : std::string(indent, ' ') + line) + "\n";
  }
  return out;
}

std::string with_newline(std::string text) {
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text;
}

// The usage line of `app` called `name` ("sparserl compare RUN_DIR... [--out DIR] ..."), for a line
// where `name` starts at `column`: wrapped at kWidth, continuation lines aligned after the name.
std::string synopsis(const CLI::App& app, const std::string& name, std::size_t column) {
  const std::vector<const CLI::Option*> args = arguments(app);
  std::set<const CLI::Option*> done;
  std::vector<std::string> words;
  for (const CLI::Option* o : args) {
    if (!done.insert(o).second) continue;
    const bool option = o->nonpositional();
    std::string w = word(o);
    if (o->get_required()) {
      words.push_back(w + (option && repeatable(o) ? "..." : ""));
      continue;
    }
    // Two optional arguments that exclude each other read [A | B].
    const std::set<CLI::Option*> excluded = o->get_excludes();
    if (excluded.size() == 1) {
      const CLI::Option* other = *excluded.begin();
      if (!other->get_required() && done.count(other) == 0 &&
          std::find(args.begin(), args.end(), other) != args.end()) {
        done.insert(other);
        words.push_back("[" + w + " | " + word(other) +
                        (other->nonpositional() && repeatable(other) ? "..." : "") + "]");
        continue;
      }
    }
    words.push_back("[" + w + "]" + (option && repeatable(o) ? "..." : ""));
  }
  if (!subcommands_of(app).empty()) {
    words.emplace_back(app.get_require_subcommand_min() > 0 ? "SUBCOMMAND [ARGS...]"
                                                            : "[SUBCOMMAND [ARGS...]]");
  }
  return wrap_words(name, column + name.size(), false, words, column + name.size() + 1);
}

}  // namespace

std::string HelpLayout::make_help(const CLI::App* app, std::string name,
                                  CLI::AppFormatMode /*mode*/) const {
  std::ostringstream out;
  out << "usage: " << synopsis(*app, name, 7) << "\n";
  if (!app->get_description().empty()) out << "\n" << with_newline(app->get_description());

  const std::vector<const CLI::App*> subcommands = subcommands_of(*app);
  std::vector<const CLI::Option*> positionals, options;
  for (const CLI::Option* o : arguments(*app)) {
    if (!o->nonpositional()) {
      if (!o->get_description().empty()) positionals.push_back(o);
    } else {
      options.push_back(o);
    }
  }
  // A group's only option is --help; a command lists it last.
  if (subcommands.empty() && app->get_help_ptr() != nullptr) options.push_back(app->get_help_ptr());
  // The help column: after the widest left column, but no further than column
  // 26 (a longer one puts its help on the next line).
  std::size_t column = 0;
  for (const auto* list : {&positionals, &options}) {
    for (const CLI::Option* o : *list) column = std::max(column, left_column(o).size() + 2);
  }
  column = std::min<std::size_t>(column, 26);
  if (!positionals.empty()) {
    out << "\narguments:\n";
    for (const CLI::Option* o : positionals) out << entry(o, column) << "\n";
  }
  if (!options.empty()) {
    out << "\noptions:\n";
    for (const CLI::Option* o : options) out << entry(o, column) << "\n";
  }
  if (!subcommands.empty()) {
    out << "\nsubcommands:\n";
    for (const CLI::App* sub : subcommands) {
      out << "  " << synopsis(*sub, sub->get_name(), 2) << "\n"
          << indented(sub->get_description(), 6);
    }
    out << "\n`" << name << " SUBCOMMAND --help` describes a subcommand and its options.\n";
  }
  if (!app->get_footer().empty()) out << "\n" << with_newline(app->get_footer());
  return out.str();
}

}  // namespace sparserl::tools
