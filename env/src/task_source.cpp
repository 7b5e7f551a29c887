// Task orders. Everything random comes from the source's own Rng, seeded through seed(), so a
// source's sequence of tasks is a pure function of (its list, its order, its seed).
#include "sparserl/env/task_source.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "sparserl/datasets/enum_names.hpp"
#include "sparserl/datasets/generators.hpp"
#include "sparserl/env/seeding.hpp"

namespace sparserl::env {
namespace {

datasets::Task make_task(const std::string& uri, const TaskTemplate& what) {
  datasets::Task t;
  t.uri = datasets::MatrixUri::parse(uri).str();
  t.op = what.op;
  t.dtype = what.dtype;
  t.k = what.op == datasets::Op::spmm ? what.k : 1;
  if (t.op == datasets::Op::spmm && t.k < 1) {
    throw std::invalid_argument("SpMM tasks need k >= 1, got " + std::to_string(what.k));
  }
  return t;
}

std::vector<double> cumulative(const std::vector<double>& weights) {
  std::vector<double> c(weights.size());
  double sum = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    if (!(weights[i] >= 0) || !std::isfinite(weights[i])) {
      throw std::invalid_argument("task weight " + std::to_string(i) + " is " +
                                  std::to_string(weights[i]) + ": weights must be finite and >= 0");
    }
    sum += weights[i];
    c[i] = sum;
  }
  if (!(sum > 0))
    throw std::invalid_argument("task weights sum to 0: at least one must be positive");
  for (double& v : c) v /= sum;
  c.back() = 1.0;
  return c;
}

std::size_t draw(const std::vector<double>& cumulative_weights, datasets::Rng& rng) {
  const double u = rng.uniform01();
  const auto it = std::upper_bound(cumulative_weights.begin(), cumulative_weights.end(), u);
  return std::min<std::size_t>(static_cast<std::size_t>(it - cumulative_weights.begin()),
                               cumulative_weights.size() - 1);
}

constexpr auto kTaskOrderNames = datasets::enum_names<TaskOrder::sequential, TaskOrder::weighted>(
    {"sequential", "shuffled", "weighted"});

}  // namespace

std::string_view to_string(TaskOrder order) { return kTaskOrderNames.name(order); }
std::optional<TaskOrder> parse_task_order(std::string_view text) {
  return kTaskOrderNames.parse(text);
}

void TaskSource::check_weights(std::size_t count) const {
  if (order_ != TaskOrder::weighted && !weights_.empty()) {
    throw std::invalid_argument("task weights were given to a " + std::string(to_string(order_)) +
                                " source: only the weighted order uses them");
  }
  if (order_ == TaskOrder::weighted && weights_.size() != count) {
    throw std::invalid_argument(
        "a weighted task source needs one weight per task: " + std::to_string(count) + " tasks, " +
        std::to_string(weights_.size()) + " weights");
  }
}

TaskSource TaskSource::from_tasks(std::vector<datasets::Task> tasks, TaskOrder order,
                                  std::vector<double> weights) {
  if (tasks.empty()) throw std::invalid_argument("a task source needs at least one task");
  TaskSource s;
  s.tasks_ = std::move(tasks);
  s.order_ = order;
  s.weights_ = std::move(weights);
  s.check_weights(s.tasks_.size());
  if (!s.weights_.empty()) s.weights_ = cumulative(s.weights_);
  s.seed(0);
  return s;
}

TaskSource TaskSource::from_uris(const std::vector<std::string>& uris, const TaskTemplate& what,
                                 TaskOrder order, std::vector<double> weights) {
  std::vector<datasets::Task> tasks;
  tasks.reserve(uris.size());
  for (const std::string& uri : uris) tasks.push_back(make_task(uri, what));
  return from_tasks(std::move(tasks), order, std::move(weights));
}

TaskSource TaskSource::from_split(const std::filesystem::path& split_file, datasets::SplitPart part,
                                  const TaskTemplate& what, TaskOrder order) {
  const datasets::Split split = datasets::read_split(split_file);
  const std::vector<std::string> uris = split.uris(part);
  if (uris.empty()) {
    throw std::invalid_argument("split " + split_file.string() + " has no " +
                                std::string(datasets::to_string(part)) + " matrices");
  }
  return from_uris(uris, what, order);
}

