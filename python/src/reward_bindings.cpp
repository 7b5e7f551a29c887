// sparserl._core's reward part: the Evaluator (the sandboxed worker pool,
// started once) with a batch evaluate() that submits every (task, program)
// before waiting on any and releases the GIL while it waits; EvalResult; the
// HierarchicalReward; the static checks a program extracted from an LM's
// completion can be read through; and the kernel ABI (signatures, prelude
// constants) the prompt builder renders.
#include <pybind11/stl.h>

#include <future>
#include <iostream>
#include <mutex>
#include <utility>

#include "bindings.hpp"
#include "convert.hpp"
#include "sparserl/env/info.hpp"
#include "sparserl/reward/abi.hpp"
#include "sparserl/reward/evaluator.hpp"
#include "sparserl/reward/program.hpp"
#include "sparserl/reward/reward.hpp"
#include "sparserl/reward/reward_knobs.hpp"
#include "sparserl/reward/static_checks.hpp"

namespace sparserl::python {

namespace {

py::dict check_to_dict(const reward::StaticCheckResult& r) {
  py::dict d;
  d["ok"] = r.ok();
  d["reason"] = r.failure ? std::string(to_string(r.failure->reason)) : std::string();
  d["message"] = r.failure ? r.failure->str() : std::string();
  d["line"] = r.failure ? r.failure->line : 0;
  d["column"] = r.failure ? r.failure->column : 0;
  d["format"] = r.program ? r.program->format.str() : std::string();
  d["kernels"] = r.program ? r.program->kernel_names() : std::vector<std::string>{};
  return d;
}

// The terms under the names env's info gives them ("reward.<term>", the prefix
// dropped), so that the list of terms is kept in one place.
py::dict breakdown_to_dict(const reward::RewardBreakdown& b) {
  env::Info info;
  env::add_reward_breakdown(info, b);
  return info_to_dict(info, "reward.");
}

void bind_eval_result(py::module_& m) {
  using reward::EvalResult;
  py::class_<EvalResult>(m, "EvalResult",
                         "Everything the evaluator learned about one program on one task.")
      .def_property_readonly("stage",
                             [](const EvalResult& r) { return std::string(to_string(r.stage)); })
      .def_property_readonly("error",
                             [](const EvalResult& r) { return std::string(to_string(r.error)); })
      .def_readonly("message", &EvalResult::message)
      .def_readonly("compiled", &EvalResult::compiled)
      .def_readonly("correct", &EvalResult::correct)
      .def_readonly("timed", &EvalResult::timed)
      .def_readonly("gpu_available", &EvalResult::gpu_available)
      .def_readonly("wall_ms", &EvalResult::wall_ms)
      .def_property_readonly("ok", &EvalResult::ok)
      .def("to_json", &EvalResult::to_json, "Every field as one JSON object (stable key names).")
      .def("__repr__", [](const EvalResult& r) {
        return "EvalResult(stage=" + std::string(to_string(r.stage)) +
               ", error=" + std::string(to_string(r.error)) + ")";
      });
}

void bind_reward(py::module_& m) {
  py::class_<reward::HierarchicalReward>(m, "HierarchicalReward",
                                         "The method's reward as a pure function of an EvalResult.")
      .def(py::init([](const py::dict& options) {
             reward::RewardConfig config;
             apply_options(reward::reward_knobs(), config, options, "reward option");
             return reward::HierarchicalReward(config);
           }),
           py::arg("options") = py::dict())
      .def("__call__",
           [](const reward::HierarchicalReward& r, const reward::EvalResult& e) { return r(e); })
      .def("breakdown",
           [](const reward::HierarchicalReward& r, const reward::EvalResult& e) {
             return breakdown_to_dict(r.breakdown(e));
           })
      .def_property_readonly("config", [](const reward::HierarchicalReward& r) {
        return knob_values(reward::reward_knobs(), r.config());
      });
}

// Notices of the pool (no GPU, worker failures): kept for Python, echoed on
// stderr unless quiet.
struct Notices {
  std::mutex mutex;
  std::vector<std::string> lines;
  bool quiet = false;
  void add(std::string_view line) {
    std::lock_guard<std::mutex> lock(mutex);
    lines.emplace_back(line);
    if (!quiet) std::cerr << line << "\n";
  }
};

std::shared_ptr<EvaluatorHandle> make_evaluator(const py::dict& options, const py::dict& protocol,
                                                const py::dict& sandbox, const py::object& data_dir,
                                                const py::object& index_dirs, bool compile_only,
                                                bool quiet) {
  reward::EvaluatorConfig config;
  apply_options(reward::evaluator_knobs(), config, options, "evaluator option");
  apply_options(reward::gpu_protocol_knobs(), config.protocol, protocol, "protocol option");
  apply_options(reward::sandbox_knobs(), config.sandbox, sandbox, "sandbox option");
  const std::vector<std::string> data = string_list(data_dir, "data_dir");
  if (!data.empty()) config.data_dir = data.front();
  for (const std::string& dir : string_list(index_dirs, "index_dirs"))
    config.index_dirs.emplace_back(dir);
  if (compile_only) config.gpu_workers = 0;
  auto notices = std::make_shared<Notices>();
  notices->quiet = quiet;
  config.log = [notices](std::string_view line) { notices->add(line); };
  auto handle = std::make_shared<EvaluatorHandle>();
  handle->compile_only = compile_only;
  handle->notices = [notices] {
    std::lock_guard<std::mutex> lock(notices->mutex);
    return notices->lines;
  };
  py::gil_scoped_release release;
  handle->evaluator = std::make_shared<reward::Evaluator>(std::move(config));
  return handle;
}

std::vector<reward::EvalResult> evaluate_batch(EvaluatorHandle& h,
                                               const std::vector<datasets::Task>& tasks,
                                               const std::vector<std::string>& programs,
                                               std::optional<bool> compile_only) {
  if (tasks.size() != programs.size()) {
    throw py::value_error("evaluate: " + std::to_string(tasks.size()) + " tasks for " +
                          std::to_string(programs.size()) +
                          " programs (give one task per program)");
  }
  reward::Evaluator& evaluator = h.get();
  reward::EvaluateOptions options;
  options.compile_only = compile_only.value_or(h.compile_only);
  py::gil_scoped_release release;
  std::vector<std::future<reward::EvalResult>> futures;
  futures.reserve(tasks.size());
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    futures.push_back(evaluator.submit(tasks[i], programs[i], options));
  }
  std::vector<reward::EvalResult> results;
  results.reserve(futures.size());
  for (auto& f : futures) results.push_back(f.get());
  return results;
}

py::dict gpu_info_to_dict(const reward::GpuInfo& info) {
  py::dict d;
  py::list devices;
  for (const reward::GpuDevice& g : info.devices) {
    py::dict dev;
    dev["ordinal"] = g.ordinal;
    dev["name"] = g.name;
    dev["arch"] = g.arch;
    dev["total_memory_bytes"] = g.total_memory_bytes;
    dev["multiprocessors"] = g.multiprocessors;
    devices.append(dev);
  }
  d["devices"] = devices;
  d["runtime_version"] = info.runtime_version;
  d["driver_version"] = info.driver_version;
  d["error"] = info.error;
  return d;
}

// The evaluator's counters that Python is shown, each under its key, in this order.
py::dict stats_to_dict(const reward::EvaluatorStats& s) {
  using S = reward::EvaluatorStats;
  static constexpr std::pair<const char*, std::uint64_t S::*> kCounters[] = {
      {"evaluations", &S::evaluations},
      {"result_cache_hits", &S::result_cache_hits},
      {"result_cache_misses", &S::result_cache_misses},
      {"gpu_requests", &S::gpu_requests},
      {"compiles_coalesced", &S::compiles_coalesced},
      {"gpu_runs_coalesced", &S::gpu_runs_coalesced},
      {"matrix_loads_coalesced", &S::matrix_loads_coalesced},
      {"matrix_loads", &S::matrix_loads}};
  py::dict d;
  for (const auto& [key, counter] : kCounters) d[key] = s.*counter;
  return d;
}

void bind_evaluator(py::module_& m) {
  py::class_<EvaluatorHandle, std::shared_ptr<EvaluatorHandle>>(
      m, "Evaluator",
      "The sandboxed evaluator: compile workers (NVRTC) and GPU workers, "
      "started once.")
      .def(py::init(&make_evaluator), py::arg("options") = py::dict(),
           py::arg("protocol") = py::dict(), py::arg("sandbox") = py::dict(),
           py::arg("data_dir") = py::none(), py::arg("index_dirs") = py::list(),
           py::arg("compile_only") = false, py::arg("quiet") = false)
      .def("evaluate", &evaluate_batch, py::arg("tasks"), py::arg("programs"),
           py::arg("compile_only") = py::none(),
           "One EvalResult per (task, program), in order; every program is "
           "submitted before any "
           "is waited for.")
      .def("gpu_available",
           [](EvaluatorHandle& h) {
             if (h.compile_only) return false;
             reward::Evaluator& e = h.get();
             py::gil_scoped_release release;
             return e.config().gpu_workers != 0 && !e.gpu_info().devices.empty();
           })
      .def("gpu_info",
           [](EvaluatorHandle& h) {
             reward::Evaluator& e = h.get();
             reward::GpuInfo info;
             {
               py::gil_scoped_release release;
               info = e.gpu_info();
             }
             return gpu_info_to_dict(info);
           })
      .def("arch",
           [](EvaluatorHandle& h) {
             reward::Evaluator& e = h.get();
             py::gil_scoped_release release;
             return e.arch();
           })
      .def("stats", [](EvaluatorHandle& h) { return stats_to_dict(h.get().stats()); })
      .def("notices", [](EvaluatorHandle& h) { return h.notices(); })
      .def("__copy__", [](const std::shared_ptr<EvaluatorHandle>& h) { return h; })
      .def(
          "__deepcopy__",
          [](const std::shared_ptr<EvaluatorHandle>& h, const py::dict&) { return h; },
          "One pool, however often a config holding it is copied.")
      .def_readonly("compile_only", &EvaluatorHandle::compile_only)
      .def_property_readonly("closed", [](const EvaluatorHandle& h) { return !h.evaluator; })
      .def(
          "close",
          [](EvaluatorHandle& h) {
            py::gil_scoped_release release;
            h.evaluator.reset();
          },
          "Stops the worker pool (environments that share this evaluator keep "
          "it alive until they close).");
}

void bind_abi(py::module_& m) {
  m.def(
      "check_program",
      [](const std::string& text, const std::string& op) {
        return check_to_dict(reward::check_program(text, op_from(op)));
      },
      py::arg("text"), py::arg("op") = "spmv",
      "The evaluator's parse and static checks on their own: ok, reason, "
      "message, line, column, "
      "format, kernels.");
  m.def(
      "abi_signature",
      [](const std::string& op, const std::string& format) {
        const auto f = reward::parse_format(format);
        if (!f)
          throw py::value_error("format: expected csr, coo, ell, sell or bsr, got '" + format +
                                "'");
        py::list args;
        for (const reward::KernelArg& a : reward::signature(op_from(op), *f).args) {
          args.append(py::make_tuple(std::string(a.name), std::string(reward::c_type(a.kind)),
                                     std::string(a.length), std::string(a.doc)));
        }
        return args;
      },
      py::arg("op"), py::arg("format"), "The kernel arguments: (name, C type, length, doc).");
  m.def(
      "abi_declaration",
      [](const std::string& op, const std::string& format, const std::string& kernel) {
        return reward::signature(op_from(op), format_from(format).format).declaration(kernel);
      },
      py::arg("op"), py::arg("format"), py::arg("kernel"));
  m.def(
      "abi_constants",
      [](const std::string& format) {
        const reward::Format f = format_from(format).format;
        py::list out;
        for (const reward::ConstantInfo& c : reward::constant_infos()) {
          if (c.format && *c.format != f) continue;
          out.append(py::make_tuple(std::string(c.name), std::string(c.doc)));
        }
        return out;
      },
      py::arg("format"), "The prelude constants a program of this format sees: (name, doc).");
  m.def(
      "compute_constants",
      [](const MatrixHandle& matrix, const std::string& op, std::int64_t k,
         const std::string& format) {
        py::list out;
        for (const auto& e :
             reward::compute_constants(*matrix.matrix, op_from(op), k, format_from(format))
                 .entries()) {
          out.append(py::make_tuple(e.name, e.value));
        }
        return out;
      },
      py::arg("matrix"), py::arg("op"), py::arg("k"), py::arg("format"));
  m.def(
      "render_prelude",
      [](const MatrixHandle& matrix, const std::string& op, const std::string& dtype,
         std::int64_t k, const std::string& format) {
        const auto d = datasets::parse_dtype(dtype);
        if (!d) throw py::value_error("dtype: expected 'f32' or 'f64', got '" + dtype + "'");
        return reward::render_prelude(
            *d, reward::compute_constants(*matrix.matrix, op_from(op), k, format_from(format)));
      },
      py::arg("matrix"), py::arg("op"), py::arg("dtype"), py::arg("k"), py::arg("format"),
      "The prelude the evaluator prepends: value_t and one #define per "
      "constant.");
  m.def("abi_text", &reward::render_abi_text, "The whole kernel ABI as `sparserl abi` prints it.");
}

}  // namespace

reward::Evaluator& EvaluatorHandle::get() {
  if (!evaluator) throw py::value_error("the evaluator is closed");
  return *evaluator;
}

void bind_reward_module(py::module_& m) {
  bind_eval_result(m);
  bind_reward(m);
  bind_evaluator(m);
  bind_abi(m);
}

}  // namespace sparserl::python
