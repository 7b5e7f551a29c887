// DecodeGraphs (torch/decode_graphs.hpp): decode steps captured as CUDA graphs, one per span
// bucket, and replayed; GenerationDecoder, generate()'s decode steps through them or not; and
// StepTransfers, the page-locked buffers and event of generate()'s overlapped steps. The CUDA part
// compiles only where LibTorch was built with CUDA (SPARSERL_HAVE_TORCH_CUDA, set by
// agents/learning/CMakeLists.txt for this file alone); elsewhere available() is false, nothing of
// the graphs is reached, and StepTransfers' copies block.
#include "sparserl/agents/torch/decode_graphs.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#if SPARSERL_HAVE_TORCH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>
#endif

namespace sparserl::agents {

#if SPARSERL_HAVE_TORCH_CUDA
namespace {

using GraphPool = decltype(at::cuda::graph_pool_handle());

// What `record` enqueues on the current stream (not the default one, which cannot be captured),
// recorded as a CUDA graph allocating from `pool` ({0, 0}: a pool of its own); nothing runs. An
// error of `record` is the one reported, the capture ended first.
template <typename Record>
std::unique_ptr<at::cuda::CUDAGraph> capture_graph(GraphPool pool, Record&& record) {
  auto graph = std::make_unique<at::cuda::CUDAGraph>();
#if TORCH_VERSION_MAJOR >= 2
  // Thread-local: another thread's CUDA calls (none are expected) do not break the capture.
  graph->capture_begin(pool, cudaStreamCaptureModeThreadLocal);
#else
  graph->capture_begin(pool);
#endif
  try {
    record();
  } catch (...) {
    try {
      graph->capture_end();
    } catch (...) {  // the recorded step's own error is the one to report
    }
    throw;
  }
  graph->capture_end();
  return graph;
}

}  // namespace
#endif

struct DecodeGraphs::Impl {
  Impl(PolicyNetworkImpl& n, KvCache& c) : network(n), cache(c) {}
  PolicyNetworkImpl& network;
  KvCache& cache;
  std::int64_t max_span = 0;
  torch::Tensor tokens, active;  // the graphs' inputs, copied in before each replay
  int captured = 0;
  double capture_seconds = 0.0;
#if SPARSERL_HAVE_TORCH_CUDA
  struct Captured {
    std::unique_ptr<at::cuda::CUDAGraph> graph;
    PolicyOutput outputs;
  };
  std::map<std::int64_t, Captured> graphs;  // by span
  GraphPool pool = at::cuda::graph_pool_handle();
  // The stream every capture (and the warm-up step before the first) runs on: not the default
  // one, which cannot be captured.
  std::optional<c10::cuda::CUDAStream> stream;

