// CUPTI activity buffers for kernel records (kernel_activity.hpp). CUPTI hands out completed buffers
// through C callbacks on its own thread; they are parsed under a mutex into a pending list that
// drain() takes.
#include "gpu/kernel_activity.hpp"

#include <cupti.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>

namespace sparserl::reward::gpu {
namespace {

// The newest kernel record layout of the toolkit we build with (CUDA 13: version 10, CUDA 12: 9).
#if CUPTI_API_VERSION >= 130000
using KernelActivityRecord = CUpti_ActivityKernel10;
#else
using KernelActivityRecord = CUpti_ActivityKernel9;
#endif

constexpr std::size_t kBufferBytes = 8u << 20;
constexpr std::size_t kAlignment = 8;

std::mutex g_mutex;
std::vector<KernelRecord> g_pending;
std::uint64_t g_dropped = 0;

void check_cupti(CUptiResult result, const char* where) {
  if (result != CUPTI_SUCCESS) {
    const char* text = nullptr;
    cuptiGetResultString(result, &text);
    throw std::runtime_error(std::string("CUPTI ") + where + ": " + (text ? text : "unknown error"));
  }
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(kAlignment, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext context, std::uint32_t stream_id, std::uint8_t* buffer,
                               std::size_t /*size*/, std::size_t valid_size) {
  std::vector<KernelRecord> parsed;
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
        record->kind != CUPTI_ACTIVITY_KIND_KERNEL) {
      continue;
    }
    const auto* k = reinterpret_cast<const KernelActivityRecord*>(record);
    parsed.push_back({k->start, k->end, k->streamId, k->correlationId, k->name ? k->name : ""});
  }
  std::size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped);
  std::free(buffer);
  std::lock_guard lock(g_mutex);
  g_dropped += dropped;
  g_pending.insert(g_pending.end(), std::make_move_iterator(parsed.begin()),
                   std::make_move_iterator(parsed.end()));
}

}  // namespace

KernelActivity::KernelActivity() {
  check_cupti(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed),
              "cuptiActivityRegisterCallbacks");
  check_cupti(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "enable kernel activity");
}

KernelActivity::~KernelActivity() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
}

std::vector<KernelRecord> KernelActivity::drain() {
  check_cupti(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  std::lock_guard lock(g_mutex);
  std::vector<KernelRecord> out;
  out.swap(g_pending);
  return out;
}

std::uint64_t KernelActivity::dropped() const {
  std::lock_guard lock(g_mutex);
  return g_dropped;
}

}  // namespace sparserl::reward::gpu
