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
#pragma once

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

}  // namespace sparserl::reward::gpu
