// Where the learned agents' knobs sit in the experiment config: each section of the schema that
// holds knobs of agents::agent_knobs(), which of them, with which defaults, and for which stage's
// agent. schema.cpp lists these sections' keys from it and agent_config (wiring.cpp) fills an
// AgentConfig from it, so a key is placed in one table and read through its declaration.
#pragma once

#if defined(SPARSERL_HAVE_AGENTS)
#include <string>
#include <vector>

#include "sparserl/agents/config.hpp"
#include "sparserl/datasets/knobs.hpp"

namespace sparserl::experiments {

struct AgentKnobSection {
  std::string name;   // "agent.ppo"
  std::string stage;  // the one stage whose agent it sets ("rl" for agent.rl); empty: every stage
  datasets::Knobs<agents::AgentConfig> knobs;  // paths relative to the section
  agents::AgentConfig defaults;                // whose values are the section's defaults
};

// In schema order: policy, agent, agent.model, agent.optimizer, agent.sampling, agent.pretrain, agent.sft,
// agent.rl, then agent.NAME for each registered algorithm that has knobs.
std::vector<AgentKnobSection> agent_knob_sections();

}  // namespace sparserl::experiments
#endif
