// Gradient checkpointing of one decoder layer. LibTorch's C++ API has no torch.utils.checkpoint, so
// this is its reentrant form as a custom autograd Function: forward runs the layer without
// recording a graph and keeps only the layer's input (and the rotary tables and mask, which every
// layer shares); backward runs the layer again with grad mode on, from a detached copy of that
// input, and back-propagates the incoming gradient through it - the layer's parameters receive
// their gradients there, the input's gradient is returned to the graph. The random draws of the
// first run (LoRA dropout) are replayed: the generators' states are saved before it and restored
// around the recomputation, which leaves the outer stream where the backward pass found it.
#include <torch/torch.h>

#include <cstdint>

#include "sparserl/agents/torch/causal_lm.hpp"

namespace sparserl::agents {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The CPU generator's state, and that of the input's device when it is not the CPU.
struct GeneratorStates {
  torch::Tensor cpu, device;
  c10::Device where = torch::kCPU;

  static GeneratorStates capture(const c10::Device& device) {
    GeneratorStates s;
    s.where = device;
    s.cpu = at::detail::getDefaultCPUGenerator().get_state();
    if (!device.is_cpu()) s.device = at::globalContext().defaultGenerator(device).get_state();
    return s;
  }
  void restore() const {
    at::Generator host = at::detail::getDefaultCPUGenerator();
    host.set_state(cpu);
    if (device.defined()) {
      at::Generator accelerator = at::globalContext().defaultGenerator(where);
      accelerator.set_state(device);
    }
  }
};

struct CheckpointedLayer : public torch::autograd::Function<CheckpointedLayer> {
  // The layer travels as its address: the saved-data map holds IValues, and the layer outlives
  // the backward pass (it belongs to the policy that produced the loss).
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& cos, const torch::Tensor& sin,
                               const torch::Tensor& mask, std::int64_t layer_address) {
    const GeneratorStates states = GeneratorStates::capture(x.device());
    ctx->saved_data["layer"] = layer_address;
    ctx->saved_data["cpu_state"] = states.cpu;
    if (states.device.defined()) ctx->saved_data["device_state"] = states.device;
    ctx->save_for_backward({x, cos, sin, mask});
    auto* layer = reinterpret_cast<DecoderLayerImpl*>(layer_address);
    const LayerInputs in(cos, sin, mask);
    return {layer->forward(x, in)};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    auto* layer = reinterpret_cast<DecoderLayerImpl*>(ctx->saved_data["layer"].toInt());
    GeneratorStates replay;
    replay.where = saved[0].device();
    replay.cpu = ctx->saved_data["cpu_state"].toTensor();
    if (ctx->saved_data.find("device_state") != ctx->saved_data.end()) {
      replay.device = ctx->saved_data["device_state"].toTensor();
    }
    const GeneratorStates outer = GeneratorStates::capture(replay.where);
    replay.restore();
    const torch::Tensor x = saved[0].detach().requires_grad_(true);
    torch::Tensor out;
    {
      torch::AutoGradMode grad(true);
      const LayerInputs in(saved[1], saved[2], saved[3]);
      out = layer->forward(x, in);
    }
    outer.restore();
    torch::autograd::backward({out}, {grad_outputs[0]});
    return {x.grad(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor checkpointed_layer(DecoderLayerImpl& layer, const torch::Tensor& x,
                                 const LayerInputs& in) {
  // An input that needs no gradient (frozen embeddings under LoRA, text prompt) would make the
  // Function's output need none either, and the adapters inside would never see a gradient.
  const torch::Tensor input = x.requires_grad() ? x : x.detach().requires_grad_(true);
  return CheckpointedLayer::apply(input, in.cos, in.sin, in.mask,
                                  reinterpret_cast<std::int64_t>(&layer))[0];
}

}  // namespace sparserl::agents
