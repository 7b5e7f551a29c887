// Evaluator (evaluator.hpp): the stages of one evaluation in order, the result cache, the per-URI
// matrix figures and the threads behind submit(). Each stage either fills the EvalResult and
// returns it, or hands on to the next; an exception escaping a stage (a matrix that does not load,
// an allocation failure) becomes an internal_error result at the outermost level.
#include "sparserl/reward/evaluator.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <list>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/reward/digest.hpp"
#include "sparserl/reward/in_flight.hpp"

namespace sparserl::reward {

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

// Longest compiler log copied into EvalResult::message (the whole log stays in compile.log).
constexpr std::size_t kMaxMessageLog = 4000;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::string trim_log(std::string log) {
  while (!log.empty() && (log.back() == '\n' || log.back() == ' ' || log.back() == '\r')) {
    log.pop_back();
  }
  if (log.size() > kMaxMessageLog) log = log.substr(0, kMaxMessageLog) + " [...]";
  return log;
}

// The cached verdicts: those that belong to the program, not to the circumstances of one run.
bool cacheable(const EvalResult& r) {
  switch (r.error) {
    case ErrorKind::timeout:
    case ErrorKind::crash:
    case ErrorKind::internal_error:
    case ErrorKind::no_gpu:
      return false;
    default:
      return true;
  }
}

// EvalResults by key: a bounded LRU in memory and, optionally, one file per key on disk (written to
// a temporary file and renamed, so concurrent writers and readers never see half a file).
class ResultCache {
 public:
  static constexpr std::string_view kMagic = "sparserl-result-v1\n";

  ResultCache(std::size_t capacity, std::optional<fs::path> dir)
      : capacity_(capacity), dir_(std::move(dir)) {
    if (dir_) fs::create_directories(*dir_);
  }

  std::optional<EvalResult> find(const std::string& key) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (auto it = index_.find(key); it != index_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        return it->second->second;
      }
    }
    if (!dir_) return std::nullopt;
    std::ifstream in(*dir_ / key, std::ios::binary);
    if (!in) return std::nullopt;
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.compare(0, kMagic.size(), kMagic) != 0) return std::nullopt;
    try {
      const std::string_view body = std::string_view(bytes).substr(kMagic.size());
      Reader r(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(body.data()),
                                             body.size()));
      EvalResult result = read_eval_result(r);
      r.expect_end();
      remember(key, result);
      return result;
    } catch (const ProtocolError&) {
      return std::nullopt;  // a corrupt or foreign file: ignored, replaced by the next insert
    }
  }

  void insert(const std::string& key, const EvalResult& result) {
    remember(key, result);
    if (!dir_) return;
    Writer w;
    write_eval_result(w, result);
    const fs::path tmp =
        *dir_ / (key + ".tmp." + std::to_string(::getpid()) + "." +
                 std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())));
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(kMagic.data(), static_cast<std::streamsize>(kMagic.size()));
      out.write(reinterpret_cast<const char*>(w.data().data()),
                static_cast<std::streamsize>(w.data().size()));
      if (!out) {
        std::error_code ec;
        fs::remove(tmp, ec);
        return;  // the disk store is an optimisation, never a failure
      }
    }
    std::error_code ec;
    fs::rename(tmp, *dir_ / key, ec);
    if (ec) fs::remove(tmp, ec);
  }

 private:
  void remember(const std::string& key, const EvalResult& result) {
    if (capacity_ == 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = index_.find(key); it != index_.end()) {
      it->second->second = result;
      lru_.splice(lru_.begin(), lru_, it->second);
      return;
    }
    lru_.emplace_front(key, result);
    index_[key] = lru_.begin();
    while (lru_.size() > capacity_) {
      index_.erase(lru_.back().first);
      lru_.pop_back();
    }
  }

  std::size_t capacity_;
  std::optional<fs::path> dir_;
  std::mutex mutex_;
  std::list<std::pair<std::string, EvalResult>> lru_;
  std::unordered_map<std::string, std::list<std::pair<std::string, EvalResult>>::iterator> index_;
};

