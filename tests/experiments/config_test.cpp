// The experiment config: every default passes its own checks, bad files are rejected with the key path
// and the line, overrides go through the same checks, a resolved config reads back equal, and
// docs/config.md is what the schema renders.
#include <fstream>
#include <sstream>
#include <string>

#include "catch.hpp"
#include "sparserl/experiments/config.hpp"
#include "test_support.hpp"

using sparserl::experiments::Config;
using sparserl::experiments::ConfigError;
using sparserl::experiments::experiment_schema;
using sparserl::testing::has_substring;

TEST_CASE("defaults are complete and every key is readable", "[experiments][config]") {
  Config c;
  for (const auto& key : experiment_schema().keys()) {
    CHECK_NOTHROW(c.value(key.path));
    CHECK_FALSE(c.is_set(key.path));
  }
  CHECK(c.string("data.op") == "spmv");
  CHECK(c.real("reward.r_eff") == 0.2);
  CHECK_THROWS_WITH(c.integer("data.nope"), has_substring("unknown config key 'data.nope'"));
}

TEST_CASE("a file sets values; every documented key is accepted", "[experiments][config]") {
  // A file that sets every key to its default, spelled out: the whole schema is accepted.
  const std::string resolved = Config().to_toml();
  Config all = Config::parse(resolved, "all.toml");
  CHECK(all == Config());
  for (const auto& key : experiment_schema().keys()) CHECK(all.is_set(key.path));

  Config c = Config::parse("[data]\nop = \"spmm\"\nk = 32\n[reward]\nr_eff = 1\n", "a.toml");
  CHECK(c.string("data.op") == "spmm");
  CHECK(c.integer("data.k") == 32);
  CHECK(c.real("reward.r_eff") == 1.0);  // an integer where a number is expected is fine
  CHECK(c.is_set("data.k"));
  CHECK_FALSE(c.is_set("data.dtype"));
}

TEST_CASE("bad configs are rejected with the key path and the line", "[experiments][config]") {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"[data]\nopp = \"spmv\"\n", "bad.toml:2: unknown key 'data.opp' (did you mean 'data.op'?)"},
      {"[dta]\nop = \"spmv\"\n", "bad.toml:1: unknown section 'dta'"},
      {"[data]\nk = \"eight\"\n", "bad.toml:2: key 'data.k': expected integer, got a string"},
      {"[data]\nk = 0\n", "bad.toml:2: key 'data.k': value 0 is outside [1, 1024]"},
      {"[data]\nop = \"spmx\"\n", "bad.toml:2: key 'data.op': 'spmx' is not one of: spmv, spmm"},
      {"\n\n[timing]\nenabled = 1\n", "bad.toml:4: key 'timing.enabled': expected boolean, got an integer"},
      {"[data]\nuris = [\"a\", 3]\n", "bad.toml:2: key 'data.uris': an element is an integer"},
      {"[reward]\ntier_speedups = [1.0, -2.0]\n", "key 'reward.tier_speedups': value -2.0 is outside"},
      {"[data]\nk = 3.5\n", "key 'data.k': expected integer, got a float"},
      {"[data\nk = 3\n", "bad.toml:1: "},
      {"seed = 3\n", "bad.toml:1: unknown key 'seed' (did you mean"},
      {"[evaluator]\ncompile_timeout_s = inf\n", "key 'evaluator.compile_timeout_s': expected a finite number"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    CHECK_THROWS_WITH(Config::parse(c.text, "bad.toml"), has_substring(c.expected));
  }
}

TEST_CASE("overrides are checked like the file and win over it", "[experiments][config]") {
  Config c = Config::parse("[data]\nk = 16\n", "a.toml", {"data.k=64", "data.op=spmm", "reward.shape=\"log2\"",
                                                         "data.uris=[\"gen-v1/diagonal?n=4\"]"});
  CHECK(c.integer("data.k") == 64);
  CHECK(c.string("data.op") == "spmm");  // a bare word is a string
  CHECK(c.string("reward.shape") == "log2");
  CHECK(c.string_list("data.uris") == std::vector<std::string>{"gen-v1/diagonal?n=4"});
  CHECK_THROWS_WITH(c.set("data.k=big"), has_substring("override 'data.k=big'"));
  CHECK_THROWS_WITH(c.set("data.kk=3"), has_substring("unknown key 'data.kk'"));
  CHECK_THROWS_WITH(c.set("data.k"), has_substring("expected section.key=value"));
  CHECK_THROWS_WITH(c.set("data.k=5000"), has_substring("outside [1, 1024]"));
}

TEST_CASE("the resolved config round-trips", "[experiments][config]") {
  Config c = Config::parse("[experiment]\nname = \"x \\\"quoted\\\"\"\n[reward]\nclip_max = 2.75\n", "a.toml",
                           {"data.index_dirs=[]", "timing.repetitions=7"});
  Config back = Config::parse(c.to_toml(), "resolved.toml");
  CHECK(back == c);
  CHECK(back.string("experiment.name") == "x \"quoted\"");
}

TEST_CASE("docs/config.md is what the schema renders", "[experiments][config]") {
  std::ifstream in(sparserl::testing::source_dir() / "docs" / "config.md");
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  INFO("regenerate with: build/tools/sparserl config --markdown > docs/config.md");
  CHECK(text.str() == experiment_schema().render_markdown());
}
