// What a cubin itself says about its kernels, read from its ELF image: the kernel entry points (global
// FUNC symbols), each one's register count and stack frame (the EIATTR_REGCOUNT and EIATTR_FRAME_SIZE
// records of .nv.info), its static shared memory (the size of .nv.shared.<kernel>), and the module's
// global device memory (the .nv.global* sections). The compiler reads kernel figures from here rather
// than from ptxas' verbose log, which NVRTC does not return on every installation (seen on the GPU
// hosts: an empty log for a successful compile); spills appear only in that log.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sparserl::reward {

struct CubinKernel {
  std::string name;
  int registers = 0;
  int static_smem_bytes = 0;
  int frame_bytes = 0;  // per-thread stack frame (local memory)
};

struct CubinInfo {
  std::vector<CubinKernel> kernels;  // in symbol-table order
  std::int64_t global_bytes = 0;     // module-scope device memory (__device__ variables)
};

// nullopt with `error` set when the bytes are not a well-formed 64-bit little-endian ELF image.
std::optional<CubinInfo> read_cubin_info(std::string_view elf, std::string* error = nullptr);

}  // namespace sparserl::reward