// A fixed set of threads running queued tasks in order.
class TaskThreads {
 public:
  explicit TaskThreads(int count) {
    for (int i = 0; i < count; ++i) {
      threads_.emplace_back([this] {
        for (;;) {
          std::function<void()> task;
          {
            std::unique_lock<std::mutex> lock(mutex_);
            cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
            if (queue_.empty()) return;
            task = std::move(queue_.front());
            queue_.pop_front();
          }
          task();
        }
      });
    }
  }
  ~TaskThreads() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void push(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

WorkerPoolConfig pool_config(const EvaluatorConfig& c) {
  WorkerPoolConfig p;
  p.worker_path = c.worker_path.empty() ? find_worker_executable() : c.worker_path;
  p.compile_workers = c.compile_workers;
  p.gpu_workers = c.gpu_workers;
  p.compile_deadline = c.compile_deadline;
  p.gpu_deadline = c.gpu_deadline;
  p.startup_deadline = c.startup_deadline;
  p.recycle_after = c.recycle_after;
  p.sandbox = c.sandbox;
  p.gpu_caches = c.gpu_caches;
  p.log = c.log;
  return p;
}

datasets::StoreOptions store_options(const EvaluatorConfig& c) {
  datasets::StoreOptions o;
  o.indexes = c.index_dirs;
  o.cache_capacity = c.matrix_cache_entries;
  return o;
}

CompileCacheOptions compile_cache_options(const EvaluatorConfig& c) {
  CompileCacheOptions o;
  o.max_entries = c.compile_cache_entries;
  if (c.cache_dir) o.directory = *c.cache_dir / "compile";
  return o;
}

}  // namespace

fs::path find_worker_executable() {
  std::vector<fs::path> tried;
  auto usable = [&tried](const fs::path& p) {
    tried.push_back(p);
    return !p.empty() && ::access(p.c_str(), X_OK) == 0;
  };
  if (const char* env = std::getenv("SPARSERL_WORKER"); env != nullptr && *env != '\0') {
    if (usable(env)) return env;
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    if (usable(self.parent_path() / "sparserl-worker"))
      return self.parent_path() / "sparserl-worker";
    // The build tree: tools/sparserl and tests/<folder>/<test> beside reward/sparserl-worker.
    for (const fs::path& up :
         {self.parent_path().parent_path(), self.parent_path().parent_path().parent_path()}) {
      if (usable(up / "reward" / "sparserl-worker")) return up / "reward" / "sparserl-worker";
    }
  }
#ifdef SPARSERL_WORKER_BUILD_PATH
  if (usable(SPARSERL_WORKER_BUILD_PATH)) return SPARSERL_WORKER_BUILD_PATH;
#endif
  std::string list;
  for (const auto& p : tried) list += (list.empty() ? "" : ", ") + p.string();
  throw std::invalid_argument(
      "cannot find the sparserl-worker executable (set SPARSERL_WORKER or "
      "EvaluatorConfig::worker_path); tried: " +
      list);
}

// Checks what the pool, the compile cache and the matrix store do not check themselves.
static EvaluatorConfig validated(EvaluatorConfig c) {
  if (c.arch.rfind("sm_", 0) != 0 || c.arch.size() < 5 ||
      c.arch.find_first_not_of("0123456789", 3) != std::string::npos) {
    throw std::invalid_argument("EvaluatorConfig.arch: expected sm_XX (e.g. sm_90), got '" +
                                c.arch + "'");
  }
  if (c.gpu_deadline_factor > 0 && c.gpu_deadline_floor.count() <= 0) {
    throw std::invalid_argument(
        "EvaluatorConfig.gpu_deadline_floor: must be positive when gpu_deadline_factor > 0");
  }
  if (c.protocol.random_inputs < 1 || c.protocol.timed_runs < 1 || c.protocol.warmup_runs < 0) {
    throw std::invalid_argument(
        "EvaluatorConfig.protocol: random_inputs and timed_runs must be >= 1, warmup_runs >= 0");
  }
  const ProgramLimits& l = c.limits;
  if (l.max_program_bytes == 0 || l.max_block < 1 || l.max_grid < 1 || l.max_shared_bytes < 0) {
    throw std::invalid_argument(
        "EvaluatorConfig.limits: program size, block, grid and shared memory must be positive");
  }
  return c;
}

struct Evaluator::Impl {
  explicit Impl(EvaluatorConfig c)
      : cfg(validated(std::move(c))),
        pool(pool_config(cfg)),
        compile_cache(compile_cache_options(cfg)),
        results(cfg.result_cache_entries,
                cfg.cache_dir ? std::optional<fs::path>(*cfg.cache_dir / "results") : std::nullopt),
        store(cfg.data_dir.empty() ? datasets::default_data_dir() : cfg.data_dir,
              store_options(cfg)) {
    int threads = cfg.evaluation_threads;
    if (threads <= 0) {
      const int cores = std::max(1, static_cast<int>(allowed_cpus().size()));
      const int workers = (cfg.compile_workers > 0 ? cfg.compile_workers : cores) +
                          std::max(0, cfg.gpu_workers);
      threads = std::max(4, 2 * workers);
    }
    tasks = std::make_unique<TaskThreads>(threads);
  }

