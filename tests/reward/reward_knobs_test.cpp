// The evaluator's and the sandbox's knob declarations (reward_knobs.hpp): their defaults are the
// structs' own, the fields whose type is not the knob's convert both ways (seconds and
// milliseconds, -1 and unlimited, a CPU list, an empty folder and none), SandboxLimits' parser
// checks the sandbox's values, and every knob's text reads back to the same struct.
#include "sparserl/reward/reward_knobs.hpp"

#include <string>
#include <vector>

#include "catch.hpp"
#include "test_support.hpp"

using namespace sparserl::reward;
using sparserl::datasets::KnobValue;
using sparserl::testing::has_substring;

TEST_CASE("evaluator knobs convert seconds, the shared cache size and the cache folder",
          "[reward][knobs]") {
  const auto& knobs = evaluator_knobs();
  const EvaluatorConfig defaults;
  CHECK(std::get<double>(knobs.get(defaults, "compile_timeout_s")) == 60.0);
  CHECK(std::get<double>(knobs.get(defaults, "gpu_timeout_floor_s")) == 10.0);
  CHECK(std::get<std::string>(knobs.get(defaults, "cache_dir")).empty());
  CHECK(std::get<std::int64_t>(knobs.get(defaults, "max_smem_bytes")) == 48 * 1024);
  CHECK_FALSE(knobs.check(defaults).has_value());

  EvaluatorConfig c;
  knobs.set(c, "compile_timeout_s", KnobValue(1.5));
  knobs.set(c, "startup_timeout_s", KnobValue(std::int64_t{2}));
  knobs.set(c, "cache_entries", KnobValue(std::int64_t{7}));
  knobs.set(c, "cache_dir", KnobValue(std::string("/tmp/cache")));
  knobs.set(c, "nvrtc_options", KnobValue(std::vector<std::string>{"-lineinfo", "-G"}));
  knobs.set(c, "max_block", KnobValue(std::int64_t{256}));
  CHECK(c.gpu_timeout_rerun);
  knobs.set(c, "gpu_timeout_rerun", KnobValue(false));
  CHECK_FALSE(c.gpu_timeout_rerun);
  CHECK(c.gpu_baseline_hints);
  knobs.set(c, "gpu_baseline_hints", KnobValue(false));
  CHECK_FALSE(c.gpu_baseline_hints);
  CHECK(c.compile_deadline == std::chrono::milliseconds(1500));
  CHECK(c.startup_deadline == std::chrono::milliseconds(2000));
  CHECK(c.compile_cache_entries == 7);
  CHECK(c.result_cache_entries == 7);
  CHECK(c.cache_dir == std::filesystem::path("/tmp/cache"));
  CHECK(c.limits.max_block == 256);
  knobs.set(c, "cache_dir", KnobValue(std::string()));
  CHECK_FALSE(c.cache_dir.has_value());
  REQUIRE_THROWS_WITH(knobs.set(c, "gpu_workers", KnobValue(std::int64_t{-2})),
                      has_substring("gpu_workers: value -2 is outside [-1, 64]"));

  knobs.set(c, "cache_dir", KnobValue(std::string("/tmp/cache")));
  EvaluatorConfig back;
  for (const auto& [path, text] : knobs.to_text(c)) knobs.set_text(back, path, text);
  CHECK(knobs.to_text(back) == knobs.to_text(c));
  CHECK(back.compile_deadline == c.compile_deadline);
  CHECK(back.nvrtc_options == c.nvrtc_options);
  CHECK(back.cache_dir == c.cache_dir);
}

TEST_CASE("evaluator knobs set the GPU workers' cache limits, MiB as bytes", "[reward][knobs]") {
  const auto& knobs = evaluator_knobs();
  const EvaluatorConfig defaults;
  CHECK(std::get<double>(knobs.get(defaults, "gpu_resident_fraction")) == 0.125);
  CHECK(std::get<std::int64_t>(knobs.get(defaults, "gpu_matrix_entries")) == 16);
  CHECK(std::get<std::int64_t>(knobs.get(defaults, "gpu_matrix_mib")) == 8192);
  EvaluatorConfig c;
  knobs.set(c, "gpu_resident_fraction", KnobValue(0.3));
  knobs.set(c, "gpu_matrix_entries", KnobValue(std::int64_t{48}));
  knobs.set(c, "gpu_matrix_mib", KnobValue(std::int64_t{24 * 1024}));
  CHECK(c.gpu_caches == GpuCacheLimits{.resident_fraction = 0.3, .matrix_entries = 48,
                                       .matrix_bytes = 24ull << 30});
  REQUIRE_THROWS_WITH(knobs.set(c, "gpu_resident_fraction", KnobValue(0.5)),
                      has_substring("gpu_resident_fraction: value 0.5 is outside"));
  REQUIRE_THROWS_WITH(knobs.set(c, "gpu_matrix_entries", KnobValue(std::int64_t{0})),
                      has_substring("gpu_matrix_entries: value 0 is outside"));
  EvaluatorConfig back;
  for (const auto& [path, text] : knobs.to_text(c)) knobs.set_text(back, path, text);
  CHECK(back.gpu_caches == c.gpu_caches);
}

TEST_CASE("sandbox knobs take -1 as unlimited and are checked by SandboxLimits' parser",
          "[reward][knobs]") {
  const auto& knobs = sandbox_knobs();
  const SandboxLimits defaults;
  CHECK(std::get<std::int64_t>(knobs.get(defaults, "cpu_seconds")) == 3600);
  CHECK(std::get<std::string>(knobs.get(defaults, "cpu_affinity")).empty());
  CHECK_FALSE(knobs.check(defaults).has_value());

  SandboxLimits s;
  knobs.set(s, "address_space_bytes", KnobValue(std::int64_t{-1}));
  knobs.set(s, "cpu_affinity", KnobValue(std::string("0,2-3")));
  CHECK(s.address_space_bytes == SandboxLimits::kUnlimited);
  CHECK(std::get<std::int64_t>(knobs.get(s, "address_space_bytes")) == -1);
  CHECK(s.cpu_affinity == std::vector<int>{0, 2, 3});
  REQUIRE_THROWS_WITH(knobs.set(s, "cpu_seconds", KnobValue(std::int64_t{0})),
                      has_substring("sandbox.cpu_seconds: expected at least 1"));
  REQUIRE_THROWS_WITH(knobs.set(s, "cpu_affinity", KnobValue(std::string("3-1"))),
                      has_substring("sandbox.cpu_affinity: expected CPU numbers and ranges"));
  REQUIRE_THROWS_WITH(knobs.set(s, "open_files", KnobValue(std::int64_t{4})),
                      has_substring("value 4 is outside [8, 1048576]"));

  SandboxLimits back;
  for (const auto& [path, text] : knobs.to_text(s)) knobs.set_text(back, path, text);
  CHECK(back == s);
}
