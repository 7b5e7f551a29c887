// Selecting a run's matrices from its split and keeping the test part closed (split_tasks.hpp).
#include "sparserl/experiments/split_tasks.hpp"

#include <algorithm>
#include <set>

#include "session.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/env/task_source.hpp"
#include "sparserl/experiments/runner.hpp"

namespace fs = std::filesystem;

namespace sparserl::experiments {
namespace {

std::string join(const std::vector<std::string>& items, const std::string& separator = ", ") {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : separator) + s;
  return out;
}

fs::path split_file(const Config& config, const fs::path& root) {
  const fs::path file = resolve_path(root, config.string("data.split"));
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    throw RunnerError("data.split: " + file.string() +
                      " is not a file (relative paths start at the root " + root.string() + ")");
  }
  return file;
}

// A regime filter needs regimes (version 2); a family must be one of the split's.
void check_selection(const datasets::Split& split, const fs::path& file, const Config& config) {
  if (!config.string_list("data.regimes").empty() &&
      split.version < datasets::Split::kBenchmarkFormatVersion) {
    throw RunnerError("data.regimes: " + file.string() + " is a version-1 split (" + split.name +
                      "): version-1 files have no regimes; use a version-2 benchmark split or "
                      "leave data.regimes empty");
  }
  std::set<std::string> families;
  for (const auto& part : split.entries) {
    for (const datasets::SplitEntry& e : part) families.insert(e.family);
  }
  for (const std::string& family : config.string_list("data.families")) {
    if (families.count(family) != 0) continue;
    std::vector<std::string> known(families.begin(), families.end());
    if (known.size() > 20) {
      known.resize(20);
      known.emplace_back("...");
    }
    throw RunnerError("data.families: '" + family + "' is not a family of split " + split.name +
                      " (" + file.string() + "; its families: " + join(known) + ")");
  }
}

// The given selection keys, for the message refusing them with data.uris.
std::vector<std::string> selection_keys(const Config& config) {
  std::vector<std::string> keys;
  for (const char* key : {"data.regimes", "data.sources", "data.families"}) {
    if (!config.string_list(key).empty()) keys.emplace_back(key);
  }
  return keys;
}

std::string fetch_command(const PartTasks& out, const fs::path& data) {
  return "sparserl data fetch --split " + out.split_file.string() + " --part " + out.part +
         " --data-dir " + data.string();
}

// Drops the catalogue entries the store cannot resolve to a file, and says so in out.note.
void skip_absent(PartTasks& out, std::vector<datasets::SplitEntry>& entries, const Config& config,
                 const fs::path& root) {
  const bool any_catalogue = std::any_of(
      entries.begin(), entries.end(),
      [](const datasets::SplitEntry& e) { return e.source == datasets::MatrixSource::catalogue; });
  if (!any_catalogue) return;
  datasets::StoreOptions options;
  options.indexes = index_dirs(config, root);
  const fs::path data = data_dir(config, root);
  const datasets::MatrixStore store(data, options);
  std::vector<datasets::SplitEntry> present;
  for (datasets::SplitEntry& e : entries) {
    if (e.source == datasets::MatrixSource::catalogue &&
        !store.find(datasets::MatrixUri::parse(e.uri))) {
      ++out.absent;
      continue;
    }
    present.push_back(std::move(e));
  }
  entries = std::move(present);
  if (out.absent == 0) return;
  const std::string what = "data.split " + out.split->name + ", part " + out.part + ": " +
                           std::to_string(out.absent) + " of the " + std::to_string(out.selected) +
                           " selected matrices are catalogue matrices not on this machine";
  if (entries.empty()) {
    throw RunnerError(what + " - all of them, so there is nothing to run. Fetch them: " +
                      fetch_command(out, data));
  }
  out.note = what + ": skipped. Fetch them: " + fetch_command(out, data);
}

void read_split_part(PartTasks& out, const Config& config, const fs::path& root,
                     const env::TaskTemplate& what) {
  out.split_file = split_file(config, root);
  const auto which = datasets::parse_split_part(out.part);
  try {
    out.split = datasets::read_split(out.split_file);
  } catch (const std::exception& e) {
    throw RunnerError("data.split (part " + out.part + "): " + e.what());
  }
  check_selection(*out.split, out.split_file, config);
  if (out.split->part_entries(*which).empty()) {
    throw RunnerError("data.split (part " + out.part + "): split " + out.split_file.string() +
                      " has no " + out.part + " matrices");
  }
  std::vector<datasets::SplitEntry> entries = out.split->select(*which, out.selection);
  out.selected = entries.size();
  if (entries.empty()) {
    throw RunnerError("data.regimes / data.sources / data.families: no matrix of " +
                      out.split->name + " " + out.part + " is of the selection (" +
                      out.selection.describe() + ")");
  }
  skip_absent(out, entries, config, root);
  std::vector<std::string> uris;
  for (const datasets::SplitEntry& e : entries) uris.push_back(e.uri);
  try {
    out.tasks = env::TaskSource::from_uris(uris, what, env::TaskOrder::sequential).tasks();
  } catch (const std::exception& e) {
    throw RunnerError("data.split (part " + out.part + "): " + e.what());
  }
  for (datasets::SplitEntry& e : entries) out.entries.emplace_back(std::move(e));
}

