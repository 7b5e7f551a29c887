// TaskSource: where reset() gets its next task. A fixed list (from a split file, a list of URIs or
// explicit tasks) visited sequentially, shuffled (a new seeded permutation each pass) or weighted
// (drawn with replacement in proportion to per-task weights); or generated: each task is a fresh
// matrix of one of a few gen-v1 generator URIs with a drawn seed= (an unbounded stream of new
// matrices). Sources are values: VectorEnv copies one per environment, seeds each with its env
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

  // Restarts the order: sequential from the shard's first task, shuffled with a new permutation,
  // weighted and generated with a new stream - all from Rng(seed, kTaskStream / kGeneratorStream).
  void seed(std::uint64_t seed);
  // Sequential order only: this copy visits tasks index, index + count, ... (VectorEnv env ids).
  void shard(int index, int count);
  [[nodiscard]] datasets::Task next();

  [[nodiscard]] TaskOrder order() const { return order_; }
  [[nodiscard]] bool is_generated() const { return !generators_.empty(); }
  // The fixed tasks (empty for a generated source).
  [[nodiscard]] const std::vector<datasets::Task>& tasks() const { return tasks_; }
  // "12 tasks, shuffled" / "generated from 2 generators".
  [[nodiscard]] std::string describe() const;

 private:
  TaskSource() = default;
  void check_weights(std::size_t count) const;

  std::vector<datasets::Task> tasks_;
  std::vector<std::string> generators_;  // canonical gen-v1 URIs without seed=
  TaskTemplate generated_what_;
  std::vector<double> weights_;  // cumulative, normalised to end at 1
  TaskOrder order_ = TaskOrder::sequential;
  std::vector<std::size_t> permutation_;
  std::size_t position_ = 0;
  int shard_index_ = 0, shard_count_ = 1;
  datasets::Rng rng_{0};
};

}  // namespace sparserl::env
