// VectorEnvCore: env::VectorEnv driven from Python, observations batched into
// arrays of [N, ...] (one row per result, in the order VectorEnv returns them),
// rewards and flags as numpy arrays, infos as a list of dicts. Synchronous
// step() and EnvPool's asynchronous send() / recv() both come through; the
// auto-reset mode is VectorEnv's (next_step or same_step), which the Python
// class declares in its metadata as Gymnasium does.
#include <pybind11/stl.h>

#include <cstring>

#include "convert.hpp"
#include "env_core.hpp"
#include "sparserl/env/vector_env.hpp"

namespace sparserl::python {

namespace {

template <typename T>
void copy_row(py::array_t<T>& out, std::size_t row, const T* data, std::size_t count) {
  std::memcpy(out.mutable_data() + row * count, data, count * sizeof(T));
}

// The observations of one VectorStep as one dict of arrays with a leading batch
// dimension.
py::dict batch(const std::vector<env::Observation>& observations, const env::Spaces& s) {
  const auto n = static_cast<py::ssize_t>(observations.size());
  const py::ssize_t k = s.nnz_samples, dim = s.embedding_dim, f = s.feature_dim;
  const py::ssize_t t = s.max_tokens, v = s.actions;
  py::array_t<std::int32_t> rows({n, k}), cols({n, k}), tokens({n, t});
  py::array_t<float> embedding({n, k, dim}), features({n, f});
  py::array_t<std::int64_t> count(n), remaining(n);
  py::array_t<std::int8_t> mask({n, v});
  for (py::ssize_t i = 0; i < n; ++i) {
    const env::Observation& o = observations[static_cast<std::size_t>(i)];
    const env::MatrixObservation& m = *o.matrix;
    const auto r = static_cast<std::size_t>(i);
    copy_row(rows, r, m.rows.data(), static_cast<std::size_t>(k));
    copy_row(cols, r, m.cols.data(), static_cast<std::size_t>(k));
    copy_row(embedding, r, m.embedding.data(), static_cast<std::size_t>(k * dim));
    copy_row(features, r, m.features.data(), static_cast<std::size_t>(f));
    write_token_row(tokens.mutable_data() + i * t, o.tokens, static_cast<std::size_t>(t));
    count.mutable_data()[i] = m.count;
    remaining.mutable_data()[i] = o.remaining_tokens;
    std::memcpy(mask.mutable_data() + i * v, o.action_mask.data(), static_cast<std::size_t>(v));
  }
  return ObservationParts{.rows = rows,
                          .cols = cols,
                          .embedding = embedding,
                          .features = features,
                          .count = count,
                          .tokens = tokens,
                          .remaining_tokens = remaining,
                          .action_mask = mask}
      .dict();
}

class VectorEnvCore {
 public:
  VectorEnvCore(EnvSetup setup, int num_envs, const std::string& autoreset, int batch_size) {
    env::VectorEnvConfig vc;
    vc.num_envs = num_envs;
    vc.batch_size = batch_size;
    vc.seed = setup.config.seed;
    const auto mode = env::parse_autoreset(autoreset);
    if (!mode) {
      throw py::value_error("autoreset: expected 'next_step' or 'same_step', got '" + autoreset +
                            "'");
    }
    vc.autoreset = *mode;
    if (num_envs < 1)
      throw py::value_error("num_envs: expected at least 1, got " + std::to_string(num_envs));
    if (batch_size < 0 || batch_size > num_envs) {
      throw py::value_error("batch_size: expected 0..num_envs, got " + std::to_string(batch_size));
    }
    vocab_ = static_cast<std::int64_t>(setup.tokenizer->vocabulary().size());
    venv_ = std::make_unique<env::VectorEnv>(vc, [&setup, num_envs](int id) {
      env::TaskSource mine = setup.tasks;
      if (mine.order() == env::TaskOrder::sequential) mine.shard(id, num_envs);
      return std::make_unique<env::SparseCudaEnv>(setup.config, setup.tokenizer, mine, setup.store,
                                                  setup.backend, id);
    });
    venv_->on_episode([this](const env::Episode& e) { recorder_.record(e); });
  }

  py::dict reset(std::optional<std::uint64_t> seed) {
    env::VectorStep s;
    {
      py::gil_scoped_release release;
      s = venv_->reset(seed);
    }
    return to_python(s);
  }

  py::dict step(const std::vector<std::int64_t>& actions) {
    if (static_cast<int>(actions.size()) != venv_->num_envs()) {
      throw py::value_error("step: " + std::to_string(actions.size()) + " actions for " +
                            std::to_string(venv_->num_envs()) + " environments");
    }
    const std::vector<env::TokenId> tokens = checked(actions);
    env::VectorStep s;
    {
      py::gil_scoped_release release;
      s = venv_->step(tokens);
    }
    return to_python(s);
  }

  void send(const std::vector<std::int64_t>& actions, const std::vector<int>& env_ids) {
    if (actions.size() != env_ids.size()) {
      throw py::value_error("send: " + std::to_string(actions.size()) + " actions for " +
                            std::to_string(env_ids.size()) + " env ids");
    }
    for (int id : env_ids) {
      if (id < 0 || id >= venv_->num_envs())
        throw py::value_error("send: no environment " + std::to_string(id));
    }
    const std::vector<env::TokenId> tokens = checked(actions);
    py::gil_scoped_release release;
    venv_->send(tokens, env_ids);
  }

