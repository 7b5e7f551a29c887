// Task URIs and tasks: parsing, the canonical spelling, and messages that name the URI.
#include "sparserl/datasets/task.hpp"

#include <initializer_list>
#include <string>
#include <utility>

#include "catch.hpp"

namespace ds = sparserl::datasets;
using ds::InvalidUri;
using ds::MatrixUri;
using sparserl::testing::has_substring;

namespace {

// Each URI fails to parse with a message saying its part.
void check_refused(std::initializer_list<std::pair<const char*, const char*>> cases) {
  for (const auto& [uri, part] : cases) {
    INFO(uri);
    CHECK_THROWS_WITH(MatrixUri::parse(uri), has_substring(part));
  }
}

}  // namespace

TEST_CASE("ops and dtypes print and parse", "[datasets][task]") {
  CHECK(ds::to_string(ds::Op::spmv) == "spmv");
  CHECK(ds::to_string(ds::Op::spmm) == "spmm");
  CHECK(ds::to_string(ds::DType::f32) == "f32");
  CHECK(ds::to_string(ds::DType::f64) == "f64");
  CHECK(ds::parse_op("spmm") == ds::Op::spmm);
  CHECK(ds::parse_op("SpMV") == std::nullopt);
  CHECK(ds::parse_dtype("f64") == ds::DType::f64);
  CHECK(ds::parse_dtype("fp32") == std::nullopt);
  CHECK(ds::dtype_bytes(ds::DType::f32) == 4);
}

TEST_CASE("suitesparse-v1 URIs", "[datasets][task]") {
  const auto u = MatrixUri::parse("suitesparse-v1/HB/west0067");
  CHECK(u.scheme == MatrixUri::Scheme::suitesparse);
  CHECK(u.version == "v1");
  CHECK(u.group == "HB");
  CHECK(u.name == "west0067");
  CHECK(u.str() == "suitesparse-v1/HB/west0067");
  CHECK(MatrixUri::parse("suitesparse-v1/JGD_Franz/Franz6_id1959_aug").name == "Franz6_id1959_aug");
  CHECK(MatrixUri::parse("suitesparse-v1/SNAP/ca-AstroPh").str() ==
        "suitesparse-v1/SNAP/ca-AstroPh");

  CHECK_THROWS_WITH(MatrixUri::parse("suitesparse-v1/west0067"),
                    has_substring("invalid matrix URI 'suitesparse-v1/west0067'") &&
                        has_substring("'ungrouped'"));
  check_refused({
      {"suitesparse-v1/HB/west/0067", "more than two parts"},
      {"suitesparse-v1//west0067", "the group ''"},
      {"suitesparse-v1/HB/", "the name ''"},
      {"suitesparse-v1/HB/a b", "the name 'a b'"},
      {"suitesparse-v1/../x", "the group '..'"},
      {"suitesparse-v2/HB/west0067",
       "unknown version 'v2' of suitesparse URIs (this build knows v1)"},
      {"suitesparse/HB/west0067", "has no version"},
      {"suitesparse-v1", "expected suitesparse-v1/GROUP/NAME"},
  });
  CHECK_THROWS_AS(MatrixUri::parse("suitesparse-v1/HB/west0067?x=1"), InvalidUri);
}

