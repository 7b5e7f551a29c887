// Sampling throughput of the policy: tokens per second at a given batch, for the figures in
// docs/agents.md. Two measurements:
//   decode    the network alone: prefill of the K + 2 prefix slots, then N decode steps with every
//             row active (key-value cache, masked sampling with a fixed mask row) - the ceiling;
//   generate  PolicyAgent::generate under the syntax mask (the env's automaton per row and step on
//             the CPU), as the RL stage samples; rows stop at <eos>, so fewer tokens per row.
// Weights are freshly initialised (throughput does not depend on them, lengths under `generate`
// do).
//
//   sparserl-agents-bench [--preset tiny|small|medium] [--batch 64] [--tokens 256] [--device
//   cpu|cuda]
//                         [--threads N] [--repeat 3] [--mask syntax|none]
// --repeat 0 prints the policy's parameter count and stops.
//
// --hf PATH measures `decode` for a Llama / Qwen2 decoder (torch/causal_lm.hpp) instead: PATH is a
// Hugging Face folder (its weights are loaded) or a config.json (random weights of that shape),
// with the soft prompt of K = 128 nonzeros; --dtype float32|bfloat16 is its compute dtype. On CUDA
// one more run synchronises around each step and prints where a step goes (sampling, issuing the
// decode step, the device after the call returns); --sdpa-decode runs the decode steps' attention
// through scaled_dot_product_attention (CausalLmOptions::sdpa_decode; with --preset, the small
// transformer's: TransformerPolicyImpl::set_sdpa_decode, LibTorch 2) and --per-call-casts casts
// the weights at every use instead of keeping generate()'s inference copies, for comparison.
//
// On CUDA every decode step is replayed from a CUDA graph, as generate() takes them
// (torch/decode_graphs.hpp); --no-decode-graphs issues each step's kernels instead, for comparison.
// Each decode and generate line says how many graphs were captured. generate() overlaps its steps
// (each decode step enqueued before the draws are read back; SamplingConfig::overlap_steps);
// --no-overlap-steps reads each step's draws back first, as before, for comparison (the same
// tokens: the digest). The overlapped steps replay each step's draws from a CUDA graph
// (SamplingConfig::draw_graphs; the generate line says so); --no-draw-graphs issues their kernels
// one by one, for comparison (the same tokens).
//
// --hf FOLDER --hf-generate times PolicyAgent::generate with that model instead (its weights, its
// tokenizer.json and the BPE grammar mask over it, one mask per row on the CPU as the RL stage has;
// --tokens is max_tokens, at least the mask's least budget). Each generate line also prints
// generate()'s own split (GenerationProfile: masks, their upload, the draws' read-back, the decode
// steps' calls) and a digest of the drawn tokens (the same at any --threads).
//
// --hf PATH --train-step measures training instead: --repeat steps of next-token cross-entropy
// over --batch sequences of --tokens random tokens (after the soft prompt), backward and AdamW on
// the trainable parameters (LoRA adapters only with --lora-rank R; --checkpointing recomputes each
// layer in the backward pass), tokens per second of training and, on CUDA, the GPU memory the
// process holds after the steps above what it held before the model was loaded (nvidia-smi's
// memory.used of its GPU: LibTorch's caching allocator keeps what the steps' peak reserved, so this
// is the footprint a run of that shape needs, CUDA context aside) - docs/agents.md's "What fits".
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparserl/agents/policy_agent.hpp"
#include "sparserl/agents/torch/causal_lm.hpp"
#include "sparserl/agents/torch/decode_graphs.hpp"
#include "sparserl/agents/torch/learner.hpp"
#include "sparserl/env/observation.hpp"
#include "sparserl/env/vocabulary.hpp"
#include "sparserl/reward/gpu_memory.hpp"

