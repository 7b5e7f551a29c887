// Two policies of one trajectory file side by side, task by task: which answers differ, how their
// speedups compare, and (for the tasks answered differently) the two programs as a line diff.
// Behind `sparserl inspect FILE.h5 --compare A B`; meant for a `sparserl bench` run's
// trajectories.h5, where every agent's answer for a matrix was timed beside the others' (so a
// ratio between two policies is a ratio between two programs), but it reads any trajectory file.
// A policy's answer for a task is its first episode of that task.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace sparserl::experiments {

class PolicyComparisonError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One policy's answer for one task.
struct PolicyAnswer {
  std::string program;   // the evaluated program's digest ("" when it was not evaluated)
  std::string source;    // the program text
  bool correct = false;  // correct on the GPU
  double speedup = 0;    // over cuSPARSE when correct and timed, else NaN
  std::string outcome;   // "correct", or the error kind / "truncated"
};

struct TaskComparison {
  std::string task;  // "URI op dtype"
  PolicyAnswer a, b;
  [[nodiscard]] bool same_program() const { return a.program == b.program; }
};

struct PolicyComparison {
  std::string policy_a, policy_b;   // as found in the file
  std::vector<TaskComparison> tasks;  // tasks both answered, in the file's order
  std::int64_t different = 0;         // tasks answered with different programs
  // Geometric mean over the tasks of speedup B / speedup A, a failure counting as 1 (NaN when no
  // task was timed for either policy).
  double ratio = 0;

  // The table, then (with `sources`) the line diff of each differing pair of programs.
  [[nodiscard]] std::string to_text(bool sources) const;
};

// Compares policies `a` and `b` of FILE. A name that is not a policy id of the file but whose
// "NAME:greedy" is (a bench agent's answer) stands for that. PolicyComparisonError naming the file
// and the policies it has when either is absent, or when they share no task.
PolicyComparison compare_policies(const std::filesystem::path& file, const std::string& a,
                                  const std::string& b);

// A line diff of two texts: lines only in `before` prefixed "- ", only in `after` "+ ", common
// ones "  " (a longest common subsequence of lines).
std::string line_diff(const std::string& before, const std::string& after);

}  // namespace sparserl::experiments
