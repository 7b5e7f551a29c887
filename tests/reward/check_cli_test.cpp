// `sparserl check` run as users run it: the built binary, its output and its exit status. 0
// whenever an evaluation was made (a compile error is a verdict, not a failure of the command), 1
// for a program or matrix that cannot be read, 2 with the usage for bad arguments.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "catch.hpp"
#include "command_checks.hpp"
#include "test_support.hpp"

using namespace sparserl::testing;
namespace fs = std::filesystem;

namespace {

using Run = sparserl::testing::CommandResult;

Run check(const std::string& arguments) {
  return sparserl::testing::run_shell(shell_quote(SPARSERL_CLI_PATH) + " check " + arguments);
}

fs::path write(const fs::path& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir / name) << text;
  return dir / name;
}

std::string program(const std::string& name) {
  return shell_quote((sparserl::testing::source_dir() / "reward" / "programs" / name).string());
}

const std::string kMatrix = shell_quote("gen-v1/banded?n=200&bandwidth=3");

}  // namespace

TEST_CASE("check --compile-only --json prints the EvalResult and exits 0", "[reward][cli]") {
  check_output(
      check(program("spmv_csr.cu") + " --matrix " + kMatrix + " --compile-only --json"), 0,
      {"\"error\":\"none\"", "\"compiled\":true", "\"gpu_available\":false", "\"arch\":\"sm_90\""});
}

TEST_CASE("check prints a readable summary, SpMM and f64 included", "[reward][cli]") {
  check_output(
      check(program("spmm_bsr.cu") + " --matrix " + kMatrix +
            " --op spmm --dtype f64 --k 4 --arch sm_80"),
      0, {"verdict   ok", "spmm f64 k=4", "sm_80", "gpu       not used", "reward    total=0.5"});
}

TEST_CASE("Verdicts are exit status 0, whatever they are", "[reward][cli]") {
  const auto dir = sparserl::testing::scratch_dir("check_cli_verdicts");
  const std::string header = "//@format csr\n//@launch spmv grid=ceil_div(M, 128) block=128\n";
  const std::string signature =
      "extern \"C\" __global__ void spmv(const int* __restrict__ row_ptr, "
      "const int* __restrict__ col_idx, const value_t* __restrict__ val, "
      "const value_t* __restrict__ x, value_t* __restrict__ y)";
  SECTION("a compile error") {
    const auto file = write(dir, "broken.cu", header + signature + " {\n  y[0] = nope;\n}\n");
    const Run r = check(shell_quote(file.string()) + " --matrix " + kMatrix + " --compile-only");
    INFO(r.output);
    REQUIRE(r.status == 0);
    REQUIRE_THAT(r.output, has_substring("verdict   compile_error"));
    REQUIRE_THAT(r.output, has_substring("nope"));
  }
  SECTION("a static check") {
    const auto file =
        write(dir, "include.cu", "#include <cstdio>\n" + header + signature + " { }\n");
    const Run r = check(shell_quote(file.string()) + " --matrix " + kMatrix + " --json");
    INFO(r.output);
    REQUIRE(r.status == 0);
    REQUIRE_THAT(r.output, has_substring("\"error\":\"static_check\""));
    REQUIRE_THAT(r.output, has_substring("\"static_reason\":\"include\""));
  }
}

TEST_CASE("A full evaluation without a GPU stops after the compile stage", "[reward][cli]") {
  const Run r = check(program("spmv_coo.cu") + " --matrix " + kMatrix + " --json");
  INFO(r.output);
  REQUIRE(r.status == 0);
  if (r.output.find("\"gpu_available\":true") != std::string::npos) {
    sparserl::testing::skip("a GPU is present: the GPU tier covers full evaluations");
  }
  REQUIRE_THAT(r.output, has_substring("\"error\":\"none\""));
  REQUIRE_THAT(r.output, has_substring("\"stage\":\"compile\""));
}

TEST_CASE("A Matrix Market file is accepted as --matrix", "[reward][cli]") {
  const auto dir = sparserl::testing::scratch_dir("check_cli_mtx");
  const auto mtx = write(dir, "tiny.mtx",
                         "%%MatrixMarket matrix coordinate real general\n3 3 4\n1 1 1.0\n2 2 2.0\n"
                         "3 1 -1.5\n3 3 4.0\n");
  const Run r = check(program("spmv_ell.cu") + " --matrix " + shell_quote(mtx.string()) +
                      " --compile-only --json");
  INFO(r.output);
  REQUIRE(r.status == 0);
  REQUIRE_THAT(r.output, has_substring("\"error\":\"none\""));
}

TEST_CASE("A shared SuiteSparse matrix is found through --index", "[reward][cli]") {
  const fs::path matrices = sparserl::testing::shared_matrices_dir();
  const Run r = check(program("spmv_sell.cu") + " --matrix suitesparse-v1/HB/494_bus --index " +
                      shell_quote(matrices.string()) + " --compile-only --json");
  INFO(r.output);
  REQUIRE(r.status == 0);
  REQUIRE_THAT(r.output, has_substring("\"error\":\"none\""));
}

TEST_CASE("Unreadable inputs exit 1 with a message naming them", "[reward][cli]") {
  const auto dir = sparserl::testing::scratch_dir("check_cli_unreadable");
  SECTION("no such program file") {
    const Run r = check("/nonexistent/prog.cu --matrix " + kMatrix);
    REQUIRE(r.status == 1);
    REQUIRE_THAT(r.output, has_substring("/nonexistent/prog.cu"));
  }
  SECTION("no such matrix") {
    const Run r = check(program("spmv_csr.cu") + " --matrix suitesparse-v1/Nope/none --data-dir " +
                        shell_quote(dir.string()));
    REQUIRE(r.status == 1);
    REQUIRE_THAT(r.output, has_substring("suitesparse-v1/Nope/none"));
  }
  SECTION("neither a file nor a URI") {
    const Run r = check(program("spmv_csr.cu") + " --matrix missing.mtx");
    REQUIRE(r.status == 1);
    REQUIRE_THAT(r.output, has_substring("neither a file nor a matrix URI"));
  }
  SECTION("a matrix file that does not read") {
    const auto bad = write(dir, "bad.mtx", "%%MatrixMarket matrix coordinate real general\n3 3\n");
    const Run r = check(program("spmv_csr.cu") + " --matrix " + shell_quote(bad.string()) +
                        " --compile-only");
    REQUIRE(r.status == 1);
    REQUIRE_THAT(r.output, has_substring("bad.mtx"));
  }
}

TEST_CASE("Bad arguments exit 2 with the usage", "[reward][cli]") {
  // Each run of the CLI costs its start-up (the binary loads every library of the project): a few
  // representative cases.
  for (const std::string& args :
       {std::string(""), program("spmv_csr.cu") + " --matrix " + kMatrix + " --op spmx",
        program("spmv_csr.cu") + " --matrix " + kMatrix + " --arch gfx90a",
        program("spmv_csr.cu") + " --matrix " + kMatrix + " --bogus 1"}) {
    INFO("arguments: " << args);
    check_output(check(args), 2, {"usage: sparserl check PROGRAM"});
  }
  check_output(check("--help"), 0, {"--compile-only"});
}
