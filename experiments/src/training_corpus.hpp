// What a policy was trained on, for novelty (novelty.hpp): `sparserl train` records the corpus its
// stages used in run.json ("extra": {"corpus": {...}}); an eval or a bench of a checkpoint reads
// it back from the checkpoint's run and rebuilds the programs:
//
//   pretrain    "design-space" (the runner's pretraining corpus: all the design-space programs of
//               op / dtype, or corpus_programs of them drawn with seed), a dataset.h5 of
//               `sparserl tune` (its /corpus), or "" (no pretraining stage)
//   sft_pairs   "design-space" (the template search's pairs: design-space programs, so the whole
//               space stands for them - a superset), a dataset.h5 (its /sft programs), a run's
//               sft-pairs.json (its programs), or ""
//
// Without a record (an older run, a checkpoint from elsewhere) the corpus is the design space of
// the bench's op and dtype, and the description says so. The template and random agents are
// measured against the design space too. Programs are in the tokenizer's normal form: encode()
// without its <eos>. Internal to experiments/.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sparserl/env/tokenizer.hpp"
#include "sparserl/experiments/config.hpp"
#include "sparserl/experiments/json.hpp"
#include "sparserl/experiments/novelty.hpp"

namespace sparserl::experiments {

struct CorpusSpec {
  std::string pretrain;  // "design-space", a dataset.h5 path, or ""
  std::int64_t corpus_programs = 0;
  std::uint64_t seed = 0;
  std::string sft_pairs;  // "design-space", a dataset.h5 path, or ""
  std::string op = "spmv";
  std::string dtype = "f32";

  [[nodiscard]] Json to_json() const;
  // nullopt for something that is not such an object.
  static std::optional<CorpusSpec> from_json(const Json& json);
  // The key of a built corpus (specs with equal keys build equal corpora).
  [[nodiscard]] std::string key() const;
};

// The corpus of `sparserl train` with this config: its pretraining and SFT stages' data (paths
// absolute); a stage that does not run contributes nothing. An rl-only run started from
// train.init_checkpoint inherits that checkpoint's recorded corpus.
CorpusSpec training_corpus(const Config& config, const std::filesystem::path& root);
// The design space of the config's op / dtype alone.
CorpusSpec design_space_corpus(const Config& config);
// The corpus recorded by the run a checkpoint folder belongs to (RUN/policies/STAGE,
// RUN/checkpoints/step-N, ...): nullopt when no run.json above it records one.
std::optional<CorpusSpec> recorded_corpus(const std::filesystem::path& checkpoint);

// The SFT pairs a run saved (RunDirectory::sft_pairs_path, sparserl train's sft-pairs.json: an
// object whose "pairs" are [task URI, program] arrays), as (task, program) strings. Errors name
// the file (RunnerError). train.sft_pairs may name such a file: study.sh gives a table's later SFT
// runs the pairs of its first, so the template search runs once per table.
std::vector<std::pair<std::string, std::string>> read_saved_sft_pairs(
    const std::filesystem::path& file);

// Built corpora, one per spec, kept for a run.
class CorpusLibrary {
 public:
  explicit CorpusLibrary(std::shared_ptr<const env::Tokenizer> tokenizer)
      : tokenizer_(std::move(tokenizer)) {}
  // `note`: appended to the description (e.g. "no corpus recorded by the checkpoint's run").
  const ProgramCorpus& get(const CorpusSpec& spec, const std::string& note = {});

 private:
  std::shared_ptr<const env::Tokenizer> tokenizer_;
  std::map<std::string, std::unique_ptr<ProgramCorpus>> built_;
};

}  // namespace sparserl::experiments
