// Classification of CUDA runtime errors for the GPU role (cuda_errors.hpp).
#include "gpu/cuda_errors.hpp"

namespace sparserl::reward::gpu {

std::string describe(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
}

ErrorKind classify(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return ErrorKind::none;
    case cudaErrorInvalidConfiguration:
    case cudaErrorLaunchOutOfResources:
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDeviceFunction:
    case cudaErrorInvalidKernelImage:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorSharedObjectInitFailed:
    case cudaErrorInvalidPtx:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorSymbolNotFound:
    case cudaErrorCooperativeLaunchTooLarge:
      return ErrorKind::launch_error;
    case cudaErrorIllegalAddress:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorIllegalInstruction:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchFailure:
      return ErrorKind::illegal_address;
    case cudaErrorLaunchTimeout:
      return ErrorKind::timeout;
    case cudaErrorMemoryAllocation:
      return ErrorKind::resource_limit;
    default:
      return ErrorKind::crash;
  }
}

bool is_sticky(cudaError_t error) {
  // A bad address or instruction and a timed-out kernel poison the context, as do these two.
  const ErrorKind kind = classify(error);
  return kind == ErrorKind::illegal_address || kind == ErrorKind::timeout ||
         error == cudaErrorECCUncorrectable || error == cudaErrorUnknown;
}

}  // namespace sparserl::reward::gpu