TEST_CASE("gen-v1 URIs have sorted parameters in their canonical form", "[datasets][task]") {
  const auto u = MatrixUri::parse("gen-v1/rmat?seed=3&scale=16&edge_factor=8");
  CHECK(u.scheme == MatrixUri::Scheme::generated);
  CHECK(u.kind == "rmat");
  CHECK(u.params.at("scale") == "16");
  CHECK(u.params.size() == 3);
  CHECK(u.str() == "gen-v1/rmat?edge_factor=8&scale=16&seed=3");
  CHECK(MatrixUri::parse(u.str()).str() == u.str());
  CHECK(MatrixUri::parse("gen-v1/diagonal").str() == "gen-v1/diagonal");
  CHECK(MatrixUri::parse("gen-v1/banded?fill=0.25&n=1e3").params.at("fill") == "0.25");

  check_refused({
      {"gen-v1/rmat?scale=1&scale=2",
       "invalid matrix URI 'gen-v1/rmat?scale=1&scale=2': the parameter "
       "'scale' is given twice"},
      {"gen-v1/rmat?", "nothing follows '?'"},
      {"gen-v1/rmat?scale", "expected key=value, found 'scale'"},
      {"gen-v1/rmat?scale=", "the value '' of 'scale'"},
      {"gen-v1/rmat?a=1&&b=2", "expected key=value, found ''"},
      {"gen-v1/rmat?=1", "the parameter name ''"},
      {"gen-v1/?a=1", "the generator kind ''"},
      {"gen-v1/r-mat", "the generator kind 'r-mat'"},
      {"gen-v1/rmat?a=x y", "the value 'x y'"},
      {"gen-v3/rmat", "unknown version 'v3' of gen URIs"},
  });
}

TEST_CASE("file URIs and unknown schemes", "[datasets][task]") {
  CHECK(MatrixUri::parse("file:m/a.mtx").path == "m/a.mtx");
  CHECK(MatrixUri::parse("file:/abs/a.mtx.gz").str() == "file:/abs/a.mtx.gz");
  CHECK(MatrixUri::parse("file:///abs/a.mtx").path == "/abs/a.mtx");
  CHECK(MatrixUri::parse("file://localhost/abs/a.mtx").path == "/abs/a.mtx");
  check_refused({
      {"file://host/a.mtx", "not a host"},
      {"file:", "the path after 'file:' is empty"},
      {"", "it is empty"},
  });
  CHECK_THROWS_WITH(
      MatrixUri::parse("http://x/y"),
      has_substring("invalid matrix URI 'http://x/y': unknown scheme 'http:'") &&
          has_substring(
              "expected suitesparse-v1/GROUP/NAME, gen-v1/KIND?key=value&... or file:PATH"));
  CHECK_THROWS_WITH(MatrixUri::parse("HB/west0067"), has_substring("unknown scheme 'HB'"));
}

TEST_CASE("tasks print and parse", "[datasets][task]") {
  ds::Task t;
  t.uri = "suitesparse-v1/HB/west0067";
  CHECK(t.str() == "suitesparse-v1/HB/west0067 spmv f32");
  t.op = ds::Op::spmm;
  t.dtype = ds::DType::f64;
  t.k = 32;
  CHECK(t.str() == "suitesparse-v1/HB/west0067 spmm f64 k=32");
  const ds::Task back = ds::Task::parse(t.str());
  CHECK(back.uri == t.uri);
  CHECK(back.op == ds::Op::spmm);
  CHECK(back.dtype == ds::DType::f64);
  CHECK(back.k == 32);
  CHECK(ds::Task::parse("gen-v1/rmat?seed=1&scale=4 spmv f64").uri == "gen-v1/rmat?scale=4&seed=1");
  CHECK_THROWS_WITH(ds::Task::parse("suitesparse-v1/HB/west0067 spmm f32"),
                    has_substring("spmm needs k=K"));
  CHECK_THROWS_WITH(
      ds::Task::parse("suitesparse-v1/HB/west0067 spmv f16"),
      has_substring("invalid task 'suitesparse-v1/HB/west0067 spmv f16': expected the value type"));
  CHECK_THROWS_WITH(ds::Task::parse("suitesparse-v1/HB/west0067 spmm f32 k=0"),
                    has_substring("positive integer"));
  CHECK_THROWS_WITH(ds::Task::parse("suitesparse-v1/HB/west0067"),
                    has_substring("expected 'URI spmv|spmm"));
  CHECK_THROWS_AS(ds::Task::parse("bogus/x spmv f32"), InvalidUri);
}