void read_uris(PartTasks& out, const Config& config, const env::TaskTemplate& what) {
  if (const auto keys = selection_keys(config); !keys.empty()) {
    throw RunnerError(join(keys) +
                      ": a selection takes matrices of data.split by their tags; data.split is "
                      "empty, so name the matrices in data.uris directly");
  }
  const auto& uris = config.string_list("data.uris");
  if (uris.empty()) {
    throw RunnerError("data.split and data.uris are both empty: name the matrices to use");
  }
  try {
    out.tasks = env::TaskSource::from_uris(uris, what, env::TaskOrder::sequential).tasks();
  } catch (const std::exception& e) {
    throw RunnerError(std::string("data.uris: ") + e.what());
  }
  out.selected = out.tasks.size();
  out.entries.resize(out.tasks.size());
}

// "gen-v1/KIND?..." without its seed= parameter; nullopt for other URIs.
std::optional<std::string> without_seed(std::string_view uri) {
  try {
    datasets::MatrixUri u = datasets::MatrixUri::parse(uri);
    if (u.scheme != datasets::MatrixUri::Scheme::generated) return std::nullopt;
    u.params.erase("seed");
    return u.str();
  } catch (const datasets::InvalidUri&) {
    return std::nullopt;
  }
}

std::string canonical(std::string_view uri) {
  try {
    return datasets::MatrixUri::parse(uri).str();
  } catch (const datasets::InvalidUri&) {
    return std::string(uri);
  }
}

}  // namespace

const datasets::SplitEntry* PartTasks::entry(std::string_view uri) const {
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].uri == uri && entries[i]) return &*entries[i];
  }
  return nullptr;
}

datasets::SplitSelection split_selection(const Config& config) {
  datasets::SplitSelection s;
  for (const std::string& r : config.string_list("data.regimes")) {
    s.regimes.push_back(*datasets::parse_regime(r));
  }
  for (const std::string& source : config.string_list("data.sources")) {
    s.sources.push_back(*datasets::parse_matrix_source(source));
  }
  s.families = config.string_list("data.families");
  return s;
}

PartTasks part_tasks(const Config& config, const fs::path& root, std::string_view part,
                     std::int64_t max_tasks) {
  PartTasks out;
  out.part = std::string(part);
  out.selection = split_selection(config);
  const env::TaskTemplate what = task_template(config);
  if (config.string("data.split").empty()) {
    read_uris(out, config, what);
  } else {
    read_split_part(out, config, root, what);
  }
  if (max_tasks > 0 && static_cast<std::int64_t>(out.tasks.size()) > max_tasks) {
    out.tasks.resize(static_cast<std::size_t>(max_tasks));
    out.entries.resize(static_cast<std::size_t>(max_tasks));
  }
  return out;
}

std::vector<datasets::Task> config_tasks(const Config& config, const fs::path& root,
                                         std::string_view part, std::int64_t max_tasks) {
  return part_tasks(config, root, part, max_tasks).tasks;
}

