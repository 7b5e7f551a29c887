// metrics.jsonl: a line per record, read back exactly; a file cut short by a kill (a real SIGKILL
// of a writing child) reads up to its last whole line; a malformed line elsewhere names file and
// line; rewinding for a resume keeps what the checkpoint had seen.
#include "sparserl/experiments/metrics.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "catch.hpp"
#include "test_support.hpp"

using namespace sparserl::experiments;
using namespace sparserl::testing;

namespace {

void write_text(const std::filesystem::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::binary);
  out << text;
}

}  // namespace

TEST_CASE("metrics lines are written and read back", "[experiments][metrics]") {
  const auto dir = scratch_dir("metrics_round_trip");
  const auto file = dir / "metrics.jsonl";
  {
    MetricsWriter w(file);
    MetricsRecord r;
    r.step = 1;
    r.time = 1710430212.345;
    r.stage = "rl";
    r.values = {{"reward/mean", 0.25}, {"env/compile_rate", 1.0 / 3.0}, {"kl", std::nan("")}};
    w.append(r);
    w.append(2, "rl",
             {{"reward/mean", -0.5},
              {"step", 99.0},
              {"reward/mean", 7.0},
              {"a \"quoted\" name", 1e-300}});
    w.append(3, "", {{"eval/pass@8", 0.75}});
    CHECK(w.lines_written() == 3);
  }
  const std::string text = read_bytes(file);
  CHECK(text.rfind("{\"step\":1,\"time\":1710430212.345,\"stage\":\"rl\",\"reward/mean\":0.25,"
                   "\"env/compile_rate\":0.3333333333333333,\"kl\":null}\n",
                   0) == 0);

  const MetricsLog log = read_metrics(file);
  REQUIRE(log.records.size() == 3);
  CHECK_FALSE(log.truncated_last_line);
  CHECK(log.records[0].time == 1710430212.345);
  CHECK(log.records[0].get("env/compile_rate") == 1.0 / 3.0);
  CHECK(std::isnan(*log.records[0].get("kl")));
  CHECK_FALSE(log.records[0].get("absent"));
  // Reserved names are the record's own; duplicate names keep the first.
  CHECK(log.records[1].values.size() == 2);
  CHECK(log.records[1].get("reward/mean") == -0.5);
  CHECK(log.records[1].get("a \"quoted\" name") == 1e-300);
  CHECK(log.records[1].time > 1.6e9);  // stamped with the wall clock
  CHECK(log.records[2].stage.empty());
  CHECK(log.names() == std::vector<std::string>{"reward/mean", "env/compile_rate", "kl",
                                                "a \"quoted\" name", "eval/pass@8"});
  const auto series = log.series("reward/mean", "rl");
  REQUIRE(series.size() == 2);
  CHECK(series[1] == std::pair<std::int64_t, double>{2, -0.5});
  CHECK(log.last_with("eval/pass@8")->step == 3);

  // Appending to an existing file continues it.
  MetricsWriter more(file);
  more.append(4, "rl", {});
  CHECK(read_metrics(file).records.size() == 4);
}

TEST_CASE("a truncated last line is tolerated, a bad line elsewhere is an error",
          "[experiments][metrics]") {
  const auto dir = scratch_dir("metrics_truncated");
  const auto file = dir / "metrics.jsonl";
  write_text(file,
             "{\"step\":1,\"time\":5.0,\"r\":1.0}\n\n{\"step\":2,\"time\":6.0,\"r\":2.0}\n{"
             "\"step\":3,\"ti");
  const MetricsLog log = read_metrics(file);
  CHECK(log.records.size() == 2);
  CHECK(log.truncated_last_line);
  CHECK(log.lines == 4);

  // A complete last line without its newline is a record, not a truncation.
  write_text(file, "{\"step\":1,\"r\":1.0}");
  CHECK(read_metrics(file).records.size() == 1);
  CHECK_FALSE(read_metrics(file).truncated_last_line);

  write_text(file, "{\"step\":1}\n{\"step\":2,,}\n{\"step\":3}\n");
  CHECK_THROWS_WITH(read_metrics(file), has_substring(file.string() + ":2:11:"));
  write_text(file, "{\"step\":1}\n[1,2]\n");
  CHECK_THROWS_WITH(read_metrics(file),
                    has_substring(file.string() + ":2: expected a JSON object"));
  write_text(file, "{\"time\":1}\n");
  CHECK_THROWS_WITH(read_metrics(file), has_substring(file.string() + ":1: missing member 'step'"));
  write_text(file, "{\"step\":1.5}\n");
  CHECK_THROWS_WITH(read_metrics(file), has_substring(":1: member 'step'"));
  write_text(file, "{\"step\":1,\"stage\":3}\n");
  CHECK_THROWS_WITH(read_metrics(file), has_substring(":1: member 'stage': expected a string"));

  CHECK_THROWS_WITH(read_metrics(dir / "absent.jsonl"), has_substring("absent.jsonl: cannot open"));
  CHECK(read_metrics(dir / "absent.jsonl", /*missing_ok=*/true).records.empty());
}

TEST_CASE("a writer killed with SIGKILL leaves a readable file", "[experiments][metrics]") {
  const auto dir = scratch_dir("metrics_killed");
  const auto file = dir / "metrics.jsonl";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // Child: log as fast as it can until killed. Long lines make a kill inside a write likely.
    try {
      MetricsWriter w(file);
      Statistics values;
      for (int i = 0; i < 200; ++i) values.emplace_back("statistic_" + std::to_string(i), i * 0.1);
      for (std::int64_t step = 0;; ++step) w.append(step, "rl", values);
    } catch (...) {
    }
    ::_exit(3);
  }
  // Wait for some lines, then kill mid-stream.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(file, ec);  // (uintmax_t)-1 on error
    if (!ec && size > 200000) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
  const MetricsLog log = read_metrics(file);
  REQUIRE(log.records.size() > 5);
  for (std::size_t i = 0; i < log.records.size(); ++i) {
    CHECK(log.records[i].step == static_cast<std::int64_t>(i));
    CHECK(log.records[i].values.size() == 200);
  }
}

TEST_CASE("rewinding keeps the lines up to a step", "[experiments][metrics]") {
  const auto dir = scratch_dir("metrics_rewind");
  const auto file = dir / "metrics.jsonl";
  write_text(file,
             "{\"step\":1}\n{\"step\":2,\"x\":1.0}\n{\"step\":3}\n{\"step\":4}\n{\"step\":5,\"x");
  CHECK(rewind_metrics(file, 2) == 3);  // steps 3, 4 and the cut line
  CHECK(read_bytes(file) == "{\"step\":1}\n{\"step\":2,\"x\":1.0}\n");
  CHECK(rewind_metrics(file, 10) == 0);
  CHECK(rewind_metrics(dir / "absent.jsonl", 3) == 0);
  write_text(file, "{\"step\":1}\nnot json\n{\"step\":3}\n");
  // Column 2: nlohmann's reader stops at the 'o' that cannot continue a literal null.
  CHECK_THROWS_WITH(rewind_metrics(file, 2), has_substring(file.string() + ":2:2:"));
  CHECK(read_bytes(file) == "{\"step\":1}\nnot json\n{\"step\":3}\n");  // left as it was
}
