// Fixtures shared by the environment tests: the tokenizer corpus (reward's reference programs, plus
// the design space's programs where agents/kernels provides them), small matrices, a fake
// evaluation backend that answers without compiling (the Gym-semantics tests must be fast and
// deterministic), and the check that a decoded program parses with balanced brackets.
#pragma once

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/datasets/sparse_matrix.hpp"
#include "sparserl/datasets/task.hpp"
#ifdef SPARSERL_ENV_TESTS_HAVE_KERNELS
#include "sparserl/kernels/design_space.hpp"
#endif
#include "sparserl/env/action_mask.hpp"
#include "sparserl/env/episode.hpp"
#include "sparserl/env/evaluation.hpp"
#include "sparserl/env/tokenizer.hpp"
#include "sparserl/reward/program.hpp"
#include "catch.hpp"
#include "test_support.hpp"

namespace sparserl::env::fixtures {

using sparserl::testing::read_bytes;

// The command's output, its exit code in `status` (sparserl::testing::run_shell).
inline std::string run(const std::string& command, int& status) {
  auto r = sparserl::testing::run_shell(command);
  status = r.status;
  return std::move(r.output);
}

struct CorpusProgram {
  std::string name;
  std::string text;
  datasets::Op op = datasets::Op::spmv;
};

// reward/programs/*.cu, sorted by name: one reference program per (op, format).
inline std::vector<CorpusProgram> reference_corpus() {
  std::vector<CorpusProgram> corpus;
  const auto dir = sparserl::testing::source_dir() / "reward" / "programs";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".cu") continue;
    const std::string name = entry.path().stem().string();
    corpus.push_back({name, read_bytes(entry.path()),
                      name.rfind("spmm", 0) == 0 ? datasets::Op::spmm : datasets::Op::spmv});
  }
  std::sort(corpus.begin(), corpus.end(),
            [](const CorpusProgram& a, const CorpusProgram& b) { return a.name < b.name; });
  if (corpus.empty()) throw std::runtime_error("no reference programs in " + dir.string());
  return corpus;
}

// The kernel design space's programs (agents/kernels), every point of every (op, dtype); empty when
// the design space is not built. With `representatives`, one point per generator and format shape
// in f32 only: the subset that is compiled.
inline std::vector<CorpusProgram> design_space_corpus(bool representatives = false) {
  std::vector<CorpusProgram> corpus;
#ifdef SPARSERL_ENV_TESTS_HAVE_KERNELS
  for (datasets::Op op : {datasets::Op::spmv, datasets::Op::spmm}) {
    for (datasets::DType dtype : {datasets::DType::f32, datasets::DType::f64}) {
      if (representatives && dtype == datasets::DType::f64) continue;
      const kernels::DesignSpace space(op, dtype);
      std::vector<kernels::DesignPoint> points =
          representatives ? space.representatives() : space.points();
      if (representatives) {
        // One per generator is enough to exercise every code path the tokenizer sees.
        std::vector<kernels::DesignPoint> one;
        for (const kernels::DesignPoint& p : points) {
          if (std::none_of(one.begin(), one.end(), [&](const kernels::DesignPoint& q) {
                return q.generator == p.generator;
              })) {
            one.push_back(p);
          }
        }
        points = std::move(one);
      }
      for (const kernels::DesignPoint& p : points) {
        corpus.push_back({std::string(datasets::to_string(op)) + " " +
                              std::string(datasets::to_string(dtype)) + " " + p.id(),
                          space.render(p), op});
      }
    }
  }
#endif
  (void)representatives;
  return corpus;
}

// Balanced (), [] and {} over the program's real tokens (reward's lexer: comments and literals
// skipped). Also false when the text does not lex.
inline bool brackets_balance(const std::string& text) {
  const reward::LexResult lexed = reward::lex(text);
  if (!lexed.ok()) return false;
  std::string stack;
  for (const reward::Token& t : lexed.tokens) {
    if (t.kind != reward::TokenKind::punct) continue;
    if (t.text == "(" || t.text == "[" || t.text == "{") {
      stack.push_back(t.text[0]);
    } else if (t.text == ")" || t.text == "]" || t.text == "}") {
      const char open = t.text == ")" ? '(' : t.text == "]" ? '[' : '{';
      if (stack.empty() || stack.back() != open) return false;
      stack.pop_back();
    }
  }
  return stack.empty();
}

