// config.json of the Llama / Qwen2 families (hf_config.hpp): a small reader that names the file and
// the key in every error, the family defaults of transformers where a key is absent, the RoPE
// settings from either spelling (transformers 4's rope_theta + rope_scaling, transformers 5's
// rope_parameters, possibly nested under "full_attention"), and the writer that puts our fields
// over the original JSON so a saved folder keeps every key it came with.
#include "sparserl/agents/hf_config.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace sparserl::agents {

namespace {

using nlohmann::json;

// Reads typed keys of one JSON object; a null value counts as absent (transformers writes nulls).
class KeyReader {
 public:
  // `prefix` names a nested object in errors ("rope_parameters.").
  KeyReader(const json& object, std::string where, std::string prefix = "")
      : object_(object), where_(std::move(where)), prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    throw std::runtime_error(where_ + ": key '" + prefix_ + key + "': " + why);
  }
  [[nodiscard]] const json* get(const std::string& key) const {
    const auto found = object_.find(key);
    return found == object_.end() || found->is_null() ? nullptr : &*found;
  }
  [[nodiscard]] std::int64_t integer(const std::string& key, std::optional<std::int64_t> fallback,
                                     std::int64_t min = 1) const {
    const json* v = get(key);
    if (v == nullptr) {
      if (!fallback) fail(key, "missing");
      return *fallback;
    }
    if (!v->is_number_integer()) fail(key, "expected an integer, got " + v->dump());
    const auto value = v->get<std::int64_t>();
    if (value < min) fail(key, "expected at least " + std::to_string(min) + ", got " + v->dump());
    return value;
  }
  [[nodiscard]] double number(const std::string& key, double fallback) const {
    const json* v = get(key);
    if (v == nullptr) return fallback;
    if (!v->is_number()) fail(key, "expected a number, got " + v->dump());
    return v->get<double>();
  }
  [[nodiscard]] bool boolean(const std::string& key, bool fallback) const {
    const json* v = get(key);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) fail(key, "expected true or false, got " + v->dump());
    return v->get<bool>();
  }
  [[nodiscard]] std::string string(const std::string& key, const std::string& fallback) const {
    const json* v = get(key);
    if (v == nullptr) return fallback;
    if (!v->is_string()) fail(key, "expected a string, got " + v->dump());
    return v->get<std::string>();
  }
  [[nodiscard]] std::optional<std::int64_t> token_id(const std::string& key) const {
    if (get(key) == nullptr) return std::nullopt;
    return integer(key, std::nullopt, 0);
  }
  [[nodiscard]] const std::string& where() const { return where_; }

 private:
  const json& object_;
  std::string where_;
  std::string prefix_;
};

std::vector<std::int64_t> eos_ids(const KeyReader& r) {
  const json* v = r.get("eos_token_id");
  if (v == nullptr) return {};
  if (v->is_array()) {
    std::vector<std::int64_t> out;
    for (const json& id : *v) {
      if (!id.is_number_integer() || id.get<std::int64_t>() < 0) {
        r.fail("eos_token_id", "expected token ids, got " + v->dump());
      }
      out.push_back(id.get<std::int64_t>());
    }
    return out;
  }
  return {r.integer("eos_token_id", std::nullopt, 0)};
}

// RoPE: transformers 5's rope_parameters (possibly per layer type), else transformers 4's
// rope_scaling; rope_theta inside the dict or at the top level.
void read_rope(const KeyReader& top, HfModelConfig& c) {
  const json* parameters = top.get("rope_parameters");
  std::string key = "rope_parameters";
  if (parameters != nullptr && parameters->is_object() && parameters->contains("full_attention")) {
    parameters = &(*parameters)["full_attention"];
    key = "rope_parameters.full_attention";
  }
  if (parameters == nullptr || (parameters->is_object() && parameters->empty())) {
    parameters = top.get("rope_scaling");
    key = "rope_scaling";
  }
  c.rope_theta = top.number("rope_theta", 10000.0);
  if (top.number("partial_rotary_factor", 1.0) != 1.0) {
    top.fail("partial_rotary_factor", "partial rotary embeddings are not implemented");
  }
  if (parameters == nullptr) return;
  if (!parameters->is_object()) top.fail(key, "expected an object or null");
  const KeyReader r(*parameters, top.where(), key + ".");
  c.rope_theta = r.number("rope_theta", c.rope_theta);
  c.rope_scaling.type = r.string("rope_type", r.string("type", "default"));
  if (r.number("partial_rotary_factor", 1.0) != 1.0) {
    r.fail("partial_rotary_factor", "partial rotary embeddings are not implemented");
  }
  const std::string& type = c.rope_scaling.type;
  if (type == "linear" || type == "llama3") c.rope_scaling.factor = r.number("factor", 1.0);
  if (type == "llama3") {
    c.rope_scaling.low_freq_factor = r.number("low_freq_factor", 1.0);
    c.rope_scaling.high_freq_factor = r.number("high_freq_factor", 4.0);
    c.rope_scaling.original_max_position_embeddings =
        r.integer("original_max_position_embeddings", c.max_position_embeddings);
  } else if (type != "default" && type != "linear") {
    r.fail("rope_type", "'" + type + "' is not implemented (default, linear, llama3)");
  }
}

