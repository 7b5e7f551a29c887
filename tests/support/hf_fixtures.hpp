// The Hugging Face parity fixtures (tests/fixtures/hf, made by make_fixtures.py on the GPU host):
// where they are, their JSON files, and the models the manifest lists. Shared by the decoder parity
// tests (tests/agents/hf_parity_torch.cpp) and the tokenizer parity tests
// (tests/env/bpe_parity_test.cpp).
#pragma once

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace sparserl::testing {

inline std::filesystem::path hf_fixtures_dir() {
  return source_dir() / "tests" / "fixtures" / "hf";
}

inline nlohmann::json read_json_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error(file.string() + ": cannot read");
  return nlohmann::json::parse(in);
}

// The models of manifest.json, in its order; throws where the manifest lists none.
inline std::vector<std::string> hf_fixture_models() {
  const nlohmann::json manifest = read_json_file(hf_fixtures_dir() / "manifest.json");
  std::vector<std::string> names;
  for (const auto& [name, info] : manifest.at("models").items()) names.push_back(name);
  if (names.empty()) throw std::runtime_error("tests/fixtures/hf/manifest.json: no models");
  return names;
}

}  // namespace sparserl::testing
