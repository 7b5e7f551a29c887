// The eval stage of `sparserl train` and `sparserl eval`: greedy and pass@k of a policy on a split
// part, one results.csv row per matrix with the greedy answer's figures, its regime and family,
// its oracle fraction (the oracle cache; bench_oracle.hpp) and its novelty against the corpus the
// policy was trained on (training_corpus.hpp). Internal to experiments/; needs the agents library.
#pragma once

#if defined(SPARSERL_HAVE_AGENTS)

#include <cstdint>
#include <filesystem>
#include <string>

#include "session.hpp"
#include "sparserl/agents/policy_agent.hpp"
#include "sparserl/experiments/json.hpp"
#include "sparserl/experiments/metrics.hpp"
#include "sparserl/experiments/split_tasks.hpp"
#include "sparserl/experiments/stop_signals.hpp"
#include "training_corpus.hpp"

namespace sparserl::experiments {

// eval/ statistics to metrics.jsonl at `step` and one results.csv row per task of `part`, labelled
// `label`. Returns what run.json's "extra" should record: {"oracle": {...}, "novelty": {label:
// the corpus's description}}. `corpus_note` is added to the corpus's description.
Json evaluate_policy(Session& s, agents::PolicyAgent& agent, const PartTasks& part,
                     const std::string& label, std::int64_t step, MetricsWriter& metrics,
                     const std::filesystem::path& results, const CorpusSpec& corpus,
                     const std::string& corpus_note, const StopSignals& stop);

}  // namespace sparserl::experiments

#endif  // SPARSERL_HAVE_AGENTS