namespace {

using sparserl::agents::AgentConfig;
using sparserl::agents::PolicyAgent;

struct Options {
  std::string preset = "tiny";
  int batch = 64;
  int tokens = 256;
  std::string device = "cpu";
  int threads = 0;
  int repeat = 3;
  std::string mask = "syntax";
  std::string hf;
  std::string dtype = "float32";
  bool hf_generate = false;
  bool sdpa_decode = false;
  bool per_call_casts = false;
  bool train_step = false;
  int lora_rank = 0;
  bool checkpointing = false;
  bool no_decode_graphs = false;
  bool no_overlap_steps = false;
  bool no_draw_graphs = false;
};

// The options as CLI11 declares them; --help lists them.
void declare(CLI::App& app, Options& o) {
  app.add_option("--preset", o.preset, "the policy's size (a PolicyConfig preset)");
  app.add_option("--batch", o.batch, "rows sampled together");
  app.add_option("--tokens", o.tokens, "tokens per row (the policy's max_tokens)");
  app.add_option("--device", o.device, "cpu or cuda");
  app.add_option("--threads", o.threads, "LibTorch threads (0: its default)");
  app.add_option("--repeat", o.repeat, "timed runs (0: print the parameter count and stop)");
  app.add_option("--mask", o.mask, "generate's action mask")
      ->check(CLI::IsMember({"syntax", "none"}));
  app.add_option("--hf", o.hf, "a Hugging Face folder or config.json: decode with that decoder");
  app.add_option("--dtype", o.dtype, "--hf: compute dtype")
      ->check(CLI::IsMember({"float32", "bfloat16"}));
  app.add_flag("--sdpa-decode", o.sdpa_decode,
               "--hf decode: the decode steps through scaled_dot_product_attention (as before "
               "grouped products replaced it there), for comparison; --preset: the small "
               "transformer's decode steps through it (TransformerPolicyImpl::set_sdpa_decode; "
               "LibTorch 2)");
  app.add_flag("--per-call-casts", o.per_call_casts,
               "--hf decode: cast the weights to the compute dtype at every use, as before the "
               "decoder kept inference copies (begin_inference), for comparison");
  app.add_flag("--hf-generate", o.hf_generate,
               "--hf FOLDER: time PolicyAgent::generate under the BPE grammar mask instead");
  app.add_flag("--train-step", o.train_step,
               "--hf: time training steps and measure their GPU memory instead of decoding");
  app.add_option("--lora-rank", o.lora_rank, "--train-step: LoRA rank (0: full fine-tuning)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--checkpointing", o.checkpointing, "--train-step: gradient checkpointing");
  app.add_flag("--no-decode-graphs", o.no_decode_graphs,
               "on CUDA: issue every decode step's kernels instead of replaying CUDA graphs "
               "(SamplingConfig::decode_graphs = false), for comparison");
  app.add_flag("--no-overlap-steps", o.no_overlap_steps,
               "generate: read each step's draws back before enqueuing its decode step "
               "(SamplingConfig::overlap_steps = false), for comparison");
  app.add_flag("--no-draw-graphs", o.no_draw_graphs,
               "generate: issue each overlapped step's draw kernels one by one instead of "
               "replaying them from a CUDA graph (SamplingConfig::draw_graphs = false), for "
               "comparison");
}

namespace ag = sparserl::agents;

// B soft prompts of K = 128 random nonzeros of width 64 and random features.
ag::PrefixBatch random_prefix(int batch, const ag::CausalLmOptions& options) {
  const auto on = torch::TensorOptions().device(options.device);
  return ag::PrefixBatch{
      torch::randn({batch, 128, 64}, on), torch::ones({batch, 128}, on.dtype(torch::kBool)),
      torch::rand({batch, options.feature_dim}, on), torch::ones({batch}, on.dtype(torch::kBool))};
}

// --train-step: the timed training steps and the GPU memory held after them (`memory_before`:
// nvidia-smi's figure before the model was loaded, -1 when unread).
void train_steps(const Options& o, ag::CausalLmPolicy& policy, const ag::CausalLmOptions& options,
                 long memory_before) {
  const auto on = torch::TensorOptions().device(options.device);
  policy->train();
  std::vector<torch::Tensor> trainable;
  std::int64_t trainable_count = 0;
  for (const torch::Tensor& p : policy->parameters()) {
    if (!p.requires_grad()) continue;
    trainable.push_back(p);
    trainable_count += p.numel();
  }
  torch::optim::AdamW optimizer(trainable, torch::optim::AdamWOptions(1e-5));
  const std::int64_t vocab = policy->output_size();
  std::printf(
      "train step: %s, %lld trainable parameters, gradient checkpointing %s\n",
      o.lora_rank > 0 ? ("LoRA rank " + std::to_string(o.lora_rank)).c_str() : "full fine-tuning",
      static_cast<long long>(trainable_count), o.checkpointing ? "on" : "off");
  for (int r = 0; r < o.repeat + 1; ++r) {  // the first step warms up
    const auto start = std::chrono::steady_clock::now();
    const torch::Tensor tokens = torch::randint(vocab, {o.batch, o.tokens}, on.dtype(torch::kLong));
    const torch::Tensor valid = torch::ones({o.batch, o.tokens}, on.dtype(torch::kBool));
    const ag::PolicyOutput out = policy->forward(random_prefix(o.batch, options), tokens, valid);
    const torch::Tensor logits = out.logits.slice(1, 0, o.tokens - 1).reshape({-1, vocab});
    const torch::Tensor loss = torch::nn::functional::cross_entropy(
        logits.to(torch::kFloat), tokens.slice(1, 1).reshape({-1}));
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    (void)loss.item<float>();  // waits for the step
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r > 0) {
      std::printf("train    step %d: %.3f s, %.0f tokens/s, loss %.3f\n", r, seconds,
                  double(o.batch) * o.tokens / seconds, loss.item<float>());
    }
  }
  if (options.device.is_cuda()) {
    torch::cuda::synchronize();
    const long memory_after = sparserl::reward::gpu_memory_used_mib();
    if (memory_before >= 0 && memory_after >= 0) {
      std::printf("GPU memory held after the steps: %ld MiB (%ld before the model, %ld after)\n",
                  memory_after - memory_before, memory_before, memory_after);
    } else {
      std::printf("GPU memory: nvidia-smi could not be read\n");
    }
  } else {
    std::printf("GPU memory: n/a (device %s)\n", o.device.c_str());
  }
}

