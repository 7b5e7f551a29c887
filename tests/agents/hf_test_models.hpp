// Fixtures of the Hugging Face decoder tests: tiny random models of the Qwen2 and Llama families
// written by the test itself as a model folder (config.json + safetensors, fp32 or bf16, sharded or
// not), and an independent reference forward pass in plain C++ - loops over std::vector<float>, no
// LibTorch in it - written out from the formulas of transformers' modeling_llama / modeling_qwen2
// (RMSNorm, rotary positions with rotate_half, grouped-query attention, SwiGLU, tied or untied
// output), which the LibTorch decoder's logits are compared against.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "sparserl/agents/hf_config.hpp"
#include "sparserl/agents/safetensors.hpp"
#include "sparserl/agents/torch/causal_lm.hpp"

namespace sparserl::agents::testing {

struct TinyModel {
  HfModelConfig config;
  // By Hugging Face name: shape and values (the stored values: bf16-rounded once written as bf16).
  std::map<std::string, std::vector<std::int64_t>> shapes;
  std::map<std::string, std::vector<float>> weights;
};

// Qwen2: tied embeddings, q/k/v biases, 4 query heads over 2 key/value heads, rope_theta 1e6.
// Llama: untied, no biases, 3 query heads over 1 key/value head, Llama 3.1 RoPE scaling with a
// short original context so every band of the scaling is used.
inline TinyModel tiny_model(HfFamily family, std::uint64_t seed = 1) {
  TinyModel m;
  HfModelConfig& c = m.config;
  c.family = family;
  c.num_hidden_layers = 2;
  c.head_dim = 8;
  c.rms_norm_eps = 1e-6;
  c.max_position_embeddings = 128;
  if (family == HfFamily::qwen2) {
    c.hidden_size = 32, c.intermediate_size = 48, c.num_attention_heads = 4;
    c.num_key_value_heads = 2, c.vocab_size = 61, c.tie_word_embeddings = true;
    c.rope_theta = 1e6;
    c.bos_token_id = 1, c.eos_token_ids = {2};
  } else {
    c.hidden_size = 24, c.intermediate_size = 40, c.num_attention_heads = 3;
    c.num_key_value_heads = 1, c.vocab_size = 53, c.tie_word_embeddings = false;
    c.rope_theta = 10000.0;
    c.rope_scaling = {"llama3", 8.0, 1.0, 4.0, 64};
    c.bos_token_id = 1, c.eos_token_ids = {2, 3};
  }
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto add = [&](const std::string& name, std::vector<std::int64_t> shape, float mean, float std) {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    std::vector<float> values(static_cast<std::size_t>(n));
    for (float& v : values) v = mean + std * normal(rng);
    m.shapes[name] = std::move(shape);
    m.weights[name] = std::move(values);
  };
  const std::int64_t d = c.hidden_size, q = c.num_attention_heads * c.head_dim,
                     kv = c.num_key_value_heads * c.head_dim, f = c.intermediate_size;
  add("model.embed_tokens.weight", {c.vocab_size, d}, 0, 0.5f);
  for (std::int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {d}, 1, 0.2f);
    add(p + "post_attention_layernorm.weight", {d}, 1, 0.2f);
    add(p + "self_attn.q_proj.weight", {q, d}, 0, 0.25f);
    add(p + "self_attn.k_proj.weight", {kv, d}, 0, 0.25f);
    add(p + "self_attn.v_proj.weight", {kv, d}, 0, 0.25f);
    add(p + "self_attn.o_proj.weight", {d, q}, 0, 0.25f);
    if (c.qkv_bias()) {
      add(p + "self_attn.q_proj.bias", {q}, 0, 0.2f);
      add(p + "self_attn.k_proj.bias", {kv}, 0, 0.2f);
      add(p + "self_attn.v_proj.bias", {kv}, 0, 0.2f);
    }
    add(p + "mlp.gate_proj.weight", {f, d}, 0, 0.25f);
    add(p + "mlp.up_proj.weight", {f, d}, 0, 0.25f);
    add(p + "mlp.down_proj.weight", {d, f}, 0, 0.25f);
  }
  add("model.norm.weight", {d}, 1, 0.2f);
  if (!c.tie_word_embeddings) add("lm_head.weight", {c.vocab_size, d}, 0, 0.3f);
  return m;
}