  ~Impl() {
    stopping = true;
    tasks.reset();  // in-flight evaluations finish; queued ones answer at once
    pool.shutdown();
  }

  EvaluatorConfig cfg;
  WorkerPool pool;
  CompileCache compile_cache;
  ResultCache results;
  datasets::MatrixStore store;
  std::unique_ptr<TaskThreads> tasks;
  std::atomic<bool> stopping{false};

  mutable std::mutex mutex;
  std::unordered_map<std::string, std::string> digests;  // canonical URI -> matrix digest
  std::optional<std::string> arch;
  bool no_gpu_said = false;
  EvaluatorStats stats;
  std::mutex rerun_lane;  // gpu_timeout_rerun's second runs, one at a time

  void log(const std::string& line) {
    if (cfg.log) {
      cfg.log(line);
    } else {
      std::cerr << "sparserl evaluator: " << line << '\n';
    }
  }

  std::string resolve_arch() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (arch) return *arch;
    }
    std::string chosen = cfg.arch;
    if (cfg.gpu_workers != 0) {
      const GpuInfo info = pool.gpu_info();
      if (!info.devices.empty()) chosen = info.devices.front().arch;
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (!arch) arch = chosen;
    return *arch;
  }

  void say_no_gpu(const std::string& why) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (no_gpu_said) return;
      no_gpu_said = true;
    }
    log("no GPU (" + why + "): evaluations stop after the compile stage");
  }

  // The matrix and its digest (computed once per URI: it reads every value). A group of G
  // candidates on a task the evaluator has not seen arrives at once: without coalescing every one
  // of them would read or generate the matrix and hash it again (G copies of a 40M-nonzero matrix
  // in memory at once), so concurrent first requests for a URI share one load and one digest.
  struct MatrixAndDigest {
    std::shared_ptr<const datasets::SparseMatrix> matrix;
    std::string digest;
  };
  std::pair<std::shared_ptr<const datasets::SparseMatrix>, std::string> matrix(
      const std::string& uri) {
    const datasets::MatrixUri parsed = datasets::MatrixUri::parse(uri);
    const std::string canonical = parsed.str();
    MatrixAndDigest loaded = matrix_loads.run(canonical, [&] {
      MatrixAndDigest l{store.load(parsed), {}};
      {
        std::lock_guard<std::mutex> lock(mutex);
        ++stats.matrix_loads;
        if (auto it = digests.find(canonical); it != digests.end()) l.digest = it->second;
      }
      if (l.digest.empty()) {
        l.digest = l.matrix->digest();
        std::lock_guard<std::mutex> lock(mutex);
        if (digests.size() > 4096) digests.clear();
        digests.emplace(canonical, l.digest);
      }
      return l;
    }).value;
    return {std::move(loaded.matrix), std::move(loaded.digest)};
  }

  // The digest of a URI's matrix when it has been computed before (nullopt too for a URI that
  // does not parse: loading it says why).
  std::optional<std::string> known_digest(const std::string& uri) {
    std::string canonical;
    try {
      canonical = datasets::MatrixUri::parse(uri).str();
    } catch (const std::exception&) {
      return std::nullopt;
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = digests.find(canonical); it != digests.end()) return it->second;
    return std::nullopt;
  }

  // The task's ABI constants for `format`, and its matrix's digest (into r.matrix_digest), with
  // the matrix loaded only when one of them is not known yet. Both are computed once per (matrix,
  // op, k, format): the padded formats' counts read the whole matrix, and a group of candidates on
  // one task asks for the same ones. A task seen before therefore needs neither the matrix nor the
  // store: before, a matrix that had left the store's LRU (matrix_cache_entries) was read or
  // generated again (0.2-4.6 s for a large-regime matrix) for a digest and constants already
  // known. nullopt, with r's error and message set, when the evaluation stops here.
  std::optional<Constants> task_constants(const datasets::Task& task, const FormatSpec& format,
                                          EvalResult& r) {
    std::shared_ptr<const datasets::SparseMatrix> m;
    const auto load = [&] {
      try {
        std::tie(m, r.matrix_digest) = matrix(task.uri);
        return true;
      } catch (const std::exception& e) {
        r.error = ErrorKind::internal_error;
        r.message = std::string(kMatrixLoadFailure) + task.uri + " cannot be loaded: " + e.what();
        return false;
      }
    };
    if (std::optional<std::string> known = known_digest(task.uri)) {
      r.matrix_digest = std::move(*known);
    } else if (!load()) {
      return std::nullopt;
    }
    if (task.op == datasets::Op::spmm && task.k < 1) {
      r.error = ErrorKind::internal_error;
      r.message = "task " + task.str() + ": SpMM needs k >= 1";
      return std::nullopt;
    }
    const std::string key = r.matrix_digest + "|" + std::string(datasets::to_string(task.op)) +
                            "|" + std::to_string(task.k) + "|" + format.str();
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (auto it = constants_cache.find(key); it != constants_cache.end()) return it->second;
    }
    if (!m && !load()) return std::nullopt;
    Constants c = compute_constants(*m, task.op, task.k, format);
    std::lock_guard<std::mutex> lock(mutex);
    if (constants_cache.size() > 4096) constants_cache.clear();
    constants_cache.emplace(key, c);
    return c;
  }
  std::unordered_map<std::string, Constants> constants_cache;  // guarded by mutex

  static std::string result_key(const std::string& cubin, const std::string& matrix_digest,
                                const datasets::Task& task, const FormatSpec& format,
                                const std::vector<ResolvedLaunch>& launches,
                                const std::string& device, const GpuProtocol& protocol) {
    Sha256 h;
    // The protocol version covers the checking rules too: a verdict of older rules is never reused.
    h.update_field("sparserl-result-key-v" + std::to_string(kProtocolVersion));
    h.update_field(sha256_hex(cubin));
    h.update_field(matrix_digest);
    h.update_field(datasets::to_string(task.op));
    h.update_field(datasets::to_string(task.dtype));
    h.update_field(std::to_string(task.k));
    h.update_field(format.str());
    for (const auto& l : launches) {
      h.update_field(l.kernel + " " + std::to_string(l.grid) + " " + std::to_string(l.block) + " " +
                     std::to_string(l.smem_bytes));
    }
    h.update_field(device);
    h.update_field(protocol.str());
    return h.finish_hex();
  }

  // The seed of this evaluation's random inputs: the configured seed mixed with the cubin and the
  // matrix, so that every (program, matrix) pair sees its own inputs, reproducibly.
  static std::uint64_t evaluation_seed(std::uint64_t base, const std::string& cubin_digest,
                                       const std::string& matrix_digest) {
    Sha256 h;
    h.update_field(std::to_string(base));
    h.update_field(cubin_digest);
    h.update_field(matrix_digest);
    const auto d = h.finish();
    std::uint64_t seed = 0;
    for (int i = 0; i < 8; ++i) seed = (seed << 8) | d[static_cast<std::size_t>(i)];
    return seed;
  }

  EvalResult evaluate(const datasets::Task& task, std::string_view program,
                      const EvaluateOptions& options) {
    const auto start = Clock::now();
    EvalResult r;
    {
      std::lock_guard<std::mutex> lock(mutex);
      ++stats.evaluations;
    }
    if (stopping) {
      r.error = ErrorKind::internal_error;
      r.message = "the evaluator is shutting down";
      return r;
    }
    try {
      run_stages(task, program, options, r);
      // A program refused before the GPU stages was still judged where a GPU is present: its
      // reward is the full formula's (no test term), not the compile-only one, and no "no GPU"
      // notice may be printed for it.
      if (!r.gpu_available && !options.compile_only && cfg.gpu_workers != 0) {
        r.gpu_available = !pool.gpu_info().devices.empty();
      }
    } catch (const std::exception& e) {
      r.error = ErrorKind::internal_error;
      r.message = e.what();
    }
    r.wall_ms = ms_since(start);
    return r;
  }

  // `calibrating`: this is the calibration run of calibrate_deadline(), which must not recurse.
  void run_stages(const datasets::Task& task, std::string_view program,
                  const EvaluateOptions& options, EvalResult& r, bool calibrating = false) {
    r.program_digest = sha256_hex(program);
    auto phase_start = Clock::now();
    // Closes the profiling phase that began at the previous call (EvalResult::phases).
    const auto phase = [&](const char* name) {
      const auto now = Clock::now();
      r.phases.push_back({name, std::chrono::duration<double, std::milli>(now - phase_start).count()});
      phase_start = now;
    };

    // Parse and static checks.
    r.stage = Stage::parse;
    StaticCheckResult checked = check_program(program, task.op, cfg.limits);
    if (checked.program) r.stage = Stage::static_check;
    if (!checked.ok()) return refuse(*checked.failure, r);
    const Program& prog = *checked.program;

    // The matrix's digest, its constants for this format, the launches on them.
    const std::optional<Constants> constants = task_constants(task, prog.format, r);
    if (!constants) return;
    GeometryResult geometry = resolve_launches(prog, *constants, cfg.limits);
    if (!geometry.ok()) return refuse(*geometry.failure, r);
    phase("checks");

    // Compile: the cache, else a compile worker.
    CompileRequest request;
    request.source = compile_source(task.dtype, *constants, prog.text);
    request.arch = resolve_arch();
    request.options = cfg.nvrtc_options;
    request.name = std::string(kProgramFileName);
    const std::string key = compile_cache_key(request, nvrtc_version());
    // Identical requests in flight at the same time (a group of G completions that agree) share
    // one compile.
    InFlight<CompileOutcome>::Answer compile_answer =
        compiles.run(key, [&] { return compile(key, request); });
    if (!compile_answer.value.result) {
      r.stage = Stage::compile;
      r.error = compile_answer.value.error;
      r.message = std::move(compile_answer.value.message);
      return;
    }
    std::optional<CompileResult> compiled = std::move(compile_answer.value.result);
    if (compile_answer.shared) compiled->cached = true;
    phase("compile");
    r.stage = Stage::compile;
    r.compile = compiled->figures();
    if (!compiled->ok) {
      r.error = compiled->internal_error ? ErrorKind::internal_error : ErrorKind::compile_error;
      r.message = trim_log(compiled->log);
      if (r.message.empty()) r.message = "NVRTC failed without a log";
      return;
    }
    r.compiled = true;
    if (auto failure = check_resources(geometry.launches, *compiled, cfg.limits)) {
      return refuse(*failure, r);
    }

    // The GPU stages.
    if (options.compile_only) return;
    if (cfg.gpu_workers == 0) {
      say_no_gpu("gpu_workers = 0");
      return;
    }
    const GpuInfo gpu = pool.gpu_info();
    if (gpu.devices.empty()) {
      say_no_gpu(gpu.error);
      return;
    }
    GpuRequest g;
    g.task = task;
    g.data_dir = store.data_dir().string();
    for (const auto& d : cfg.index_dirs) g.index_dirs.push_back(d.string());
    g.matrix_digest = r.matrix_digest;
    g.format = prog.format;
    g.launches = geometry.launches;
    const GpuProtocol& protocol = options.protocol ? *options.protocol : cfg.protocol;
    g.protocol = protocol;
    g.protocol.seed = evaluation_seed(protocol.seed, sha256_hex(compiled->cubin), r.matrix_digest);
    const std::string rkey = result_key(compiled->cubin, r.matrix_digest, task, prog.format,
                                        geometry.launches, gpu.devices.front().name, protocol);
    if (!calibrating) calibrate_deadline(task, deadline_key(g), options);
    phase("calibrate");
    // Identical evaluations in flight at the same time share one GPU run: one measurement, one
    // verdict (and no timing noise between copies of one program).
    const std::string device = gpu.devices.front().name;
    InFlight<GpuOutcome>::Answer answer =
        gpu_runs.run(rkey, [&] { return run_on_gpu(rkey, std::move(g), compiled->cubin); });
    GpuOutcome& outcome = answer.value;
    phase("gpu_request");
    switch (outcome.kind) {
      case GpuOutcome::Kind::no_gpu:
        say_no_gpu(outcome.message);
        return;
      case GpuOutcome::Kind::worker_failed:
        r.stage = Stage::run;
        r.gpu_available = true;
        r.device = device;
        r.error = outcome.error;
        r.message = std::move(outcome.message);
        return;
      case GpuOutcome::Kind::refused:
        r.error = ErrorKind::internal_error;
        r.message = std::move(outcome.message);
        return;
      case GpuOutcome::Kind::ran:
        r.result_cached = outcome.from_cache || answer.shared;
        merge_gpu_result(std::move(outcome.ran), r);
        return;
    }
  }

  // The compile stage's answer for one compile cache key: the cache, else a compile worker (and
  // then the cache). Without a result, error and message say why no compile happened.
  struct CompileOutcome {
    std::optional<CompileResult> result;
    ErrorKind error = ErrorKind::none;
    std::string message;
  };

  CompileOutcome compile(const std::string& key, const CompileRequest& request) {
    CompileOutcome out;
    out.result = compile_cache.find(key);
    if (out.result) return out;
    WorkerReply reply = pool.submit(WorkerRole::compile, request).get();
    if (reply.error != ErrorKind::none) {
      out.error = reply.error;
      out.message = "compile worker: " + reply.message;
      return out;
    }
    if (auto* refused = std::get_if<ErrorResponse>(&*reply.response)) {
      out.error = ErrorKind::internal_error;
      out.message = "compile worker refused the request: " + refused->message;
      return out;
    }
    out.result = std::move(std::get<CompileResponse>(*reply.response).result);
    compile_cache.insert(key, *out.result);
    return out;
  }

  // The GPU stage's answer for one result key: the result cache, else a GPU worker (and then the
  // cache, for verdicts that belong to the program).
  struct GpuOutcome {
    enum class Kind { ran, no_gpu, worker_failed, refused };
    Kind kind = Kind::ran;
    EvalResult ran;          // Kind::ran: the worker's (or the cache's) result
    bool from_cache = false;
    ErrorKind error = ErrorKind::none;  // Kind::worker_failed
    std::string message;
  };

  // The cubin goes into the request only on a cache miss (it is the request's bulk).
  GpuOutcome run_on_gpu(const std::string& rkey, GpuRequest request, const std::string& cubin) {
    GpuOutcome out;
    if (std::optional<EvalResult> hit = results.find(rkey)) {
      std::lock_guard<std::mutex> lock(mutex);
      ++stats.result_cache_hits;
      out.ran = std::move(*hit);
      out.from_cache = true;
      return out;
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      ++stats.result_cache_misses;
      ++stats.gpu_requests;
    }
    const std::string dkey = deadline_key(request);
    const bool rerun = rerun_timeouts();
    // Kept for a second run where one may come: the request without its cubin (ask_gpu adds it).
    WorkerReply reply = rerun ? ask_gpu(dkey, request, cubin) : ask_gpu(dkey, std::move(request), cubin);
    if (rerun && ended_in_timeout(reply)) {
      // gpu_timeout_rerun: the timeout may be a neighbour's hang holding this program's fault. The
      // runs again go one at a time: the hang's own second run, which times out again, would hold
      // the program's fault a second time were they side by side.
      {
        std::lock_guard<std::mutex> one_at_a_time(rerun_lane);
        reply = ask_gpu(dkey, std::move(request), cubin);
      }
      std::lock_guard<std::mutex> lock(mutex);
      ++stats.gpu_timeouts_rerun;
      if (!ended_in_timeout(reply)) ++stats.gpu_timeouts_overturned;
    }
    if (reply.error == ErrorKind::no_gpu) {
      out.kind = GpuOutcome::Kind::no_gpu;
      out.message = reply.message;
    } else if (reply.error != ErrorKind::none) {
      out.kind = GpuOutcome::Kind::worker_failed;
      out.error = reply.error;
      out.message = "GPU worker: " + reply.message;
    } else if (auto* refused = std::get_if<ErrorResponse>(&*reply.response)) {
      out.kind = GpuOutcome::Kind::refused;
      out.message = "GPU worker refused the request: " + refused->message;
    } else {
      out.ran = std::move(std::get<GpuResponse>(*reply.response).result);
      if (cacheable(out.ran)) results.insert(rkey, out.ran);
    }
    return out;
  }

  // One GPU request (with `cubin`) under the task's current limits; its answer, unless a timeout
  // the worker ended itself (no measure of the task), goes into the task's tables.
  WorkerReply ask_gpu(const std::string& dkey, GpuRequest request, const std::string& cubin) {
    request.cubin = cubin;
    request.wait_deadline_ms = wait_deadline_ms(dkey);
    const std::string bkey = baseline_key(request);
    if (use_baseline_hints()) {
      std::lock_guard<std::mutex> lock(mutex);
      if (auto it = baseline_hints.find(bkey); it != baseline_hints.end()) {
        request.baseline_hint = it->second.first;
        request.baseline_hint_paths = it->second.second;
      }
    }
    WorkerReply reply = pool.submit(WorkerRole::gpu, std::move(request), gpu_deadline(dkey)).get();
    if (reply.error == ErrorKind::none && !ended_in_timeout(reply)) {
      const auto* answer = std::get_if<GpuResponse>(&*reply.response);
      answered_in(dkey, reply.run_ms, answer != nullptr ? longest_candidate_wait_ms(answer->result) : 0.0);
      if (answer != nullptr && answer->result.timed && !answer->result.timing.baseline_algorithm.empty()) {
        std::lock_guard<std::mutex> lock(mutex);
        if (baseline_hints.size() >= kDeadlineTasks) baseline_hints.clear();
        baseline_hints[bkey] = {answer->result.timing.baseline_algorithm, answer->result.timing.baseline_paths};
      }
    }
    return reply;
  }

  // EvaluatorConfig::gpu_baseline_hints applies: every GPU is the same model, so a path chosen on
  // one is the path its twin would choose.
  bool use_baseline_hints() {
    if (!cfg.gpu_baseline_hints) return false;
    const GpuInfo info = pool.gpu_info();
    const std::vector<GpuDevice>& devices = info.devices;
    return std::all_of(devices.begin(), devices.end(),
                       [&](const GpuDevice& d) { return d.name == devices.front().name; });
  }

  // A timeout at either end: the pool's deadline on the request, or the worker's wait limit.
  static bool ended_in_timeout(const WorkerReply& reply) {
    if (reply.error == ErrorKind::timeout) return true;
    if (reply.error != ErrorKind::none) return false;
    const auto* answer = std::get_if<GpuResponse>(&*reply.response);
    return answer != nullptr && answer->result.error == ErrorKind::timeout;
  }

  // EvaluatorConfig::gpu_timeout_rerun applies: GPU workers share a device.
  bool rerun_timeouts() {
    return cfg.gpu_timeout_rerun && cfg.gpu_workers > static_cast<int>(pool.gpu_info().devices.size());
  }

  // The adaptive GPU deadline (EvaluatorConfig::gpu_deadline_factor): the slowest answered GPU
  // request per task and protocol, without the per-evaluation seed.
  static std::string deadline_key(const GpuRequest& request) {
    GpuProtocol protocol = request.protocol;
    protocol.seed = 0;
    return request.matrix_digest + "|" + request.task.str() + "|" + protocol.str();
  }

  // min(gpu_deadline, max(floor, factor x the slowest of `table` for `key`)), in ms; nullopt with
  // the adaptive deadline off or before the task has answers.
  std::optional<std::chrono::milliseconds> adaptive(const std::unordered_map<std::string, double>& table,
                                                    const std::string& key) {
    if (cfg.gpu_deadline_factor <= 0) return std::nullopt;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = table.find(key);
    if (it == table.end()) return std::nullopt;
    const double ms = std::max(static_cast<double>(cfg.gpu_deadline_floor.count()),
                               cfg.gpu_deadline_factor * it->second);
    return std::chrono::milliseconds(
        std::min<long long>(cfg.gpu_deadline.count(), static_cast<long long>(std::ceil(ms))));
  }

  // The pool's deadline on a whole request: from the task's slowest answers.
  std::optional<std::chrono::milliseconds> gpu_deadline(const std::string& key) {
    return adaptive(slowest_answer_ms, key);
  }

  // The GPU worker's own limit on each wait for a candidate's kernels (GpuRequest::
  // wait_deadline_ms): from the longest such waits among the task's answers; 0 (none) before the
  // task has answers or with the adaptive deadline off.
  std::uint32_t wait_deadline_ms(const std::string& key) {
    const std::optional<std::chrono::milliseconds> limit = adaptive(slowest_wait_ms, key);
    return limit ? static_cast<std::uint32_t>(limit->count()) : 0;
  }

  // Starts a task's adaptive deadline before its first candidate runs (EvaluatorConfig::
  // gpu_deadline_calibration): the calibration program's GPU answer on the task, under the full
  // deadline, is the first entry of its slowest answers. Concurrent first requests of one task (a
  // group of G samples) wait for one calibration. Each task is calibrated once: a failed
  // calibration (the plain CSR kernel refused or timed out there) leaves the task on the full
  // deadline until a candidate answers, and is not tried again.
  void calibrate_deadline(const datasets::Task& task, const std::string& dkey,
                          const EvaluateOptions& options) {
    if (!cfg.gpu_deadline_calibration || cfg.gpu_deadline_factor <= 0) return;
    const auto settled = [&] {
      std::lock_guard<std::mutex> lock(mutex);
      return slowest_answer_ms.count(dkey) > 0 || calibrated.count(dkey) > 0;
    };
    if (settled()) return;
    (void)calibrations.run(dkey, [&] {
      if (settled()) return true;
      {
        std::lock_guard<std::mutex> lock(mutex);
        forget_deadlines_if_full();
      }
      EvalResult c;
      run_stages(task, deadline_calibration_program(), options, c, true);
      std::lock_guard<std::mutex> lock(mutex);
      ++stats.deadline_calibrations;
      calibrated.insert(dkey);
      return slowest_answer_ms.count(dkey) > 0;
    });
  }

  void answered_in(const std::string& key, double run_ms, double wait_ms) {
    std::lock_guard<std::mutex> lock(mutex);
    if (slowest_answer_ms.count(key) == 0) forget_deadlines_if_full();
    double& slowest = slowest_answer_ms[key];
    slowest = std::max(slowest, run_ms);
    double& slowest_wait = slowest_wait_ms[key];
    slowest_wait = std::max(slowest_wait, wait_ms);
  }

  // RL on generated matrices meets a new task every episode group: the per-task deadline tables
  // are bounded. When one is full both are emptied (mutex held); a task met again is calibrated
  // again, which costs one plain CSR run.
  void forget_deadlines_if_full() {
    if (slowest_answer_ms.size() < kDeadlineTasks && calibrated.size() < kDeadlineTasks) return;
    slowest_answer_ms.clear();
    slowest_wait_ms.clear();
    calibrated.clear();
  }
  static constexpr std::size_t kDeadlineTasks = 1 << 16;

  std::unordered_map<std::string, double> slowest_answer_ms;  // guarded by mutex
  std::unordered_map<std::string, double> slowest_wait_ms;    // longest_candidate_wait_ms; mutex
  std::unordered_set<std::string> calibrated;  // deadline keys calibrated, answered or not; mutex
  // baseline_key -> (the chosen path, every path's figures) from the last timed answer; mutex.
  std::unordered_map<std::string, std::pair<std::string, std::string>> baseline_hints;

  InFlight<CompileOutcome> compiles;  // by compile cache key
  InFlight<GpuOutcome> gpu_runs;      // by result key
  InFlight<bool> calibrations;        // by deadline key
  InFlight<MatrixAndDigest> matrix_loads;  // by canonical matrix URI

  // The GPU worker's verdict and figures, with what this process knows (compile, digests) kept.
  static void merge_gpu_result(EvalResult gpu, EvalResult& r) {
    gpu.compile = r.compile;
    gpu.compiled = r.compiled;
    gpu.program_digest = r.program_digest;
    gpu.matrix_digest = r.matrix_digest;
    gpu.static_reason = r.static_reason;
    // The worker's phases belong to this evaluation only when it ran here.
    std::vector<PhaseTime> phases = std::move(r.phases);
    if (!r.result_cached) phases.insert(phases.end(), gpu.phases.begin(), gpu.phases.end());
    gpu.phases = std::move(phases);
    gpu.result_cached = r.result_cached;
    gpu.wall_ms = 0;
    r = std::move(gpu);
  }

  static void refuse(const StaticCheckFailure& failure, EvalResult& r) {
    r.error = error_kind(failure.reason);
    r.static_reason = std::string(to_string(failure.reason));
    r.message = failure.str();
  }
};

