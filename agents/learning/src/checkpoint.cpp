// PolicyAgent's checkpoints (see policy_agent.hpp for the folder layout): checkpoint.txt with the
// format version, every AgentConfig knob (agent_knobs(): the policy's, the optimiser's, every
// registered algorithm's), the counters and the generator state, written last and renamed into
// place; the tensors beside it, each network's as its save_state() keeps it (a LoRA decoder's
// adapters and heads only: its base is the model folder's, whose digest checkpoint.txt records).
// Loading checks the vocabulary (and an HF model's tokenizer and base weights) and the network's
// shape.
#include <torch/torch.h>

#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "sparserl/agents/policy_agent.hpp"
#include "sparserl/agents/torch/learner.hpp"

namespace sparserl::agents {

namespace {

constexpr int kCheckpointVersion = 1;

// The network's shape: what two checkpoints must share for weights to move between them (an HF
// model's layers come from its folder, whose weights' digest is compared apart).
// The keys a checkpoint and the agent that loads its weights must agree on: the shapes, and
// policy.matrix_input, which changes no shape but what the weights were trained to read (an RL run
// from an ablated SFT policy with the full input would train silently on inputs its policy never
// saw).
const std::vector<std::string>& agreeing_keys(ModelKind kind) {
  static const std::vector<std::string> small = {
      "model.kind",         "policy.layers",     "policy.heads",          "policy.d_model",
      "policy.d_ff",        "policy.max_tokens", "policy.nnz_samples",    "policy.embedding_dim",
      "policy.feature_dim", "policy.vocab_size", "policy.tie_embeddings", "policy.matrix_input"};
  static const std::vector<std::string> hf = {
      "model.kind",         "model.lora_rank",    "model.lora_targets",
      "model.prompt",       "policy.nnz_samples", "policy.embedding_dim",
      "policy.feature_dim", "policy.vocab_size",  "policy.matrix_input"};
  return kind == ModelKind::hf ? hf : small;
}

struct CheckpointFile {
  std::map<std::string, std::string> values;
  std::filesystem::path path;
  [[nodiscard]] const std::string& get(const std::string& key) const {
    auto found = values.find(key);
    if (found == values.end()) {
      throw std::runtime_error(path.string() + ": missing key '" + key + "'");
    }
    return found->second;
  }
  // The counters (signed) and the generator's state (unsigned).
  template <typename Int>
  [[nodiscard]] Int integer(const std::string& key) const {
    try {
      if constexpr (std::is_signed_v<Int>) {
        return std::stoll(get(key));
      } else {
        return std::stoull(get(key));
      }
    } catch (const std::logic_error&) {
      throw std::runtime_error(path.string() + ": key '" + key + "' is not an integer: '" +
                               get(key) + "'");
    }
  }
};

CheckpointFile read_checkpoint_file(const std::filesystem::path& dir) {
  CheckpointFile file;
  file.path = dir / "checkpoint.txt";
  std::ifstream in(file.path);
  if (!in)
    throw std::runtime_error(file.path.string() + ": cannot read (not a checkpoint folder?)");
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find(" = ");
    if (eq == std::string::npos) {
      throw std::runtime_error(file.path.string() + ":" + std::to_string(number) +
                               ": expected 'key = value', got '" + line + "'");
    }
    file.values[line.substr(0, eq)] = line.substr(eq + 3);
  }
  const std::string& format = file.get("format");
  if (format != "sparserl-agent-checkpoint " + std::to_string(kCheckpointVersion)) {
    throw std::runtime_error(file.path.string() + ": format '" + format +
                             "', expected sparserl-agent-checkpoint " +
                             std::to_string(kCheckpointVersion));
  }
  return file;
}

AgentConfig config_from(const CheckpointFile& file) {
  AgentConfig config;
  for (const auto& [key, value] : file.values) {
    if (key.rfind("config.", 0) != 0) continue;
    try {
      apply_key_value(config, key.substr(7), value);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(file.path.string() + ": " + e.what());
    }
  }
  return config;
}

void require_file(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path))
    throw std::runtime_error(path.string() + ": missing from the checkpoint");
}