// decode for a Llama / Qwen2 decoder: prefill of the soft prompt and one token, then --tokens
// steps with every row active, sampling from the unmasked logits; or, with --train-step,
// train_steps().
int bench_hf(const Options& o) {
  namespace fs = std::filesystem;
  ag::CausalLmOptions options;
  options.device = torch::Device(o.device);
  options.dtype = o.dtype == "bfloat16" ? torch::kBFloat16 : torch::kFloat;
  options.nnz_samples = 128, options.embedding_dim = 64;
  options.feature_dim = static_cast<int>(sparserl::env::feature_names().size());
  const fs::path folder = fs::is_directory(o.hf) ? fs::path(o.hf) : fs::path(o.hf).parent_path();
  const bool weights =
      fs::is_directory(o.hf) && (fs::exists(folder / "model.safetensors") ||
                                 fs::exists(folder / "model.safetensors.index.json"));
  options.lora_rank = o.train_step ? o.lora_rank : 0;
  options.gradient_checkpointing = o.train_step && o.checkpointing;
  options.sdpa_decode = o.sdpa_decode;
  long memory_before = -1;
  if (o.train_step && options.device.is_cuda()) {
    // The CUDA context first, so that it is not counted.
    (void)torch::zeros({1}, torch::TensorOptions().device(options.device)).sum().item<float>();
    torch::cuda::synchronize();
    memory_before = sparserl::reward::gpu_memory_used_mib();
  }
  ag::CausalLmPolicy policy{nullptr};
  if (weights) {
    policy = ag::load_causal_lm(folder, options, 1);
  } else {
    policy = ag::CausalLmPolicy(ag::read_hf_config(o.hf), options);
    policy->initialize_weights(1);
  }
  const std::string attention =
      o.sdpa_decode ? std::string(ag::attention_backend())
                    : std::string(ag::attention_backend()) + " (decode steps: grouped products)";
  std::printf(
      "hf %s (%s weights): %lld parameters, %s, %s, attention %s, batch %d, %d tokens, %d "
      "LibTorch threads\n",
      o.hf.c_str(), weights ? "loaded" : "random",
      static_cast<long long>(policy->parameter_count()), o.device.c_str(), o.dtype.c_str(),
      attention.c_str(), o.batch, o.tokens, torch::get_num_threads());
  if (o.repeat == 0) return 0;
  const auto on = torch::TensorOptions().device(options.device);
  if (o.train_step) {
    train_steps(o, policy, options, memory_before);
    return 0;
  }
  policy->eval();
  torch::NoGradGuard no_grad;
  // As generate() decodes: with the weights' inference copies (bf16 casts made once), unless asked.
  if (!o.per_call_casts) policy->begin_inference();
  ag::CounterRng rng{1, 0};
  const std::vector<std::uint8_t> all_rows(static_cast<std::size_t>(o.batch), 1);  // all active
  for (int r = 0; r < o.repeat + 1; ++r) {  // the first run warms up
    const auto start = std::chrono::steady_clock::now();
    const ag::PrefixBatch prefix = random_prefix(o.batch, options);
    const torch::Tensor active = torch::ones({o.batch}, on.dtype(torch::kBool));
    ag::KvCache cache;
    auto out = policy->prefill(prefix, torch::zeros({o.batch, 1}, on.dtype(torch::kLong)),
                               active.unsqueeze(1), cache);
    ag::GenerationDecoder decoder(*policy, cache, o.tokens - 1, !o.no_decode_graphs);
    for (int t = 0; t < o.tokens; ++t) {
      std::vector<double> u(static_cast<std::size_t>(o.batch));
      for (double& x : u) x = rng.uniform_open();
      const torch::Tensor next =
          ag::sample_from_logits(out.logits, torch::tensor(u, torch::kDouble));
      if (t + 1 < o.tokens) out = decoder.step(next, active, all_rows);
    }
    (void)out.logits.to(torch::kCPU);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r > 0) {
      std::printf("decode   run %d: %.3f s, %.0f tokens/s (%d CUDA graphs)\n", r, seconds,
                  double(o.batch) * o.tokens / seconds, decoder.graphs());
    }
  }
  // One more run with the device synchronised around each decode step: how long the host takes to
  // issue a step (from the call until it returns) and how long the device then still works on it.
  // Launch-bound where the first dominates, compute-bound where the second does.
  if (options.device.is_cuda()) {
    const ag::PrefixBatch prefix = random_prefix(o.batch, options);
    const torch::Tensor active = torch::ones({o.batch}, on.dtype(torch::kBool));
    ag::KvCache cache;
    auto out = policy->prefill(prefix, torch::zeros({o.batch, 1}, on.dtype(torch::kLong)),
                               active.unsqueeze(1), cache);
    ag::GenerationDecoder decoder(*policy, cache, o.tokens - 1, !o.no_decode_graphs);
    double issue = 0, device = 0, sampling = 0;
    using Clock = std::chrono::steady_clock;
    const auto seconds = [](Clock::time_point a, Clock::time_point b) {
      return std::chrono::duration<double>(b - a).count();
    };
    for (int t = 0; t + 1 < o.tokens; ++t) {
      std::vector<double> u(static_cast<std::size_t>(o.batch));
      for (double& x : u) x = rng.uniform_open();
      torch::cuda::synchronize();
      const auto t0 = Clock::now();
      const torch::Tensor next =
          ag::sample_from_logits(out.logits, torch::tensor(u, torch::kDouble));
      torch::cuda::synchronize();
      const auto t1 = Clock::now();
      out = decoder.step(next, active, all_rows);
      const auto t2 = Clock::now();
      torch::cuda::synchronize();
      const auto t3 = Clock::now();
      sampling += seconds(t0, t1), issue += seconds(t1, t2), device += seconds(t2, t3);
    }
    const double steps = std::max(1, o.tokens - 1);
    std::printf(
        "decode   split: a step's sampling %.3f ms, issuing the decode step %.3f ms, the "
        "device after it returns %.3f ms (synchronised around each)\n",
        1e3 * sampling / steps, 1e3 * issue / steps, 1e3 * device / steps);
  }
  return 0;
}