// What the families add: Qwen2's sliding window (refused unless off), layer types.
void read_family_keys(const KeyReader& r, HfModelConfig& c) {
  if (c.family == HfFamily::qwen2 && r.boolean("use_sliding_window", false)) {
    r.fail("use_sliding_window", "sliding-window attention is not implemented");
  }
  if (const json* types = r.get("layer_types")) {
    if (!types->is_array()) r.fail("layer_types", "expected a list");
    for (const json& t : *types) {
      if (t != "full_attention") {
        r.fail("layer_types", t.dump() + " layers are not implemented (full_attention only)");
      }
    }
  }
  if (c.family == HfFamily::llama) {
    c.attention_bias = r.boolean("attention_bias", false);
    c.mlp_bias = r.boolean("mlp_bias", false);
  }
}

std::string default_architecture(HfFamily family) {
  return family == HfFamily::llama ? "LlamaForCausalLM" : "Qwen2ForCausalLM";
}

}  // namespace

std::string_view to_string(HfFamily family) {
  return family == HfFamily::llama ? "llama" : "qwen2";
}

std::int64_t HfModelConfig::parameter_count() const {
  const std::int64_t d = hidden_size, q = num_attention_heads * head_dim,
                     kv = num_key_value_heads * head_dim, f = intermediate_size;
  std::int64_t layer = d * q + 2 * d * kv + q * d + 3 * d * f + 2 * d;
  if (qkv_bias()) layer += q + 2 * kv;
  if (o_proj_bias()) layer += d;
  if (mlp_bias) layer += 2 * f + d;
  std::int64_t n = num_hidden_layers * layer + vocab_size * d + d;
  if (!tie_word_embeddings) n += vocab_size * d;
  return n;
}

std::optional<std::string> HfModelConfig::validate() const {
  if (num_attention_heads % num_key_value_heads != 0) {
    return "num_attention_heads = " + std::to_string(num_attention_heads) +
           ": not a multiple of num_key_value_heads = " + std::to_string(num_key_value_heads);
  }
  if (head_dim % 2 != 0) {
    return "head_dim = " + std::to_string(head_dim) + ": rotary embeddings need an even width";
  }
  if (hidden_act != "silu" && hidden_act != "swish") {
    return "hidden_act = '" + hidden_act + "': only silu (SwiGLU) is implemented";
  }
  if (torch_dtype != "float32" && torch_dtype != "bfloat16" && torch_dtype != "float16") {
    return "torch_dtype = '" + torch_dtype + "': expected float32, bfloat16 or float16";
  }
  if (rms_norm_eps <= 0 || rope_theta <= 0) return "rms_norm_eps and rope_theta must be positive";
  if (rope_scaling.type != "default" && rope_scaling.factor < 1.0) {
    return "rope_scaling.factor = " + std::to_string(rope_scaling.factor) + ": expected >= 1";
  }
  if (rope_scaling.type == "llama3" &&
      rope_scaling.high_freq_factor <= rope_scaling.low_freq_factor) {
    return "rope_scaling: high_freq_factor must exceed low_freq_factor";
  }
  return std::nullopt;
}