// Writes the model as a Hugging Face folder. Writing bf16 rounds `m`'s values to what the file
// holds, so the reference computes with the same weights.
inline void write_model(TinyModel& m, const std::filesystem::path& folder, TensorDtype dtype,
                        std::uint64_t max_shard_bytes = 0) {
  m.config.torch_dtype = dtype == TensorDtype::bf16 ? "bfloat16" : "float32";
  std::vector<std::vector<std::byte>> bytes;
  std::vector<TensorToWrite> tensors;
  for (auto& [name, values] : m.weights) {
    std::vector<std::byte> raw(values.size() * element_size(dtype));
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (dtype == TensorDtype::bf16) {
        const std::uint16_t bits = float_to_bf16(values[i]);
        values[i] = bf16_to_float(bits);
        std::memcpy(raw.data() + 2 * i, &bits, 2);
      } else {
        std::memcpy(raw.data() + 4 * i, &values[i], 4);
      }
    }
    bytes.push_back(std::move(raw));
    tensors.push_back({name, dtype, m.shapes.at(name), bytes.back()});
  }
  write_safetensors_folder(folder, tensors, {{"format", "pt"}}, max_shard_bytes);
  write_hf_config(m.config, folder / "config.json");
}

// Draws normal(0, std) values for the parameters of `a` whose names contain one of `parts`, and
// gives `b` the same: LoRA's B and the value head start at zero, and gradient tests want every
// path to carry something.
inline void draw_shared(CausalLmPolicyImpl& a, CausalLmPolicyImpl& b,
                        const std::vector<std::string>& parts, double std) {
  torch::NoGradGuard no_grad;
  auto source = a.named_parameters();
  for (auto& item : b.named_parameters()) {
    for (const std::string& part : parts) {
      if (item.key().find(part) == std::string::npos) continue;
      source[item.key()].normal_(0.0, std);
      item.value().copy_(source[item.key()]);
      break;
    }
  }
}

// ---- The reference forward pass ----------------------------------------------------------------

using Matrix = std::vector<std::vector<double>>;  // [T][width]

// y[t] = W x[t] (+ b), W stored [out][in] row-major as nn.Linear keeps it.
inline Matrix reference_linear(const Matrix& x, const std::vector<float>& w, std::size_t out,
                               const std::vector<float>* bias = nullptr) {
  Matrix y(x.size(), std::vector<double>(out, 0.0));
  const std::size_t in = x.empty() ? 0 : x[0].size();
  for (std::size_t t = 0; t < x.size(); ++t) {
    for (std::size_t o = 0; o < out; ++o) {
      double s = bias ? (*bias)[o] : 0.0;
      for (std::size_t i = 0; i < in; ++i) s += w[o * in + i] * x[t][i];
      y[t][o] = s;
    }
  }
  return y;
}

inline Matrix reference_rms_norm(const Matrix& x, const std::vector<float>& weight, double eps) {
  Matrix y = x;
  for (auto& row : y) {
    double mean_square = 0;
    for (double v : row) mean_square += v * v;
    mean_square /= static_cast<double>(row.size());
    const double scale = 1.0 / std::sqrt(mean_square + eps);
    for (std::size_t i = 0; i < row.size(); ++i) row[i] *= scale * weight[i];
  }
  return y;
}