std::shared_ptr<const sparserl::env::MatrixObservation> synthetic_observation(const AgentConfig& c,
                                                                              int seed) {
  auto m = std::make_shared<sparserl::env::MatrixObservation>();
  m->nnz_samples = c.policy.nnz_samples;
  m->embedding_dim = c.policy.embedding_dim;
  m->count = c.policy.nnz_samples;
  m->rows.assign(static_cast<std::size_t>(m->nnz_samples), 0);
  m->cols.assign(static_cast<std::size_t>(m->nnz_samples), 0);
  for (int k = 0; k < m->nnz_samples; ++k) {
    m->rows[static_cast<std::size_t>(k)] = k * 7 + seed;
    m->cols[static_cast<std::size_t>(k)] = (k * 13 + seed) % 1000;
    std::vector<float> row(static_cast<std::size_t>(m->embedding_dim));
    sparserl::env::positional_encoding(m->rows[static_cast<std::size_t>(k)], m->embedding_dim / 2,
                                       row.data());
    sparserl::env::positional_encoding(m->cols[static_cast<std::size_t>(k)], m->embedding_dim / 2,
                                       row.data() + m->embedding_dim / 2);
    m->embedding.insert(m->embedding.end(), row.begin(), row.end());
  }
  m->features.assign(sparserl::env::feature_names().size(), 0.5f);
  return m;
}

