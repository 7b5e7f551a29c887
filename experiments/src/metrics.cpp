// Writing and reading metrics.jsonl (metrics.hpp).
#include "sparserl/experiments/metrics.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "sparserl/datasets/file_tree.hpp"
#include "sparserl/experiments/json.hpp"
#include "sparserl/experiments/run_info.hpp"

namespace sparserl::experiments {
namespace {

bool reserved(std::string_view name) { return name == "step" || name == "time" || name == "stage"; }

std::string read_all(const std::filesystem::path& file) {
  std::optional<std::string> text = datasets::read_file_bytes(file);
  if (!text) throw MetricsError(file.string() + ": cannot open (" + std::strerror(errno) + ")");
  return std::move(*text);
}

MetricsRecord record_from(const Json& json, const std::string& where) {
  if (!json.is_object())
    throw MetricsError(where + ": expected a JSON object, found " + std::string(kind_name(json)));
  MetricsRecord r;
  const Json* step = find_member(json, "step");
  if (step == nullptr) throw MetricsError(where + ": missing member 'step'");
  try {
    r.step = as_integer(*step);
  } catch (const JsonError& e) {
    throw MetricsError(where + ": member 'step': " + e.what());
  }
  for (const auto& [name, value] : as_object(json)) {
    if (name == "step") continue;
    if (name == "time") {
      if (!value.is_number() && !value.is_null())
        throw MetricsError(where + ": member 'time': expected a number");
      r.time = as_number(value);
    } else if (name == "stage") {
      if (!value.is_string()) throw MetricsError(where + ": member 'stage': expected a string");
      r.stage = as_string(value);
    } else if (value.is_number() || value.is_null()) {
      r.values.emplace_back(name, as_number(value));
    } else if (value.is_boolean()) {
      r.values.emplace_back(name, as_bool(value) ? 1.0 : 0.0);
    }
  }
  return r;
}

}  // namespace

std::optional<double> MetricsRecord::get(std::string_view name) const {
  for (const auto& [n, v] : values) {
    if (n == name) return v;
  }
  return std::nullopt;
}

std::string metrics_line(const MetricsRecord& record) {
  Json line = {{"step", record.step}, {"time", record.time}};
  if (!record.stage.empty()) line["stage"] = record.stage;
  for (const auto& [name, value] : record.values) {
    if (!reserved(name) && !line.contains(name)) line[name] = value;  // the first of a name wins
  }
  return dump_json(line);
}

MetricsWriter::MetricsWriter(std::filesystem::path file) : file_(std::move(file)) {
  fd_ = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw MetricsError(file_.string() + ": cannot open for appending (" + std::strerror(errno) +
                       ")");
}

MetricsWriter::~MetricsWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsWriter::append(const MetricsRecord& record) {
  const std::string line = metrics_line(record) + "\n";
  // One write() per line with O_APPEND: a kill leaves a whole line or a prefix of the last one.
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw MetricsError(file_.string() + ": cannot append (" + std::strerror(errno) + ")");
    }
    done += static_cast<std::size_t>(n);
  }
  ++lines_;
}

void MetricsWriter::append(std::int64_t step, std::string_view stage, const Statistics& values) {
  MetricsRecord r;
  r.step = step;
  r.time =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  r.stage = std::string(stage);
  r.values = values;
  append(r);
}

std::vector<std::string> MetricsLog::names() const {
  std::vector<std::string> out;
  std::set<std::string, std::less<>> seen;
  for (const MetricsRecord& r : records) {
    for (const auto& [name, value] : r.values) {
      if (seen.insert(name).second) out.push_back(name);
    }
  }
  return out;
}

std::vector<std::pair<std::int64_t, double>> MetricsLog::series(std::string_view name,
                                                                std::string_view stage) const {
  std::vector<std::pair<std::int64_t, double>> out;
  for (const MetricsRecord& r : records) {
    if (!stage.empty() && r.stage != stage) continue;
    if (const auto v = r.get(name)) out.emplace_back(r.step, *v);
  }
  return out;
}

const MetricsRecord* MetricsLog::last_with(std::string_view name) const {
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    if (it->get(name)) return &*it;
  }
  return nullptr;
}

MetricsLog read_metrics(const std::filesystem::path& file, bool missing_ok) {
  MetricsLog log;
  std::error_code ec;
  if (missing_ok && !std::filesystem::exists(file, ec)) return log;
  const std::string text = read_all(file);
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    const bool complete = end != std::string::npos;
    if (!complete) end = text.size();
    ++log.lines;
    std::string_view line(text.data() + start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string where = file.string() + ":" + std::to_string(log.lines);
    if (line.find_first_not_of(" \t") != std::string_view::npos) {
      try {
        log.records.push_back(record_from(parse_json(line, file.string(), log.lines), where));
      } catch (const JsonError& e) {
        // Only a last line without its newline can be a write cut short by a kill.
        if (complete) throw MetricsError(e.what());
        log.truncated_last_line = true;
      }
    }
    start = end + 1;
  }
  return log;
}

std::size_t rewind_metrics(const std::filesystem::path& file, std::int64_t step,
                           std::string_view drop_stage) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return 0;
  const std::string text = read_all(file);
  std::string kept;
  std::size_t dropped = 0;
  std::size_t start = 0;
  std::size_t line_no = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    const bool complete = end != std::string::npos;
    if (!complete) end = text.size();
    ++line_no;
    const std::string_view line(text.data() + start, end - start);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) {
      try {
        const MetricsRecord r = record_from(parse_json(line, file.string(), line_no),
                                            file.string() + ":" + std::to_string(line_no));
        if (r.step <= step && (drop_stage.empty() || r.stage != drop_stage)) {
          kept.append(line);
          kept += '\n';
        } else {
          ++dropped;
        }
      } catch (const JsonError& e) {
        if (complete) throw MetricsError(e.what());
        ++dropped;
      }
    }
    start = end + 1;
  }
  try {
    write_file_atomically(file, kept);
  } catch (const std::runtime_error& e) {
    throw MetricsError(e.what());
  }
  return dropped;
}

}  // namespace sparserl::experiments
