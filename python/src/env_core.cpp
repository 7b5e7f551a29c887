// EnvCore: one SparseCudaEnv driven from Python (env_core.hpp). Each call
// releases the GIL while the environment works (a matrix load at reset, the
// evaluation at an episode's last step), so Python threads and other
// environments go on meanwhile.
#include "env_core.hpp"

#include <pybind11/stl.h>

#include "convert.hpp"

namespace sparserl::python {

namespace {

// What identifies an episode, under the same keys in the live state and in the
// finished episode (env::EnvState and env::Episode name these fields alike).
template <typename Record>
void add_episode_ids(py::dict& d, const Record& r) {
  d["task"] = r.task;
  d["env_id"] = r.env_id;
  d["env_seed"] = r.env_seed;
  d["episode_index"] = r.episode_index;
  d["episode_seed"] = r.episode_seed;
}

}  // namespace

EnvCore::EnvCore(EnvSetup s, int env_id)
    : env_(std::make_unique<env::SparseCudaEnv>(std::move(s.config), std::move(s.tokenizer),
                                                std::move(s.tasks), std::move(s.store),
                                                std::move(s.backend), env_id)) {}

py::tuple EnvCore::reset(std::optional<std::uint64_t> seed, std::optional<datasets::Task> task) {
  env::ResetOptions options;
  options.task = std::move(task);
  env::ResetResult r;
  {
    py::gil_scoped_release release;
    r = env_->reset(seed, options);
  }
  return py::make_tuple(observation_dict(r.observation, env_->config().max_tokens),
                        info_to_dict(r.info));
}

py::tuple EnvCore::step(std::int64_t action) {
  const auto vocab = static_cast<std::int64_t>(env_->tokenizer().vocabulary().size());
  if (action < 0 || action >= vocab) {
    throw py::value_error("action " + std::to_string(action) + " is outside Discrete(" +
                          std::to_string(vocab) + ")");
  }
  env::StepResult r;
  {
    py::gil_scoped_release release;
    r = env_->step(static_cast<env::TokenId>(action));
    if (r.done() && env_->last_episode() != nullptr) recorder_.record(*env_->last_episode());
  }
  return py::make_tuple(observation_dict(r.observation, env_->config().max_tokens), r.reward,
                        r.terminated, r.truncated, info_to_dict(r.info));
}

std::string EnvCore::text() const { return env_->tokenizer().decode(env_->state().tokens); }

py::dict EnvCore::state() const {
  const env::EnvState s = env_->state();
  py::dict d;
  add_episode_ids(d, s);
  d["tokens"] = s.tokens;
  d["active"] = s.active;
  return d;
}

py::dict EnvCore::spaces() const {
  return spaces_dict(env_->spaces(),
                     static_cast<std::int64_t>(env_->tokenizer().vocabulary().size()));
}

py::object EnvCore::last_episode() const {
  const env::Episode* e = env_->last_episode();
  if (e == nullptr) return py::none();
  return episode_dict(*e);
}

void EnvCore::record(std::shared_ptr<env::TrajectoryWriter> writer, std::string policy_id) {
  recorder_ = Recorder{std::move(writer), std::move(policy_id)};
}

py::dict episode_dict(const env::Episode& e) {
  py::dict d;
  add_episode_ids(d, e);
  d["observation_digest"] = e.observation_digest;
  d["tokens"] = e.tokens;
  d["source"] = e.source;
  d["terminated"] = e.terminated;
  d["truncated"] = e.truncated;
  d["reward"] = e.reward;
  d["eval"] = e.eval ? py::object(py::str(e.eval->to_json())) : py::none();
  return d;
}

void bind_env(py::module_& m) {
  bind_env_parts(m);
  py::class_<EnvCore>(m, "EnvCore",
                      "SparseCudaEnv: reset / step with numpy observations and dict infos.")
      .def(py::init([](const env::TaskSource& tasks,
                       const std::shared_ptr<datasets::MatrixStore>& store,
                       const std::shared_ptr<EvaluatorHandle>& evaluator, const py::dict& options,
                       const py::dict& reward, std::uint64_t seed, int env_id) {
             return std::make_unique<EnvCore>(
                 make_setup(tasks, store, evaluator, options, reward, seed), env_id);
           }),
           py::arg("tasks"), py::arg("store"), py::arg("evaluator"),
           py::arg("options") = py::dict(), py::arg("reward") = py::dict(), py::arg("seed") = 0,
           py::arg("env_id") = 0)
      .def("reset", &EnvCore::reset, py::arg("seed") = py::none(), py::arg("task") = py::none())
      .def("step", &EnvCore::step, py::arg("action"))
      .def("text", &EnvCore::text, "The program the tokens so far decode to.")
      .def("state", &EnvCore::state)
      .def("spaces", &EnvCore::spaces)
      .def("config", &EnvCore::config)
      .def("last_episode", &EnvCore::last_episode,
           "The episode that ended with the last step (until the next reset), "
           "or None.")
      .def("record", &EnvCore::record, py::arg("writer"), py::arg("policy_id") = "python",
           "Append every episode that ends from now on to `writer`.")
      .def_property_readonly("truncation_reward", [](const EnvCore& e) {
        return e.env().config().resolved_truncation_reward();
      });
}

}  // namespace sparserl::python
