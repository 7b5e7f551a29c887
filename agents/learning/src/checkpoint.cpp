// PolicyAgent's checkpoints (see policy_agent.hpp for the folder layout): checkpoint.txt with the
// format version, every AgentConfig knob (agent_knobs(): the policy's, the optimiser's, every
// registered algorithm's), the counters and the generator state, written last and renamed into
// place; the tensors beside it. Loading checks the vocabulary and the policy's shape.
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

// The policy's shape: what two checkpoints must share for weights to move between them.
const std::vector<std::string>& shape_keys() {
  static const std::vector<std::string> keys = {
      "policy.layers",     "policy.heads",         "policy.d_model",       "policy.d_ff",
      "policy.max_tokens", "policy.nnz_samples",   "policy.embedding_dim", "policy.feature_dim",
      "policy.vocab_size", "policy.tie_embeddings"};
  return keys;
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

}  // namespace

std::unique_ptr<PolicyAgent> PolicyAgent::from_checkpoint(const std::filesystem::path& dir,
                                                          std::optional<std::string> device) {
  const CheckpointFile file = read_checkpoint_file(dir);
  AgentConfig config = config_from(file);
  if (device) config.device = *device;
  require_file(dir / "vocabulary.vocab");
  auto vocabulary =
      std::make_shared<const env::Vocabulary>(env::Vocabulary::load(dir / "vocabulary.vocab"));
  std::unique_ptr<PolicyAgent> agent(
      new PolicyAgent(std::make_unique<Learner>(config, vocabulary)));
  agent->load(dir);
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
  {
    torch::serialize::OutputArchive archive;
    l.policy->save(archive);
    archive.save_to((dir / "model.pt").string());
  }
  if (!l.reference.is_empty()) {
    torch::serialize::OutputArchive archive;
    l.reference->save(archive);
    archive.save_to((dir / "reference.pt").string());
  } else {
    std::filesystem::remove(dir / "reference.pt");
  }
  if (!l.critic.is_empty()) {
    torch::serialize::OutputArchive model, optimizer;
    l.critic->save(model);
    model.save_to((dir / "critic.pt").string());
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

  std::ostringstream text;
  text << "# SparseRL Gym agent checkpoint "
          "(agents/learning/include/sparserl/agents/policy_agent.hpp)\n";
  text << "format = sparserl-agent-checkpoint " << kCheckpointVersion << "\n";
  text << "vocabulary.name = " << l.vocabulary->name() << "\n";
  text << "vocabulary.digest = " << l.vocabulary->digest() << "\n";
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

void PolicyAgent::load(const std::filesystem::path& dir) {
  Learner& l = *learner_;
  const CheckpointFile file = read_checkpoint_file(dir);
  l.vocabulary->require_digest(file.get("vocabulary.digest"), (dir / "checkpoint.txt").string());
  AgentConfig saved = config_from(file);
  const auto mine = to_key_values(l.config);
  const auto theirs = to_key_values(saved);
  for (const std::string& key : shape_keys()) {
    if (mine.at(key) != theirs.at(key)) {
      throw std::invalid_argument(file.path.string() + ": " + key + " = " + theirs.at(key) +
                                  ", but this agent has " + mine.at(key));
    }
  }
  for (const char* name : {"model.pt", "optimizer.pt", "rng.pt"}) require_file(dir / name);
  saved.device = l.config.device;
  l.config = saved;
  l.algorithm = AlgorithmRegistry::make(l.config.algorithm);
  {
    torch::serialize::InputArchive archive;
    archive.load_from((dir / "model.pt").string(), l.device);
    l.policy->load(archive);
  }
  if (file.get("reference") == "true") {
    require_file(dir / "reference.pt");
    if (l.reference.is_empty()) l.reference = clone_policy(l.policy);
    torch::serialize::InputArchive archive;
    archive.load_from((dir / "reference.pt").string(), l.device);
    l.reference->load(archive);
    for (auto& p : l.reference->parameters()) p.set_requires_grad(false);
  } else {
    l.reference = TransformerPolicy{nullptr};
  }
  // Checkpoints from before the separate critic have no "critic" line: none was kept then.
  const auto critic_line = file.values.find("critic");
  if (critic_line != file.values.end() && critic_line->second == "true") {
    require_file(dir / "critic.pt");
    require_file(dir / "critic_optimizer.pt");
    l.make_critic();
    torch::serialize::InputArchive model, optimizer;
    model.load_from((dir / "critic.pt").string(), l.device);
    l.critic->load(model);
    optimizer.load_from((dir / "critic_optimizer.pt").string(), l.device);
    l.critic_optimizer->load(optimizer);
  } else {
    l.critic = TransformerPolicy{nullptr};
    l.critic_optimizer.reset();
  }
  l.make_optimizer();  // with the saved optimiser settings, then its saved state
  {
    torch::serialize::InputArchive archive;
    archive.load_from((dir / "optimizer.pt").string(), l.device);
    l.optimizer->load(archive);
  }
  {
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
  l.vocabulary->require_digest(file.get("vocabulary.digest"), (dir / "checkpoint.txt").string());
  const auto mine = to_key_values(l.config);
  const auto theirs = to_key_values(config_from(file));
  for (const std::string& key : shape_keys()) {
    if (mine.at(key) != theirs.at(key)) {
      throw std::invalid_argument(file.path.string() + ": " + key + " = " + theirs.at(key) +
                                  ", but this agent has " + mine.at(key));
    }
  }
  require_file(dir / "model.pt");
  torch::serialize::InputArchive archive;
  archive.load_from((dir / "model.pt").string(), l.device);
  l.policy->load(archive);
  l.act_rows.clear();
  l.act_cache = KvCache{};
}

}  // namespace sparserl::agents
