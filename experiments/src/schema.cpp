// The schema of every configurable part of SparseRL Gym, section by section. Each key's default is the
// value the code uses when the key is absent, so a resolved config (config.resolved.toml) states every
// choice a run made. docs/config.md is rendered from this table (`sparserl config --markdown`).
#include "sparserl/experiments/config.hpp"

namespace sparserl::experiments {
namespace {

Schema build_schema() {
  Schema s;
  s.section("experiment", "What the run is called, its seed and where its run directory goes.")
      .string("name", "experiment", "name of the experiment; the run directory is <output_dir>/<name>__<seed>__<time>")
      .integer("seed", 0, "the seed every random choice of the run derives from", 0, 9.2e18)
      .string("output_dir", "runs", "folder that receives run directories")
      .string("description", "", "free text copied into run.json");

  s.section("data", "Which matrices the run uses and which operation it asks for.")
      .string("split", "", "split file (datasets/splits/*.split); empty: use `uris`")
      .string("part", "train", "part of the split to use", {"train", "val", "test"})
      .string_list("uris", {}, "task matrix URIs (suitesparse-v1/..., gen-v1/..., file:...) used when `split` is empty")
      .string("data_dir", "data", "where downloaded and converted matrices live ($SPARSERL_DATA_DIR overrides the default)")
      .string_list("index_dirs", {"../shared/matrices"},
                   "extra folders holding an INDEX.csv and the Matrix Market files it lists (missing folders are skipped)")
      .string("op", "spmv", "the operation", {"spmv", "spmm"})
      .string("dtype", "f32", "value type of the kernel's arrays", {"f32", "f64"})
      .integer("k", 8, "dense columns of X and Y for SpMM", 1, 1024)
      .integer("max_tasks", 0, "use at most this many matrices of the split or list (0: all)", 0, 1e9);

  s.section("evaluator", "The evaluator: compile and GPU workers, deadlines, caches and limits.")
      .string("arch", "sm_90", "GPU architecture to compile for when no GPU is present (a GPU's own arch wins)")
      .integer("compile_workers", 0, "compile worker processes (0: one per CPU core)", 0, 256)
      .integer("gpu_workers", 0, "GPU worker processes (0: one per visible GPU)", 0, 64)
      .boolean("compile_only", false, "stop after the compile stage even where a GPU is present")
      .real("compile_timeout_s", 30, "deadline of one compile, seconds", 0.1, 3600)
      .real("gpu_timeout_s", 120, "deadline of one GPU evaluation (load, check, time), seconds", 0.1, 3600)
      .integer("recycle_after", 200, "a worker is replaced after this many requests", 1, 1e9)
      .integer("cache_entries", 4096, "in-memory entries of the compile and result caches", 0, 1e9)
      .string("cache_dir", "", "on-disk compile cache folder (empty: memory only)")
      .integer("max_program_bytes", 65536, "longest program accepted by the static checks", 256, 1 << 24)
      .integer("max_smem_bytes", 49152, "shared memory per block (static + dynamic) above which a program is over the resource limit", 0, 1 << 20);

  s.section("sandbox", "Limits every worker process runs under (set one by one, checked and logged).")
      .integer("core_bytes", 0, "core dump size limit (0: no core dumps)", 0, 1e18)
      .integer("cpu_seconds", 600, "CPU-time limit of a worker process, seconds (it is recycled long before)", 1, 1e9)
      .integer("file_size_bytes", 64 << 20, "largest file a worker may write", 0, 1e18)
      .integer("open_files", 256, "open descriptors a worker may hold", 16, 1 << 20)
      .boolean("die_with_parent", true, "a worker is killed when the process that started it dies");

  s.section("check", "The correctness stage on the GPU.")
      .integer("random_inputs", 3, "fresh random inputs (values in [-1, 1]) checked per evaluation", 1, 64)
      .real("tolerance_factor", 8, "per-output tolerance = factor * eps(dtype) * (sqrt(row length) + 2) * sum_j |a_ij x_j|", 1, 1e6);

  s.section("timing", "The timing stage: CUPTI kernel time, candidate and cuSPARSE interleaved.")
      .boolean("enabled", true, "time correct kernels against cuSPARSE (false: the speed term is 0)")
      .integer("warmup", 5, "untimed runs of each before timing", 0, 1000)
      .integer("repetitions", 50, "timed repetitions of each, interleaved; the median is reported", 1, 100000)
      .boolean("flush_l2", true, "flush the L2 cache before every repetition");

  s.section("reward", "The hierarchical reward: R = R_compile + 1[compiled] R_test + 1[correct] r_eff shape(speedup) - r_pen 1[resource limit], clipped.")
      .real("compile_pass", 0.5, "R_compile when the program compiled")
      .real("compile_fail", -0.5, "R_compile when it did not")
      .real("test_pass", 0.5, "R_test when the output was correct")
      .real("test_fail", -0.5, "R_test when a compiled program failed on the GPU")
      .real("r_eff", 0.2, "weight of shape(speedup)")
      .real("r_pen", 0.2, "penalty for exceeding a resource limit")
      .string("shape", "linear", "speed shape: speedup - 1, log2(speedup), or tiers", {"linear", "log2", "tiers"})
      .real_list("tier_speedups", {1.0, 1.5, 2.0}, "tiers: ascending speedup thresholds", 0, 1e6)
      .real_list("tier_values", {1.0, 2.0, 3.0}, "tiers: shape value of each threshold")
      .real("clip_min", -1, "lower clip of the total")
      .real("clip_max", 3, "upper clip of the total");

  s.section("checkpoints", "Checkpoints in the run directory's checkpoints/ folder: step-NNNNNN/ with the policy's files and meta.json.")
      .integer("every", 100, "save a checkpoint every this many updates (0: only at the end of a stage)", 0, 1e12)
      .integer("keep_last", 3, "keep the newest N checkpoints (the best one is kept as well)", 0, 1e6)
      .string("best_metric", "reward/mean", "statistic that picks the best checkpoint, as named in metrics.jsonl (empty: keep no best)")
      .string("best_mode", "max", "whether the largest or the smallest value of best_metric is best", {"max", "min"});

  s.section("report", "report.md and its PNG plots (gnuplot); `sparserl plot RUN_DIR` redraws them.")
      .boolean("plots", true, "draw PNG plots with gnuplot (skipped, and said so in the report, when gnuplot is absent)")
      .string("gnuplot", "gnuplot", "the gnuplot program (a name on PATH or a path)")
      .string_list("curves", {"reward/mean", "env/compile_rate", "env/correct_rate", "env/speedup_geomean"},
                   "statistics of metrics.jsonl drawn as training curves, one plot each (absent ones are listed as absent)")
      .integer("bar_matrices", 60, "at most this many matrices in the per-matrix speedup bars (the slowest and fastest are shown)", 2, 100000);

  s.section("progress", "Progress lines of long work (train, bench, tune) on stderr: done / total, rate, time left.")
      .real("interval_s", 10, "seconds between progress lines when stderr is not a terminal (a terminal gets one line redrawn in place)", 0.5, 86400);
  return s;
}

}  // namespace

const Schema& experiment_schema() {
  static const Schema schema = build_schema();
  return schema;
}

}  // namespace sparserl::experiments
