// The shared set-up of the runner's commands (session.hpp).
#include "session.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>

#include "sparserl/experiments/report.hpp"
#include "sparserl/experiments/runner.hpp"
#include "sparserl/reward/reward.hpp"
#if defined(SPARSERL_HAVE_AGENTS)
#include "sparserl/agents/training.hpp"
#endif

namespace fs = std::filesystem;

namespace sparserl::experiments {

void Notices::say(const std::string& line) {
  std::lock_guard<std::mutex> lock(mutex_);
  out_ << line << '\n' << std::flush;
}

void Notices::record(const std::string& line) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (file_.empty()) {
    pending_.push_back(line);
    return;
  }
  std::ofstream(file_, std::ios::app) << line << '\n';
}

void Notices::record_to(const fs::path& file) {
  std::lock_guard<std::mutex> lock(mutex_);
  file_ = file;
  std::ofstream out(file_, std::ios::app);
  for (const std::string& line : pending_) out << line << '\n';
  pending_.clear();
}

int parallel_searches(const Session& s, std::int64_t configured) {
  if (configured > 0) return static_cast<int>(configured);
  int workers = s.evaluator ? s.evaluator->config().gpu_workers : 0;
  if (workers < 0) workers = static_cast<int>(s.gpu_info.devices.size());
  // The pool sends requests that come one at a time round every GPU, so each GPU worker sees
  // every task in flight; a worker keeps the matrices of its last 16 tasks within 8 GiB
  // (GpuSession::load_matrix), and more than 4 large matrices at once would not fit.
  return std::clamp(workers, 2, 4);
}

fs::path data_dir(const Config& config, const fs::path& root) {
  if (!config.is_set("data.data_dir")) {
    if (const char* env = std::getenv("SPARSERL_DATA_DIR"); env != nullptr && *env != '\0') {
      return fs::absolute(env).lexically_normal();
    }
  }
  return resolve_path(root, config.string("data.data_dir"));
}

std::vector<fs::path> index_dirs(const Config& config, const fs::path& root,
                                 std::vector<std::string>* missing) {
  std::vector<fs::path> out;
  for (const std::string& dir : config.string_list("data.index_dirs")) {
    const fs::path path = resolve_path(root, dir);
    std::error_code ec;
    if (fs::exists(path, ec)) {
      out.push_back(path);
    } else if (missing != nullptr) {
      missing->push_back(path.string());
    }
  }
  return out;
}