// What a checkpoint of `file` must share with this learner before its tensors are read: the
// vocabulary, the network's shape, and for an HF model the tokenizer and the base weights.
void require_compatible(const Learner& l, const CheckpointFile& file,
                        const std::filesystem::path& dir) {
  const std::string where = (dir / "checkpoint.txt").string();
  l.vocabulary->require_digest(file.get("vocabulary.digest"), where);
  const auto mine = to_key_values(l.config);
  const auto theirs = to_key_values(config_from(file));
  for (const std::string& key : agreeing_keys(l.config.model.kind)) {
    if (mine.at(key) != theirs.at(key)) {
      throw std::invalid_argument(file.path.string() + ": " + key + " = " + theirs.at(key) +
                                  ", but this agent has " + mine.at(key));
    }
  }
  if (l.config.model.kind != ModelKind::hf) return;
  l.tokens->require_digest(file.get("tokens.digest"), where);
  const std::string& base = l.base_digest;
  if (file.get("model.base_digest") != base) {
    throw std::invalid_argument(file.path.string() +
                                ": model.base_digest = " + file.get("model.base_digest") +
                                ", but the weights of " + l.config.model.path + " have digest " +
                                base + " (the checkpoint was trained from another base model)");
  }
}

void save_state(const PolicyNetwork& network, const std::filesystem::path& file) {
  torch::serialize::OutputArchive archive;
  network->save_state(archive);
  archive.save_to(file.string());
}

void load_state(PolicyNetwork& network, const std::filesystem::path& file,
                const torch::Device& device) {
  torch::serialize::InputArchive archive;
  archive.load_from(file.string(), device);
  try {
    network->load_state(archive);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(file.string() + ": " + e.what());
  }
}

}  // namespace

std::unique_ptr<PolicyAgent> PolicyAgent::from_checkpoint(const std::filesystem::path& dir,
                                                          std::optional<std::string> device,
                                                          CheckpointUse use) {
  const CheckpointFile file = read_checkpoint_file(dir);
  AgentConfig config = config_from(file);
  if (device) config.device = *device;
  require_file(dir / "vocabulary.vocab");
  auto vocabulary =
      std::make_shared<const env::Vocabulary>(env::Vocabulary::load(dir / "vocabulary.vocab"));
  std::unique_ptr<PolicyAgent> agent(
      new PolicyAgent(std::make_unique<Learner>(config, vocabulary)));
  agent->restore(dir, use);
  return agent;
}

AgentConfig PolicyAgent::checkpoint_config(const std::filesystem::path& dir) {
  return config_from(read_checkpoint_file(dir));
}

void PolicyAgent::save(const std::filesystem::path& dir) const {
  const Learner& l = *learner_;
  std::filesystem::create_directories(dir);
  // checkpoint.txt goes last and is replaced atomically: its presence marks a complete checkpoint.
  std::filesystem::remove(dir / "checkpoint.txt");
  save_state(l.policy, dir / "model.pt");
  if (!l.reference.is_empty()) {
    save_state(l.reference, dir / "reference.pt");
  } else {
    std::filesystem::remove(dir / "reference.pt");
  }
  if (!l.critic.is_empty()) {
    save_state(l.critic, dir / "critic.pt");
    torch::serialize::OutputArchive optimizer;
    l.critic_optimizer->save(optimizer);
    optimizer.save_to((dir / "critic_optimizer.pt").string());
  } else {
    std::filesystem::remove(dir / "critic.pt");
    std::filesystem::remove(dir / "critic_optimizer.pt");
  }
  {
    torch::serialize::OutputArchive archive;
    l.optimizer->save(archive);
    archive.save_to((dir / "optimizer.pt").string());
  }
  {
    torch::serialize::OutputArchive archive;
    archive.write("cpu_generator", at::detail::getDefaultCPUGenerator().get_state());
    archive.save_to((dir / "rng.pt").string());
  }
  l.vocabulary->save(dir / "vocabulary.vocab");
  const bool hf = l.config.model.kind == ModelKind::hf;
  if (hf) l.tokens->save(dir);  // tokenizer.json

  std::ostringstream text;
  text << "# SparseRL Gym agent checkpoint "
          "(agents/learning/include/sparserl/agents/policy_agent.hpp)\n";
  text << "format = sparserl-agent-checkpoint " << kCheckpointVersion << "\n";
  text << "vocabulary.name = " << l.vocabulary->name() << "\n";
  text << "vocabulary.digest = " << l.vocabulary->digest() << "\n";
  if (hf) {
    text << "tokens.name = " << l.tokens->name() << "\n";
    text << "tokens.digest = " << l.tokens->digest() << "\n";
    text << "model.base_digest = " << l.base_digest << "\n";
  }
  text << "counters.optimizer_steps = " << l.counters.optimizer_steps << "\n";
  text << "counters.updates = " << l.counters.updates << "\n";
  text << "counters.samples = " << l.counters.samples << "\n";
  text << "counters.tokens = " << l.counters.tokens << "\n";
  text << "counters.generated_tokens = " << l.counters.generated_tokens << "\n";
  text << "rng.seed = " << l.rng.seed << "\n";
  text << "rng.counter = " << l.rng.counter << "\n";
  text << "reference = " << (l.reference.is_empty() ? "false" : "true") << "\n";
  text << "critic = " << (l.critic.is_empty() ? "false" : "true") << "\n";
  text << "parameters = " << l.policy->parameter_count() << "\n";
  for (const auto& [key, value] : to_key_values(l.config))
    text << "config." << key << " = " << value << "\n";
  const auto temporary = dir / "checkpoint.txt.tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text.str();
    if (!out) throw std::runtime_error(temporary.string() + ": cannot write");
  }
  std::filesystem::rename(temporary, dir / "checkpoint.txt");
}

