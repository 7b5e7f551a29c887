// `sparserl check PROGRAM --matrix FILE|URI ...`: evaluates one program file on one matrix with the
// evaluator a training run uses (sandboxed workers, the same checks and protocol) and prints the
// EvalResult, as a readable summary or as JSON. Exit status 0 whenever an evaluation was made,
// whatever its verdict; 2 with the usage for bad arguments; 1 with a message for inputs that cannot
// be read (the program file, the matrix).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "options.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/datasets/task.hpp"
#include "sparserl/datasets/text.hpp"
#include "sparserl/reward/evaluator.hpp"
#include "sparserl/reward/reward.hpp"

namespace sparserl::tools {
namespace {

namespace fs = std::filesystem;
using reward::EvalResult;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read the program file '" + path.string() + "'");
  std::stringstream s;
  s << in.rdbuf();
  if (in.bad()) throw std::runtime_error("error while reading '" + path.string() + "'");
  return s.str();
}

using datasets::fixed;

void print_summary(std::ostream& out, const std::string& program_path, const datasets::Task& task,
                   const EvalResult& r) {
  auto row = [&out](std::string_view key, const std::string& value) {
    out << key;
    for (std::size_t pad = key.size(); pad < 10; ++pad) out << ' ';
    out << value << '\n';
  };
  row("program", program_path + " (sha256 " + r.program_digest.substr(0, 16) + ")");
  row("task", task.str() + (r.matrix_digest.empty() ? "" : " (matrix " + r.matrix_digest + ")"));
  row("verdict", r.ok() ? "ok"
                        : std::string(reward::to_string(r.error)) +
                              (r.static_reason.empty() ? "" : " (" + r.static_reason + ")"));
  row("stage", std::string(reward::to_string(r.stage)));
  if (!r.message.empty()) {
    std::string message = r.message;
    std::replace(message.begin(), message.end(), '\n', ' ');
    if (message.size() > 600) message = message.substr(0, 600) + " [...]";
    row("message", message);
  }
  if (r.compiled || r.stage >= reward::Stage::compile) {
    const auto& c = r.compile;
    row("compile", fixed(c.compile_ms, 1) + " ms, " + c.arch + ", " +
                       std::to_string(c.max_registers) + " registers, " +
                       std::to_string(c.static_smem_bytes) + " B static smem, " +
                       std::to_string(c.spill_bytes) + " B spills, " +
                       std::to_string(c.local_bytes) + " B local" + (c.cached ? " (cached)" : ""));
  }
  if (!r.gpu_available) {
    row("gpu", "not used: only the compile stage ran");
  } else {
    row("gpu", r.device + (r.result_cached ? " (cached result)" : ""));
    if (r.check.inputs > 0 || r.stage >= reward::Stage::check) {
      row("check", std::to_string(r.check.inputs) + " random inputs, max error " +
                       fixed(r.check.max_error_ratio, 3) + " of tolerance" +
                       (r.check.bad_outputs > 0 ? ", " + std::to_string(r.check.bad_outputs) +
                                                      " bad outputs, first at row " +
                                                      std::to_string(r.check.first_bad_row)
                                                : ""));
    }
    if (r.timed) {
      const auto& t = r.timing;
      row("time", "median " + fixed(t.median_us, 2) + " us (p10 " + fixed(t.p10_us, 2) + ", p90 " +
                      fixed(t.p90_us, 2) + ", " + std::to_string(t.repetitions) + " runs, " +
                      std::to_string(t.launches_per_run) + " launches per run)");
      row("cusparse", t.baseline_algorithm + " median " + fixed(t.baseline_median_us, 2) + " us");
      row("speedup", fixed(t.speedup, 3) + "x, " + fixed(t.gflops, 1) + " GFLOP/s, " +
                         fixed(t.bandwidth_gbs, 1) + " GB/s (" +
                         fixed(100 * t.bandwidth_fraction, 1) + "% of copy bandwidth)");
    }
    if (r.conversion_ms > 0) row("convert", fixed(r.conversion_ms, 1) + " ms");
  }
  const reward::HierarchicalReward reward_formula;
  row("reward", reward_formula.breakdown(r).str());
  row("wall", fixed(r.wall_ms, 1) + " ms");
}

struct CheckArgs {
  std::string program;
  std::string matrix;
  std::string op = "spmv";
  std::string dtype = "f32";
  std::optional<datasets::Index> k;
  std::string arch{reward::kDefaultArch};
  bool compile_only = false;
  bool json = false;
  bool verbose = false;
  MatrixLocations where;
};

int run_check(const CheckArgs& a) {
  const std::string& program_path = a.program;
  datasets::Task task;
  task.op = *datasets::parse_op(a.op);
  task.dtype = *datasets::parse_dtype(a.dtype);
  if (task.op == datasets::Op::spmm) {
    task.k = a.k.value_or(32);
  } else if (a.k.value_or(1) != 1) {
    throw UsageError("--k applies to spmm only");
  }

  reward::EvaluatorConfig config;
  config.arch = a.arch;
  const bool compile_only = a.compile_only;
  config.compile_workers = 1;
  config.gpu_workers = compile_only ? 0 : -1;
  config.evaluation_threads = 1;
  if (a.where.data_dir) config.data_dir = *a.where.data_dir;
  config.index_dirs = a.where.index_paths();
  const bool verbose = a.verbose;
  config.log = [verbose](std::string_view line) {
    if (verbose) std::cerr << "sparserl check: " << line << '\n';
  };

  // Unreadable inputs stop here, before any worker starts.
  const std::string program = read_file(program_path);
  task.uri = matrix_uri<std::runtime_error>(a.matrix);
  {
    datasets::StoreOptions store_options;
    store_options.indexes = config.index_dirs;
    const datasets::MatrixStore store(
        config.data_dir.empty() ? datasets::default_data_dir() : config.data_dir, store_options);
    const auto uri = datasets::MatrixUri::parse(task.uri);
    if (uri.scheme != datasets::MatrixUri::Scheme::generated) (void)store.resolve(uri);
  }

  reward::Evaluator evaluator(config);
  reward::EvaluateOptions options;
  options.compile_only = compile_only;
  const EvalResult r = evaluator.evaluate(task, program, options);
  if (r.error == reward::ErrorKind::internal_error &&
      r.message.rfind(reward::kMatrixLoadFailure, 0) == 0) {
    throw std::runtime_error(r.message);  // the matrix file exists but does not read
  }
  if (a.json) {
    std::cout << r.to_json() << '\n';
  } else {
    print_summary(std::cout, program_path, task, r);
  }
  return 0;
}

// "sm_" and at least two digits: an architecture NVRTC compiles for.
std::string check_arch(const std::string& arch) {
  const bool ok = arch.rfind("sm_", 0) == 0 && arch.size() >= 5 &&
                  arch.find_first_not_of("0123456789", 3) == std::string::npos;
  return ok ? std::string() : arch + " does not look like sm_90";
}

Run declare_check(CLI::App& app) {
  app.description(
      "Evaluates one program (CUDA device code with //@format and //@launch directives) on one\n"
      "matrix, with the sandboxed workers, checks and timing protocol of a training run, and "
      "prints\n"
      "its EvalResult.");
  app.footer(
      "Exit status: 0 when an evaluation was made (whatever its verdict), 1 when the program or "
      "the\n"
      "matrix cannot be read, 2 for bad arguments.");
  auto a = std::make_shared<CheckArgs>();
  app.add_option("PROGRAM", a->program, "the program file")->required();
  app.add_option("--matrix", a->matrix,
                 "a Matrix Market file (.mtx, .mtx.gz, .tar.gz) or a matrix URI: "
                 "suitesparse-v1/GROUP/NAME, gen-v1/KIND?key=value&..., file:PATH")
      ->type_name("FILE|URI")
      ->required();
  one_of(app.add_option("--op", a->op, "the operation"), {"spmv", "spmm"});
  one_of(app.add_option("--dtype", a->dtype, "the value type"), {"f32", "f64"});
  app.add_option("--k", a->k, "dense columns of SpMM (default 32; SpMV has 1)")
      ->type_name("K")
      ->check(CLI::Range(datasets::Index{1}, datasets::Index{65536}));
  app.add_flag("--compile-only", a->compile_only,
               "stop after the compile stage (no GPU worker is started)");
  app.add_flag("--json", a->json, "print the EvalResult as one JSON object");
  app.add_option("--arch", a->arch,
                 "architecture to compile for where no GPU is present; with a GPU its own "
                 "architecture is used")
      ->type_name("sm_XX")
      ->check(check_arch);
  add_matrix_locations(app, a->where);
  app.add_flag("--verbose", a->verbose,
               "print the evaluator's log (sandbox limits, worker events) to stderr");
  return [a](const std::vector<std::string>&) { return run_check(*a); };
}

const CommandRegistration kCheck("check", "evaluate one program on one matrix (EvalResult)",
                                 declare_check);

}  // namespace
}  // namespace sparserl::tools