// The rotary frequency of pair i (of head_dim / 2), with Llama 3.1's scaling written out as its
// three cases.
inline double reference_frequency(const HfModelConfig& c, std::size_t i) {
  const double base =
      std::pow(c.rope_theta, -2.0 * static_cast<double>(i) / static_cast<double>(c.head_dim));
  const RopeScaling& s = c.rope_scaling;
  if (s.type == "linear") return base / s.factor;
  if (s.type != "llama3") return base;
  const double wavelength = 2.0 * std::numbers::pi / base;
  const double old_context = static_cast<double>(s.original_max_position_embeddings);
  if (wavelength < old_context / s.high_freq_factor) return base;            // high frequency: kept
  if (wavelength > old_context / s.low_freq_factor) return base / s.factor;  // low: slowed
  const double smooth =
      (old_context / wavelength - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
  return (1.0 - smooth) * base / s.factor + smooth * base;
}

// Rotates each head's [first half | second half] of row t at position p: (a, b) -> (a cos - b sin,
// b cos + a sin), HF's rotate_half convention.
inline void reference_rotate(Matrix& x, std::size_t heads, const HfModelConfig& c,
                             const std::vector<std::int64_t>& positions) {
  const std::size_t hd = static_cast<std::size_t>(c.head_dim), half = hd / 2;
  for (std::size_t t = 0; t < x.size(); ++t) {
    for (std::size_t h = 0; h < heads; ++h) {
      double* v = x[t].data() + h * hd;
      for (std::size_t i = 0; i < half; ++i) {
        const double angle = static_cast<double>(positions[t]) * reference_frequency(c, i);
        const double a = v[i], b = v[i + half];
        v[i] = a * std::cos(angle) - b * std::sin(angle);
        v[i + half] = b * std::cos(angle) + a * std::sin(angle);
      }
    }
  }
}

// Causal grouped-query attention: query head h reads key/value head h / (H / Hkv).
inline Matrix reference_attention(const Matrix& q, const Matrix& k, const Matrix& v,
                                  const HfModelConfig& c) {
  const std::size_t hd = static_cast<std::size_t>(c.head_dim);
  const std::size_t heads = static_cast<std::size_t>(c.num_attention_heads);
  const std::size_t group = heads / static_cast<std::size_t>(c.num_key_value_heads);
  Matrix out(q.size(), std::vector<double>(heads * hd, 0.0));
  for (std::size_t t = 0; t < q.size(); ++t) {
    for (std::size_t h = 0; h < heads; ++h) {
      const std::size_t kvh = h / group;
      std::vector<double> scores(t + 1);
      double top = -1e300;
      for (std::size_t s = 0; s <= t; ++s) {
        double dot = 0;
        for (std::size_t i = 0; i < hd; ++i) dot += q[t][h * hd + i] * k[s][kvh * hd + i];
        scores[s] = dot / std::sqrt(static_cast<double>(hd));
        top = std::max(top, scores[s]);
      }
      double total = 0;
      for (double& s : scores) total += (s = std::exp(s - top));
      for (std::size_t s = 0; s <= t; ++s) {
        for (std::size_t i = 0; i < hd; ++i) {
          out[t][h * hd + i] += scores[s] / total * v[s][kvh * hd + i];
        }
      }
    }
  }
  return out;
}

// Logits [T][vocab] of one unpadded sequence at positions 0..T-1.
inline Matrix reference_logits(const TinyModel& m, const std::vector<std::int64_t>& ids) {
  const HfModelConfig& c = m.config;
  const auto& w = m.weights;
  const std::size_t d = static_cast<std::size_t>(c.hidden_size);
  const std::size_t heads = static_cast<std::size_t>(c.num_attention_heads);
  const std::size_t kv_heads = static_cast<std::size_t>(c.num_key_value_heads);
  const std::size_t hd = static_cast<std::size_t>(c.head_dim);
  const std::size_t f = static_cast<std::size_t>(c.intermediate_size);
  std::vector<std::int64_t> positions(ids.size());
  for (std::size_t t = 0; t < ids.size(); ++t) positions[t] = static_cast<std::int64_t>(t);
  Matrix x(ids.size(), std::vector<double>(d));
  for (std::size_t t = 0; t < ids.size(); ++t) {
    for (std::size_t i = 0; i < d; ++i) {
      x[t][i] = w.at("model.embed_tokens.weight")[static_cast<std::size_t>(ids[t]) * d + i];
    }
  }
  auto bias = [&](const std::string& name) { return w.contains(name) ? &w.at(name) : nullptr; };
  for (std::int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const Matrix h = reference_rms_norm(x, w.at(p + "input_layernorm.weight"), c.rms_norm_eps);
    Matrix q = reference_linear(h, w.at(p + "self_attn.q_proj.weight"), heads * hd,
                                bias(p + "self_attn.q_proj.bias"));
    Matrix k = reference_linear(h, w.at(p + "self_attn.k_proj.weight"), kv_heads * hd,
                                bias(p + "self_attn.k_proj.bias"));
    const Matrix v = reference_linear(h, w.at(p + "self_attn.v_proj.weight"), kv_heads * hd,
                                      bias(p + "self_attn.v_proj.bias"));
    reference_rotate(q, heads, c, positions);
    reference_rotate(k, kv_heads, c, positions);
    const Matrix o =
        reference_linear(reference_attention(q, k, v, c), w.at(p + "self_attn.o_proj.weight"), d,
                         bias(p + "self_attn.o_proj.bias"));
    for (std::size_t t = 0; t < x.size(); ++t) {
      for (std::size_t i = 0; i < d; ++i) x[t][i] += o[t][i];
    }
    const Matrix m2 =
        reference_rms_norm(x, w.at(p + "post_attention_layernorm.weight"), c.rms_norm_eps);
    Matrix gate = reference_linear(m2, w.at(p + "mlp.gate_proj.weight"), f);
    const Matrix up = reference_linear(m2, w.at(p + "mlp.up_proj.weight"), f);
    for (std::size_t t = 0; t < x.size(); ++t) {
      for (std::size_t i = 0; i < f; ++i) {
        gate[t][i] = gate[t][i] / (1.0 + std::exp(-gate[t][i])) * up[t][i];  // SiLU(g) * u
      }
    }
    const Matrix down = reference_linear(gate, w.at(p + "mlp.down_proj.weight"), d);
    for (std::size_t t = 0; t < x.size(); ++t) {
      for (std::size_t i = 0; i < d; ++i) x[t][i] += down[t][i];
    }
  }
  const Matrix final_hidden = reference_rms_norm(x, w.at("model.norm.weight"), c.rms_norm_eps);
  const std::string head = c.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
  return reference_linear(final_hidden, w.at(head), static_cast<std::size_t>(c.vocab_size));
}

}  // namespace sparserl::agents::testing