// generate: the real sampling path under the mask, --repeat times.
void time_generate(
    PolicyAgent& agent,
    const std::vector<std::shared_ptr<const sparserl::env::MatrixObservation>>& prompts,
    const Options& o) {
  for (int r = 0; r < o.repeat; ++r) {
    const auto before = agent.counters().generated_tokens;
    const auto start = std::chrono::steady_clock::now();
    const auto completions = agent.generate(prompts, 1, agent.config().sampling);
    if (agent.learner().device.is_cuda()) torch::cuda::synchronize();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto tokens = agent.counters().generated_tokens - before;
    std::uint64_t digest = 0xcbf29ce484222325ULL;  // FNV-1a over every row's tokens, in order
    for (const auto& c : completions) {
      for (const auto token : c.tokens) {
        digest = (digest ^ static_cast<std::uint64_t>(token)) * 0x100000001b3ULL;
      }
      digest = (digest ^ 0xffffffffULL) * 0x100000001b3ULL;
    }
    const sparserl::agents::GenerationProfile& p = agent.last_generation();
    std::printf(
        "generate run %d: %.3f s, %lld tokens (%.1f per row), %.0f tokens/s; %lld steps, "
        "masks %.3f s (%.1f us a row and step), waiting for the draws %.3f s, "
        "other host work %.3f s (the masks' upload %.3f s, decode steps' calls %.3f s; %d CUDA "
        "graphs captured in %.3f s); steps %s%s; tokens digest %016llx\n",
        r + 1, seconds, static_cast<long long>(tokens), double(tokens) / o.batch,
        double(tokens) / seconds, static_cast<long long>(p.steps), p.mask_seconds,
        p.row_steps > 0 ? 1e6 * p.mask_seconds / double(p.row_steps) : 0.0, p.readback_seconds,
        p.seconds - p.mask_seconds - p.readback_seconds, p.upload_seconds, p.decode_seconds,
        p.graphs, p.capture_seconds, p.overlapped ? "overlapped" : "read back first",
        p.draw_graphs ? ", draws from a CUDA graph" : "",
        static_cast<unsigned long long>(digest));
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app("Sampling throughput of the policy (docs/agents.md)", "sparserl-agents-bench");
  declare(app, o);
  CLI11_PARSE(app, argc, argv);
  try {
    if (o.threads > 0) torch::set_num_threads(o.threads);
    if (!o.hf.empty() && !o.hf_generate) return bench_hf(o);
    if (o.hf_generate && o.hf.empty())
      throw std::invalid_argument("--hf-generate needs --hf FOLDER");
    AgentConfig config;
    config.policy = sparserl::agents::PolicyConfig::preset(o.preset);
    config.policy.max_tokens = o.tokens;
    config.device = o.device;
    config.sampling.decode_graphs = !o.no_decode_graphs;
    config.sampling.overlap_steps = !o.no_overlap_steps;
    config.sampling.draw_graphs = !o.no_draw_graphs;
    config.mask =
        o.mask == "none" ? sparserl::env::MaskMode::none : sparserl::env::MaskMode::syntax;
    if (o.hf_generate) {
      config.model.kind = sparserl::agents::ModelKind::hf;
      config.model.path = o.hf;
      config.model.dtype = o.dtype;
    }
    auto vocabulary =
        std::make_shared<const sparserl::env::Vocabulary>(sparserl::env::Vocabulary::standard());
    PolicyAgent agent(config, vocabulary);
    auto& learner = agent.learner();
    if (o.sdpa_decode && !o.hf_generate) {
      auto* transformer = dynamic_cast<ag::TransformerPolicyImpl*>(learner.policy.get());
      if (transformer == nullptr || !transformer->set_sdpa_decode(true)) {
        throw std::invalid_argument(
            "--sdpa-decode: this LibTorch has no scaled_dot_product_attention");
      }
      std::printf("decode steps' attention: scaled_dot_product_attention\n");
    }
    std::printf("%s %s: %lld parameters, device %s, batch %d, %d tokens, %d LibTorch threads\n",
                o.hf_generate ? "hf" : "preset", o.hf_generate ? o.hf.c_str() : o.preset.c_str(),
                static_cast<long long>(agent.parameter_count()), agent.device().c_str(), o.batch,
                o.tokens, torch::get_num_threads());

    if (o.repeat == 0) return 0;  // the parameter count only

    std::vector<std::shared_ptr<const sparserl::env::MatrixObservation>> prompts;
    std::vector<const sparserl::env::MatrixObservation*> raw;
    for (int b = 0; b < o.batch; ++b) {
      prompts.push_back(synthetic_observation(agent.config(), b));
      raw.push_back(prompts.back().get());
    }
    if (o.hf_generate) {
      time_generate(agent, prompts, o);
      return 0;
    }
    auto sync = [&] {
      if (learner.device.is_cuda()) torch::cuda::synchronize();
    };

    // decode: every row active for all steps.
    {
      torch::NoGradGuard no_grad;
      learner.policy->eval();
      const auto vocab = static_cast<std::int64_t>(vocabulary->size());
      torch::Tensor mask_row = torch::ones({vocab}, torch::kBool);
      mask_row[vocabulary->eos()] = false;
      mask_row[vocabulary->pad()] = false;
      mask_row[vocabulary->bos()] = false;
      const torch::Tensor mask = mask_row.to(learner.device).unsqueeze(0).expand({o.batch, vocab});
      const torch::Tensor active =
          torch::ones({o.batch}, torch::TensorOptions().dtype(torch::kBool).device(learner.device));
      const std::vector<std::uint8_t> all_rows(static_cast<std::size_t>(o.batch), 1);
      for (int r = 0; r < o.repeat + 1; ++r) {  // the first run warms up
        const auto start = std::chrono::steady_clock::now();
        const auto prefix = learner.prefix_batch(raw);
        const auto tokens =
            torch::full({o.batch, 1}, vocabulary->bos(),
                        torch::TensorOptions().dtype(torch::kLong).device(learner.device));
        sparserl::agents::KvCache cache;
        auto out = learner.policy->prefill(prefix, tokens, active.unsqueeze(1), cache);
        ag::GenerationDecoder decoder(*learner.policy, cache, o.tokens - 1, !o.no_decode_graphs);
        for (int t = 0; t < o.tokens; ++t) {
          const torch::Tensor logits = sparserl::agents::apply_action_mask(out.logits, mask);
          std::vector<double> u(static_cast<std::size_t>(o.batch));
          for (double& x : u) x = learner.rng.uniform_open();
          const torch::Tensor next =
              sparserl::agents::sample_from_logits(logits, torch::tensor(u, torch::kDouble));
          if (t + 1 < o.tokens)
            out = decoder.step(next, active, all_rows);
          else
            (void)next.to(torch::kCPU);
        }
        sync();
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (r > 0) {
          std::printf("decode   run %d: %.3f s, %.0f tokens/s (%d CUDA graphs)\n", r, seconds,
                      double(o.batch) * o.tokens / seconds, decoder.graphs());
        }
      }
    }
    time_generate(agent, prompts, o);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sparserl-agents-bench: %s\n", e.what());
    return 1;
  }
}
