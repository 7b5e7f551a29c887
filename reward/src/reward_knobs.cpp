// The knob declarations of the reward, the GPU protocol, the evaluator and the sandbox
// (reward_knobs.hpp), and the conversions of the fields whose type is not the knob's.
#include "sparserl/reward/reward_knobs.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sparserl::reward {

namespace {

using datasets::KnobBinding;
using datasets::KnobSpec;
using datasets::KnobType;
using datasets::KnobValue;

// A comma-separated list's elements ("1.5,2,4" -> "1.5", "2", "4"; "" -> none).
std::vector<std::string_view> split_list(std::string_view text) {
  std::vector<std::string_view> items;
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

// A knob's value as its "key = value" text: lists comma-separated (KnobValues this file produces).
struct ValueText {
  std::string operator()(std::int64_t v) const { return std::to_string(v); }
  std::string operator()(double v) const { return datasets::knob_text::real(v); }
  std::string operator()(bool v) const { return v ? "true" : "false"; }
  std::string operator()(const std::string& v) const { return v; }
  template <typename Element>
  std::string operator()(const std::vector<Element>& v) const {
    std::string out;
    for (const Element& e : v) out += (out.empty() ? "" : ",") + (*this)(e);
    return out;
  }
};

std::string value_text(const KnobValue& value) { return std::visit(ValueText{}, value); }

// The inverse of value_text for a knob of `type` (std::invalid_argument saying what was expected).
KnobValue parse_value(KnobType type, std::string_view text) {
  namespace kt = datasets::knob_text;
  switch (type) {
    case KnobType::integer:
      return kt::parse_integer<std::int64_t>(text);
    case KnobType::real:
      return kt::parse_real(text);
    case KnobType::boolean:
      return kt::parse_boolean(text);
    case KnobType::string:
      return std::string(text);
    case KnobType::string_list: {
      std::vector<std::string> out;
      for (std::string_view item : split_list(text)) out.emplace_back(item);
      return out;
    }
    case KnobType::integer_list: {
      std::vector<std::int64_t> out;
      for (std::string_view item : split_list(text)) out.push_back(kt::parse_integer<std::int64_t>(item));
      return out;
    }
    case KnobType::real_list: {
      std::vector<double> out;
      for (std::string_view item : split_list(text)) out.push_back(kt::parse_real(item));
      return out;
    }
  }
  throw std::logic_error("knob type without a text form");
}

// A knob whose field is not of the knob's own type (milliseconds shown as seconds, a path as a
// string, -1 for "unlimited"): `get` and `set` convert, the text form is the knob value's.
template <typename Owner>
KnobBinding<Owner> converted(KnobSpec spec, std::function<KnobValue(const Owner&)> get,
                             std::function<void(Owner&, const KnobValue&)> set) {
  const KnobType type = spec.type;
  return {.spec = std::move(spec),
          .get = get,
          .set = set,
          .text = [get](const Owner& o) { return value_text(get(o)); },
          .parse = [set, type](Owner& o, std::string_view text) { set(o, parse_value(type, text)); }};
}

double as_real(const KnobValue& v) {
  const auto* i = std::get_if<std::int64_t>(&v);
  return i != nullptr ? static_cast<double>(*i) : std::get<double>(v);
}

// One side of RewardConfig::tiers as a list of numbers: the thresholds or the values. Setting one
// side keeps the other's entries (new pairs start at 0), so setting both gives the pairs.
KnobBinding<RewardConfig> tier_list(std::string path, double RewardTier::*side, std::string help,
                                    std::optional<double> min, std::optional<double> max) {
  return converted<RewardConfig>(
      {std::move(path), KnobType::real_list, {}, std::move(help), min, max, {}, {}},
      [side](const RewardConfig& c) {
        std::vector<double> out;
        for (const RewardTier& t : c.tiers) out.push_back(t.*side);
        return KnobValue(out);
      },
      [side](RewardConfig& c, const KnobValue& v) {
        const auto& values = std::get<std::vector<double>>(v);
        c.tiers.resize(values.size(), RewardTier{0.0, 0.0});
        for (std::size_t i = 0; i < values.size(); ++i) c.tiers[i].*side = values[i];
      });
}

// An EvaluatorConfig deadline: milliseconds in the struct, seconds in the config.
KnobBinding<EvaluatorConfig> seconds(std::string path,
                                     std::chrono::milliseconds EvaluatorConfig::*field,
                                     std::string help, double min, double max) {
  return converted<EvaluatorConfig>(
      {std::move(path), KnobType::real, {}, std::move(help), min, max, {}, {}},
      [field](const EvaluatorConfig& c) {
        return KnobValue(static_cast<double>((c.*field).count()) / 1000.0);
      },
      [field](EvaluatorConfig& c, const KnobValue& v) {
        c.*field = std::chrono::milliseconds(std::llround(as_real(v) * 1000.0));
      });
}

// SandboxLimits' own parser decides what a valid limit is (a CPU list, cpu_seconds above 0, ...):
// the value is handed to it as the config gives it (-1 as "unlimited").
datasets::KnobValidator sandbox_check(std::string key) {
  return [key](const KnobValue& value) -> std::optional<std::string> {
    std::string text;
    if (const auto* i = std::get_if<std::int64_t>(&value)) {
      text = *i < 0 ? "unlimited" : std::to_string(*i);
    } else if (const auto* s = std::get_if<std::string>(&value)) {
      text = *s;
    } else {
      return std::nullopt;
    }
    try {
      (void)SandboxLimits::from_key_values({{key, text}});
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return std::nullopt;
  };
}

// A SandboxLimits amount: an integer in the config, -1 for unlimited.
KnobBinding<SandboxLimits> sandbox_amount(std::string key, std::uint64_t SandboxLimits::*field,
                                          std::string help, double min, double max = 9.2e18) {
  return converted<SandboxLimits>(
      {std::move(key), KnobType::integer, {}, std::move(help), min, max, {}, {}},
      [field](const SandboxLimits& l) {
        return KnobValue(l.*field == SandboxLimits::kUnlimited
                             ? std::int64_t{-1}
                             : static_cast<std::int64_t>(l.*field));
      },
      [field](SandboxLimits& l, const KnobValue& v) {
        const std::int64_t amount = std::get<std::int64_t>(v);
        l.*field = amount < 0 ? SandboxLimits::kUnlimited : static_cast<std::uint64_t>(amount);
      });
}

}  // namespace

const datasets::Knobs<GpuProtocol>& gpu_protocol_knobs() {
  using P = GpuProtocol;
  static const datasets::Knobs<P> knobs =
      datasets::Knobs<P>()
          .choice("baseline", &P::baseline,
                  "speedup denominator: best = the fastest correct cuSPARSE path for the matrix "
                  "(CSR ALG1/2, COO, sliced ELL, BSR; SpMM: CSR, COO, blocked ELL, BSR); csr = CSR "
                  "algorithms only (the baseline before bench-v2, to reproduce older figures)",
                  {BaselineMode::best, BaselineMode::csr})
          .integer("check.seed", &P::seed,
                   "seeds the random inputs of every evaluation (with the cubin and matrix)", 0,
                   9.2e18)
          .integer("check.random_inputs", &P::random_inputs,
                   "fresh random inputs (values in [-1, 1]) checked per evaluation", 1, 64)
          .boolean("timing.enabled", &P::time,
                   "time correct kernels against cuSPARSE (false: the speed term is 0)")
          .integer("timing.warmup", &P::warmup_runs, "untimed runs of each before timing", 0, 1000)
          .integer("timing.repetitions", &P::timed_runs,
                   "timed repetitions of each, interleaved; the median is reported", 1, 100000)
          .boolean("timing.flush_l2", &P::flush_l2, "flush the L2 cache before every repetition");
  return knobs;
}

const datasets::Knobs<RewardConfig>& reward_knobs() {
  using R = RewardConfig;
  static const datasets::Knobs<R> knobs =
      datasets::Knobs<R>()
          .real("compile_pass", &R::compile_pass, "R_compile when the program compiled")
          .real("compile_fail", &R::compile_fail, "R_compile when it did not")
          .real("test_pass", &R::test_pass, "R_test when the output was correct")
          .real("test_fail", &R::test_fail, "R_test when a compiled program failed on the GPU")
          .real("r_eff", &R::r_eff, "weight of shape(speedup)")
          .real("r_pen", &R::r_pen, "penalty for exceeding a resource limit")
          .choice("shape", &R::shape, "speed shape: speedup - 1, log2(speedup), or tiers",
                  {SpeedShape::linear, SpeedShape::log2, SpeedShape::tiers})
          .add(tier_list("tier_speedups", &RewardTier::min_speedup,
                         "tiers: ascending speedup thresholds", 0, 1e6))
          .add(tier_list("tier_values", &RewardTier::value, "tiers: shape value of each threshold",
                         std::nullopt, std::nullopt))
          .real("clip_min", &R::clip_min, "lower clip of the total")
          .real("clip_max", &R::clip_max, "upper clip of the total");
  return knobs;
}

const datasets::Knobs<ProgramLimits>& program_limits_knobs() {
  using L = ProgramLimits;
  static const datasets::Knobs<L> knobs =
      datasets::Knobs<L>()
          .integer("max_program_bytes", &L::max_program_bytes,
                   "longest program accepted by the static checks", 256, 1 << 24)
          .integer("max_block", &L::max_block, "largest blockDim.x", 1, 1024)
          .integer("max_smem_bytes", &L::max_shared_bytes,
                   "shared memory per block (static + dynamic) above which a program is over the "
                   "resource limit",
                   0, 1 << 20)
          .integer("max_registers_per_thread", &L::max_registers_per_thread,
                   "registers per thread above which a kernel is over the resource limit", 1, 255)
          .integer("max_spill_bytes", &L::max_spill_bytes,
                   "spill bytes (stores + loads) allowed (-1: any)", -1, 1e12)
          .integer("max_stored_entries", &L::max_stored_entries,
                   "padded entries a storage format may hold", 1, 1e15);
  return knobs;
}

const datasets::Knobs<EvaluatorConfig>& evaluator_knobs() {
  using C = EvaluatorConfig;
  static const datasets::Knobs<C> knobs =
      datasets::Knobs<C>()
          .add(converted<C>({"worker", KnobType::string, {},
                             "the sparserl-worker executable (empty: $SPARSERL_WORKER, else beside "
                             "sparserl, else this build's)",
                             {}, {}, {}, {}},
                            [](const C& c) { return KnobValue(c.worker_path.string()); },
                            [](C& c, const KnobValue& v) {
                              c.worker_path = std::get<std::string>(v);
                            }))
          .string("arch", &C::arch,
                  "GPU architecture to compile for when no GPU is present (a GPU's own arch wins)")
          .integer("compile_workers", &C::compile_workers,
                   "compile worker processes (0: one per CPU core)", 0, 256)
          .integer("gpu_workers", &C::gpu_workers,
                   "GPU worker processes (-1: one per visible GPU; 0: none, every evaluation stops "
                   "after the compile stage; more than one per GPU is warned about: "
                   "docs/evaluator.md, \"Workers sharing a GPU\")",
                   -1, 64)
          .add(seconds("compile_timeout_s", &C::compile_deadline,
                       "deadline of one compile, seconds", 0.1, 3600))
          .add(seconds("gpu_timeout_s", &C::gpu_deadline,
                       "deadline of one GPU evaluation (load, check, time), seconds", 0.1, 3600))
          .real("gpu_timeout_factor", &C::gpu_deadline_factor,
                "adaptive GPU deadline: once a task has answered GPU requests, later ones get this "
                "many times the slowest answer (at least gpu_timeout_floor_s, at most "
                "gpu_timeout_s); 0: off",
                0, 1e6)
          .add(seconds("gpu_timeout_floor_s", &C::gpu_deadline_floor,
                       "the adaptive GPU deadline's lower bound, seconds", 0.1, 3600))
          .boolean("gpu_timeout_calibrate", &C::gpu_deadline_calibration,
                   "a task's first GPU request waits for a run of the evaluator's own CSR kernel "
                   "on it, whose answer starts the adaptive deadline (a hung kernel on a new "
                   "matrix then costs that, not gpu_timeout_s)")
          .boolean("gpu_timeout_rerun", &C::gpu_timeout_rerun,
                   "with more GPU workers than GPUs, a GPU timeout is run once more and the second "
                   "answer is the verdict (a fault beside another worker's hung kernel is reported "
                   "only when that kernel is ended)")
          .boolean("gpu_baseline_hints", &C::gpu_baseline_hints,
                   "a GPU worker new to a task takes cuSPARSE's path an earlier worker chose there "
                   "(run once and checked) instead of timing every path again; only where every "
                   "GPU is the same model")
          .add(seconds("startup_timeout_s", &C::startup_deadline,
                       "deadline of a worker's start-up handshake, seconds", 0.1, 3600))
          .integer("recycle_after", &C::recycle_after,
                   "a worker is replaced after this many requests", 1, 1e9)
          .add(converted<C>({"cache_entries", KnobType::integer, {},
                             "in-memory entries of the compile cache and of the result cache (0: "
                             "no caches)",
                             0, 1e9, {}, {}},
                            [](const C& c) {
                              return KnobValue(static_cast<std::int64_t>(c.compile_cache_entries));
                            },
                            [](C& c, const KnobValue& v) {
                              c.compile_cache_entries =
                                  static_cast<std::size_t>(std::get<std::int64_t>(v));
                              c.result_cache_entries = c.compile_cache_entries;
                            }))
          .add(converted<C>(
              {"cache_dir", KnobType::string, {},
               "on-disk cache folder shared by runs (empty: memory only)", {}, {}, {}, {}},
              [](const C& c) { return KnobValue(c.cache_dir ? c.cache_dir->string() : ""); },
              [](C& c, const KnobValue& v) {
                const auto& dir = std::get<std::string>(v);
                c.cache_dir = dir.empty() ? std::nullopt : std::optional<std::filesystem::path>(dir);
              }))
          .integer("matrix_cache_entries", &C::matrix_cache_entries,
                   "loaded matrices kept in memory", 0, 1e6)
          .add(converted<C>({"gpu_resident_fraction", KnobType::real, {},
                             "share of the device's memory each GPU worker keeps for resident "
                             "converted formats, and as much again for cuSPARSE baselines",
                             1e-6, 0.45, {}, {}},
                            [](const C& c) { return KnobValue(c.gpu_caches.resident_fraction); },
                            [](C& c, const KnobValue& v) {
                              c.gpu_caches.resident_fraction = std::get<double>(v);
                            }))
          .add(converted<C>({"gpu_matrix_entries", KnobType::integer, {},
                             "loaded matrices each GPU worker's store keeps", 1, 1e6, {}, {}},
                            [](const C& c) {
                              const std::uint32_t n = c.gpu_caches.matrix_entries;
                              return KnobValue(static_cast<std::int64_t>(n));
                            },
                            [](C& c, const KnobValue& v) {
                              c.gpu_caches.matrix_entries =
                                  static_cast<std::uint32_t>(std::get<std::int64_t>(v));
                            }))
          .add(converted<C>({"gpu_matrix_mib", KnobType::integer, {},
                             "MiB of loaded matrices each GPU worker's store keeps", 1, 1e7, {},
                             {}},
                            [](const C& c) {
                              const std::uint64_t mib = c.gpu_caches.matrix_bytes >> 20;
                              return KnobValue(static_cast<std::int64_t>(mib));
                            },
                            [](C& c, const KnobValue& v) {
                              c.gpu_caches.matrix_bytes =
                                  static_cast<std::uint64_t>(std::get<std::int64_t>(v)) << 20;
                            }))
          .integer("evaluation_threads", &C::evaluation_threads,
                   "threads behind submit() (0: 2 x the workers, at least 4)", 0, 4096)
          .add(converted<C>({"nvrtc_options", KnobType::string_list, {},
                             "extra NVRTC options (part of the compile cache key)", {}, {}, {}, {}},
                            [](const C& c) { return KnobValue(c.nvrtc_options); },
                            [](C& c, const KnobValue& v) {
                              c.nvrtc_options = std::get<std::vector<std::string>>(v);
                            }))
          .nest("", &C::limits, program_limits_knobs());
  return knobs;
}

const datasets::Knobs<SandboxLimits>& sandbox_knobs() {
  using S = SandboxLimits;
  static const datasets::Knobs<S> knobs =
      datasets::Knobs<S>()
          .add(sandbox_amount("core_bytes", &S::core_bytes,
                              "core dump size limit (0: no core dumps)", -1))
          .add(sandbox_amount("cpu_seconds", &S::cpu_seconds,
                              "CPU-time limit of a worker process, seconds (not 0)", -1))
          .validate(sandbox_check("cpu_seconds"))
          .add(sandbox_amount("file_size_bytes", &S::file_size_bytes,
                              "largest file a worker may write", -1))
          .add(sandbox_amount("open_files", &S::open_files, "open descriptors a worker may hold", 8,
                              1 << 20))
          .validate(sandbox_check("open_files"))
          .add(sandbox_amount("address_space_bytes", &S::address_space_bytes,
                              "virtual memory of a compile worker (NVRTC on hostile input)", -1))
          .boolean("die_with_parent", &S::die_with_parent,
                   "a worker is killed when the process that started it dies")
          .boolean("close_descriptors", &S::close_descriptors,
                   "a worker inherits no descriptors (false only to debug a worker by hand)")
          .add(converted<S>({"cpu_affinity", KnobType::string, {},
                             "pin workers round-robin to these CPUs, \"0,2,4-7\" (empty: no "
                             "pinning)",
                             {}, {}, {}, {}},
                            [](const S& l) { return KnobValue(l.to_key_values().at("cpu_affinity")); },
                            [](S& l, const KnobValue& v) {
                              l.cpu_affinity =
                                  S::from_key_values({{"cpu_affinity", std::get<std::string>(v)}})
                                      .cpu_affinity;
                            }))
          .validate(sandbox_check("cpu_affinity"));
  return knobs;
}

}  // namespace sparserl::reward