void TaskSource::set_generators(const std::vector<std::string>& generator_uris,
                                const TaskTemplate& what) {
  if (generator_uris.empty())
    throw std::invalid_argument("a generated task source needs a generator URI");
  for (const std::string& uri : generator_uris) {
    datasets::MatrixUri parsed = datasets::MatrixUri::parse(uri);
    if (parsed.scheme != datasets::MatrixUri::Scheme::generated) {
      throw std::invalid_argument("generated task source: '" + uri + "' is not a gen-v1 URI");
    }
    parsed.params.erase("seed");
    try {
      (void)datasets::GeneratorSpec::from_uri(parsed);  // validates kind and keys
    } catch (const std::exception& e) {
      throw std::invalid_argument("generated task source: '" + uri + "': " + e.what());
    }
    generators_.push_back(parsed.str());
  }
  generated_what_ = what;
  (void)make_task(generators_.front(), what);  // validates the template
}

TaskSource TaskSource::generated(const std::vector<std::string>& generator_uris,
                                 const TaskTemplate& what, std::vector<double> weights) {
  TaskSource s;
  s.set_generators(generator_uris, what);
  s.generated_share_ = 1.0;
  s.order_ = weights.empty() ? TaskOrder::shuffled : TaskOrder::weighted;
  s.weights_ = std::move(weights);
  s.check_weights(s.generators_.size());
  if (!s.weights_.empty()) s.generator_weights_ = cumulative(s.weights_);
  s.weights_.clear();
  s.seed(0);
  return s;
}

TaskSource TaskSource::mixed(TaskSource fixed, const std::vector<std::string>& generator_uris,
                             const TaskTemplate& what, double share) {
  if (fixed.tasks_.empty() || !fixed.generators_.empty()) {
    throw std::invalid_argument("a mixed task source starts from a fixed list of tasks");
  }
  if (!(share > 0 && share <= 1)) {
    throw std::invalid_argument("the share of generated tasks is " + std::to_string(share) +
                                ": expected 0 < share <= 1");
  }
  fixed.set_generators(generator_uris, what);
  fixed.generated_share_ = share;
  fixed.seed(0);
  return fixed;
}

void TaskSource::seed(std::uint64_t seed) {
  rng_ = datasets::Rng(seed, kTaskStream);
  generator_rng_ = datasets::Rng(seed, kGeneratorStream);
  position_ = 0;
  permutation_.clear();
}

void TaskSource::shard(int index, int count) {
  if (count < 1 || index < 0 || index >= count) {
    throw std::invalid_argument("task source shard " + std::to_string(index) + " of " +
                                std::to_string(count) + ": need 0 <= index < count");
  }
  shard_index_ = index;
  shard_count_ = count;
  position_ = 0;
}

datasets::Task TaskSource::next_generated() {
  const std::size_t g = generator_weights_.empty()
                            ? static_cast<std::size_t>(generator_rng_.below(generators_.size()))
                            : draw(generator_weights_, generator_rng_);
  datasets::MatrixUri uri = datasets::MatrixUri::parse(generators_[g]);
  uri.params["seed"] = std::to_string(generator_rng_.next() >> 1);
  return make_task(uri.str(), generated_what_);
}

datasets::Task TaskSource::next() {
  // A purely generated source draws no coin, so its stream is the same as before mixing existed.
  if (generated_share_ >= 1.0 ||
      (generated_share_ > 0 && generator_rng_.uniform01() < generated_share_)) {
    return next_generated();
  }
  const std::size_t n = tasks_.size();
  switch (order_) {
    case TaskOrder::sequential: {
      const std::size_t i = (static_cast<std::size_t>(shard_index_) +
                             position_ * static_cast<std::size_t>(shard_count_)) %
                            n;
      ++position_;
      return tasks_[i];
    }
    case TaskOrder::shuffled: {
      if (permutation_.empty() || position_ >= n) {
        permutation_.resize(n);
        std::iota(permutation_.begin(), permutation_.end(), std::size_t{0});
        for (std::size_t i = n; i > 1; --i) {  // Fisher-Yates with the project's Rng
          std::swap(permutation_[i - 1], permutation_[static_cast<std::size_t>(rng_.below(i))]);
        }
        position_ = 0;
      }
      return tasks_[permutation_[position_++]];
    }
    case TaskOrder::weighted:
      return tasks_[draw(weights_, rng_)];
  }
  return tasks_.front();
}

std::string TaskSource::describe() const {
  const std::string generated = "generated from " + std::to_string(generators_.size()) +
                                " generator" + (generators_.size() == 1 ? "" : "s");
  if (is_generated()) return generated;
  std::string out = std::to_string(tasks_.size()) + " task" + (tasks_.size() == 1 ? "" : "s") +
                    ", " + std::string(to_string(order_));
  if (generated_share_ > 0) {
    out += "; " + std::to_string(static_cast<int>(std::lround(generated_share_ * 100))) + "% " +
           generated;
  }
  return out;
}

}  // namespace sparserl::env
