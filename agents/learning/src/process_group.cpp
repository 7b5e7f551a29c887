// The ProcessGroup of distributed.hpp over LibTorch's c10d, and the one file that includes c10d:
// its API moved between LibTorch 1.13 (Debian's, CPU: ProcessGroupGloo is a c10d::ProcessGroup) and
// 2.x (PyTorch's on the GPU hosts: the collectives live in a c10d::Backend, ProcessGroupGloo.hpp is
// guarded by USE_C10D_GLOO), so the version checks stay here. Rank 0 serves a TCPStore that the
// backend rendezvouses through and that carries the text this file broadcasts and gathers.
//
// Built and run: the gloo path on LibTorch 1.13.1 (CPU tests). Compile-checked only by reading
// PyTorch 2.x's headers, never built here: every line under TORCH_VERSION_MAJOR >= 2 and the NCCL
// path (SPARSERL_HAVE_NCCL), which needs a CUDA LibTorch.
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "sparserl/agents/distributed.hpp"
#include "sparserl/agents/torch/collectives.hpp"

#if !defined(SPARSERL_HAVE_GLOO) && !defined(SPARSERL_HAVE_NCCL)
#define SPARSERL_HAVE_C10D 0
#else
#define SPARSERL_HAVE_C10D 1
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif
#if defined(SPARSERL_HAVE_GLOO)
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO  // 2.x guards the whole header with it
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if defined(SPARSERL_HAVE_NCCL)
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL
#endif
#include <c10/cuda/CUDAFunctions.h>

#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace sparserl::agents {

#if SPARSERL_HAVE_C10D
#if TORCH_VERSION_MAJOR >= 2
using Collectives = c10d::Backend;  // 2.x: a process group's backend runs the collectives
#else
using Collectives = c10d::ProcessGroup;  // 1.13: the process group is the backend
#endif
#endif

struct ProcessGroup::Impl {
  World world;
  CollectiveBackend backend = CollectiveBackend::gloo;
  torch::Device device{torch::kCPU};  // where collective tensors must live
#if SPARSERL_HAVE_C10D
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<Collectives> collectives;
#endif
  std::uint64_t sequence = 0;  // numbers the store keys of broadcast() and gather()
};

namespace {

#if SPARSERL_HAVE_C10D
std::vector<std::uint8_t> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }
std::string text_of(const std::vector<std::uint8_t>& bytes) { return {bytes.begin(), bytes.end()}; }

bool loopback(const std::string& address) {
  return address.rfind("127.", 0) == 0 || address == "localhost" || address == "::1";
}

c10::intrusive_ptr<Collectives> make_collectives(const ProcessGroup::Impl& impl,
                                                 std::chrono::milliseconds timeout) {
  const World& w = impl.world;
  if (impl.backend == CollectiveBackend::nccl) {
#if defined(SPARSERL_HAVE_NCCL)
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(w.local_rank));
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(impl.store, w.rank, w.size, options);
#endif
  } else {
#if defined(SPARSERL_HAVE_GLOO)
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    // On one host the ranks meet on the loopback device; elsewhere GLOO_SOCKET_IFNAME names the
    // interface (as for torch.distributed), else gloo binds to the address the host name gives.
    if (const char* iface = std::getenv("GLOO_SOCKET_IFNAME"); iface != nullptr && *iface) {
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(iface));
    } else if (loopback(w.master_addr)) {
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    } else {
      options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    return c10::make_intrusive<c10d::ProcessGroupGloo>(impl.store, w.rank, w.size, options);
#endif
  }
  throw std::invalid_argument("this build has no " + std::string(to_string(impl.backend)) +
                              " backend");
}

void reduce(ProcessGroup::Impl& impl, torch::Tensor& tensor, c10d::ReduceOp op) {
  torch::Tensor t = tensor.device() == impl.device && tensor.is_contiguous()
                        ? tensor
                        : tensor.to(impl.device).contiguous();
  std::vector<at::Tensor> list{t};
  c10d::AllreduceOptions options;
  options.reduceOp = op;
  impl.collectives->allreduce(list, options)->wait();
  if (!t.is_same(tensor)) tensor.copy_(t);
}
#endif

[[noreturn, maybe_unused]] void no_c10d() {
  throw std::invalid_argument(
      "this build has no c10d backend (LibTorch "
      "without gloo headers and without NCCL): "
      "several processes cannot form a group");
}

std::vector<double> reduced(ProcessGroup::Impl& impl, std::vector<double> values, bool maximum) {
#if SPARSERL_HAVE_C10D
  if (values.empty()) return values;
  torch::Tensor t = torch::tensor(values, torch::kDouble).to(impl.device);
  reduce(impl, t, maximum ? c10d::ReduceOp::MAX : c10d::ReduceOp::SUM);
  const torch::Tensor cpu = t.to(torch::kCPU).contiguous();
  const double* data = cpu.data_ptr<double>();
  return {data, data + cpu.numel()};
#else
  (void)impl;
  (void)values;
  (void)maximum;
  no_c10d();
#endif
}

}  // namespace

std::vector<CollectiveBackend> available_backends() {
  std::vector<CollectiveBackend> out;
#if defined(SPARSERL_HAVE_GLOO)
  out.push_back(CollectiveBackend::gloo);
#endif
#if defined(SPARSERL_HAVE_NCCL)
  out.push_back(CollectiveBackend::nccl);
#endif
  return out;
}