// The standard vocabulary's tokenizer, one per test executable.
inline std::shared_ptr<const Tokenizer> tokenizer() {
  static const auto t = std::make_shared<const Tokenizer>();
  return t;
}

// The text of the first token of `program`'s encoding (the standard vocabulary) that the syntax
// mask refuses; "" if none.
inline std::string first_refused(const std::string& program) {
  static const auto vocab = std::make_shared<const Vocabulary>(Vocabulary::standard());
  const std::vector<TokenId> tokens = Tokenizer(vocab).encode(program).tokens;
  ActionMask mask(vocab, MaskMode::syntax, 4000);
  for (TokenId t : tokens) {
    if (t == vocab->eos()) break;
    if (!mask.allows(t)) return vocab->token(t).text;
    mask.advance(t);
  }
  return "";
}

// A matrix store in a scratch folder of its own (generated matrices only), caching `capacity`.
inline std::shared_ptr<datasets::MatrixStore> scratch_store(const std::string& name,
                                                           std::size_t capacity) {
  return std::make_shared<datasets::MatrixStore>(sparserl::testing::scratch_dir(name),
                                                 datasets::StoreOptions{.cache_capacity = capacity});
}

// What a trajectory row records of an episode, field by field (timings and the evaluation aside:
// each caller compares those as its path allows).
inline void check_same_record(const Episode& expected, const Episode& got) {
  CHECK(got.task.str() == expected.task.str());
  CHECK(got.env_id == expected.env_id);
  CHECK(got.env_seed == expected.env_seed);
  CHECK(got.episode_seed == expected.episode_seed);
  CHECK(got.tokens == expected.tokens);
  CHECK(got.log_probs == expected.log_probs);
  CHECK(got.values == expected.values);
  CHECK(got.source == expected.source);
  CHECK(got.terminated == expected.terminated);
  CHECK(got.truncated == expected.truncated);
  CHECK(got.reward == expected.reward);
  CHECK(got.breakdown.compile == expected.breakdown.compile);
}

// 6 x 5 with an empty row and a long row: row lengths 2 0 5 1 3 1.
inline datasets::SparseMatrix small_matrix() {
  std::vector<datasets::Triplet> t = {
      {0, 0, 1.0},  {0, 3, 2.0},                                         // row 0
      {2, 0, 1.0},  {2, 1, 1.0}, {2, 2, 1.0}, {2, 3, 1.0}, {2, 4, 1.0},  // row 2
      {3, 2, -1.0},                                                      // row 3
      {4, 0, 0.5},  {4, 1, 0.5}, {4, 4, 0.5},                            // row 4
      {5, 4, 3.0},                                                       // row 5
  };
  return datasets::SparseMatrix::from_triplets(6, 5, std::move(t));
}

// Answers every program at once without compiling: compiled when the program parses and its first
// line after the directives is not "#error" - enough to tell the env's bookkeeping apart from the
// evaluator's. Counts its calls.
class FakeBackend : public EvaluationBackend {
 public:
  std::future<reward::EvalResult> submit(const datasets::Task& task, std::string program) override {
    ++calls;
    {
      std::lock_guard<std::mutex> lock(mutex);
      programs.push_back(program);
      tasks.push_back(task.str());
    }
    reward::EvalResult r;
    const reward::ParseResult parsed = reward::parse_program(program);
    if (!parsed.ok()) {
      r.stage = reward::Stage::parse;
      r.error = reward::ErrorKind::bad_program;
      r.message = parsed.error.message;
    } else {
      r.stage = reward::Stage::compile;
      r.compiled = true;
      r.compile.compile_ms = 1.5;
      r.compile.max_registers = 32;
      r.compile.arch = "sm_90";
    }
    r.wall_ms = 2.0;
    r.program_digest = "fake";
    std::promise<reward::EvalResult> promise;
    promise.set_value(std::move(r));
    return promise.get_future();
  }
  [[nodiscard]] std::string describe() const override { return "fake (no compiler)"; }

  std::atomic<int> calls{0};
  std::mutex mutex;
  std::vector<std::string> programs, tasks;
};

}  // namespace sparserl::env::fixtures
