// TaskSource: where reset() gets its next task. A fixed list (from a split file, a list of URIs or
// explicit tasks) visited sequentially, shuffled (a new seeded permutation each pass) or weighted
// (drawn with replacement in proportion to per-task weights); or generated: each task is a fresh
// matrix of one of a few gen-v1 generator URIs with a drawn seed= (an unbounded stream of new
// matrices); or mixed: a fixed list that hands out a generated matrix instead with a set
// probability (RL on a split's matrices plus fresh ones, so the policy sees more than the split's
// few dozen patterns). Sources are values: VectorEnv copies one per environment, seeds each with its env
// seed, and shards sequential ones so that N environments visit a list once between them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/datasets/random.hpp"
#include "sparserl/datasets/splits.hpp"
#include "sparserl/datasets/task.hpp"

namespace sparserl::env {

enum class TaskOrder { sequential, shuffled, weighted };
std::string_view to_string(TaskOrder order);
std::optional<TaskOrder> parse_task_order(
    std::string_view text);  // "sequential", "shuffled", "weighted"

// The operation every task of a URI list asks for.
struct TaskTemplate {
  datasets::Op op = datasets::Op::spmv;
  datasets::DType dtype = datasets::DType::f32;
  datasets::Index k = 1;  // dense columns for SpMM (ignored for SpMV, which uses 1)
};

class TaskSource {
 public:
  // std::invalid_argument for an empty list, a weight count that differs from the task count,
  // negative or all-zero weights, or weights given to an order other than weighted.
  static TaskSource from_tasks(std::vector<datasets::Task> tasks, TaskOrder order,
                               std::vector<double> weights = {});
  // URIs are canonicalised (datasets::InvalidUri naming a bad one).
  static TaskSource from_uris(const std::vector<std::string>& uris, const TaskTemplate& what,
                              TaskOrder order, std::vector<double> weights = {});
  // One part of a split file (datasets::SplitError naming the file for a malformed one).
  static TaskSource from_split(const std::filesystem::path& split_file, datasets::SplitPart part,
                               const TaskTemplate& what, TaskOrder order);
  // Generated matrices: each next() picks a generator URI (uniformly, or by weights) and sets its
  // seed= to a fresh draw. The URIs must be gen-v1 and valid (std::invalid_argument naming one).
  static TaskSource generated(const std::vector<std::string>& generator_uris,
                              const TaskTemplate& what, std::vector<double> weights = {});
  // A fixed source whose next() gives, with probability `share` (0 < share <= 1), a generated
  // matrix of one of `generator_uris` (uniformly) instead of its own next task; the fixed order
  // advances only on its own draws. std::invalid_argument for a generated `fixed`, a share outside
  // (0, 1] or a bad generator URI (naming it).
  static TaskSource mixed(TaskSource fixed, const std::vector<std::string>& generator_uris,
                          const TaskTemplate& what, double share);

  // Restarts the order: sequential from the shard's first task, shuffled with a new permutation,
  // weighted with a new stream from Rng(seed, kTaskStream); generated matrices (and a mixed
  // source's choice between fixed and generated) from Rng(seed, kGeneratorStream).
  void seed(std::uint64_t seed);
  // Sequential order only: this copy visits tasks index, index + count, ... (VectorEnv env ids).
  void shard(int index, int count);
  [[nodiscard]] datasets::Task next();

  [[nodiscard]] TaskOrder order() const { return order_; }
  // Only generated matrices (no fixed list).
  [[nodiscard]] bool is_generated() const { return tasks_.empty() && !generators_.empty(); }
  // The probability that next() gives a generated matrix: 0 fixed, 1 generated, else mixed.
  [[nodiscard]] double generated_share() const { return generated_share_; }
  // The fixed tasks (empty for a generated source).
  [[nodiscard]] const std::vector<datasets::Task>& tasks() const { return tasks_; }
  // "12 tasks, shuffled" / "generated from 2 generators" /
  // "32 tasks, shuffled; 50% generated from 8 generators".
  [[nodiscard]] std::string describe() const;

 private:
  TaskSource() = default;
  void check_weights(std::size_t count) const;
  void set_generators(const std::vector<std::string>& generator_uris, const TaskTemplate& what);
  [[nodiscard]] datasets::Task next_generated();

  std::vector<datasets::Task> tasks_;
  std::vector<std::string> generators_;  // canonical gen-v1 URIs without seed=
  TaskTemplate generated_what_;
  double generated_share_ = 0;
  std::vector<double> weights_;            // the tasks', cumulative, normalised to end at 1
  std::vector<double> generator_weights_;  // the same for the generators (empty: uniform)
  TaskOrder order_ = TaskOrder::sequential;
  std::vector<std::size_t> permutation_;
  std::size_t position_ = 0;
  int shard_index_ = 0, shard_count_ = 1;
  datasets::Rng rng_{0};            // the fixed order's draws
  datasets::Rng generator_rng_{0};  // fixed or generated (mixed), which generator, its seed=
};

}  // namespace sparserl::env