CollectiveBackend choose_backend(std::string_view requested, const std::string& device,
                                 std::string_view option) {
  const std::vector<CollectiveBackend> have = available_backends();
  const auto has = [&](CollectiveBackend b) {
    return std::find(have.begin(), have.end(), b) != have.end();
  };
  const bool cuda = device.rfind("cuda", 0) == 0;
  std::optional<CollectiveBackend> backend;
  if (requested == "auto") {
    backend =
        cuda && has(CollectiveBackend::nccl) ? CollectiveBackend::nccl : CollectiveBackend::gloo;
  } else {
    backend = parse_collective_backend(requested);
    if (!backend) {
      throw std::invalid_argument(std::string(option) + " = '" + std::string(requested) +
                                  "': expected auto, gloo or nccl");
    }
  }
  if (!has(*backend)) {
    throw std::invalid_argument(std::string(option) + " = " + std::string(to_string(*backend)) +
                                ": this build has no " + std::string(to_string(*backend)) +
                                " backend (LibTorch " + TORCH_VERSION + ")");
  }
  if (*backend == CollectiveBackend::nccl && !cuda) {
    throw std::invalid_argument(std::string(option) + " = nccl: the ranks train on " + device +
                                ", and NCCL reduces CUDA tensors only (use gloo)");
  }
  return *backend;
}

std::string rank_device(const std::string& configured, const World& world, std::string_view key) {
  const std::string own = "cuda:" + std::to_string(world.local_rank);
  if (configured == "auto") return torch::cuda::is_available() ? own : "cpu";
  if (configured == "cuda") return own;
  if (configured.rfind("cuda:", 0) == 0 && world.distributed()) {
    throw std::invalid_argument(std::string(key) + " = " + configured +
                                ": with several ranks each trains on cuda:LOCAL_RANK; set auto "
                                "or cuda");
  }
  return configured;
}

ProcessGroup::ProcessGroup(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProcessGroup::~ProcessGroup() = default;

const World& ProcessGroup::world() const { return impl_->world; }
CollectiveBackend ProcessGroup::backend() const { return impl_->backend; }

std::shared_ptr<ProcessGroup> ProcessGroup::join(const World& world, CollectiveBackend backend,
                                                 std::chrono::seconds timeout) {
  for (const auto& [name, value] : multicast_off_environment()) {
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  auto impl = std::make_unique<Impl>();
  impl->world = world;
  impl->backend = backend;
  if (backend == CollectiveBackend::nccl) {
    impl->device = torch::Device(torch::kCUDA, static_cast<torch::DeviceIndex>(world.local_rank));
  }
#if SPARSERL_HAVE_C10D
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  const std::string where = world.master_addr + ":" + std::to_string(world.master_port);
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<std::uint16_t>(world.master_port);
    options.isServer = world.rank == 0;
    options.numWorkers = static_cast<std::size_t>(world.size);
    options.waitWorkers = true;
    options.timeout = ms;
    impl->store = c10::make_intrusive<c10d::TCPStore>(world.master_addr, options);
    impl->collectives = make_collectives(*impl, ms);
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    throw std::runtime_error("rank " + std::to_string(world.rank) + " of " +
                             std::to_string(world.size) + ": cannot form the " +
                             std::string(to_string(backend)) + " group through the store at " +
                             where + " (MASTER_ADDR:MASTER_PORT): " + e.what());
  }
  return std::shared_ptr<ProcessGroup>(new ProcessGroup(std::move(impl)));
#else
  (void)timeout;
  no_c10d();
#endif
}

void ProcessGroup::barrier() { (void)reduced(*impl_, {0.0}, false); }

std::vector<double> ProcessGroup::sum(std::vector<double> values) {
  return reduced(*impl_, std::move(values), false);
}

std::vector<double> ProcessGroup::max(std::vector<double> values) {
  return reduced(*impl_, std::move(values), true);
}

bool ProcessGroup::any(bool flag) { return reduced(*impl_, {flag ? 1.0 : 0.0}, true)[0] > 0; }

std::string ProcessGroup::broadcast(const std::string& text) {
#if SPARSERL_HAVE_C10D
  const std::string key = "sparserl/broadcast/" + std::to_string(++impl_->sequence);
  if (main()) {
    impl_->store->set(key, bytes_of(text));
    return text;
  }
  return text_of(impl_->store->get(key));  // waits for rank 0's set (the store's timeout)
#else
  (void)text;
  no_c10d();
#endif
}

std::vector<std::string> ProcessGroup::gather(const std::string& text) {
#if SPARSERL_HAVE_C10D
  const std::string prefix = "sparserl/gather/" + std::to_string(++impl_->sequence) + "/";
  if (!main()) {
    impl_->store->set(prefix + std::to_string(rank()), bytes_of(text));
    return {};
  }
  std::vector<std::string> out = {text};
  for (int r = 1; r < size(); ++r) {
    const std::string key = prefix + std::to_string(r);
    out.push_back(text_of(impl_->store->get(key)));
    impl_->store->deleteKey(key);
  }
  return out;
#else
  (void)text;
  no_c10d();
#endif
}

void all_reduce_sum(ProcessGroup& group, torch::Tensor& tensor) {
#if SPARSERL_HAVE_C10D
  reduce(group.impl(), tensor, c10d::ReduceOp::SUM);
#else
  (void)group;
  (void)tensor;
  no_c10d();
#endif
}

void broadcast_from_main(ProcessGroup& group, torch::Tensor& tensor) {
#if SPARSERL_HAVE_C10D
  ProcessGroup::Impl& impl = group.impl();
  torch::Tensor t = tensor.device() == impl.device && tensor.is_contiguous()
                        ? tensor
                        : tensor.to(impl.device).contiguous();
  std::vector<at::Tensor> list{t};
  c10d::BroadcastOptions options;
  options.rootRank = 0;
  impl.collectives->broadcast(list, options)->wait();
  if (!t.is_same(tensor)) tensor.copy_(t);
#else
  (void)group;
  (void)tensor;
  no_c10d();
#endif
}

}  // namespace sparserl::agents
