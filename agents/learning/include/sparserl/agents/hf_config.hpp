// The config.json of a Hugging Face model folder of the Llama and Qwen2 families, read into a
// struct the decoder is built from (no LibTorch here). Both transformers 4 spellings (top-level
// rope_theta / rope_scaling, torch_dtype) and transformers 5's (rope_parameters, dtype) are read.
// An absent key takes the transformers default of the family, as transformers reads it
// (save_pretrained leaves out what equals the defaults). Anything this decoder does not implement - another model_type, an activation other than
// SiLU, sliding-window attention, a RoPE variant other than default / linear / llama3, partial
// rotary - is refused by name, with the file and the key: a checkpoint that loads computes what
// transformers computes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sparserl::agents {

enum class HfFamily { llama, qwen2 };
std::string_view to_string(HfFamily family);  // "llama", "qwen2" (config.json's model_type)

// Rotary frequency scaling (config.json's rope_scaling / rope_parameters).
struct RopeScaling {
  std::string type = "default";                          // default, linear, llama3
  double factor = 1.0;                                   // linear, llama3
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  std::int64_t original_max_position_embeddings = 8192;  // llama3
};

struct HfModelConfig {
  HfFamily family = HfFamily::qwen2;
  std::vector<std::string> architectures;  // e.g. {"Qwen2ForCausalLM"}
  std::int64_t hidden_size = 0;
  std::int64_t intermediate_size = 0;
  std::int64_t num_hidden_layers = 0;
  std::int64_t num_attention_heads = 0;
  std::int64_t num_key_value_heads = 0;  // absent: Llama num_attention_heads, Qwen2 32
  std::int64_t head_dim = 0;             // absent: hidden_size / num_attention_heads
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  std::int64_t max_position_embeddings = 2048;
  std::int64_t vocab_size = 0;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // Llama: q, k, v and o carry biases (Qwen2: q, k, v always)
  bool mlp_bias = false;        // Llama only
  std::string hidden_act = "silu";
  std::optional<std::int64_t> bos_token_id, pad_token_id;
  std::vector<std::int64_t> eos_token_ids;  // config.json's eos_token_id: one id or a list
  std::string torch_dtype = "float32";      // float32, bfloat16 or float16
  // The file's JSON when read from one: written back with our fields over it, so keys this struct
  // does not model (initializer_range, use_cache, ...) survive a save.
  std::string source_json;

  [[nodiscard]] bool qkv_bias() const { return family == HfFamily::qwen2 || attention_bias; }
  [[nodiscard]] bool o_proj_bias() const { return family == HfFamily::llama && attention_bias; }
  [[nodiscard]] std::int64_t kv_groups() const { return num_attention_heads / num_key_value_heads; }
  // Weights, without the soft prompt and value head.
  [[nodiscard]] std::int64_t parameter_count() const;
  // nullopt when consistent, else "num_attention_heads = 6: not a multiple of ...".
  [[nodiscard]] std::optional<std::string> validate() const;
};

// Reads FOLDER/config.json or a config file; std::runtime_error "FILE: key 'KEY': why".
HfModelConfig read_hf_config(const std::filesystem::path& path);
// The same from JSON text; `where` names it in errors.
HfModelConfig parse_hf_config(std::string_view json_text, const std::string& where);
// config.json text: source_json (if any) with every modelled field over it, in transformers 5's
// spelling plus the transformers 4 keys (torch_dtype, rope_theta, rope_scaling) so both read it.
std::string hf_config_json(const HfModelConfig& config);
void write_hf_config(const HfModelConfig& config, const std::filesystem::path& file);

}  // namespace sparserl::agents
