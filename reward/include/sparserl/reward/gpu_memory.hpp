// The GPU memory in use on this process's GPU, as nvidia-smi reports it: what the soak tests watch
// for growth and what the sampling benchmark's training steps report as their footprint.
#pragma once

namespace sparserl::reward {

// MiB in use on the first GPU this process sees (CUDA_VISIBLE_DEVICES' first entry, an index or a
// UUID; nvidia-smi numbers devices without regard to it, so that entry is asked for), or -1 when
// nvidia-smi cannot be run or read.
long gpu_memory_used_mib();

}  // namespace sparserl::reward