Evaluator::Evaluator(EvaluatorConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}

Evaluator::~Evaluator() = default;

EvalResult Evaluator::evaluate(const datasets::Task& task, std::string_view program,
                               const EvaluateOptions& options) {
  return impl_->evaluate(task, program, options);
}

std::future<EvalResult> Evaluator::submit(datasets::Task task, std::string program,
                                          EvaluateOptions options) {
  auto job = std::make_shared<std::packaged_task<EvalResult()>>(
      [impl = impl_.get(), task = std::move(task), program = std::move(program), options] {
        return impl->evaluate(task, program, options);
      });
  std::future<EvalResult> future = job->get_future();
  impl_->tasks->push([job] { (*job)(); });
  return future;
}

std::string Evaluator::arch() { return impl_->resolve_arch(); }

GpuInfo Evaluator::gpu_info() {
  if (impl_->cfg.gpu_workers == 0) {
    GpuInfo none;
    none.error = "GPU workers are disabled (gpu_workers = 0)";
    return none;
  }
  return impl_->pool.gpu_info();
}

EvaluatorStats Evaluator::stats() const {
  EvaluatorStats s;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    s = impl_->stats;
  }
  s.compiles_coalesced = impl_->compiles.shared();
  s.gpu_runs_coalesced = impl_->gpu_runs.shared();
  s.matrix_loads_coalesced = impl_->matrix_loads.shared();
  s.compile_cache = impl_->compile_cache.stats();
  s.pool = impl_->pool.stats();
  return s;
}

const EvaluatorConfig& Evaluator::config() const { return impl_->cfg; }

}  // namespace sparserl::reward
