// Decode steps replayed from CUDA graphs (LibTorch; include only inside agents/ and its torch
// tests). A decode step of either network is a few hundred small kernels for one token a row; on a
// GPU the host spends longer issuing them one by one than the device spends running them (an H100,
// the 42M decoder at batch 64: about 8 ms of issuing a step, against about 1.7 ms of its kernels
// when replayed; docs/agents.md). A CUDA graph records a step's kernels once and launches them all
// with one call.
//
// What a replay needs, and how generate() provides it: the same shapes and the same memory at
// every replay. The key-value cache is reserved once for the whole generation (no growth), the
// step attends a fixed number of slots (KvCache::fixed_span) instead of max(lengths) + 1 read back
// from the device, the step's inputs are copied into tensors the graph owns, and its outputs are
// the graph's. The span grows with the longest row, so there is one graph per `kSpanBucket` slots
// of span, captured the first time the span reaches it (a generation of N tokens captures at most
// N / kSpanBucket + 1); they share one memory pool, replayed in the order captured. Attending the
// bucket's span instead of the exact one changes nothing but the work: slots past a row's own are
// masked out (the logits agree with the uncaptured step's to rounding; tests check it).
//
// The graphs hold the cache's and the weights' addresses: a DecodeGraphs lives for one generate()
// call (whose cache and inference copies hold still for that time) and is dropped with it.
// available() is false where LibTorch was built without CUDA (this file's .cpp then holds no CUDA
// code) or the device is not CUDA; generate() then issues every step's kernels as before, as it
// does with SamplingConfig::decode_graphs = false.
//
// StepTransfers is the host side of generate()'s overlapped steps (SamplingConfig::overlap_steps):
// the masks and uniforms written into page-locked buffers and uploaded without blocking, and the
// draws read back into one with an event to wait on, so that the host enqueues the next decode
// step before it waits for the draws (docs/agents.md, "Throughput"). It lives here because this
// file's .cpp is the one compiled with LibTorch's CUDA headers.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "sparserl/agents/torch/policy_network.hpp"

namespace sparserl::agents {

class DecodeGraphs {
 public:
  // Span slots per captured graph.
  static constexpr std::int64_t kSpanBucket = 128;

  // Whether this build can capture CUDA graphs on `device`.
  [[nodiscard]] static bool available(const torch::Device& device);

  // `cache` must already hold every slot the generation will write (KvCache::reserve): its
  // tensors are not to be reallocated while this object lives. `max_span`: the most slots a step
  // will attend (the longest row's length after the last step, at most the capacity; a bucket's
  // span is cut there, as the reserve may have doubled the capacity past what a network can
  // attend).
  DecodeGraphs(PolicyNetworkImpl& network, KvCache& cache, std::int64_t max_span);
  ~DecodeGraphs();
  DecodeGraphs(const DecodeGraphs&) = delete;
  DecodeGraphs& operator=(const DecodeGraphs&) = delete;

  // One decode step (as network.decode_step(tokens, active, cache)) for rows whose longest is
  // `longest` slots long before the step (the host's count); the first step of a span bucket
  // captures its graph. The outputs are the graph's own tensors: read them before the next step.
  PolicyOutput step(const torch::Tensor& tokens, const torch::Tensor& active, std::int64_t longest);

  // Graphs captured so far and the seconds their captures took (warm-up step included).
  [[nodiscard]] int captured() const;
  [[nodiscard]] double capture_seconds() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The decode steps of one generation after its prefill, as generate() and the sampling bench take
// them: replayed from DecodeGraphs where `graphs` is asked for and available (the cache reserved
// for `max_steps` more steps at construction, each row's length counted here on the host from the
// rows each step lengthens), else network.decode_step as it is.
class GenerationDecoder {
 public:
  GenerationDecoder(PolicyNetworkImpl& network, KvCache& cache, std::int64_t max_steps,
                    bool graphs);
  // tokens [B] and active [B] on the device; active_rows: the same flags on the host. A failed
  // capture is reported naming the knob that avoids it (agent.sampling.decode_graphs).
  PolicyOutput step(const torch::Tensor& tokens, const torch::Tensor& active,
                    std::span<const std::uint8_t> active_rows);
  // step() in two halves, for a caller that enqueues the step before it knows on the host which
  // rows go on: enqueue() runs (or replays) the step over the span the rows had before it, and
  // advance() then counts the rows it lengthened. Every enqueue() is followed by its advance()
  // before the next enqueue(); step() is the two together.
  PolicyOutput enqueue(const torch::Tensor& tokens, const torch::Tensor& active);
  void advance(std::span<const std::uint8_t> active_rows);
  [[nodiscard]] int graphs() const { return graphs_ ? graphs_->captured() : 0; }
  [[nodiscard]] double capture_seconds() const {
    return graphs_ ? graphs_->capture_seconds() : 0.0;
  }