void copy_folder_contents(const fs::path& from, const fs::path& to,
                          const std::vector<std::string>& except) {
  for (const fs::directory_entry& entry : fs::directory_iterator(from)) {
    const std::string name = entry.path().filename().string();
    if (std::find(except.begin(), except.end(), name) != except.end()) continue;
    fs::copy(entry.path(), to / name,
             fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  }
}

std::unique_ptr<Session> Session::open(Config config, fs::path root, std::ostream& log) {
  auto s = std::make_unique<Session>();
  s->config = std::move(config);
  s->root = std::move(root);
  s->notices = std::make_shared<Notices>(log);
  const Config& c = s->config;

  std::vector<std::string> missing;
  datasets::StoreOptions store_options;
  store_options.indexes = index_dirs(c, s->root, &missing);
  // Bounded by bytes (data.matrix_cache_mib), not by a count: 8 entries over the large train
  // part's 40 matrices made each SFT step of 16 examples generate most of its matrices again
  // (17 s a step on an H200 host, 2026-11-28).
  store_options.cache_capacity = std::numeric_limits<std::size_t>::max();
  store_options.cache_bytes = static_cast<std::size_t>(c.integer("data.matrix_cache_mib")) << 20;
  for (const std::string& m : missing) {
    s->say("data.index_dirs: " + m + " does not exist: skipped");
  }
  s->store = std::make_shared<datasets::MatrixStore>(data_dir(c, s->root), store_options);

  reward::EvaluatorConfig evaluator = evaluator_config(c, s->root);
  // The pool's notices (its sandbox table, worker events) go to evaluator.log; trouble is also
  // said on stderr. It says "no GPU" in its own words, more than once: the session says it once,
  // below.
  evaluator.log = [notices = s->notices](std::string_view line) {
    notices->record(std::string(line));
    if (line.rfind("no GPU", 0) == 0) return;
    for (const char* trouble : {"problem", "fail", "crash", "error", "killed", "timed out"}) {
      if (line.find(trouble) != std::string_view::npos) {
        notices->say("evaluator: " + std::string(line));
        return;
      }
    }
  };
  try {
    s->evaluator = std::make_shared<reward::Evaluator>(std::move(evaluator));
  } catch (const std::invalid_argument& e) {
    throw RunnerError(std::string("[evaluator]: ") + e.what());
  }
  const bool compile_only = c.boolean("evaluator.compile_only");
  s->backend = std::make_shared<env::EvaluatorBackend>(s->evaluator, compile_only);
  s->gpu = s->backend->gpu_available();
  s->gpu_info = s->evaluator->gpu_info();
  if (!s->gpu) {
    s->say(compile_only ? "evaluator.compile_only = true: only the compile stage of the reward runs"
                        : kNoGpuNotice);
    reward::compile_only_notice_given();
  }
  s->tokenizer = std::make_shared<const env::Tokenizer>();
  return s;
}

std::unique_ptr<env::SparseCudaEnv> Session::make_env(const env::EnvConfig& env_config,
                                                      env::TaskSource tasks) const {
  return std::make_unique<env::SparseCudaEnv>(env_config, tokenizer, std::move(tasks), store,
                                              backend);
}

ProgressOptions Session::progress() const { return progress_options(config); }

std::ostream& log_stream(const RunnerOptions& options) {
  return options.log != nullptr ? *options.log : std::cerr;
}

void pin_paths(Config& config, const fs::path& root, const RunnerOptions& options) {
  config.set("experiment.root", Value(root.string()));
  const fs::path runs = options.runs_dir
                            ? fs::absolute(*options.runs_dir).lexically_normal()
                            : resolve_path(root, config.string("experiment.output_dir"));
  config.set("experiment.output_dir", Value(runs.string()));
  config.set("data.data_dir", Value(data_dir(config, root).string()));
}

PartCommand start_part_command(Config& config, const RunnerOptions& options,
                               const std::string& section, std::string_view command,
                               const std::function<void(const fs::path&)>& check) {
  std::ostream& log = log_stream(options);
  const fs::path root = resolve_root(config, options.root);
  pin_paths(config, root, options);
  const bool explicit_test = options.part == "test";
  const std::string part_key = section + ".part";
  if (options.part) config.set(part_key, Value(*options.part));
  check_test_part(part_key, config.string(part_key), explicit_test, command);
  check(root);
  PartTasks part =
      part_tasks(config, root, config.string(part_key), config.integer(section + ".max_tasks"));
  check_test_matrices(part, config, root, explicit_test, command);
  if (!part.note.empty()) log << part.note << "\n";
  return {log, root, std::move(part)};
}

RunStart run_start(const Session& session, const RunnerOptions& options) {
  RunStart start;
  start.command = options.command;
  start.gpu = &session.gpu_info;
#if defined(SPARSERL_HAVE_AGENTS)
  start.libtorch_version = agents::libtorch_version();
  const std::int64_t seed = session.config.integer("agent.seed");
  if (seed >= 0) start.seeds.emplace_back("agent", static_cast<std::uint64_t>(seed));
#endif
  start.project_dir = project_source_dir();
  return start;
}

RunOutcome finish_run(const RunDirectory& run, const Config& config, RunStatus status,
                      std::ostream& log) {
  RunOutcome out;
  out.run_dir = run.root();
  out.status = status;
  try {
    const ReportOutcome report = write_report(run.root(), report_options(config));
    out.report = report.report;
    out.notes = report.skipped;
  } catch (const std::exception& e) {
    log << "report: not written: " << e.what() << "\n";
  }
  return out;
}

}  // namespace sparserl::experiments

namespace sparserl::experiments {

std::string describe_outcome(const RunOutcome& outcome, bool resumable) {
  std::string out = "status   " + std::string(to_string(outcome.status)) + "\n";
  out += "run      " + outcome.run_dir.string() + "\n";
  if (!outcome.report.empty()) out += "report   " + outcome.report.string() + "\n";
  // The report's notes on plots (gnuplot missing, no timings); absent curves are in report.md.
  for (const std::string& note : outcome.notes) {
    if (note.rfind("plots", 0) == 0) out += "note     " + note + "\n";
  }
  if (resumable && outcome.status == RunStatus::interrupted) {
    out += "resume   sparserl train --resume " + outcome.run_dir.string() + "\n";
  }
  return out;
}

int exit_status(const RunOutcome& outcome) {
  switch (outcome.status) {
    case RunStatus::completed:
      return 0;
    case RunStatus::interrupted:
      return 130;
    default:
      return 1;
  }
}

}  // namespace sparserl::experiments
