// The training corpus of a policy, recorded and rebuilt for novelty (training_corpus.hpp).
#include "training_corpus.hpp"

#include <algorithm>

#include "sparserl/datasets/file_tree.hpp"
#include "sparserl/experiments/run_info.hpp"
#include "sparserl/experiments/runner.hpp"
#include "sparserl/experiments/stage_knobs.hpp"
#if __has_include("sparserl/kernels/design_space.hpp")
#include "sparserl/kernels/design_space.hpp"
#define SPARSERL_CORPUS_HAVE_KERNELS 1
#endif
#if defined(SPARSERL_HAVE_AGENTS)
#include "sparserl/agents/tuning_data.hpp"
#endif

namespace fs = std::filesystem;

namespace sparserl::experiments {
namespace {

// A stage's data source as recorded: the word "design-space" as it is, a path resolved.
std::string stage_source(const fs::path& root, const std::string& value) {
  return value == kDesignSpace ? value : resolve_path(root, value).string();
}

// The design-space programs of the spec's op and dtype: all of them, or n drawn with the seed.
std::vector<std::string> design_space_programs([[maybe_unused]] const CorpusSpec& spec,
                                               [[maybe_unused]] std::int64_t n,
                                               std::size_t* space_size) {
  std::vector<std::string> out;
  *space_size = 0;
#ifdef SPARSERL_CORPUS_HAVE_KERNELS
  const kernels::DesignSpace space(*datasets::parse_op(spec.op),
                                   *datasets::parse_dtype(spec.dtype));
  *space_size = space.size();
  const std::vector<kernels::DesignPoint> points =
      n > 0 ? space.sample(static_cast<std::size_t>(n), spec.seed) : space.points();
  for (const kernels::DesignPoint& p : points) out.push_back(space.render(p));
#endif
  return out;
}

// The programs of a dataset.h5 of `sparserl tune`: its /corpus (pretraining) or /sft programs;
// or of a run's sft-pairs.json.
std::vector<std::string> dataset_programs([[maybe_unused]] const CorpusSpec& spec,
                                          [[maybe_unused]] const std::string& file, bool sft,
                                          std::string& trouble) {
  std::vector<std::string> out;
  if (sft && std::filesystem::path(file).extension() == ".json") {
    try {
      for (auto& [task, program] : read_saved_sft_pairs(file)) out.push_back(std::move(program));
    } catch (const std::exception& e) {
      trouble += "; " + file + " unreadable (" + e.what() + ")";
    }
    return out;
  }
#if defined(SPARSERL_HAVE_AGENTS)
  try {
    if (sft) {
      for (const agents::SftPair& p : agents::read_sft_pairs(file)) out.push_back(p.program);
    } else {
      out = agents::read_corpus(file, datasets::parse_op(spec.op));
    }
  } catch (const std::exception& e) {
    trouble += "; " + file + " unreadable (" + e.what() + ")";
  }
#else
  (void)sft;
  trouble += "; " + file + " not read (this build has no agents library)";
#endif
  return out;
}

}  // namespace

Json CorpusSpec::to_json() const {
  Json j = Json::object();
  j["pretrain"] = pretrain;
  j["corpus_programs"] = corpus_programs;
  j["seed"] = seed;
  j["sft_pairs"] = sft_pairs;
  j["op"] = op;
  j["dtype"] = dtype;
  return j;
}

std::optional<CorpusSpec> CorpusSpec::from_json(const Json& json) {
  if (!json.is_object()) return std::nullopt;
  try {
    CorpusSpec s;
    s.pretrain = json.at("pretrain").get<std::string>();
    s.corpus_programs = as_integer(json.at("corpus_programs"));
    s.seed = as_unsigned(json.at("seed"));
    s.sft_pairs = json.at("sft_pairs").get<std::string>();
    s.op = json.at("op").get<std::string>();
    s.dtype = json.at("dtype").get<std::string>();
    if (!datasets::parse_op(s.op) || !datasets::parse_dtype(s.dtype)) return std::nullopt;
    return s;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string CorpusSpec::key() const { return dump_json(to_json()); }

CorpusSpec design_space_corpus(const Config& config) {
  CorpusSpec s;
  s.op = config.string("data.op");
  s.dtype = config.string("data.dtype");
  return s;
}

std::vector<std::pair<std::string, std::string>> read_saved_sft_pairs(
    const std::filesystem::path& file) {
  const std::optional<std::string> text = datasets::read_file_bytes(file);
  if (!text) throw RunnerError(file.string() + ": cannot read the saved SFT pairs");
  const Json saved = parse_json(*text, file.string());
  if (!saved.is_object() || !saved.contains("pairs") || !saved.at("pairs").is_array()) {
    throw RunnerError(file.string() +
                      ": expected an object with \"pairs\" (sparserl train's sft-pairs.json)");
  }
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t i = 0;
  for (const Json& pair : saved.at("pairs")) {
    if (!pair.is_array() || pair.size() != 2 || !pair.at(0).is_string() ||
        !pair.at(1).is_string()) {
      throw RunnerError(file.string() + ": pairs[" + std::to_string(i) +
                        "]: expected [task, program] strings");
    }
    out.emplace_back(pair.at(0).get<std::string>(), pair.at(1).get<std::string>());
    ++i;
  }
  return out;
}

CorpusSpec training_corpus(const Config& config, const fs::path& root) {
  CorpusSpec s = design_space_corpus(config);
  const TrainConfig train = train_config(config);
  const std::vector<std::string>& stages = train.stages;
  const auto has = [&](const char* stage) {
    return std::find(stages.begin(), stages.end(), stage) != stages.end();
  };
  if (has("pretrain")) {
    s.pretrain = stage_source(root, train.corpus);
    s.corpus_programs = train.corpus_programs;
    s.seed = static_cast<std::uint64_t>(config.integer("experiment.seed"));
  }
  if (has("sft")) s.sft_pairs = stage_source(root, train.sft_pairs);
  const std::string& init = train.init_checkpoint;
  if (s.pretrain.empty() && s.sft_pairs.empty() && !init.empty()) {
    if (auto inherited = recorded_corpus(resolve_path(root, init))) return *inherited;
  }
  return s;
}

std::optional<CorpusSpec> recorded_corpus(const fs::path& checkpoint) {
  fs::path dir = fs::absolute(checkpoint).lexically_normal();
  for (int up = 0; up < 4 && !dir.empty(); ++up, dir = dir.parent_path()) {
    std::error_code ec;
    if (!fs::is_regular_file(dir / "run.json", ec)) continue;
    try {
      const RunInfo info = read_run_info(dir / "run.json");
      const Json* corpus = find_member(info.extra, "corpus");
      return corpus != nullptr ? CorpusSpec::from_json(*corpus) : std::nullopt;
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

const ProgramCorpus& CorpusLibrary::get(const CorpusSpec& spec, const std::string& note) {
  auto& slot = built_[spec.key() + "\n" + note];
  if (slot) return *slot;
  std::vector<std::string> programs;
  std::string description, trouble;
  std::size_t space = 0;
  const std::string what = spec.op + " " + spec.dtype;
  if (spec.pretrain == kDesignSpace) {
    programs = design_space_programs(spec, spec.corpus_programs, &space);
    description =
        "pretraining: " +
        (spec.corpus_programs > 0 && static_cast<std::size_t>(spec.corpus_programs) < space
             ? std::to_string(programs.size()) + " of the " + std::to_string(space) +
                   " design-space programs of " + what + " (seed " + std::to_string(spec.seed) + ")"
             : "the " + std::to_string(programs.size()) + " design-space programs of " + what);
  } else if (!spec.pretrain.empty()) {
    programs = dataset_programs(spec, spec.pretrain, false, trouble);
    description =
        "pretraining: " + std::to_string(programs.size()) + " programs of " + spec.pretrain;
  }
  if (spec.sft_pairs == kDesignSpace) {
    const std::vector<std::string> all = design_space_programs(spec, 0, &space);
    programs.insert(programs.end(), all.begin(), all.end());
    description += std::string(description.empty() ? "" : "; ") +
                   "SFT pairs: template-search programs, stood for by all " +
                   std::to_string(all.size()) + " design-space programs of " + what;
  } else if (!spec.sft_pairs.empty()) {
    const std::vector<std::string> pairs = dataset_programs(spec, spec.sft_pairs, true, trouble);
    programs.insert(programs.end(), pairs.begin(), pairs.end());
    description += std::string(description.empty() ? "" : "; ") +
                   "SFT pairs: " + std::to_string(pairs.size()) + " programs of " + spec.sft_pairs;
  }
  if (spec.pretrain.empty() && spec.sft_pairs.empty()) {
    programs = design_space_programs(spec, 0, &space);
    description =
        "the design space of " + what + " (" + std::to_string(programs.size()) + " programs)";
  }
  std::vector<TokenSequence> sequences;
  std::size_t unencodable = 0;
  for (const std::string& p : programs) {
    if (auto s = normalised_program(*tokenizer_, p)) {
      sequences.push_back(std::move(*s));
    } else {
      ++unencodable;
    }
  }
  if (unencodable > 0) trouble += "; " + std::to_string(unencodable) + " did not tokenize";
  slot = std::make_unique<ProgramCorpus>(description + trouble + (note.empty() ? "" : "; " + note),
                                         std::move(sequences));
  return *slot;
}

}  // namespace sparserl::experiments
