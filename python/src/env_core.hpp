// What the environment bindings share: the pieces an environment is made of
// (EnvSetup, built from Python's keyword arguments through the env's and the
// reward's declared knobs), observations as dicts of numpy arrays, and EnvCore
// - one SparseCudaEnv driven from Python, with an optional trajectory recorder.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "sparserl/env/evaluator_backend.hpp"
#include "sparserl/env/sparse_cuda_env.hpp"
#include "sparserl/env/trajectory.hpp"

namespace sparserl::python {

struct EnvSetup {
  env::EnvConfig config;
  std::shared_ptr<const env::Tokenizer> tokenizer;
  env::TaskSource tasks;
  std::shared_ptr<datasets::MatrixStore> store;
  std::shared_ptr<env::EvaluatorBackend> backend;
};

// ValueError naming the option for an unknown key, a wrong type or a value out
// of range.
EnvSetup make_setup(const env::TaskSource& tasks,
                    const std::shared_ptr<datasets::MatrixStore>& store,
                    const std::shared_ptr<EvaluatorHandle>& evaluator, const py::dict& options,
                    const py::dict& reward_options, std::uint64_t seed);

// An observation's parts under the keys Python sees, in one place for one
// environment's observation and for VectorEnv's batch of them (there each part
// has a leading [N] dimension). The agent's parts are left out when empty:
// observe() shows the matrix part alone.
struct ObservationParts {
  py::object rows, cols, embedding, features, count;       // the matrix part
  py::object tokens{}, remaining_tokens{}, action_mask{};  // the agent's part
  [[nodiscard]] py::dict dict() const;
};

// rows, cols [K] int32, embedding [K, D] float32, features [F] float32
// (read-only views that keep the episode's matrix observation alive) and count.
py::dict matrix_observation_dict(const std::shared_ptr<const env::MatrixObservation>& matrix);
// The matrix part plus tokens [max_tokens] int32 (-1 past the tokens so far),
// remaining_tokens and action_mask [V] int8.
py::dict observation_dict(const env::Observation& observation, int max_tokens);
// One row of tokens as observations hold it: `tokens`, then -1 up to `max_tokens`.
void write_token_row(std::int32_t* row, const std::vector<env::TokenId>& tokens,
                     std::size_t max_tokens);
py::dict spaces_dict(const env::Spaces& spaces, std::int64_t vocab);
py::dict config_dict(const env::EnvConfig& config);

// A recorder of finished episodes, shared by the environments that write to one
// file.
struct Recorder {
  std::shared_ptr<env::TrajectoryWriter> writer;
  std::string policy_id;
  void record(const env::Episode& episode) const {
    if (writer) writer->append(episode, policy_id);
  }
};

class EnvCore {
 public:
  explicit EnvCore(EnvSetup setup, int env_id = 0);

  py::tuple reset(std::optional<std::uint64_t> seed, std::optional<datasets::Task> task);
  py::tuple step(std::int64_t action);
  [[nodiscard]] std::string text() const;
  [[nodiscard]] py::dict state() const;
  [[nodiscard]] py::dict spaces() const;
  [[nodiscard]] py::dict config() const { return config_dict(env_->config()); }
  [[nodiscard]] py::object last_episode() const;
  void record(std::shared_ptr<env::TrajectoryWriter> writer, std::string policy_id);
  [[nodiscard]] const env::SparseCudaEnv& env() const { return *env_; }

 private:
  std::unique_ptr<env::SparseCudaEnv> env_;
  Recorder recorder_;
};

// A finished episode as a dict: ids, tokens, source, reward and breakdown, the
// EvalResult's JSON.
py::dict episode_dict(const env::Episode& episode);

void bind_env_parts(py::module_& m);

}  // namespace sparserl::python
