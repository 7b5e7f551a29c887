// Data-parallel training over several processes, one per GPU, started the way torchrun starts them:
// the world a process belongs to (from the standard environment variables RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), which share of a batch each rank takes,
// and the ProcessGroup the ranks talk through (LibTorch's c10d: NCCL between GPUs, gloo on CPUs).
// No LibTorch in this header: the runner and the command line include it; the tensor collectives
// the learner uses are in torch/collectives.hpp.
//
// One process (no WORLD_SIZE, or WORLD_SIZE = 1) forms no group: every stage runs exactly the code
// and the numbers it ran before. docs/distributed.md says what is sharded and what is reduced.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sparserl/env/episode.hpp"

namespace sparserl::agents {

// Where this process stands among the processes started together.
struct World {
  int rank = 0;             // RANK: 0 .. size - 1
  int size = 1;             // WORLD_SIZE
  int local_rank = 0;       // LOCAL_RANK: the process's GPU on its host (cuda:LOCAL_RANK)
  int local_size = 1;       // LOCAL_WORLD_SIZE (WORLD_SIZE when unset)
  std::string master_addr;  // MASTER_ADDR: where rank 0 serves the rendezvous store
  int master_port = 0;      // MASTER_PORT
  [[nodiscard]] bool distributed() const { return size > 1; }
};

// The value of an environment variable, or nullptr when it is unset (std::getenv by default).
using EnvironmentLookup = std::function<const char*(const char*)>;

// The world the environment describes, nullopt when WORLD_SIZE is unset (one process). Every
// variable must then be set (LOCAL_WORLD_SIZE may be) and make sense: std::invalid_argument naming
// the variable and its value otherwise ("RANK = 2: expected 0 <= RANK < WORLD_SIZE = 2").
std::optional<World> world_from_environment(const EnvironmentLookup& lookup = {});

// The variables that keep NVLink multicast off, with their values: NCCL_NVLS_ENABLE=0,
// TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1. Multicast objects can take the shared
// GPUs of our hosts out of service; every rank gets these whatever its caller set.
const std::vector<std::pair<std::string, std::string>>& multicast_off_environment();

// How the ranks exchange tensors: NCCL between CUDA devices, gloo between CPU processes.
enum class CollectiveBackend { gloo, nccl };
std::string_view to_string(CollectiveBackend backend);
std::optional<CollectiveBackend> parse_collective_backend(std::string_view text);
// The backends this build can form a group with (gloo where LibTorch has it; nccl where LibTorch
// was built with CUDA and USE_C10D_NCCL).
std::vector<CollectiveBackend> available_backends();
// The backend for `requested` ("auto", "gloo", "nccl") on `device` (the rank's agent.device after
// rank_device): auto takes nccl for a CUDA device when the build has it, else gloo.
// std::invalid_argument naming `option` for a backend this build lacks or that cannot serve the
// device (nccl on the CPU).
CollectiveBackend choose_backend(std::string_view requested, const std::string& device,
                                 std::string_view option);

// The device a rank trains on: "auto" and "cuda" become cuda:LOCAL_RANK (cpu where LibTorch sees no
// CUDA device, for "auto"), "cpu" stays; a fixed "cuda:N" is refused naming `key` (each rank owns
// the GPU of its local rank).
std::string rank_device(const std::string& configured, const World& world, std::string_view key);

// The items [begin, end) of `count` that rank `rank` of `size` takes: contiguous and in order, so
// the ranks' shards laid end to end are the whole batch in the order one process sees it.
struct Shard {
  std::size_t begin = 0;
  std::size_t end = 0;
  [[nodiscard]] std::size_t size() const { return end - begin; }
};
Shard shard_of(std::size_t count, int rank, int size);
// std::invalid_argument "KEY = COUNT does not divide by the world size SIZE" unless it does.
void require_divisible(std::string_view key, long long count, int size);

// Episodes as bytes and back, with what the trajectory file records of them (task, seeds, tokens,
// log-probabilities, values, source, ends, reward and breakdown, the whole EvalResult, times,
// policy id) and their group; not their prompts or masks. How the ranks' episodes reach rank 0.
std::string encode_episodes(std::span<const env::Episode> episodes);
// std::invalid_argument for bytes encode_episodes did not write.
std::vector<env::Episode> decode_episodes(std::string_view bytes);

// The ranks of one world, joined: rank 0 serves a TCP store at MASTER_ADDR:MASTER_PORT, the others
// connect, and the backend's process group forms over it. Every collective must be called by every
// rank in the same order; each waits at most `timeout` for the others.
class ProcessGroup {
 public:
  static constexpr std::chrono::seconds kDefaultTimeout{3600};

  // Forms the group (sets the multicast-off variables in this process first: NCCL reads them when
  // its communicators form). std::runtime_error naming MASTER_ADDR:MASTER_PORT when the rendezvous
  // fails; std::invalid_argument for a backend this build lacks.
  static std::shared_ptr<ProcessGroup> join(const World& world, CollectiveBackend backend,
                                            std::chrono::seconds timeout = kDefaultTimeout);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  [[nodiscard]] const World& world() const;
  [[nodiscard]] int rank() const { return world().rank; }
  [[nodiscard]] int size() const { return world().size; }
  [[nodiscard]] bool main() const { return world().rank == 0; }  // the rank that writes files
  [[nodiscard]] CollectiveBackend backend() const;

  // Returns once every rank has called it.
  void barrier();
  // Element-wise sums and maxima over the ranks (in float64); every rank gets the result.
  std::vector<double> sum(std::vector<double> values);
  std::vector<double> max(std::vector<double> values);
  // True on every rank when it is true on any.
  bool any(bool flag);
  // Rank 0's `text` on every rank (the others' argument is ignored).
  std::string broadcast(const std::string& text);
  // On rank 0 every rank's `text`, in rank order; an empty list on the others.
  std::vector<std::string> gather(const std::string& text);

  struct Impl;  // LibTorch's store and process group (process_group.cpp)
  [[nodiscard]] Impl& impl() { return *impl_; }

 private:
  explicit ProcessGroup(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sparserl::agents
