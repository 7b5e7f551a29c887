// compare_policies(): two policies of a trajectory file, task by task (policy_comparison.hpp).
#include "sparserl/experiments/policy_comparison.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "sparserl/env/trajectory.hpp"

namespace sparserl::experiments {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

PolicyAnswer answer_of(const env::Episode& e) {
  PolicyAnswer a;
  a.source = e.source;
  a.speedup = kNaN;
  if (!e.eval) {
    a.outcome = "truncated";
    return a;
  }
  a.program = e.eval->program_digest;
  a.correct = e.eval->correct;
  if (e.eval->correct && e.eval->timed && e.eval->timing.speedup > 0)
    a.speedup = e.eval->timing.speedup;
  a.outcome = e.eval->correct ? "correct" : std::string(reward::to_string(e.eval->error));
  if (a.outcome == "none") a.outcome = "not tested";  // compiled, no GPU stages
  return a;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string speedup_cell(const PolicyAnswer& a) {
  if (!std::isfinite(a.speedup)) return a.outcome;
  std::ostringstream s;
  s << std::fixed << std::setprecision(3) << a.speedup;
  return s.str();
}

double fallback(const PolicyAnswer& a) { return std::isfinite(a.speedup) ? a.speedup : 1.0; }

}  // namespace

std::string line_diff(const std::string& before, const std::string& after) {
  const std::vector<std::string> x = lines_of(before), y = lines_of(after);
  // lcs[i][j]: the longest common subsequence of x[i..] and y[j..].
  std::vector<std::vector<std::size_t>> lcs(x.size() + 1, std::vector<std::size_t>(y.size() + 1));
  for (std::size_t i = x.size(); i-- > 0;) {
    for (std::size_t j = y.size(); j-- > 0;) {
      lcs[i][j] = x[i] == y[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  std::ostringstream out;
  std::size_t i = 0, j = 0;
  while (i < x.size() || j < y.size()) {
    if (i < x.size() && j < y.size() && x[i] == y[j]) {
      out << "  " << x[i++] << "\n";
      ++j;
    } else if (i < x.size() && (j == y.size() || lcs[i + 1][j] >= lcs[i][j + 1])) {
      out << "- " << x[i++] << "\n";
    } else {
      out << "+ " << y[j++] << "\n";
    }
  }
  return out.str();
}

PolicyComparison compare_policies(const std::filesystem::path& file, const std::string& a,
                                  const std::string& b) {
  const env::TrajectoryFile t = env::read_trajectories(file);
  std::set<std::string> policies;
  for (const env::Episode& e : t.episodes) policies.insert(e.policy_id);
  auto resolve = [&](const std::string& name) {
    if (policies.count(name) > 0) return name;
    if (policies.count(name + ":greedy") > 0) return name + ":greedy";
    std::string known;
    for (const std::string& p : policies) known += (known.empty() ? "" : ", ") + p;
    throw PolicyComparisonError(file.string() + ": no episodes of policy '" + name +
                                "' (its policies: " + (known.empty() ? "none" : known) + ")");
  };
  PolicyComparison c;
  c.policy_a = resolve(a);
  c.policy_b = resolve(b);
  // The first episode of each policy per task, tasks in the order the file first names them.
  std::vector<std::string> order;
  std::map<std::string, const env::Episode*> first_a, first_b;
  for (const env::Episode& e : t.episodes) {
    const std::string task = e.task.str();
    if (e.policy_id == c.policy_a && first_a.emplace(task, &e).second) order.push_back(task);
    if (e.policy_id == c.policy_b) first_b.emplace(task, &e);
  }
  bool timed = false;
  double log_sum = 0;
  for (const std::string& task : order) {
    const auto other = first_b.find(task);
    if (other == first_b.end()) continue;
    TaskComparison row;
    row.task = task;
    row.a = answer_of(*first_a.at(task));
    row.b = answer_of(*other->second);
    if (!row.same_program()) ++c.different;
    timed = timed || std::isfinite(row.a.speedup) || std::isfinite(row.b.speedup);
    log_sum += std::log(fallback(row.b) / fallback(row.a));
    c.tasks.push_back(std::move(row));
  }
  if (c.tasks.empty()) {
    throw PolicyComparisonError(file.string() + ": policies '" + c.policy_a + "' and '" +
                                c.policy_b + "' have no task in common");
  }
  c.ratio = timed ? std::exp(log_sum / static_cast<double>(c.tasks.size())) : kNaN;
  return c;
}

std::string PolicyComparison::to_text(bool sources) const {
  std::ostringstream out;
  out << "A = " << policy_a << ", B = " << policy_b << ": " << tasks.size()
      << " tasks answered by both, " << different << " with different programs\n";
  if (std::isfinite(ratio)) {
    out << "speedup B / A, geometric mean over the tasks (failures as 1): " << std::fixed
        << std::setprecision(4) << ratio << "\n";
  } else {
    out << "speedup B / A: n/a (nothing was timed: no GPU stages)\n";
  }
  std::size_t width = 4;
  for (const TaskComparison& t : tasks) width = std::max(width, t.task.size());
  out << "\n" << std::left << std::setw(static_cast<int>(width)) << "task"
      << "  A program  A speedup     B program  B speedup\n";
  for (const TaskComparison& t : tasks) {
    out << std::left << std::setw(static_cast<int>(width)) << t.task << "  " << std::setw(9)
        << (t.a.program.empty() ? "-" : t.a.program.substr(0, 8)) << "  " << std::setw(12)
        << speedup_cell(t.a) << "  " << std::setw(9)
        << (t.same_program() ? "=" : t.b.program.empty() ? "-" : t.b.program.substr(0, 8)) << "  "
        << speedup_cell(t.b) << "\n";
  }
  if (!sources) return out.str();
  for (const TaskComparison& t : tasks) {
    if (t.same_program()) continue;
    out << "\n--- A " << t.task << " (" << speedup_cell(t.a) << ")\n+++ B " << t.task << " ("
        << speedup_cell(t.b) << ")\n"
        << line_diff(t.a.source, t.b.source);
  }
  return out.str();
}

}  // namespace sparserl::experiments
