// Internals of `sparserl-worker` shared by its files: the process's protocol channel (private
// descriptors, away from fd 0 and 1) and the test-mode handler.
#pragma once

#include <cstddef>
#include <optional>

#include "sparserl/reward/protocol.hpp"

namespace sparserl::reward::worker {

struct Channel {
  int in = -1;   // requests (a private dup of the original stdin)
  int out = -1;  // responses (a private dup of the original stdout)
  std::size_t max_frame_bytes = kDefaultMaxFrameBytes;

  void send(const Message& message) const { write_frame(out, encode_frame(message)); }
};

// Obeys one TestRequest (`--test-mode` only). Returns normally after answering; crashes, hangs,
// floods or exits when asked to.
void run_test_request(const Channel& channel, const TestRequest& request);

// Test mode: with SPARSERL_WORKER_TEST_GPUS=N in its environment a GPU worker announces N made-up
// devices instead of probing CUDA, so that CPU tests see the pool start one GPU worker per device
// and can ask each (visible_devices) which device it was given. nullopt when the variable is unset.
std::optional<GpuInfo> test_gpus();

}  // namespace sparserl::reward::worker
