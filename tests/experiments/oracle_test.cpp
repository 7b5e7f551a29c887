// The benchmark's oracle: the cache file keyed by split digest, device, op, dtype, k and budget;
// its round trip; malformed files named by file and line; the oracle fraction's arithmetic.
#include "sparserl/experiments/oracle.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "catch.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace sparserl::experiments;
using namespace sparserl::testing;

namespace {

OracleEntry entry(const std::string& matrix, double us, double base) {
  OracleEntry e;
  e.matrix = matrix;
  e.oracle_us = us;
  e.baseline_us = base;
  e.oracle_speedup = base / us;
  e.program = "ab12";
  e.design = "csr_vector lanes=8 block=256 unroll=1 vec=1 ldg=1";
  e.protocol = "seed=0 inputs=3 warmup=5 reps=50 flush_l2=1 time=1";
  return e;
}

MatrixResult answer(bool tested, bool correct, double speedup) {
  MatrixResult r;
  r.matrix = "m";
  r.agent = "a";
  r.tested = tested;
  r.compiled = true;
  r.correct = correct;
  r.speedup = speedup;
  return r;
}

}  // namespace

TEST_CASE("the oracle cache is keyed by split digest, device, op, dtype, k and budget",
          "[experiments][oracle]") {
  CHECK(device_slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3");
  CHECK(device_slug("  NVIDIA  H200 (x2) ") == "nvidia-h200-x2");
  CHECK(device_slug("") == "unknown-device");
  OracleKey key;
  key.split_digest = "0123456789abcdef";
  key.device = "NVIDIA H100 80GB HBM3";
  key.budget = 16;
  const fs::path data = "/data";
  CHECK(oracle_cache_file(data, key) ==
        "/data/oracle/0123456789abcdef/nvidia-h100-80gb-hbm3/spmv-f32-k1-b16.csv");
  OracleKey other = key;
  other.device = "NVIDIA H200";
  CHECK(oracle_cache_file(data, other) ==
        "/data/oracle/0123456789abcdef/nvidia-h200/spmv-f32-k1-b16.csv");
  other = key;
  other.split_digest = "fedcba9876543210";
  CHECK(oracle_cache_file(data, other).parent_path().parent_path().filename() ==
        "fedcba9876543210");
  other = key;
  other.op = sparserl::datasets::Op::spmm;
  other.dtype = sparserl::datasets::DType::f64;
  other.k = 32;
  other.budget = 64;
  CHECK(oracle_cache_file(data, other).filename() == "spmm-f64-k32-b64.csv");
  other.split_digest.clear();
  CHECK(oracle_cache_file(data, other).parent_path().parent_path().filename() == "no-split");

  // Two devices' caches of one split are two files: an entry of one is not the other's.
  const fs::path dir = scratch_dir("oracle_keys");
  OracleCache h100(oracle_cache_file(dir, key));
  h100.store({entry("gen-v1/diagonal?n=9", 2.0, 4.0)});
  OracleKey h200_key = key;
  h200_key.device = "NVIDIA H200";
  const OracleCache h200(oracle_cache_file(dir, h200_key));
  CHECK(h200.entries().empty());
  CHECK(OracleCache(oracle_cache_file(dir, key)).find("gen-v1/diagonal?n=9") != nullptr);
}

TEST_CASE("the oracle cache round-trips and replaces entries by matrix", "[experiments][oracle]") {
  const fs::path file = scratch_dir("oracle_round_trip") / "a" / "b" / "spmv-f32-k1-b16.csv";
  OracleCache cache(file);
  CHECK(cache.entries().empty());  // no file yet: an empty cache
  OracleEntry odd = entry("file:/x/a,b \"odd\".mtx", 1.5, 3.0);
  odd.design = "sell C=32 sigma=256, block=128";
  cache.store({entry("suitesparse-v1/HB/west0067", 2.0, 3.0), odd});
  REQUIRE(fs::exists(file));
  std::ifstream in(file);
  std::string header;
  std::getline(in, header);
  CHECK(header == "matrix,oracle_us,baseline_us,oracle_speedup,program,design,protocol");
  OracleCache back(file);
  REQUIRE(back.entries().size() == 2);
  CHECK(back.entries()[0] == entry("suitesparse-v1/HB/west0067", 2.0, 3.0));
  CHECK(back.entries()[1] == odd);
  CHECK(back.find("suitesparse-v1/HB/west0067")->oracle_speedup == 1.5);
  CHECK(back.find("nope") == nullptr);
  back.store({entry("suitesparse-v1/HB/west0067", 1.0, 3.0), entry("gen-v1/diagonal?n=3", 1, 1)});
  const OracleCache again(file);
  REQUIRE(again.entries().size() == 3);
  CHECK(again.find("suitesparse-v1/HB/west0067")->oracle_speedup == 3.0);
}

TEST_CASE("a malformed oracle cache is named by file and line", "[experiments][oracle]") {
  const fs::path file = scratch_dir("oracle_malformed") / "spmv-f32-k1-b16.csv";
  const std::string header =
      "matrix,oracle_us,baseline_us,oracle_speedup,program,design,protocol\n";
  struct Case {
    std::string text;
    std::string message;
  };
  const Case cases[] = {
      {"", ":1: empty file"},
      {"matrix,oracle_us\nm,1\n", ":1: the header has no 'baseline_us' column"},
      {header + "m,1.0,2.0,2.0,p,d,s\nn,fast,2.0,2.0,p,d,s\n",
       ":3: column 'oracle_us': 'fast' is not a number"},
      {header + "m,1.0,2.0,2.0,p,d\n", ":2: 6 fields, the header has 7"},
      {header + "m,1,2,2,p,d,s\n\nm,1,2,2,p,d,s\n",
       ":4: the matrix m is listed twice (first on line 2)"},
      {header + ",1,2,2,p,d,s\n", ":2: column 'matrix': empty"},
      {header + "\"m,1,2,2,p,d,s\n", ":2: unterminated quoted field"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    std::ofstream(file) << c.text;
    CHECK_THROWS_WITH(OracleCache(file), has_substring(file.string() + c.message));
  }
}

TEST_CASE("the oracle fraction: speedup over the oracle's, 0 for a failure, n/a untested",
          "[experiments][oracle]") {
  const double nan = std::nan("");
  CHECK(oracle_fraction(answer(true, true, 1.5), 2.0) == 0.75);
  CHECK(oracle_fraction(answer(true, true, 3.0), 2.0) == 1.5);   // above the oracle: more than 1
  CHECK(oracle_fraction(answer(true, false, nan), 2.0) == 0.0);  // failed
  CHECK(oracle_fraction(answer(true, true, nan), 2.0) == 0.0);   // correct, never timed
  CHECK(std::isnan(oracle_fraction(answer(false, false, nan), 2.0)));  // no GPU stages
  CHECK(std::isnan(oracle_fraction(answer(true, true, 1.5), nan)));    // no oracle
  CHECK(std::isnan(oracle_fraction(answer(true, true, 1.5), 0.0)));

  const fs::path file = scratch_dir("oracle_apply") / "o.csv";
  OracleCache cache(file);
  OracleEntry m = entry("m", 1.0, 2.0);  // speedup 2
  cache.store({m});
  std::vector<MatrixResult> rows = {answer(true, true, 1.0), answer(true, false, nan),
                                    answer(false, false, nan)};
  rows.push_back(answer(true, true, 1.0));
  rows.back().matrix = "unknown";
  apply_oracle(rows, cache, m.protocol);
  CHECK(rows[0].oracle_speedup == 2.0);
  CHECK(rows[0].oracle_fraction == 0.5);
  CHECK(rows[1].oracle_fraction == 0.0);
  CHECK(rows[2].oracle_speedup == 2.0);
  CHECK(std::isnan(rows[2].oracle_fraction));
  CHECK(std::isnan(rows[3].oracle_speedup));
  // An entry timed under another protocol is not this run's oracle.
  std::vector<MatrixResult> other = {answer(true, true, 1.0)};
  apply_oracle(other, cache, "seed=0 inputs=1 warmup=0 reps=5 flush_l2=0 time=1");
  CHECK(std::isnan(other[0].oracle_speedup));
  CHECK(std::isnan(other[0].oracle_fraction));
}

TEST_CASE("the template agent fills the cache when it searched with at least the oracle's budget",
          "[experiments][oracle]") {
  const fs::path file = scratch_dir("oracle_fill") / "o.csv";
  OracleCache cache(file);
  const OracleEntry kept = entry("a", 1.0, 2.0);
  OracleEntry stale = entry("b", 1.0, 2.0);
  stale.protocol = "seed=0 inputs=1 warmup=0 reps=5 flush_l2=0 time=1";
  cache.store({kept, stale});
  const std::string protocol = kept.protocol;
  std::map<std::string, OracleEntry> answers = {
      {"a", entry("a", 0.5, 2.0)}, {"b", entry("b", 0.8, 2.0)}, {"c", entry("c", 1.0, 3.0)}};
  OracleEntry screened = entry("d", 1.0, 1.0);
  screened.protocol = "screen screen";  // a screening figure is no oracle
  answers.emplace("d", screened);
  CHECK(entries_to_fill(cache, answers, 8, 16, protocol).empty());  // a smaller search
  const std::vector<OracleEntry> fill = entries_to_fill(cache, answers, 16, 16, protocol);
  REQUIRE(fill.size() == 2);  // "a" is known and stays; "b" was timed under another protocol
  CHECK(fill[0].matrix == "b");
  CHECK(fill[1].matrix == "c");
  CHECK(entries_to_fill(cache, answers, 32, 16, protocol).size() == 2);
  cache.store(fill);
  const OracleCache back(file);
  CHECK(back.find("a")->oracle_speedup == 2.0);
  CHECK(back.find("b")->oracle_speedup == 2.5);
  CHECK(back.find("b")->protocol == protocol);
  CHECK(back.find("c")->oracle_speedup == 3.0);
  CHECK(back.find("d") == nullptr);
}
