// The GPU memory in use on this process's GPU (gpu_memory.hpp), read from nvidia-smi.
#include "sparserl/reward/gpu_memory.hpp"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace sparserl::reward {

long gpu_memory_used_mib() {
  std::string device = "0";
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"); visible != nullptr && *visible) {
    device = std::string(visible).substr(0, std::string(visible).find(','));
  }
  for (char c : device) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '-') return -1;
  }
  const std::string command = "nvidia-smi --id=" + device +
                              " --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null";
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return -1;
  long mib = -1;
  if (std::fscanf(p, "%ld", &mib) != 1) mib = -1;
  pclose(p);
  return mib;
}

}  // namespace sparserl::reward
