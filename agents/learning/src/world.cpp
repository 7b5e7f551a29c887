// The world of a data-parallel run read from the environment, and the shares of a batch each rank
// takes (distributed.hpp). No LibTorch here: reading six variables should not cost a torch compile,
// and the launcher's tests check these rules alone.
#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "sparserl/agents/distributed.hpp"
#include "sparserl/datasets/enum_names.hpp"

namespace sparserl::agents {

namespace {

const char* standard_lookup(const char* name) { return std::getenv(name); }

// The integer value of `name`, within [low, high]; std::invalid_argument naming the variable.
long long integer_variable(const EnvironmentLookup& lookup, const char* name, long long low,
                           long long high, const std::string& bounds) {
  const char* text = lookup(name);
  if (text == nullptr) {
    throw std::invalid_argument(std::string(name) +
                                ": not set (torchrun, Slurm jobs started for torch and `sparserl "
                                "train --gpus N` set it with WORLD_SIZE)");
  }
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text, &end, 10);
  if (*text == '\0' || *end != '\0' || errno == ERANGE || value < low || value > high) {
    throw std::invalid_argument(std::string(name) + " = '" + text + "': expected " + bounds);
  }
  return value;
}

}  // namespace

std::optional<World> world_from_environment(const EnvironmentLookup& given) {
  const EnvironmentLookup lookup = given ? given : EnvironmentLookup(standard_lookup);
  if (lookup("WORLD_SIZE") == nullptr) return std::nullopt;
  World w;
  w.size = static_cast<int>(
      integer_variable(lookup, "WORLD_SIZE", 1, 1 << 20, "an integer >= 1 (the number of ranks)"));
  const std::string below_size =
      "an integer with 0 <= RANK < WORLD_SIZE = " + std::to_string(w.size);
  w.rank = static_cast<int>(integer_variable(lookup, "RANK", 0, w.size - 1, below_size));
  w.local_size = w.size;
  if (lookup("LOCAL_WORLD_SIZE") != nullptr) {
    w.local_size = static_cast<int>(integer_variable(
        lookup, "LOCAL_WORLD_SIZE", 1, w.size,
        "an integer with 1 <= LOCAL_WORLD_SIZE <= WORLD_SIZE = " + std::to_string(w.size)));
  }
  w.local_rank = static_cast<int>(integer_variable(
      lookup, "LOCAL_RANK", 0, w.local_size - 1,
      "an integer with 0 <= LOCAL_RANK < " +
          std::string(lookup("LOCAL_WORLD_SIZE") != nullptr ? "LOCAL_WORLD_SIZE" : "WORLD_SIZE") +
          " = " + std::to_string(w.local_size)));
  const char* addr = lookup("MASTER_ADDR");
  if (addr == nullptr || *addr == '\0') {
    throw std::invalid_argument(std::string("MASTER_ADDR: ") +
                                (addr == nullptr ? "not set" : "empty") +
                                " (expected the host name or address of rank "
                                "0, e.g. 127.0.0.1 on one host)");
  }
  w.master_addr = addr;
  w.master_port =
      static_cast<int>(integer_variable(lookup, "MASTER_PORT", 1, 65535, "a TCP port in 1..65535"));
  return w;
}

const std::vector<std::pair<std::string, std::string>>& multicast_off_environment() {
  static const std::vector<std::pair<std::string, std::string>> variables = {
      {"NCCL_NVLS_ENABLE", "0"},
      {"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"},
      {"NVSHMEM_DISABLE_NVLS", "1"}};
  return variables;
}

constexpr auto kCollectiveBackends =
    datasets::enum_names<CollectiveBackend::gloo, CollectiveBackend::nccl>({"gloo", "nccl"});

std::string_view to_string(CollectiveBackend backend) { return kCollectiveBackends.name(backend); }

std::optional<CollectiveBackend> parse_collective_backend(std::string_view text) {
  return kCollectiveBackends.parse(text);
}

Shard shard_of(std::size_t count, int rank, int size) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw std::invalid_argument("shard_of: rank " + std::to_string(rank) + " of " +
                                std::to_string(size));
  }
  const auto r = static_cast<std::size_t>(rank);
  const auto n = static_cast<std::size_t>(size);
  return {r * count / n, (r + 1) * count / n};
}

void require_divisible(std::string_view key, long long count, int size) {
  if (size > 1 && count % size != 0) {
    throw std::invalid_argument(std::string(key) + " = " + std::to_string(count) +
                                " does not divide by the world size " + std::to_string(size) +
                                " (each rank takes an equal share)");
  }
}

}  // namespace sparserl::agents
