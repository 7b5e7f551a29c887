// The algorithm registry (algorithm.hpp) and the list of this library's own algorithms. A static
// library drops object files nothing refers to, so the built-in algorithms are not registered from
// their own files: the list below names them, one line each, and the registry takes it on first
// use.
#include <algorithm>
#include <cctype>
#include <deque>
#include <mutex>
#include <stdexcept>

#include "sparserl/agents/algorithm.hpp"

namespace sparserl::agents {

// Each defined in the algorithm's own file.
std::unique_ptr<Algorithm> make_sft_algorithm();
std::unique_ptr<Algorithm> make_reinforce_algorithm();
std::unique_ptr<Algorithm> make_ppo_algorithm();
std::unique_ptr<Algorithm> make_grpo_algorithm();

namespace {

struct Entry {
  std::string name;
  AlgorithmFactory make;
  std::unique_ptr<const Algorithm> prototype;  // answers name(), summary(), knobs()
};

struct Registry {
  std::mutex mutex;
  std::deque<Entry> entries;  // a deque: find()'s pointers stay valid as entries are added

  void add(const std::string& name, AlgorithmFactory make) {
    // The name prefixes the algorithm's keys ("grpo.beta", [agent.grpo]): a word that is not
    // already a prefix of the agent's other keys or a stage's section.
    const bool word = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
      return std::islower(static_cast<unsigned char>(c)) ||
             std::isdigit(static_cast<unsigned char>(c)) || c == '_';
    });
    for (const char* taken : {"agent", "policy", "optimizer", "sampling", "pretrain", "rl"}) {
      if (name == taken || !word) {
        throw std::logic_error("algorithm name '" + name +
                               "': expected a word of a-z, 0-9 and '_' other than agent, policy, "
                               "optimizer, sampling, pretrain and rl");
      }
    }
    std::unique_ptr<const Algorithm> prototype = make();
    if (prototype == nullptr || prototype->name() != name) {
      throw std::logic_error("algorithm registered as '" + name + "' names itself '" +
                             std::string(prototype ? prototype->name() : "") + "'");
    }
    const std::lock_guard<std::mutex> lock(mutex);
    for (const Entry& e : entries) {
      if (e.name == name) throw std::logic_error("algorithm '" + name + "' registered twice");
    }
    entries.push_back({name, std::move(make), std::move(prototype)});
  }
};

Registry& registry() {
  static Registry* const instance = [] {
    auto* r = new Registry;  // never destroyed: algorithms may be looked up during exit
    r->add("sft", make_sft_algorithm);
    r->add("reinforce", make_reinforce_algorithm);
    r->add("ppo", make_ppo_algorithm);
    r->add("grpo", make_grpo_algorithm);
    return r;
  }();
  return *instance;
}

const Entry* find_entry(std::string_view name) {
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  for (const Entry& e : r.entries) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

}  // namespace

void AlgorithmRegistry::add(const std::string& name, AlgorithmFactory make) {
  registry().add(name, std::move(make));
}

std::unique_ptr<Algorithm> AlgorithmRegistry::make(std::string_view name) {
  const Entry* e = find_entry(name);
  if (e == nullptr) {
    throw std::invalid_argument("agent.algorithm = '" + std::string(name) + "': expected one of " +
                                datasets::knob_text::one_of(names()));
  }
  return e->make();
}

const Algorithm* AlgorithmRegistry::find(std::string_view name) {
  const Entry* e = find_entry(name);
  return e == nullptr ? nullptr : e->prototype.get();
}

std::vector<std::string> AlgorithmRegistry::names() {
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> out;
  for (const Entry& e : r.entries) out.push_back(e.name);
  return out;
}

std::vector<std::string> AlgorithmRegistry::rollout_learners() {
  std::vector<std::string> out;
  for (const std::string& name : names()) {
    if (find(name)->learns_from_rollouts()) out.push_back(name);
  }
  return out;
}

}  // namespace sparserl::agents
