// The GPU role's entry points: what `sparserl-worker --role gpu` calls. The worker owns the process
// (protocol, sandbox, exit after a poisoned context); this interface owns the device. Everything
// here runs only inside a GPU worker process: nothing else in the project links or calls the CUDA
// runtime, driver, cuSPARSE or CUPTI.
//
// Contract for implementations:
//  - probe_gpus() never throws and never leaves the process unable to answer: without a driver or a
//    device it returns an empty device list and says why in GpuInfo::error. The worker calls it
//    once, at start, for its Hello; the pool learns the GPU count from it. The pool runs each GPU
//    worker with CUDA_VISIBLE_DEVICES naming one device, so a serving worker always uses device 0.
//  - run_gpu_request() turns one GpuRequest into an EvalResult (stage, error kind, message and the
//    figures it measured) and never throws: a failure of the program is a result. It sets must_exit
//    when a CUDA error may have poisoned the context (illegal address, launch failure, ...): the
//    worker then sends the result and exits, and the pool starts a fresh one.
//  - Without a device every request answers ErrorKind::no_gpu.
//  - A candidate's kernels still running past the request's wait limit (GpuRequest::
//    wait_deadline_ms) are a hang: run_gpu_request() does not return then. It hands the timeout
//    result to the hung-kernel handler, which must answer and end the process at once - nothing may
//    free device memory or unload a module first, since each of those waits for the hung kernel.
#pragma once

#include <functional>

#include "sparserl/reward/eval_result.hpp"
#include "sparserl/reward/protocol.hpp"

namespace sparserl::reward::gpu {

// The devices this process can use (cudaGetDeviceCount, cudaGetDeviceProperties), with the runtime
// and driver versions.
GpuInfo probe_gpus();

struct GpuRunOutcome {
  EvalResult result;
  bool must_exit = false;  // the CUDA context may be poisoned: exit after answering
};

// Runs, checks and (when request.protocol.time) times one compiled program on one task.
GpuRunOutcome run_gpu_request(const GpuRequest& request);

// What the process's GPU session keeps between requests (the worker's --gpu-caches), set before
// the first request; the defaults otherwise.
void set_cache_limits(const GpuCacheLimits& limits);
const GpuCacheLimits& cache_limits();

// What a hang does (see above): called with the timeout result; never returns. Without one set, a
// hang is thrown as a sticky failure like any other, and the unwinding then waits for the kernel
// (until the pool's deadline kills the worker).
using HungKernelHandler = std::function<void(const EvalResult&)>;
void set_hung_kernel_handler(HungKernelHandler handler);

}  // namespace sparserl::reward::gpu
