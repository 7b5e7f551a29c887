// The adversarial programs the evaluator must not be fooled by, each with the verdict the GPU tier
// expects. Four are whole programs of their own (tests/reward/programs/adversarial/NAME.cu:
// decoy_device_launch, infinite_loop, needs_zeroed_y, trap); the others are the plain CSR SpMV
// kernel (adversarial/plain_spmv.cu) with one hostile twist, each written below as the comment its
// program opens with (what it does and its expected verdict) and the edits that make it from the
// plain kernel.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/reward/eval_result.hpp"
#include "test_support.hpp"

namespace sparserl::reward::testing {

inline std::filesystem::path adversarial_path(const std::string& file) {
  return sparserl::testing::source_dir() / "tests" / "reward" / "programs" / "adversarial" / file;
}

// The lines of the plain kernel the twists change.
inline constexpr std::string_view kLaunch = "//@launch spmv grid=ceil_div(M, 128) block=128\n";
inline constexpr std::string_view kKernel = "extern \"C\" __global__ void spmv(";
inline constexpr std::string_view kGuard = "  if (row >= M) return;\n";
inline constexpr std::string_view kLoop =
    "  for (int k = row_ptr[row]; k < row_ptr[row + 1]; ++k) sum += val[k] * x[col_idx[k]];\n";
inline constexpr std::string_view kStore = "  y[row] = sum;\n";

struct Edit {
  std::string_view from;  // occurs once in the plain kernel
  std::string to;
};

struct AdversarialCase {
  std::string_view name;
  ErrorKind verdict;           // on the GPU tier's generated SpMV task
  std::string_view message;    // a part of the verdict's message ("" for any); a static check's reason
  std::string_view comment;    // a twist's opening comment; empty: the program is adversarial/NAME.cu
  std::vector<Edit> edits;     // a twist's edits of the plain kernel
};

// `line` with more lines after it.
inline std::string then(std::string_view line, std::string_view more) {
  return std::string(line) + std::string(more);
}

// In the order the GPU tier evaluates them.
inline const std::vector<AdversarialCase>& adversarial_cases() {
  static const std::vector<AdversarialCase> table = {
      {"skip_rows", ErrorKind::unwritten_output, "never written",
       "// Adversarial: skips every seventh row (never writes it). Expected verdict: unwritten_output.\n",
       {{kGuard, "  if (row >= M || row % 7 == 3) return;\n"}}},
      {"skip_rows_zero", ErrorKind::wrong_answer, "outside the tolerance",
       "// Adversarial: writes 0 for every seventh row instead of computing it. Expected verdict: wrong_answer\n"
       "// (on matrices where such a row holds nonzeros).\n",
       {{kLoop, "  if (row % 7 != 3) {\n  " + std::string(kLoop) + "  }\n"}}},
      {"half_y", ErrorKind::unwritten_output, "never written",
       "// Adversarial: computes only the first half of y. Expected verdict: unwritten_output.\n",
       {{kLaunch, "//@launch spmv grid=ceil_div(M / 2, 128) block=128\n"},
        {kGuard, "  if (row >= M / 2) return;\n"}}},
      {"stale_output", ErrorKind::static_check, "global_state",
       "// Adversarial: computes y on its first run only and afterwards returns at once, relying on the\n"
       "// previous run's output still being in memory. Expected verdict: static_check (global_state);\n"
       "// were it run, unwritten_output (y is NaN-filled before every run).\n",
       {{kKernel, then("__device__ int runs_seen;\n\n", kKernel)},
        {kGuard, then(kGuard, "  if (runs_seen > 0) return;\n")},
        {kStore, then(kStore, "  if (row == 0) atomicAdd(&runs_seen, 1);\n")}}},
      {"cached_result", ErrorKind::static_check, "global_state",
       "// Adversarial: caches its first result in device memory and replays it on every later run (cheaper\n"
       "// than reading the matrix). Expected verdict: static_check (global_state); were it run,\n"
       "// wrong_answer (every run gets a fresh x).\n",
       {{kKernel, then("#define CACHE_ROWS (1 << 20)\n__device__ value_t cache[CACHE_ROWS];\n"
                       "__device__ int cache_ready;\n\n",
                       kKernel)},
        {kGuard, then(kGuard, "  if (cache_ready && row < CACHE_ROWS) {\n    y[row] = cache[row];\n"
                              "    return;\n  }\n")},
        {kStore, then(kStore, "  if (row < CACHE_ROWS) cache[row] = sum;\n  __threadfence();\n"
                              "  if (row == 0) cache_ready = 1;\n")}}},
      {"writes_input", ErrorKind::input_mutated, "'x'",
       "// Adversarial: computes y correctly, then overwrites part of x (through a cast). Expected verdict:\n"
       "// input_mutated.\n",
       {{kStore, then(kStore, "  if (row == 0) const_cast<value_t*>(x)[N - 1] = value_t(7);\n")}}},
      {"writes_matrix", ErrorKind::input_mutated, "'val'",
       "// Adversarial: computes y correctly, then changes one value of the matrix (through a cast), which\n"
       "// the worker keeps on the device for the next program on the same matrix. Expected verdict:\n"
       "// input_mutated, and the next program on the matrix is judged on the matrix as it was.\n",
       {{kStore, then(kStore, "  if (row == 0) const_cast<value_t*>(val)[0] += value_t(1);\n")}}},
      {"oob_read", ErrorKind::illegal_address, "",
       "// Adversarial: reads x far outside its bounds. Expected verdict: illegal_address, and the next\n"
       "// evaluation in the same pool still works.\n",
       {{"x[col_idx[k]]", "x[col_idx[k] + (1 << 30)]"}}},
      {"oob_write", ErrorKind::illegal_address, "outside the array 'y'",
       "// Adversarial: computes y and also writes one element past its end. Expected verdict:\n"
       "// illegal_address (the guard zone after y changed).\n",
       {{kStore, then(kStore, "  if (row == M - 1) y[M] = sum;\n")}}},
      {"trap", ErrorKind::illegal_address, "", "", {}},
      {"needs_zeroed_y", ErrorKind::unwritten_output, "", "", {}},
      {"decoy_unlaunched", ErrorKind::static_check, "unlaunched_kernel",
       "// Adversarial: launches a cheap decoy and leaves the real kernel unlaunched (hoping a harness times\n"
       "// the decoy and checks stale output). Expected verdict: static_check (unlaunched_kernel).\n",
       {{kLaunch,
         "//@launch decoy grid=1 block=32\n"
         "extern \"C\" __global__ void decoy(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,\n"
         "                                const value_t* __restrict__ val, const value_t* __restrict__ x,\n"
         "                                value_t* __restrict__ y) {}\n\n"}}},
      {"decoy_device_launch", ErrorKind::static_check, "device_launch", "", {}},
      // Its verdict, timeout, is tested on its own: a hang costs the deadline.
      {"infinite_loop", ErrorKind::timeout, "", "", {}},
  };
  return table;
}

inline const AdversarialCase& adversarial_case(std::string_view name) {
  for (const AdversarialCase& c : adversarial_cases()) {
    if (c.name == name) return c;
  }
  throw std::logic_error("no adversarial case " + std::string(name));
}

// The program text of the adversarial case `name` ("oob_read"). std::logic_error when a twist's edit
// does not find its line exactly once.
inline std::string adversarial_program(std::string_view name) {
  const AdversarialCase& c = adversarial_case(name);
  if (c.comment.empty()) return sparserl::testing::read_bytes(adversarial_path(std::string(name) + ".cu"));
  const std::string plain = sparserl::testing::read_bytes(adversarial_path("plain_spmv.cu"));
  std::string text = plain.substr(plain.find("\n//@format") + 1);
  for (const Edit& e : c.edits) {
    const std::size_t at = text.find(e.from);
    if (at == std::string::npos || text.find(e.from, at + 1) != std::string::npos) {
      throw std::logic_error("adversarial twist " + std::string(name) + ": '" + std::string(e.from) +
                             "' is not in plain_spmv.cu exactly once");
    }
    text.replace(at, e.from.size(), e.to);
  }
  return std::string(c.comment) + text;
}

}  // namespace sparserl::reward::testing
