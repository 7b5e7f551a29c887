// A Hugging Face model folder made by the project, for a model trained from scratch ([agent.model]
// kind = "hf" without downloaded weights): a config.json giving the shape (a Llama or Qwen2 family
// and its sizes, docs/agents.md) and a tokenizer.json (`sparserl vocab bpe` makes one) become a
// folder of random weights as transformers initialises them - normal(0, 0.02) matrices and
// embeddings, zero biases, unit norms, drawn from a seed on the CPU, so the same seed gives the
// same folder anywhere - that load_causal_lm, the agent and transformers all read.
// `sparserl agent init-hf` is the command. No LibTorch in this header.
#pragma once

#include <cstdint>
#include <filesystem>

#include "sparserl/agents/hf_config.hpp"

namespace sparserl::agents {

// Writes FOLDER/config.json (the file's keys kept; the tokenizer's eos, bos and pad ids set),
// FOLDER/model.safetensors in config.json's torch_dtype, and FOLDER/tokenizer.json (a copy).
// Returns the config as written. std::invalid_argument naming the file when the tokenizer has no
// eos token or more tokens than config.json's vocab_size; std::runtime_error for a config.json
// the decoder refuses (hf_config.hpp).
HfModelConfig init_hf_model(const std::filesystem::path& config_file,
                            const std::filesystem::path& tokenizer_file,
                            const std::filesystem::path& folder, std::uint64_t seed);

}  // namespace sparserl::agents