 private:
  PolicyNetworkImpl& network_;
  KvCache& cache_;
  std::unique_ptr<DecodeGraphs> graphs_;
  std::vector<std::int64_t> lengths_;  // each row's filled slots (with graphs)
  std::int64_t longest_ = 0;
};

// A step's draws replayed from one CUDA graph (SamplingConfig::draw_graphs): the sampling of the
// step's logits under the uploaded masks and uniforms, and the next decode step's inputs, are a
// dozen small kernels a step (the mask applied, softmax, cumulative sum, the draw, its
// log-probability, the stacked read-back, which rows go on); issued one by one they cost the host
// about as long as a small network's decode step (docs/agents.md, "Throughput"). `draw` computes
// them from the step's logits and values and the rows still writing (`state`, bool [rows]) and
// returns its outputs with the new state last. The graph reads the logits and values from
// tensors it owns (copied in before each replay: the decode graphs' outputs differ by span
// bucket) and the masks and uniforms from the tensors `draw` was given (StepTransfers' device
// buffers, the same at every step), and writes the new state into `state`. The first run
// captures (after one uncaptured run of `draw`, its outputs dropped: what the kernels initialise
// lazily happens outside the capture), then replays. Without `graph` (or on a device without CUDA
// graphs) every run calls `draw` as it is. The same kernels in the same order either way: the
// same draws.
class DrawGraph {
 public:
  using Draw = std::function<std::vector<torch::Tensor>(
      const torch::Tensor& logits, const torch::Tensor& values, const torch::Tensor& state)>;
  DrawGraph(Draw draw, torch::Tensor state, bool graph);
  ~DrawGraph();
  DrawGraph(const DrawGraph&) = delete;
  DrawGraph& operator=(const DrawGraph&) = delete;

  // One step's draws: `draw`'s outputs but the last (the graph's own tensors where replayed: read
  // them before the next run), then the state after the step. A failed capture is reported naming
  // the knob that avoids it (agent.sampling.draw_graphs).
  std::vector<torch::Tensor> run(const torch::Tensor& logits, const torch::Tensor& values);
  // Whether the runs replay a graph (false until the first run, and where none is used).
  [[nodiscard]] bool replayed() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The transfers of one overlapped generation (rows x vocab masks): on a CUDA device (in a build
// with LibTorch's CUDA headers) page-locked host buffers, uploads that do not block the host and a
// read-back it waits for through an event; elsewhere (the CPU) the host buffers are the tensors the
// step reads, and every call completes at once. Each buffer is rewritten by the host only after
// it has waited for the read-back that follows the buffer's last upload on the stream.
class StepTransfers {
 public:
  StepTransfers(const torch::Device& device, std::int64_t rows, std::int64_t vocab);
  ~StepTransfers();
  StepTransfers(const StepTransfers&) = delete;
  StepTransfers& operator=(const StepTransfers&) = delete;

  // The host's halves: masks [rows x vocab] of 0 / 1 bytes, uniforms [rows].
  [[nodiscard]] std::span<std::uint8_t> mask_bytes();
  [[nodiscard]] std::span<double> uniforms();
  // The masks (bool [rows, vocab]) and, if asked, the uniforms (double [rows]) on the device, as
  // the host wrote them: enqueued on the current stream.
  [[nodiscard]] torch::Tensor upload_masks();
  [[nodiscard]] torch::Tensor upload_uniforms();
  // Enqueues the read-back of `stacked` (float [3, rows] on the device) ...
  void read_back(const torch::Tensor& stacked);
  // ... and waits for it: tokens, log-probabilities, values, `rows` floats each.
  [[nodiscard]] const float* draws();
  // Whether the uploads and read-back run without blocking the host (page-locked, an event).
  [[nodiscard]] bool asynchronous() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sparserl::agents
