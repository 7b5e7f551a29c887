// `sparserl inspect FILE.h5 --compare A B`: two policies of a trajectory file task by task - which
// answers differ, the speedup ratio against hand-computed figures, the line diff of differing
// programs, and the errors that name the file and its policies.
#include "sparserl/experiments/policy_comparison.hpp"

#include <cmath>
#include <cstdio>
#include <string>

#include "catch.hpp"
#include "sparserl/env/trajectory.hpp"
#include "command_checks.hpp"
#include "test_support.hpp"

namespace env = sparserl::env;
namespace reward = sparserl::reward;
using namespace sparserl::experiments;
using namespace sparserl::testing;

namespace {

// One answer: a correct program of `speedup` (0: a compile error), or a truncated one.
env::Episode answer(const std::string& policy, const std::string& uri, const std::string& source,
                    double speedup, bool truncated = false) {
  env::Episode e;
  e.task.uri = uri;
  e.policy_id = policy;
  e.tokens = {1, 2, 3};
  e.source = source;
  e.terminated = !truncated;
  e.truncated = truncated;
  if (truncated) return e;
  reward::EvalResult r;
  r.program_digest = "digest of " + source;
  r.compiled = speedup > 0;
  r.gpu_available = true;
  r.correct = r.timed = speedup > 0;
  r.error = speedup > 0 ? reward::ErrorKind::none : reward::ErrorKind::compile_error;
  r.timing.speedup = speedup;
  e.eval = r;
  return e;
}

// Each file in its own scratch folder: scratch_dir empties the folder, and the test cases that
// write these files run in parallel under ctest -j.
std::filesystem::path write_file(const std::string& name) {
  const auto path = sparserl::testing::scratch_dir("policy_comparison_" + name) / name;
  env::TrajectoryFileInfo info;
  info.run_id = "compare-test";
  info.vocabulary_name = "cuda-c-v1";
  info.vocabulary_digest = std::string(64, '0');
  info.created_by = "experiments_tests";
  env::TrajectoryWriter writer(path, info);
  const std::string same = "//@format csr\nkernel A\nend\n";
  // n=1: the same program; n=2: another, faster; n=3: another that fails; n=4: only sft answers.
  writer.append(answer("sft:greedy", "gen-v1/diagonal?n=1", same, 2.0));
  writer.append(answer("sft:sampled", "gen-v1/diagonal?n=1", "a sample\n", 9.0));  // not an answer
  writer.append(answer("grpo:greedy", "gen-v1/diagonal?n=1", same, 2.0));
  const std::string n2 = "gen-v1/diagonal?n=2";
  writer.append(answer("sft:greedy", n2, "//@format csr\nkernel A\nend\n", 2.0));
  writer.append(answer("grpo:greedy", n2, "//@format csr\nkernel B\nend\n", 3.0));
  writer.append(answer("grpo:greedy", n2, "a later episode\n", 9.0));  // not the first
  writer.append(answer("sft:greedy", "gen-v1/diagonal?n=3", "x\n", 2.0));
  writer.append(answer("grpo:greedy", "gen-v1/diagonal?n=3", "y\n", 0.0));
  writer.append(answer("sft:greedy", "gen-v1/diagonal?n=4", "z\n", 2.0));
  writer.append(answer("lonely:greedy", "gen-v1/diagonal?n=9", "w\n", 1.0, true));
  return path;
}

}  // namespace

TEST_CASE("two policies of a trajectory file, task by task", "[experiments][inspect]") {
  const auto file = write_file("three.h5");
  const PolicyComparison c = compare_policies(file, "sft", "grpo");  // AGENT -> AGENT:greedy
  CHECK(c.policy_a == "sft:greedy");
  CHECK(c.policy_b == "grpo:greedy");
  REQUIRE(c.tasks.size() == 3);  // n=4 has no grpo answer
  CHECK(c.tasks[0].task == "gen-v1/diagonal?n=1 spmv f32");
  CHECK(c.tasks[0].same_program());
  CHECK_FALSE(c.tasks[1].same_program());
  CHECK(c.tasks[1].b.speedup == 3.0);  // the first grpo episode of n=2, not the later one
  CHECK(c.tasks[2].b.outcome == "compile_error");
  CHECK(std::isnan(c.tasks[2].b.speedup));
  CHECK(c.different == 2);
  CHECK(c.ratio == Approx(std::cbrt(1.0 * 1.5 * 0.5)));  // the failure counts as 1 against 2

  const std::string text = c.to_text(true);
  INFO(text);
  CHECK_THAT(text, has_substring("A = sft:greedy, B = grpo:greedy: 3 tasks answered by both, 2 "
                                 "with different programs"));
  CHECK_THAT(text, has_substring("(failures as 1): 0.9086"));
  CHECK_THAT(text, has_substring("--- A gen-v1/diagonal?n=2 spmv f32 (2.000)\n"
                                 "+++ B gen-v1/diagonal?n=2 spmv f32 (3.000)\n"
                                 "  //@format csr\n- kernel A\n+ kernel B\n  end\n"));
  CHECK(text.find("--- A gen-v1/diagonal?n=1 ") == std::string::npos);  // same: no diff

  CHECK_THROWS_WITH(compare_policies(file, "sft", "ppo"),
                    has_substring(file.string() + ": no episodes of policy 'ppo' (its policies: "
                                  "grpo:greedy, lonely:greedy, sft:greedy, sft:sampled)"));
  CHECK_THROWS_WITH(compare_policies(file, "grpo", "lonely"),
                    has_substring("'grpo:greedy' and 'lonely:greedy' have no task in common"));
  const PolicyComparison truncated = compare_policies(file, "lonely", "lonely");
  CHECK(truncated.tasks[0].a.outcome == "truncated");
  CHECK(std::isnan(truncated.ratio));  // nothing timed
}

TEST_CASE("a line diff keeps common lines and marks the rest", "[experiments][inspect]") {
  CHECK(line_diff("a\nb\nc\n", "a\nx\nc\n") == "  a\n- b\n+ x\n  c\n");
  CHECK(line_diff("", "a\n") == "+ a\n");
  CHECK(line_diff("a\nb\n", "b\n") == "- a\n  b\n");
  CHECK(line_diff("same\n", "same\n") == "  same\n");
}

TEST_CASE("sparserl inspect --compare", "[experiments][inspect]") {
  const auto file = write_file("cli.h5");
  const std::string cli = std::string(SPARSERL_CLI_PATH) + " inspect '" + file.string() + "' ";
  check_command(
      cli + "--compare sft grpo --sources", 0,
      {"3 tasks answered by both, 2 with different programs", "- kernel A\n+ kernel B\n"});
  check_command(cli + "--compare sft nobody", 1, {"no episodes of policy 'nobody'"});
  check_command(cli + "--compare sft", 2, {"--compare needs two policies"});
  check_command(cli + "--sources", 2, {"--sources requires --compare"});
}