  // The step's kernels recorded for `span` (the cache's fixed_span already set); nothing runs.
  Captured capture() {
    Captured c;
    c.graph = capture_graph(pool, [&] { c.outputs = network.decode_step(tokens, active, cache); });
    return c;
  }
#endif
};

bool DecodeGraphs::available(const torch::Device& device) {
#if SPARSERL_HAVE_TORCH_CUDA
  return device.is_cuda();
#else
  (void)device;
  return false;
#endif
}

DecodeGraphs::DecodeGraphs(PolicyNetworkImpl& network, KvCache& cache, std::int64_t max_span)
    : impl_(std::make_unique<Impl>(network, cache)) {
  if (cache.empty() || !available(cache.key_valid.device())) {
    throw std::logic_error("DecodeGraphs: needs a filled key-value cache on a CUDA device" +
                           std::string(available(torch::Device(torch::kCUDA))
                                           ? ""
                                           : " (this build's LibTorch has no CUDA)"));
  }
  if (max_span < 1 || max_span > cache.capacity()) {
    throw std::logic_error("DecodeGraphs: a span of " + std::to_string(max_span) + " slots in a " +
                           std::to_string(cache.capacity()) + "-slot cache");
  }
  impl_->max_span = max_span;
  const auto options = torch::TensorOptions().device(cache.key_valid.device());
  impl_->tokens = torch::zeros({cache.batch()}, options.dtype(torch::kLong));
  impl_->active = torch::zeros({cache.batch()}, options.dtype(torch::kBool));
}

DecodeGraphs::~DecodeGraphs() {
  if (impl_) impl_->cache.fixed_span = 0;
}

int DecodeGraphs::captured() const { return impl_->captured; }
double DecodeGraphs::capture_seconds() const { return impl_->capture_seconds; }

PolicyOutput DecodeGraphs::step(const torch::Tensor& tokens, const torch::Tensor& active,
                                std::int64_t longest) {
  Impl& m = *impl_;
  if (longest < 0 || longest + 1 > m.max_span) {
    throw std::logic_error("DecodeGraphs: a step at slot " + std::to_string(longest) +
                           " past the " + std::to_string(m.max_span) + " slots it was made for");
  }
  const std::int64_t span = std::min(m.max_span, (longest / kSpanBucket + 1) * kSpanBucket);
  m.tokens.copy_(tokens);
  m.active.copy_(active);
#if SPARSERL_HAVE_TORCH_CUDA
  auto found = m.graphs.find(span);
  if (found == m.graphs.end()) {
    const auto start = std::chrono::steady_clock::now();
    m.cache.fixed_span = span;
    PolicyOutput warm;
    torch::cuda::synchronize();  // the inputs above, queued on the current stream
    if (!m.stream) m.stream = c10::cuda::getStreamFromPool(false, m.tokens.device().index());
    Impl::Captured captured;
    {
      const c10::cuda::CUDAStreamGuard on_stream(*m.stream);
      // The first step runs uncaptured first, on the capture stream: what a stream's first
      // kernels initialise lazily (cuBLAS' workspace for it) happens outside a capture. Its
      // outputs are this step's.
      if (m.captured == 0) warm = m.network.decode_step(m.tokens, m.active, m.cache);
      captured = m.capture();
    }
    m.stream->synchronize();
    found = m.graphs.emplace(span, std::move(captured)).first;
    ++m.captured;
    m.capture_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (warm.logits.defined()) return warm;
  }
  found->second.graph->replay();
  return found->second.outputs;
#else
  (void)span;
  throw std::logic_error("DecodeGraphs: this build's LibTorch has no CUDA");
#endif
}

GenerationDecoder::GenerationDecoder(PolicyNetworkImpl& network, KvCache& cache,
                                     std::int64_t max_steps, bool graphs)
    : network_(network), cache_(cache) {
  if (!graphs || cache.empty() || !DecodeGraphs::available(cache.key_valid.device())) return;
  const torch::Tensor read = cache.lengths.to(torch::kCPU, torch::kLong).contiguous();
  lengths_.assign(read.data_ptr<std::int64_t>(), read.data_ptr<std::int64_t>() + read.numel());
  longest_ = lengths_.empty() ? 0 : *std::max_element(lengths_.begin(), lengths_.end());
  // The last of max_steps steps writes slot longest + max_steps - 1.
  cache.reserve(longest_ + max_steps);
  graphs_ = std::make_unique<DecodeGraphs>(network, cache, longest_ + max_steps);
}

PolicyOutput GenerationDecoder::step(const torch::Tensor& tokens, const torch::Tensor& active,
                                     std::span<const std::uint8_t> active_rows) {
  PolicyOutput out = enqueue(tokens, active);
  advance(active_rows);
  return out;
}

PolicyOutput GenerationDecoder::enqueue(const torch::Tensor& tokens, const torch::Tensor& active) {
  if (!graphs_) return network_.decode_step(tokens, active, cache_);
  try {
    return graphs_->step(tokens, active, longest_);
  } catch (const c10::Error& e) {
    throw std::runtime_error(
        std::string("a decode step captured as a CUDA graph failed (agent.sampling."
                    "decode_graphs = false issues its kernels one by one instead): ") +
        e.what_without_backtrace());
  }
}

void GenerationDecoder::advance(std::span<const std::uint8_t> active_rows) {
  if (!graphs_) return;
  // As KvCache::close_step counts on the device: one more slot for each row going on.
  for (std::size_t r = 0; r < lengths_.size() && r < active_rows.size(); ++r) {
    if (active_rows[r] != 0) longest_ = std::max(longest_, ++lengths_[r]);
  }
}

struct DrawGraph::Impl {
  Draw draw;
  torch::Tensor state;
  bool graph = false;  // asked for and possible
  torch::Tensor logits, values;         // the graph's inputs, copied in before each replay
  std::vector<torch::Tensor> outputs;   // the graph's outputs, the state after them
#if SPARSERL_HAVE_TORCH_CUDA
  std::unique_ptr<at::cuda::CUDAGraph> captured;