  py::dict recv() {
    env::VectorStep s;
    {
      py::gil_scoped_release release;
      s = venv_->recv();
    }
    return to_python(s);
  }

  [[nodiscard]] py::dict spaces() const { return spaces_dict(venv_->spaces(), vocab_); }
  [[nodiscard]] int num_envs() const { return venv_->num_envs(); }
  [[nodiscard]] py::dict stats() const {
    const env::VectorEnvStats& s = venv_->stats();
    py::dict d;
    d["steps"] = s.steps;
    d["episodes"] = s.episodes;
    d["evaluations"] = s.evaluations;
    d["max_in_flight"] = s.max_in_flight;
    return d;
  }
  void record(std::shared_ptr<env::TrajectoryWriter> writer, std::string policy_id) {
    recorder_ = Recorder{std::move(writer), std::move(policy_id)};
  }
  [[nodiscard]] std::string text(int env_id) {
    if (env_id < 0 || env_id >= venv_->num_envs())
      throw py::value_error("no environment " + std::to_string(env_id));
    const env::SparseCudaEnv& e = venv_->env(env_id);
    return e.tokenizer().decode(e.state().tokens);
  }

 private:
  [[nodiscard]] std::vector<env::TokenId> checked(const std::vector<std::int64_t>& actions) const {
    std::vector<env::TokenId> tokens;
    for (std::size_t i = 0; i < actions.size(); ++i) {
      if (actions[i] < 0 || actions[i] >= vocab_) {
        throw py::value_error("action " + std::to_string(actions[i]) + " (index " +
                              std::to_string(i) + ") is outside Discrete(" +
                              std::to_string(vocab_) + ")");
      }
      tokens.push_back(static_cast<env::TokenId>(actions[i]));
    }
    return tokens;
  }

  py::dict to_python(const env::VectorStep& s) const {
    const env::Spaces spaces = venv_->spaces();
    py::dict d;
    d["env_ids"] = copy_array(s.env_ids);
    d["observations"] = batch(s.observations, spaces);
    d["rewards"] = copy_array(s.rewards);
    py::array_t<bool> terminated(static_cast<py::ssize_t>(s.size())),
        truncated(static_cast<py::ssize_t>(s.size()));
    py::list infos, final_observations, final_infos;
    for (std::size_t i = 0; i < s.size(); ++i) {
      terminated.mutable_data()[i] = s.terminated[i] != 0;
      truncated.mutable_data()[i] = s.truncated[i] != 0;
      infos.append(info_to_dict(s.infos[i]));
      final_observations.append(
          s.final_observations[i]
              ? py::object(observation_dict(*s.final_observations[i], spaces.max_tokens))
              : py::none());
      final_infos.append(s.final_infos[i] ? py::object(info_to_dict(*s.final_infos[i]))
                                          : py::none());
    }
    d["terminated"] = terminated;
    d["truncated"] = truncated;
    d["infos"] = infos;
    d["final_observations"] = final_observations;
    d["final_infos"] = final_infos;
    return d;
  }

  std::unique_ptr<env::VectorEnv> venv_;
  std::int64_t vocab_ = 0;
  Recorder recorder_;
};

}  // namespace

void bind_vector_env(py::module_& m) {
  py::class_<VectorEnvCore>(m, "VectorEnvCore",
                            "VectorEnv: N environments, batched, declared auto-reset.")
      .def(py::init([](const env::TaskSource& tasks,
                       const std::shared_ptr<datasets::MatrixStore>& store,
                       const std::shared_ptr<EvaluatorHandle>& evaluator, const py::dict& options,
                       const py::dict& reward, std::uint64_t seed, int num_envs,
                       const std::string& autoreset, int batch_size) {
             return std::make_unique<VectorEnvCore>(
                 make_setup(tasks, store, evaluator, options, reward, seed), num_envs, autoreset,
                 batch_size);
           }),
           py::arg("tasks"), py::arg("store"), py::arg("evaluator"),
           py::arg("options") = py::dict(), py::arg("reward") = py::dict(), py::arg("seed") = 0,
           py::arg("num_envs") = 1, py::arg("autoreset") = "next_step", py::arg("batch_size") = 0)
      .def("reset", &VectorEnvCore::reset, py::arg("seed") = py::none())
      .def("step", &VectorEnvCore::step, py::arg("actions"))
      .def("send", &VectorEnvCore::send, py::arg("actions"), py::arg("env_ids"))
      .def("recv", &VectorEnvCore::recv)
      .def("spaces", &VectorEnvCore::spaces)
      .def("stats", &VectorEnvCore::stats)
      .def("text", &VectorEnvCore::text, py::arg("env_id"))
      .def("record", &VectorEnvCore::record, py::arg("writer"), py::arg("policy_id") = "python")
      .def_property_readonly("num_envs", &VectorEnvCore::num_envs);
}

}  // namespace sparserl::python
