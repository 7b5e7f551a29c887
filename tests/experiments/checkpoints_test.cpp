// Checkpoint folders: written whole or not at all, listed by step, the last N and the best kept, a
// failed save leaving nothing behind, and meta.json problems named by file.
#include "sparserl/experiments/checkpoints.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "catch.hpp"
#include "test_support.hpp"

using namespace sparserl::experiments;
using namespace sparserl::testing;
namespace fs = std::filesystem;

namespace {

// What an agent's save() would do: some opaque files.
auto policy_files(const std::string& tag) {
  return [tag](const fs::path& dir) {
    std::ofstream(dir / "weights.pt") << "weights " << tag;
    fs::create_directory(dir / "optimizer");
    std::ofstream(dir / "optimizer" / "state.pt") << "adam " << tag;
  };
}

std::vector<std::int64_t> steps_of(const std::vector<CheckpointInfo>& all) {
  std::vector<std::int64_t> out;
  for (const auto& c : all) out.push_back(c.step);
  return out;
}

std::size_t entries(const fs::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

TEST_CASE("checkpoints are saved, listed and pruned to the last N plus the best",
          "[experiments][checkpoints]") {
  const fs::path dir = scratch_dir("checkpoints_prune") / "checkpoints";
  CheckpointStore store(dir, {/*keep_last=*/2, "reward/mean", /*higher_is_better=*/true});
  CHECK(store.list().empty());
  CHECK_FALSE(store.latest());
  CHECK_FALSE(store.best());

  const double rewards[] = {0.1, 0.9, 0.3, 0.2, 0.4};
  for (int i = 0; i < 5; ++i) {
    const std::int64_t step = 100 * (i + 1);
    const CheckpointInfo saved =
        store.save(step, {{"reward/mean", rewards[i]}, {"loss", 1.0 / (i + 1)}},
                   policy_files(std::to_string(step)));
    CHECK(saved.dir == dir / checkpoint_folder_name(step));
    CHECK(fs::exists(saved.dir / "weights.pt"));
    CHECK(fs::exists(saved.dir / "optimizer" / "state.pt"));
    CHECK(fs::exists(saved.dir / "meta.json"));
  }
  // Kept: the last two (400, 500) and the best by reward/mean (200).
  CHECK(steps_of(store.list()) == std::vector<std::int64_t>{200, 400, 500});
  CHECK(entries(dir) == 3);  // no temporary folders left
  CHECK(store.latest()->step == 500);
  CHECK(store.best()->step == 200);
  CHECK(store.best()->metric("reward/mean") == 0.9);
  CHECK(store.latest()->metric("loss") == 0.2);
  CHECK(store.latest()->time > 1.6e9);
  std::ifstream weights(dir / "step-000200" / "weights.pt");
  std::string text;
  std::getline(weights, text);
  CHECK(text == "weights 200");

  // The smallest loss as best instead.
  CheckpointStore by_loss(dir, {1, "loss", false});
  CHECK(by_loss.best()->step == 500);
  by_loss.prune();
  CHECK(steps_of(by_loss.list()) == std::vector<std::int64_t>{500});
  CHECK(checkpoint_folder_name(123) == "step-000123");
  CHECK(checkpoint_folder_name(12345678) == "step-12345678");
}

TEST_CASE("a failed save leaves no checkpoint; a repeated step replaces the old one",
          "[experiments][checkpoints]") {
  const fs::path dir = scratch_dir("checkpoints_atomic") / "checkpoints";
  CheckpointStore store(dir, {3, "", true});
  store.save(1, {}, policy_files("a"));
  CHECK_THROWS_WITH(store.save(2, {},
                               [](const fs::path& d) {
                                 std::ofstream(d / "half.pt") << "half";
                                 throw std::runtime_error("disk full while writing the optimizer");
                               }),
                    has_substring("disk full"));
  CHECK(steps_of(store.list()) == std::vector<std::int64_t>{1});
  CHECK(entries(dir) == 1);

  // A save killed mid-way leaves a hidden temporary folder: not a checkpoint, cleaned by the next
  // save.
  fs::create_directories(dir / ".tmp-step-000003-999");
  std::ofstream(dir / ".tmp-step-000003-999" / "weights.pt") << "partial";
  fs::create_directories(dir / "step-000004");  // no meta.json: not a checkpoint either
  CHECK(steps_of(store.list()) == std::vector<std::int64_t>{1});
  store.save(1, {{"x", 2.0}}, policy_files("b"));
  CHECK_FALSE(fs::exists(dir / ".tmp-step-000003-999"));
  const auto all = store.list();
  REQUIRE(all.size() == 1);
  CHECK(all[0].metric("x") == 2.0);
  std::ifstream weights(dir / "step-000001" / "weights.pt");
  std::string text;
  std::getline(weights, text);
  CHECK(text == "weights b");

  // keep_last = 0 with no best metric still keeps the newest, or there would be nothing to resume.
  CheckpointStore none(dir, {0, "", true});
  none.save(7, {}, policy_files("c"));
  CHECK(steps_of(none.list()) == std::vector<std::int64_t>{7});
}

TEST_CASE("meta.json problems are named by file", "[experiments][checkpoints]") {
  const fs::path dir = scratch_dir("checkpoints_meta") / "checkpoints";
  fs::create_directories(dir / "step-000010");
  std::ofstream(dir / "step-000010" / "meta.json") << "{\"step\": 10, \"metrics\": [1, 2]}";
  CheckpointStore store(dir);
  CHECK_THROWS_WITH(store.list(), has_substring((dir / "step-000010" / "meta.json").string() +
                                                ": expected an object"));
  std::ofstream(dir / "step-000010" / "meta.json") << "{\"step\": 10, ";
  CHECK_THROWS_WITH(read_checkpoint(dir / "step-000010"), has_substring("meta.json:1:"));
  CHECK_THROWS_WITH(read_checkpoint(dir / "step-000011"),
                    has_substring("step-000011/meta.json: cannot open"));
  CHECK_THROWS_WITH(store.save(-1, {}, {}), has_substring("negative"));
}