  void capture() {
    torch::cuda::synchronize();  // the inputs and the uploads, queued on the current stream
    const c10::cuda::CUDAStream stream =
        c10::cuda::getStreamFromPool(false, state.device().index());
    {
      const c10::cuda::CUDAStreamGuard on_stream(stream);
      (void)draw(logits, values, state);  // uncaptured, outputs dropped: lazy initialisation
      captured = capture_graph({0, 0}, [&] {
        std::vector<torch::Tensor> out = draw(logits, values, state);
        if (out.empty()) throw std::logic_error("DrawGraph: the draw returned no state");
        state.copy_(out.back());
        out.pop_back();
        outputs = std::move(out);
      });
    }
    stream.synchronize();
  }
#endif
};

DrawGraph::DrawGraph(Draw draw, torch::Tensor state, bool graph)
    : impl_(std::make_unique<Impl>()) {
  impl_->draw = std::move(draw);
  impl_->state = std::move(state);
  impl_->graph = graph && DecodeGraphs::available(impl_->state.device());
}

DrawGraph::~DrawGraph() = default;

bool DrawGraph::replayed() const {
#if SPARSERL_HAVE_TORCH_CUDA
  return impl_->captured != nullptr;
#else
  return false;
#endif
}

std::vector<torch::Tensor> DrawGraph::run(const torch::Tensor& logits,
                                          const torch::Tensor& values) {
  Impl& m = *impl_;
  if (!m.graph) {
    std::vector<torch::Tensor> out = m.draw(logits, values, m.state);
    if (out.empty()) throw std::logic_error("DrawGraph: the draw returned no state");
    m.state = out.back();
    return out;
  }
#if SPARSERL_HAVE_TORCH_CUDA
  if (!m.logits.defined()) {
    m.logits = torch::empty_like(logits);
    m.values = torch::empty_like(values);
  }
  m.logits.copy_(logits);
  m.values.copy_(values);
  try {
    if (!m.captured) m.capture();
    m.captured->replay();
  } catch (const c10::Error& e) {
    throw std::runtime_error(
        std::string("a step's draws captured as a CUDA graph failed (agent.sampling."
                    "draw_graphs = false issues their kernels one by one instead): ") +
        e.what_without_backtrace());
  }
  std::vector<torch::Tensor> out = m.outputs;
  out.push_back(m.state);
  return out;
#else
  throw std::logic_error("DrawGraph: this build's LibTorch has no CUDA");
#endif
}

struct StepTransfers::Impl {
  torch::Tensor masks, uniforms, draws;         // the host's buffers
  torch::Tensor device_masks, device_uniforms;  // their copies on the device
  bool asynchronous = false;
  torch::Device device = torch::kCPU;
#if SPARSERL_HAVE_TORCH_CUDA
  std::optional<at::cuda::CUDAEvent> drawn;  // recorded after the read-back
#endif
};

StepTransfers::StepTransfers(const torch::Device& device, std::int64_t rows, std::int64_t vocab)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.device = device;
#if SPARSERL_HAVE_TORCH_CUDA
  m.asynchronous = device.is_cuda();
#endif
  const auto host = torch::TensorOptions().device(torch::kCPU).pinned_memory(m.asynchronous);
  m.masks = torch::zeros({rows, vocab}, host.dtype(torch::kBool));
  m.uniforms = torch::zeros({rows}, host.dtype(torch::kDouble));
  m.draws = torch::zeros({3, rows}, host.dtype(torch::kFloat));
  if (device.is_cpu()) {
    m.device_masks = m.masks, m.device_uniforms = m.uniforms;
  } else {
    const auto on = torch::TensorOptions().device(device);
    m.device_masks = torch::zeros({rows, vocab}, on.dtype(torch::kBool));
    m.device_uniforms = torch::zeros({rows}, on.dtype(torch::kDouble));
  }
#if SPARSERL_HAVE_TORCH_CUDA
  if (m.asynchronous) m.drawn.emplace();
#endif
}

StepTransfers::~StepTransfers() = default;

std::span<std::uint8_t> StepTransfers::mask_bytes() {
  // bool is one byte holding 0 or 1: the bytes the masks' fill() writes.
  static_assert(sizeof(bool) == 1);
  return {reinterpret_cast<std::uint8_t*>(impl_->masks.data_ptr<bool>()),
          static_cast<std::size_t>(impl_->masks.numel())};
}

std::span<double> StepTransfers::uniforms() {
  return {impl_->uniforms.data_ptr<double>(), static_cast<std::size_t>(impl_->uniforms.numel())};
}

torch::Tensor StepTransfers::upload_masks() {
  Impl& m = *impl_;
  if (!m.device_masks.is_same(m.masks)) m.device_masks.copy_(m.masks, m.asynchronous);
  return m.device_masks;
}

torch::Tensor StepTransfers::upload_uniforms() {
  Impl& m = *impl_;
  if (!m.device_uniforms.is_same(m.uniforms)) m.device_uniforms.copy_(m.uniforms, m.asynchronous);
  return m.device_uniforms;
}

void StepTransfers::read_back(const torch::Tensor& stacked) {
  Impl& m = *impl_;
  m.draws.copy_(stacked, m.asynchronous);
#if SPARSERL_HAVE_TORCH_CUDA
  // On the stream the copy was queued on: the device's current one.
  if (m.asynchronous) m.drawn->record(c10::cuda::getCurrentCUDAStream(m.device.index()));
#endif
}

const float* StepTransfers::draws() {
  Impl& m = *impl_;
#if SPARSERL_HAVE_TORCH_CUDA
  if (m.asynchronous) m.drawn->synchronize();
#endif
  return m.draws.data_ptr<float>();
}

bool StepTransfers::asynchronous() const { return impl_->asynchronous; }

}  // namespace sparserl::agents
