// Internals of `sparserl-worker` shared by its files: the process's protocol channel (private
// descriptors, away from fd 0 and 1) and the test-mode handler.
#pragma once

#include <cstddef>

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

}  // namespace sparserl::reward::worker