void PolicyAgent::load(const std::filesystem::path& dir) { restore(dir, CheckpointUse::resume); }

void PolicyAgent::restore(const std::filesystem::path& dir, CheckpointUse use) {
  Learner& l = *learner_;
  const CheckpointFile file = read_checkpoint_file(dir);
  require_compatible(l, file, dir);
  AgentConfig saved = config_from(file);
  require_file(dir / "model.pt");
  // The training state's files: required to resume, read for inference where they are there.
  const auto training_state = [&](const char* name) {
    if (use == CheckpointUse::resume) require_file(dir / name);
    return std::filesystem::exists(dir / name);
  };
  const bool optimizer_state = training_state("optimizer.pt");
  const bool generator_state = training_state("rng.pt");
  saved.device = l.config.device;
  l.config = saved;
  l.algorithm = AlgorithmRegistry::make(l.config.algorithm);
  load_state(l.policy, dir / "model.pt", l.device);
  if (file.get("reference") == "true") {
    require_file(dir / "reference.pt");
    // A copy of the policy just loaded, then the reference's own state over it (a LoRA
    // reference shares the policy's base and differs in its adapters and heads).
    if (l.reference.is_empty()) l.reference = PolicyNetwork(l.policy->frozen_copy());
    load_state(l.reference, dir / "reference.pt", l.device);
    for (auto& p : l.reference->parameters()) p.set_requires_grad(false);
  } else {
    l.reference = PolicyNetwork{nullptr};
  }
  // Checkpoints from before the separate critic have no "critic" line: none was kept then.
  const auto critic_line = file.values.find("critic");
  if (critic_line != file.values.end() && critic_line->second == "true") {
    require_file(dir / "critic.pt");
    l.make_critic();
    load_state(l.critic, dir / "critic.pt", l.device);
    if (training_state("critic_optimizer.pt")) {
      torch::serialize::InputArchive optimizer;
      optimizer.load_from((dir / "critic_optimizer.pt").string(), l.device);
      l.critic_optimizer->load(optimizer);
    }
  } else {
    l.critic = PolicyNetwork{nullptr};
    l.critic_optimizer.reset();
  }
  l.make_optimizer();  // with the saved optimiser settings, then its saved state
  if (optimizer_state) {
    torch::serialize::InputArchive archive;
    archive.load_from((dir / "optimizer.pt").string(), l.device);
    l.optimizer->load(archive);
  }
  if (generator_state) {
    torch::serialize::InputArchive archive;
    archive.load_from((dir / "rng.pt").string());
    torch::Tensor state;
    archive.read("cpu_generator", state);
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    generator.set_state(state);
  }
  l.counters.optimizer_steps = file.integer<std::int64_t>("counters.optimizer_steps");
  l.counters.updates = file.integer<std::int64_t>("counters.updates");
  l.counters.samples = file.integer<std::int64_t>("counters.samples");
  l.counters.tokens = file.integer<std::int64_t>("counters.tokens");
  l.counters.generated_tokens = file.integer<std::int64_t>("counters.generated_tokens");
  l.rng.seed = file.integer<std::uint64_t>("rng.seed");
  l.rng.counter = file.integer<std::uint64_t>("rng.counter");
  l.act_rows.clear();
  l.act_cache = KvCache{};
}

void PolicyAgent::load_weights(const std::filesystem::path& dir) {
  Learner& l = *learner_;
  const CheckpointFile file = read_checkpoint_file(dir);
  require_compatible(l, file, dir);
  require_file(dir / "model.pt");
  load_state(l.policy, dir / "model.pt", l.device);
  l.act_rows.clear();
  l.act_cache = KvCache{};
}

}  // namespace sparserl::agents
