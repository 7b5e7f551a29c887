// sparserl._core's env part: the tokenizer, task sources, the trajectory
// writer, one observation of a task as an episode shows it, and EnvCore -
// SparseCudaEnv with its observations as numpy arrays and its info as a dict.
// The Gymnasium-shaped class (sparserl/env.py) wraps EnvCore; it holds no
// episode logic of its own beyond what Gymnasium's API asks of a masked action.
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>

#include "bindings.hpp"
#include "convert.hpp"
#include "env_core.hpp"
#include "sparserl/env/env_knobs.hpp"
#include "sparserl/env/evaluator_backend.hpp"
#include "sparserl/env/prompt_text.hpp"
#include "sparserl/env/seeding.hpp"
#include "sparserl/env/trajectory.hpp"
#include "sparserl/reward/reward_knobs.hpp"

namespace sparserl::python {

namespace {

env::TaskOrder order_from(const std::string& text) {
  if (auto order = env::parse_task_order(text)) return *order;
  throw py::value_error("order: expected 'sequential', 'shuffled' or 'weighted', got '" + text +
                        "'");
}

env::TaskTemplate task_template(const std::string& op, const std::string& dtype, std::int64_t k) {
  env::TaskTemplate what;
  what.op = op_from(op);
  what.dtype = dtype_from(dtype);
  if (k < 1 || k > datasets::kMaxIndex) {
    throw py::value_error("k: expected an integer >= 1, got " + std::to_string(k));
  }
  what.k = static_cast<datasets::Index>(k);
  return what;
}

void bind_tokenizer(py::module_& m) {
  using env::Tokenizer;
  py::class_<Tokenizer, std::shared_ptr<Tokenizer>>(
      m, "Tokenizer",
      "Program text <-> token ids over the closed CUDA-C vocabulary "
      "(cuda-c-v1).")
      .def(py::init<>())
      .def(
          "encode",
          [](const Tokenizer& t, const std::string& text) { return t.encode(text).tokens; },
          py::arg("program"),
          "Token ids ending with <eos>; ValueError naming the token and "
          "line:column.")
      .def(
          "decode",
          [](const Tokenizer& t, const std::vector<env::TokenId>& ids) { return t.decode(ids); },
          py::arg("tokens"))
      .def_property_readonly("vocab_size", [](const Tokenizer& t) { return t.vocabulary().size(); })
      .def_property_readonly("eos", [](const Tokenizer& t) { return t.vocabulary().eos(); })
      .def_property_readonly("pad", [](const Tokenizer& t) { return t.vocabulary().pad(); })
      .def_property_readonly("bos", [](const Tokenizer& t) { return t.vocabulary().bos(); })
      .def_property_readonly("vocabulary_name",
                             [](const Tokenizer& t) { return t.vocabulary().name(); })
      .def_property_readonly("vocabulary_digest",
                             [](const Tokenizer& t) { return t.vocabulary().digest(); })
      .def(
          "describe",
          [](const Tokenizer& t, env::TokenId id) { return t.vocabulary().describe(id); },
          py::arg("token"), "One token as the vocabulary shows it.");
}

void bind_task_source(py::module_& m) {
  using env::TaskSource;
  py::class_<TaskSource>(m, "TaskSource", "Where reset() gets its next task.")
      .def_static(
          "from_split",
          [](const std::string& file, const std::string& part, const std::string& op,
             const std::string& dtype, std::int64_t k, const std::string& order) {
            const auto p = datasets::parse_split_part(part);
            if (!p)
              throw py::value_error("part: expected 'train', 'val' or 'test', got '" + part + "'");
            return TaskSource::from_split(file, *p, task_template(op, dtype, k), order_from(order));
          },
          py::arg("file"), py::arg("part"), py::arg("op") = "spmv", py::arg("dtype") = "f32",
          py::arg("k") = 1, py::arg("order") = "shuffled")
      .def_static(
          "from_uris",
          [](const std::vector<std::string>& uris, const std::string& op, const std::string& dtype,
             std::int64_t k, const std::string& order) {
            std::vector<std::string> canonical;
            for (const std::string& u : uris)
              canonical.push_back(datasets::MatrixUri::from_argument(u).str());
            return TaskSource::from_uris(canonical, task_template(op, dtype, k), order_from(order));
          },
          py::arg("uris"), py::arg("op") = "spmv", py::arg("dtype") = "f32", py::arg("k") = 1,
          py::arg("order") = "shuffled")
      .def_static(
          "from_tasks",
          [](const std::vector<datasets::Task>& tasks, const std::string& order) {
            return TaskSource::from_tasks(tasks, order_from(order));
          },
          py::arg("tasks"), py::arg("order") = "sequential")
      .def("tasks", &TaskSource::tasks)
      .def("describe", &TaskSource::describe)
      .def_property_readonly("order",
                             [](const TaskSource& s) { return std::string(to_string(s.order())); });
}

void bind_trajectory_writer(py::module_& m) {
  using env::TrajectoryWriter;
  py::register_exception<env::TrajectoryError>(m, "TrajectoryError", PyExc_RuntimeError);
  py::class_<TrajectoryWriter, std::shared_ptr<TrajectoryWriter>>(
      m, "TrajectoryWriter",
      "Appends every finished episode as one row of an HDF5 file "
      "(docs/trajectories.md).")
      .def(py::init([](const py::object& path, const std::string& run_id, const std::string& config,
                       const std::string& created_by, bool append) {
             const env::Vocabulary& v = env::Vocabulary::standard();
             env::TrajectoryFileInfo info;
             info.run_id = run_id;
             info.config = config;
             info.vocabulary_name = v.name();
             info.vocabulary_digest = v.digest();
             info.created_by = created_by;
             return std::make_shared<TrajectoryWriter>(string_list(path, "path").front(), info,
                                                       append);
           }),
           py::arg("path"), py::arg("run_id"), py::arg("config") = "",
           py::arg("created_by") = "sparserl (Python)", py::arg("append") = false)
      .def_property_readonly("rows", &TrajectoryWriter::rows)
      .def_property_readonly("path", [](const TrajectoryWriter& w) { return w.path().string(); })
      .def("close", &TrajectoryWriter::close);
}

py::dict observe_task(const std::shared_ptr<datasets::MatrixStore>& store,
                      const datasets::Task& task, std::uint64_t seed, const py::dict& options) {
  env::ObservationConfig config;
  apply_options(env::observation_knobs(), config, options, "observation option");
  env::TaskObserver::Observed observed;
  {
    py::gil_scoped_release release;
    observed = env::TaskObserver(store, config).observe(task, seed);
  }
  return matrix_observation_dict(observed.observation);
}

// The text of a task as prompt_text() writes it, over the observation an episode with `seed`
// shows (the same sample the arrays of observe() hold).
std::string task_prompt_text(const std::shared_ptr<datasets::MatrixStore>& store,
                             const datasets::Task& task, std::uint64_t seed,
                             const py::dict& options, const std::vector<std::string>& formats,
                             bool instructions) {
  env::ObservationConfig config;
  apply_options(env::observation_knobs(), config, options, "observation option");
  env::PromptTextOptions text;
  for (const std::string& f : formats) text.formats.push_back(format_from(f));
  text.instructions = instructions;
  py::gil_scoped_release release;
  const env::TaskObserver::Observed observed = env::TaskObserver(store, config).observe(task, seed);
  return env::prompt_text(*observed.matrix, task, *observed.observation, text);
}

}  // namespace

py::dict ObservationParts::dict() const {
  py::dict d;
  d["rows"] = rows;
  d["cols"] = cols;
  d["embedding"] = embedding;
  d["features"] = features;
  d["count"] = count;
  if (tokens) {
    d["tokens"] = tokens;
    d["remaining_tokens"] = remaining_tokens;
    d["action_mask"] = action_mask;
  }
  return d;
}

namespace {

ObservationParts matrix_parts(const std::shared_ptr<const env::MatrixObservation>& m) {
  const py::ssize_t k = m->nnz_samples;
  return {.rows = readonly_view(m->rows.data(), {k}, m),
          .cols = readonly_view(m->cols.data(), {k}, m),
          .embedding = readonly_view(m->embedding.data(),
                                     {k, static_cast<py::ssize_t>(m->embedding_dim)}, m),
          .features =
              readonly_view(m->features.data(), {static_cast<py::ssize_t>(m->features.size())}, m),
          .count = py::cast(m->count)};
}

}  // namespace

py::dict matrix_observation_dict(const std::shared_ptr<const env::MatrixObservation>& m) {
  return matrix_parts(m).dict();
}

py::dict observation_dict(const env::Observation& o, int max_tokens) {
  ObservationParts parts = matrix_parts(o.matrix);
  py::array_t<std::int32_t> tokens(max_tokens);
  write_token_row(tokens.mutable_data(), o.tokens, static_cast<std::size_t>(max_tokens));
  parts.tokens = tokens;
  parts.remaining_tokens = py::cast(o.remaining_tokens);
  py::array_t<std::int8_t> mask(static_cast<py::ssize_t>(o.action_mask.size()));
  std::memcpy(mask.mutable_data(), o.action_mask.data(), o.action_mask.size());
  parts.action_mask = mask;
  return parts.dict();
}

void write_token_row(std::int32_t* row, const std::vector<env::TokenId>& tokens,
                     std::size_t max_tokens) {
  std::fill(row, row + max_tokens, -1);
  std::copy_n(tokens.begin(), std::min(tokens.size(), max_tokens), row);
}

EnvSetup make_setup(const env::TaskSource& tasks,
                    const std::shared_ptr<datasets::MatrixStore>& store,
                    const std::shared_ptr<EvaluatorHandle>& evaluator, const py::dict& options,
                    const py::dict& reward_options, std::uint64_t seed) {
  EnvSetup s{.config = {},
             .tokenizer = std::make_shared<const env::Tokenizer>(),
             .tasks = tasks,
             .store = store,
             .backend = nullptr};
  apply_options(env::env_knobs(), s.config, options, "env option");
  apply_options(reward::reward_knobs(), s.config.reward, reward_options, "reward option");
  s.config.seed = seed;
  if (auto problem = s.config.validate()) throw py::value_error(*problem);
  if (!evaluator || !evaluator->evaluator) throw py::value_error("the evaluator is closed");
  s.backend =
      std::make_shared<env::EvaluatorBackend>(evaluator->evaluator, evaluator->compile_only);
  return s;
}

py::dict spaces_dict(const env::Spaces& s, std::int64_t vocab) {
  py::dict d;
  d["actions"] = s.actions;
  d["nnz_samples"] = s.nnz_samples;
  d["embedding_dim"] = s.embedding_dim;
  d["feature_dim"] = s.feature_dim;
  d["max_tokens"] = s.max_tokens;
  d["mask"] = std::string(to_string(s.mask));
  d["vocab_size"] = vocab;
  return d;
}

py::dict config_dict(const env::EnvConfig& c) {
  py::dict d = knob_values(env::env_knobs(), c);
  d["reward"] = knob_values(reward::reward_knobs(), c.reward);
  d["seed"] = c.seed;
  return d;
}

void bind_env_parts(py::module_& m) {
  bind_tokenizer(m);
  bind_task_source(m);
  bind_trajectory_writer(m);
  m.def("observe", &observe_task, py::arg("store"), py::arg("task"), py::arg("seed") = 0,
        py::arg("options") = py::dict(),
        "The matrix observation an episode of `task` with episode seed `seed` "
        "shows: rows, cols, "
        "embedding, features, count.");
  m.def("prompt_text", &task_prompt_text, py::arg("store"), py::arg("task"), py::arg("seed") = 0,
        py::arg("options") = py::dict(), py::arg("formats") = std::vector<std::string>{},
        py::arg("instructions") = false,
        "The task written out as text (env/prompt_text.hpp): the operation, the matrix's "
        "shape, the sampled nonzeros of observe()'s episode; with formats, each one's kernel "
        "signature and prelude; with instructions, how to answer.");
  m.def(
      "feature_names", [] { return env::feature_names(); },
      "The names of an observation's features: the pattern's, scaled, then the "
      "task's.");
  m.def("episode_seed", &env::episode_seed, py::arg("env_seed"), py::arg("episode_index"),
        "The episode seed an environment with this env seed uses for its n-th "
        "episode.");
}

}  // namespace sparserl::python