TestParts TestParts::of(const Config& config, const fs::path& root) {
  std::vector<fs::path> files;
  if (!config.string("data.split").empty()) files.push_back(split_file(config, root));
  const fs::path folder = root / "datasets" / "splits";
  std::error_code ec;
  if (fs::is_directory(folder, ec)) {
    std::vector<fs::path> found;
    for (const fs::directory_entry& e : fs::directory_iterator(folder, ec)) {
      if (e.path().extension() == ".split" && e.is_regular_file()) found.push_back(e.path());
    }
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  TestParts out;
  for (const fs::path& file : files) {
    datasets::Split split;
    try {
      split = datasets::read_split(file);
    } catch (const std::exception& e) {
      throw RunnerError(std::string("the test parts of the project's splits: ") + e.what());
    }
    const std::string name = split.name + " (" + file.lexically_normal().string() + ")";
    for (const datasets::SplitEntry& e : split.part_entries(datasets::SplitPart::test)) {
      out.uris_.emplace(e.uri, name);
      if (const auto key = without_seed(e.uri))
        out.generated_.emplace(*key, std::pair{e.uri, name});
    }
  }
  return out;
}

std::optional<std::string> TestParts::split_of(std::string_view uri) const {
  const auto it = uris_.find(canonical(uri));
  if (it == uris_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::pair<std::string, std::string>> TestParts::generated_match(
    std::string_view uri) const {
  const auto key = without_seed(uri);
  if (!key) return std::nullopt;
  const auto it = generated_.find(*key);
  if (it == generated_.end()) return std::nullopt;
  return it->second;
}

void check_test_part(std::string_view key, std::string_view part, bool explicit_test,
                     std::string_view command) {
  if (part != "test" || explicit_test) return;
  throw RunnerError(std::string(key) +
                    " = \"test\": the test part is read only when the command line says so - `" +
                    std::string(command) +
                    " CONFIG --part test`; a config file or --set cannot ask for it");
}

void check_test_matrices(PartTasks& tasks, const Config& config, const fs::path& root,
                         bool explicit_test, std::string_view command) {
  if (tasks.split) {
    tasks.test_matrices = tasks.part == "test" ? tasks.tasks.size() : 0;
    if (tasks.test_matrices > 0) tasks.test_split = tasks.split->name;
    return;
  }
  const TestParts test = TestParts::of(config, root);
  tasks.test_matrices = 0;
  for (const datasets::Task& t : tasks.tasks) {
    const auto split = test.split_of(t.uri);
    if (!split) continue;
    if (!explicit_test) {
      throw RunnerError("data.uris: " + t.uri + " is a test matrix of split " + *split +
                        ": the test part is read only when the command line says so - `" +
                        std::string(command) + " CONFIG --part test`");
    }
    if (tasks.test_matrices++ == 0) tasks.test_split = split->substr(0, split->find(' '));
  }
}

void check_training_data(const Config& config, const fs::path& root) {
  if (!config.string("data.split").empty() && config.string("data.part") == "test") {
    throw RunnerError("data.part = \"test\": training never reads the test part of " +
                      split_file(config, root).string() +
                      " (only `sparserl bench` and `sparserl eval` with --part test on the "
                      "command line do)");
  }
  const TestParts test = TestParts::of(config, root);
  const auto& uris = config.string_list("data.uris");
  for (std::size_t i = 0; i < uris.size(); ++i) {
    if (const auto split = test.split_of(uris[i])) {
      throw RunnerError("data.uris[" + std::to_string(i) + "]: " + canonical(uris[i]) +
                        " is a test matrix of split " + *split +
                        ": training never reads test matrices");
    }
  }
  const auto& generators = config.string_list("data.generators");
  for (std::size_t i = 0; i < generators.size(); ++i) {
    if (const auto match = test.generated_match(generators[i])) {
      throw RunnerError("data.generators[" + std::to_string(i) + "]: '" + generators[i] +
                        "' generates the test matrix " + match->first + " of split " +
                        match->second +
                        " (seed= aside): training never reads test matrices; change a parameter");
    }
  }
}

void tag_results(std::vector<MatrixResult>& rows, const PartTasks& tasks) {
  std::map<std::string, const datasets::SplitEntry*> by_uri;
  for (const auto& e : tasks.entries) {
    if (e) by_uri.emplace(e->uri, &*e);
  }
  for (MatrixResult& r : rows) {
    const auto it = by_uri.find(r.matrix);
    if (it != by_uri.end()) {
      const datasets::SplitEntry& e = *it->second;
      r.regime =
          std::string(datasets::to_string(e.regime ? *e.regime : datasets::regime_of(r.nnz)));
      r.family = e.family;
      continue;
    }
    r.regime = std::string(datasets::to_string(datasets::regime_of(r.nnz)));
    try {
      const datasets::MatrixUri uri = datasets::MatrixUri::parse(r.matrix);
      switch (uri.scheme) {
        case datasets::MatrixUri::Scheme::suitesparse:
          r.family = uri.group;
          break;
        case datasets::MatrixUri::Scheme::generated:
          r.family = uri.kind;
          break;
        case datasets::MatrixUri::Scheme::file:
          r.family = "file";
          break;
      }
    } catch (const datasets::InvalidUri&) {
      r.family.clear();
    }
  }
}

SplitRecord split_record(const PartTasks& tasks) {
  SplitRecord r;
  if (tasks.split) {
    r.name = tasks.split->name;
    r.file = tasks.split_file.string();
    r.digest = tasks.split->digest();
  }
  r.test_split = tasks.test_split;
  r.part = tasks.part;
  r.selection = tasks.selection.describe();
  r.test_matrices = static_cast<std::int64_t>(tasks.test_matrices);
  r.test_touched = tasks.test_matrices > 0;
  r.matrices = static_cast<std::int64_t>(tasks.tasks.size());
  r.absent = static_cast<std::int64_t>(tasks.absent);
  return r;
}

std::string test_part_line(const SplitRecord& record) {
  if (!record.test_touched) return "Test part: not touched";
  const std::string& split = !record.test_split.empty() ? record.test_split : record.name;
  return "Test part: " + std::to_string(record.test_matrices) + " matrices of " + split +
         " test read (--part test)";
}

}  // namespace sparserl::experiments