HfModelConfig parse_hf_config(std::string_view json_text, const std::string& where) {
  json root;
  try {
    root = json::parse(json_text.begin(), json_text.end());
  } catch (const json::parse_error& e) {
    throw std::runtime_error(where + ": not valid JSON: " + e.what());
  }
  if (!root.is_object()) throw std::runtime_error(where + ": expected a JSON object");
  const KeyReader r(root, where);
  HfModelConfig c;
  const std::string model_type = r.string("model_type", "");
  if (model_type == "llama") {
    c.family = HfFamily::llama;
  } else if (model_type == "qwen2") {
    c.family = HfFamily::qwen2;
  } else {
    r.fail("model_type",
           model_type.empty() ? "missing" : "'" + model_type + "' is not supported (llama, qwen2)");
  }
  if (const json* a = r.get("architectures")) {
    if (!a->is_array()) r.fail("architectures", "expected a list of class names");
    for (const json& name : *a) {
      if (!name.is_string()) r.fail("architectures", "expected a list of class names");
      c.architectures.push_back(name.get<std::string>());
    }
  }
  // save_pretrained writes only what differs from the class's defaults, so an absent key means
  // the family's default (LlamaConfig: Llama-2-7B; Qwen2Config: Qwen2-7B-like).
  const bool llama = c.family == HfFamily::llama;
  c.hidden_size = r.integer("hidden_size", 4096);
  c.intermediate_size = r.integer("intermediate_size", llama ? 11008 : 22016);
  c.num_hidden_layers = r.integer("num_hidden_layers", 32);
  c.num_attention_heads = r.integer("num_attention_heads", 32);
  c.num_key_value_heads =
      r.integer("num_key_value_heads", llama ? c.num_attention_heads : std::int64_t{32});
  if (r.get("head_dim") == nullptr && c.hidden_size % c.num_attention_heads != 0) {
    r.fail("num_attention_heads", "hidden_size = " + std::to_string(c.hidden_size) +
                                      " is not a multiple of it, and head_dim is not given");
  }
  c.head_dim = r.integer("head_dim", c.hidden_size / c.num_attention_heads);
  c.vocab_size = r.integer("vocab_size", llama ? 32000 : 151936);
  c.max_position_embeddings = r.integer("max_position_embeddings", llama ? 2048 : 32768);
  c.rms_norm_eps = r.number("rms_norm_eps", 1e-6);
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", false);
  c.hidden_act = r.string("hidden_act", "silu");
  c.bos_token_id = r.token_id("bos_token_id");
  c.pad_token_id = r.token_id("pad_token_id");
  c.eos_token_ids = eos_ids(r);
  if (llama && !root.contains("bos_token_id")) c.bos_token_id = 1;  // LlamaConfig's defaults
  if (llama && !root.contains("eos_token_id")) c.eos_token_ids = {2};
  c.torch_dtype = r.string("dtype", r.string("torch_dtype", "float32"));
  read_rope(r, c);
  read_family_keys(r, c);
  if (auto problem = c.validate()) throw std::runtime_error(where + ": " + *problem);
  c.source_json = root.dump();
  return c;
}

HfModelConfig read_hf_config(const std::filesystem::path& path) {
  const std::filesystem::path file =
      std::filesystem::is_directory(path) ? path / "config.json" : path;
  std::ifstream in(file);
  if (!in) throw std::runtime_error(file.string() + ": cannot read");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_hf_config(text.str(), file.string());
}

std::string hf_config_json(const HfModelConfig& c) {
  json out = c.source_json.empty() ? json::object() : json::parse(c.source_json);
  const bool given_head_dim = out.contains("head_dim") && !out["head_dim"].is_null();
  out["model_type"] = std::string(to_string(c.family));
  out["architectures"] = c.architectures.empty()
                             ? std::vector<std::string>{default_architecture(c.family)}
                             : c.architectures;
  out["hidden_size"] = c.hidden_size;
  out["intermediate_size"] = c.intermediate_size;
  out["num_hidden_layers"] = c.num_hidden_layers;
  out["num_attention_heads"] = c.num_attention_heads;
  out["num_key_value_heads"] = c.num_key_value_heads;
  if (given_head_dim || c.head_dim * c.num_attention_heads != c.hidden_size) {
    out["head_dim"] = c.head_dim;
  }
  out["vocab_size"] = c.vocab_size;
  out["max_position_embeddings"] = c.max_position_embeddings;
  out["rms_norm_eps"] = c.rms_norm_eps;
  out["tie_word_embeddings"] = c.tie_word_embeddings;
  out["hidden_act"] = c.hidden_act;
  if (c.family == HfFamily::llama) {
    out["attention_bias"] = c.attention_bias;
    out["mlp_bias"] = c.mlp_bias;
  }
  if (c.bos_token_id) out["bos_token_id"] = *c.bos_token_id;
  if (c.pad_token_id) out["pad_token_id"] = *c.pad_token_id;
  if (c.eos_token_ids.size() == 1) out["eos_token_id"] = c.eos_token_ids.front();
  if (c.eos_token_ids.size() > 1) out["eos_token_id"] = c.eos_token_ids;
  out["dtype"] = c.torch_dtype;
  out["torch_dtype"] = c.torch_dtype;
  json rope = {{"rope_type", c.rope_scaling.type}, {"rope_theta", c.rope_theta}};
  if (c.rope_scaling.type != "default") rope["factor"] = c.rope_scaling.factor;
  if (c.rope_scaling.type == "llama3") {
    rope["low_freq_factor"] = c.rope_scaling.low_freq_factor;
    rope["high_freq_factor"] = c.rope_scaling.high_freq_factor;
    rope["original_max_position_embeddings"] = c.rope_scaling.original_max_position_embeddings;
  }
  out["rope_parameters"] = rope;
  out["rope_theta"] = c.rope_theta;
  if (c.rope_scaling.type == "default") {
    out["rope_scaling"] = nullptr;
  } else {
    json scaling = rope;
    scaling.erase("rope_theta");
    out["rope_scaling"] = scaling;
  }
  return out.dump(2) + "\n";
}

void write_hf_config(const HfModelConfig& config, const std::filesystem::path& file) {
  std::ofstream out(file, std::ios::trunc);
  out << hf_config_json(config);
  if (!out.flush()) throw std::runtime_error(file.string() + ": cannot write");
}

}  // namespace sparserl::agents
