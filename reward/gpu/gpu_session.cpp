// One GPU evaluation, start to end (gpu_session.hpp): load the matrix, convert and upload its format,
// load the cubin, run and check on fresh inputs, time against cuSPARSE, check again. Each check after
// runs (Candidate::verify_memory) is one DeviceChecks::check() batch and one wait: the memory checks
// and the outputs' tallies together (phase `memory`), judged in the order the host's checks always
// gave them (phase `check`: the verdict only).
#include "gpu/gpu_session.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <sstream>
#include <thread>

#include "gpu/cuda_errors.hpp"
#include "gpu/gpu_runner.hpp"
#include "sparserl/datasets/random.hpp"
#include "sparserl/datasets/text.hpp"

namespace sparserl::reward::gpu {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double pos = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = static_cast<std::size_t>(std::ceil(pos));
  return values[lo] + (values[hi] - values[lo]) * (pos - static_cast<double>(lo));
}

// Seeded random x in [-1, 1], rounded to the dtype: `bytes` (n elements of the dtype) receives the
// dtype's representation.
void random_input(std::uint64_t seed, std::uint64_t stream, std::size_t n, DType dtype,
                  std::span<std::uint8_t> bytes) {
  datasets::Rng rng(seed, stream);
  for (std::size_t i = 0; i < n; ++i) {
    const double v = rng.uniform_pm1();
    if (dtype == DType::f32) {
      const auto f = static_cast<float>(v);
      std::memcpy(bytes.data() + i * 4, &f, 4);
    } else {
      std::memcpy(bytes.data() + i * 8, &v, 8);
    }
  }
}

// Raised inside evaluate() when the candidate's run fails: unwinds to the one place that fills the
// result.
// "12.34": a median in us as baseline_paths spells it.
std::string format_us(double us) { return datasets::fixed(us, 2); }

// One repetition of the timed stage: the candidate's or cuSPARSE's, on checked input `input`;
// warm-ups are not timed.
struct TimedRun {
  bool candidate;
  int input;
  bool timed;
};

struct CandidateFailure {
  ErrorKind error;
  std::string message;
  bool sticky = false;
  bool evict_format = false;  // the resident format's arrays or guards were changed: drop them
};

HungKernelHandler& hung_kernel_handler() {
  static HungKernelHandler handler;
  return handler;
}

// Waits for the candidate's work on `stream` as cudaStreamSynchronize would, but for at most
// `limit_ms` (GpuRequest::wait_deadline_ms; 0: no limit). A kernel still running then is taken as
// hung, seconds after it began instead of at the pool's deadline on the whole request: `r` as a
// timeout goes to the hung-kernel handler, which answers and ends the process (gpu_runner.hpp). It
// must not return here: unwinding would free the candidate's buffers, and cudaFree waits for the
// kernel. Without a handler the timeout is thrown (sticky), and the unwinding waits.
void wait_for_candidate(cudaStream_t stream, std::uint32_t limit_ms, const EvalResult& r) {
  const auto start = Clock::now();
  for (int polls = 0;; ++polls) {
    // Without a limit one blocking wait (it never answers cudaErrorNotReady).
    const cudaError_t e = limit_ms == 0 ? cudaStreamSynchronize(stream) : cudaStreamQuery(stream);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) {
      throw CandidateFailure{classify(e), "running the program: " + describe(e), is_sticky(e)};
    }
    if (Clock::now() - start > std::chrono::milliseconds(limit_ms)) {
      const std::string message = "running the program: its kernels were still running after " +
                                  std::to_string(limit_ms) +
                                  " ms, the GPU worker's limit on a wait for this task (from its earlier "
                                  "answers); the worker is replaced";
      if (const HungKernelHandler& handler = hung_kernel_handler()) {
        EvalResult hung = r;
        hung.error = ErrorKind::timeout;
        hung.message = message;
        hung.correct = false;
        handler(hung);
      }
      throw CandidateFailure{ErrorKind::timeout, message, true};
    }
    if (polls > 64) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

// The regions and guard zones of `buffers` for DeviceChecks::inspect().
void add_regions(const std::vector<GuardedBuffer>& buffers, std::vector<DeviceChecks::Region>& regions) {
  for (const GuardedBuffer& b : buffers) regions.push_back({b.data(), b.bytes()});
}
void add_guards(const std::vector<GuardedBuffer>& buffers, std::vector<DeviceChecks::Guards>& guards) {
  for (const GuardedBuffer& b : buffers) guards.push_back({b.guard_before(), b.guard_after(), GuardedBuffer::kGuardBytes});
}

// Takes the digests of freshly uploaded `buffers` as their expected contents.
void record_digests(std::vector<GuardedBuffer>& buffers, DeviceChecks& checks, cudaStream_t stream) {
  std::vector<DeviceChecks::Region> regions;
  add_regions(buffers, regions);
  std::vector<Digest> digests;
  std::vector<bool> intact;
  checks.inspect(regions, {}, stream, digests, intact);
  for (std::size_t i = 0; i < buffers.size(); ++i) buffers[i].set_expected_digest(digests[i]);
}

// Whether `buffers` still hold their recorded contents and their guards are intact.
bool unchanged(const std::vector<GuardedBuffer>& buffers, DeviceChecks& checks, cudaStream_t stream) {
  std::vector<DeviceChecks::Region> regions;
  std::vector<DeviceChecks::Guards> guards;
  add_regions(buffers, regions);
  add_guards(buffers, guards);
  std::vector<Digest> digests;
  std::vector<bool> intact;
  checks.inspect(regions, guards, stream, digests, intact);
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    if (digests[i] != buffers[i].expected_digest() || !intact[i]) return false;
  }
  return true;
}

}  // namespace

struct GpuSession::Prepared {
  std::string key;
  std::shared_ptr<const datasets::SparseMatrix> source;
  datasets::SparseMatrix rounded;
  std::vector<GuardedBuffer> matrix_args;
  double conversion_ms = 0;
  [[nodiscard]] std::size_t device_bytes() const {
    std::size_t bytes = 0;
    for (const GuardedBuffer& b : matrix_args) bytes += b.bytes();
    return bytes;
  }
};

// The matrix in CSR with values in the dtype, from which the device recomputes the fp64 reference
// (the values widen exactly to the rounded matrix's), one per (matrix, dtype), with the digests
// of its arrays taken at upload.
struct GpuSession::ReferenceCsr {
  std::string key;
  std::vector<GuardedBuffer> arrays;  // row_ptr, col_idx, val
  std::int64_t rows = 0, cols = 0, nnz = 0;
  // (Re)uploads `a` (rounded to `dtype`) and records the digests.
  void upload(const datasets::SparseMatrix& a, DType dtype, DeviceChecks& checks, cudaStream_t stream);
};

struct GpuSession::Baseline {
  std::string key;
  std::unique_ptr<CusparseBaseline> cusparse;
  int chosen = -1;
  std::size_t launches = 0;  // kernels one run of the chosen path launches
  std::string paths;  // every path's median (or why it cannot win), TimingFigures::baseline_paths
  [[nodiscard]] std::size_t device_bytes() const { return cusparse ? cusparse->device_bytes() : 0; }
};

void set_hung_kernel_handler(HungKernelHandler handler) { hung_kernel_handler() = std::move(handler); }

GpuSession::GpuSession(int device, const GpuCacheLimits& limits)
    : device_(device), limits_(limits) {
  // NVRTC compiles the device checks while the context, CUPTI and the buffers are set up (a fresh
  // worker's first request pays for both; the future waits for the compile if anything throws).
  std::future<std::string> checks_cubin =
      std::async(std::launch::async, [device] { return DeviceChecks::compile_kernels(device); });
  check_cuda(cudaSetDevice(device_), "cudaSetDevice");
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, device_), "cudaGetDeviceProperties");
  device_name_ = prop.name;
  l2_bytes_ = static_cast<std::size_t>(prop.l2CacheSize);
  resident_budget_bytes_ = limits_.resident_bytes(prop.totalGlobalMem);
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  flush_bytes_ = std::max<std::size_t>(2 * l2_bytes_, std::size_t{8} << 20);
  check_cuda(cudaMalloc(&flush_buffer_, flush_bytes_), "cudaMalloc (L2 flush buffer)");
  activity_ = std::make_unique<KernelActivity>();
  char bus[32] = {};
  std::string lane = "device" + std::to_string(device_);
  if (cudaDeviceGetPCIBusId(bus, sizeof(bus), device_) == cudaSuccess) {
    pci_bus_id_ = bus;
    lane = bus;
  }
  try {
    timing_lane_ = std::make_unique<TimingLaneLock>(timing_lane_path(lane));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
  }
  checks_ = std::make_unique<DeviceChecks>(checks_cubin.get());
}

GpuSession::~GpuSession() {
  baselines_.clear();
  prepared_.clear();
  reference_csr_.reset();
  checks_.reset();
  activity_.reset();
  if (flush_buffer_ != nullptr) cudaFree(flush_buffer_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

double GpuSession::copy_bandwidth_gbs() {
  if (copy_bandwidth_gbs_ > 0) return copy_bandwidth_gbs_;
  std::size_t free_bytes = 0, total = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  const std::size_t bytes = std::min<std::size_t>(std::size_t{1} << 30, free_bytes / 8);
  void* a = nullptr;
  void* b = nullptr;
  check_cuda(cudaMalloc(&a, bytes), "cudaMalloc (bandwidth)");
  check_cuda(cudaMalloc(&b, bytes), "cudaMalloc (bandwidth)");
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  check_cuda(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream_), "warm-up copy");
  constexpr int kCopies = 10;
  cudaEventRecord(start, stream_);
  for (int i = 0; i < kCopies; ++i) cudaMemcpyAsync(i % 2 ? a : b, i % 2 ? b : a, bytes, cudaMemcpyDeviceToDevice, stream_);
  cudaEventRecord(stop, stream_);
  check_cuda(cudaEventSynchronize(stop), "bandwidth copies");
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(a);
  cudaFree(b);
  copy_bandwidth_gbs_ = 2.0 * static_cast<double>(bytes) * kCopies / (ms * 1e-3) / 1e9;
  activity_->drain();
  return copy_bandwidth_gbs_;
}

datasets::DigestedMatrix GpuSession::load_matrix(const GpuRequest& request) {
  std::string key = request.data_dir;
  for (const auto& d : request.index_dirs) key += "\n" + d;
  if (!store_ || key != store_key_) {
    datasets::StoreOptions options;
    for (const auto& d : request.index_dirs) {
      if (std::filesystem::exists(d)) options.indexes.emplace_back(d);
    }
    // The matrices of the tasks in flight and met again, by count and SparseMatrix::resident_bytes
    // (GpuCacheLimits; 4 entries had a worker generate large matrices again within one update).
    options.cache_capacity = limits_.matrix_entries;
    options.cache_bytes = static_cast<std::size_t>(limits_.matrix_bytes);
    store_ = std::make_unique<datasets::MatrixStore>(request.data_dir, options);
    store_key_ = key;
  }
  return store_->load_digested(datasets::MatrixUri::parse(request.task.uri));
}

std::string GpuSession::prepared_key(const GpuRequest& request) {
  return request.matrix_digest + "|" + request.format.str() + "|" +
         std::string(datasets::to_string(request.task.dtype));
}

GpuSession::Prepared* GpuSession::resident_format(const GpuRequest& request) {
  const std::string key = prepared_key(request);
  Prepared* hit = prepared_.find(key);
  if (hit == nullptr) return nullptr;
  // A resident format is checked before each use (a fraction of a millisecond on the device): a
  // kernel that wrote into it while another format was being evaluated must not get the next
  // candidate on it blamed.
  if (unchanged(hit->matrix_args, *checks_, stream_)) return hit;
  std::fprintf(
      stderr, "sparserl-worker: the resident format %s changed since its upload; converted again\n",
      key.c_str());
  prepared_.erase(key);
  return nullptr;
}

GpuSession::Prepared& GpuSession::prepare(const GpuRequest& request, const datasets::SparseMatrix& matrix) {
  const std::string key = prepared_key(request);
  prepared_.erase(key);  // a request without a digest converts again: one entry a key
  const auto start = Clock::now();
  KernelArrays arrays = build_kernel_arrays(matrix, request.format, request.task.dtype);
  auto p = std::make_unique<Prepared>();
  p->key = key;
  p->rounded = std::move(arrays.rounded);
  for (const HostArray& a : arrays.matrix_args) {
    GuardedBuffer buffer(a.name, a.bytes.size());
    buffer.upload(a.bytes, stream_);
    p->matrix_args.push_back(std::move(buffer));
  }
  record_digests(p->matrix_args, *checks_, stream_);
  p->conversion_ms = ms_since(start);
  return prepared_.insert(std::move(p), resident_budget_bytes_);
}

void GpuSession::ReferenceCsr::upload(const datasets::SparseMatrix& a, DType dtype, DeviceChecks& checks,
                                      cudaStream_t stream) {
  rows = a.rows();
  cols = a.cols();
  nnz = a.nnz();
  const auto as_bytes = [](auto span) {
    return std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(span.data()), span.size_bytes());
  };
  std::vector<float> narrowed;
  std::span<const std::uint8_t> values = as_bytes(a.values());
  if (dtype == DType::f32) {
    narrowed.assign(a.values().begin(), a.values().end());  // exact: the values are rounded to f32
    values = as_bytes(std::span<const float>(narrowed));
  }
  const std::span<const std::uint8_t> parts[] = {as_bytes(a.row_ptr()), as_bytes(a.col_idx()), values};
  const char* names[] = {"reference row_ptr", "reference col_idx", "reference val"};
  if (arrays.empty()) {
    for (int i = 0; i < 3; ++i) arrays.emplace_back(names[i], parts[i].size());
  }
  for (int i = 0; i < 3; ++i) arrays[static_cast<std::size_t>(i)].upload(parts[i], stream);
  record_digests(arrays, checks, stream);
}

GpuSession::ReferenceCsr& GpuSession::reference_csr(const GpuRequest& request, const datasets::SparseMatrix& rounded) {
  const std::string key = request.task.uri + "|" + request.matrix_digest + "|" +
                          std::string(datasets::to_string(request.task.dtype));
  if (!reference_csr_ || reference_csr_->key != key) {
    reference_csr_.reset();  // its device memory first
    auto ref = std::make_unique<ReferenceCsr>();
    ref->key = key;
    ref->upload(rounded, request.task.dtype, *checks_, stream_);
    reference_csr_ = std::move(ref);
  }
  return *reference_csr_;
}

GpuSession::Baseline& GpuSession::baseline(const GpuRequest& request, const Prepared& prepared) {
  const int k = request.task.op == Op::spmm ? request.task.k : 1;
  const std::string key = baseline_key(request);
  if (Baseline* hit = baselines_.find(key)) return *hit;
  auto b = std::make_unique<Baseline>();
  b->key = key;
  b->cusparse = std::make_unique<CusparseBaseline>(prepared.rounded, request.task.op, request.task.dtype, k,
                                                   request.protocol.baseline, stream_);
  return baselines_.insert(std::move(b), resident_budget_bytes_);
}

// One evaluation's candidate on the device: its kernels, its operands (the checked inputs x, which
// the timed runs reuse, and y), the kernel parameters (one slot per ABI argument, in registry order:
// matrix arrays, x, y) and the steps that launch, guard and check it - on the device, through
// DeviceChecks: the inputs' digests against those taken at upload, the guard zones, and the output
// against the reference recomputed from the session's CSR copy of the matrix (itself digest-checked
// first). Failures are thrown as CandidateFailure and recorded in r.
struct GpuSession::Candidate {
  Candidate(const GpuRequest& req, const Prepared& prep, ReferenceCsr& reference, DeviceChecks& device_checks,
            HostStaging& staging, std::vector<cudaKernel_t> loaded, cudaStream_t on_stream, EvalResult& result);

  void use_input(int input) { slots[x_slot] = xs[input].data(); }
  void enqueue_all();  // launches every kernel on the stream, without waiting
  void launch_all();   // enqueue_all() and wait for the stream
  // The memory checks after runs and, in the same batch on the device and the same wait, the
  // tallies of `outputs` (rows x k in the dtype) against the reference on checked input `input`.
  // The verdicts in the order the host's checks always gave them: the inputs' digests, the guard
  // zones, then the CSR copy (repaired by uploading it again, and the tallies computed again from the
  // repaired copy: a tally from a copy whose digest failed is never used). Returns the tallies for
  // check_output() / checked(), in the order of `outputs`.
  std::vector<OutputTally> verify_memory(const char* when, int input, std::initializer_list<const void*> outputs);
  // Throws the output verdict of a checked() tally, if any, and records the check's figures.
  void check_output(const OutputTally& tally, const std::string& what);
  // The tally of `out` (rows x k in the dtype) against the reference on checked input `input`, on
  // its own (no memory check; the copy must not have been in a candidate's reach since its check).
  OutputTally tally(int input, const void* out);
  // compare()'s arguments for `out` on input `input`.
  DeviceChecks::Comparison comparison(int input, const void* out) const;

  const GpuRequest& request;
  const Prepared& prepared;
  const datasets::SparseMatrix& a;
  ReferenceCsr& csr;
  DeviceChecks& checks;
  HostStaging& input_staging;  // the session's page-locked memory for the inputs' upload
  std::vector<cudaKernel_t> kernels;
  cudaStream_t stream;
  EvalResult& r;
  const DType dtype;
  const int k;
  const std::size_t vbytes;
  const int inputs;
  const std::size_t x_elems;
  const std::size_t y_elems;
  std::vector<GuardedBuffer> xs;
  GuardedBuffer y;
  std::vector<void*> slots;
  std::size_t x_slot = 0;
  std::vector<void*> params;

 private:
  // The inputs x, uploaded before y is allocated (members are initialised in declaration order).
  std::vector<GuardedBuffer> upload_inputs();
};

GpuSession::Candidate::Candidate(const GpuRequest& req, const Prepared& prep, ReferenceCsr& reference,
                                 DeviceChecks& device_checks, HostStaging& staging,
                                 std::vector<cudaKernel_t> loaded, cudaStream_t on_stream, EvalResult& result)
    : request(req),
      prepared(prep),
      a(prep.rounded),
      csr(reference),
      checks(device_checks),
      input_staging(staging),
      kernels(std::move(loaded)),
      stream(on_stream),
      r(result),
      dtype(request.task.dtype),
      k(request.task.op == Op::spmm ? request.task.k : 1),
      vbytes(datasets::dtype_bytes(dtype)),
      inputs(std::max(1, request.protocol.random_inputs)),
      x_elems(static_cast<std::size_t>(a.cols()) * k),
      y_elems(static_cast<std::size_t>(a.rows()) * k),
      xs(upload_inputs()),
      y(k == 1 ? "y" : "Y", y_elems * vbytes) {
  for (const GuardedBuffer& b : prepared.matrix_args) slots.push_back(b.data());
  x_slot = slots.size();
  slots.push_back(xs[0].data());
  slots.push_back(y.data());
  params.resize(slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) params[i] = &slots[i];
}

std::vector<GuardedBuffer> GpuSession::Candidate::upload_inputs() {
  // Each input is its own random stream: generated side by side (the same values as one by one),
  // straight into page-locked memory that the uploads read at the bus's full speed.
  const std::size_t x_bytes = x_elems * vbytes;
  const std::span<std::uint8_t> host = input_staging.get(x_bytes * static_cast<std::size_t>(inputs));
  const auto input_bytes = [&](int i) { return host.subspan(x_bytes * static_cast<std::size_t>(i), x_bytes); };
  std::vector<std::thread> generators;
  for (int i = 0; i < inputs; ++i) {
    generators.emplace_back([&, i] {
      random_input(request.protocol.seed, static_cast<std::uint64_t>(i), x_elems, dtype, input_bytes(i));
    });
  }
  for (std::thread& t : generators) t.join();
  std::vector<GuardedBuffer> buffers;
  for (int i = 0; i < inputs; ++i) {
    buffers.emplace_back(k == 1 ? "x" : "X", x_bytes);
    buffers.back().upload(input_bytes(i), stream);
  }
  record_digests(buffers, checks, stream);
  return buffers;
}

void GpuSession::Candidate::enqueue_all() {
  checks.untrusted();  // whatever its kernels write, the checks after them run from a fresh module
  for (std::size_t l = 0; l < kernels.size(); ++l) {
    const ResolvedLaunch& launch = request.launches[l];
    cudaError_t e = cudaLaunchKernel(reinterpret_cast<const void*>(kernels[l]),
                                     dim3(static_cast<unsigned>(launch.grid)),
                                     dim3(static_cast<unsigned>(launch.block)), params.data(),
                                     static_cast<std::size_t>(launch.smem_bytes), stream);
    if (e != cudaSuccess) {
      throw CandidateFailure{classify(e) == ErrorKind::none ? ErrorKind::launch_error : classify(e),
                             "launch " + std::to_string(l + 1) + " (" + launch.kernel + ", grid " +
                                 std::to_string(launch.grid) + ", block " + std::to_string(launch.block) +
                                 "): " + describe(e),
                             is_sticky(e)};
    }
  }
}

void GpuSession::Candidate::launch_all() {
  enqueue_all();
  wait_for_candidate(stream, request.wait_deadline_ms, r);
}

namespace {

// A tally of the CSR copy that passed its digest check holds no out-of-range index: one that does is
// the evaluator's own failure.
const OutputTally& checked(const OutputTally& t) {
  if (t.bad_index > 0) {
    throw CudaFailure(cudaErrorUnknown, "the reference copy of the matrix holds out-of-range indices");
  }
  return t;
}

}  // namespace

std::vector<OutputTally> GpuSession::Candidate::verify_memory(const char* when, int input,
                                                              std::initializer_list<const void*> outputs) {
  // One batch on the device and one wait: the digests of the matrix arrays, the inputs x and the
  // reference's CSR copy, every guard zone, and the outputs' comparisons (gated on the copy's digests
  // on the device); then the verdicts in the order the host's checks always gave them.
  std::vector<DeviceChecks::Region> regions;
  std::vector<DeviceChecks::Guards> guards;
  add_regions(prepared.matrix_args, regions);
  add_regions(xs, regions);
  const std::size_t csr_at = regions.size();
  add_regions(csr.arrays, regions);
  add_guards(prepared.matrix_args, guards);
  add_guards(xs, guards);
  guards.push_back({y.guard_before(), y.guard_after(), GuardedBuffer::kGuardBytes});
  std::vector<DeviceChecks::Comparison> comparisons;
  for (const void* out : outputs) {
    comparisons.push_back(comparison(input, out));
    comparisons.back().gate_at = csr_at;
    for (std::size_t i = 0; i < 3; ++i) comparisons.back().gate_digests[i] = csr.arrays[i].expected_digest();
  }
  DeviceChecks::Findings found;
  checks.check(regions, guards, comparisons, stream, found);
  const std::vector<Digest>& digests = found.digests;
  const std::vector<bool>& intact = found.intact;
  const std::vector<GuardedBuffer>* groups[] = {&prepared.matrix_args, &xs};
  std::size_t at = 0;
  for (const std::vector<GuardedBuffer>* group : groups) {
    for (const GuardedBuffer& b : *group) {
      if (digests[at++] != b.expected_digest()) {
        throw CandidateFailure{ErrorKind::input_mutated,
                               std::string("the input array '") + b.name() + "' changed during the " + when, false,
                               group == &prepared.matrix_args};
      }
    }
  }
  std::size_t guard = 0;
  for (const std::vector<GuardedBuffer>* group : groups) {
    for (const GuardedBuffer& b : *group) {
      if (!intact[guard++]) {
        throw CandidateFailure{ErrorKind::illegal_address, std::string("the program wrote outside the array '") +
                                                               b.name() + "' during the " + when +
                                                               " (its guard zone changed)",
                               false, group == &prepared.matrix_args};
      }
    }
  }
  if (!intact[guard]) {
    throw CandidateFailure{ErrorKind::illegal_address, std::string("the program wrote outside the array '") +
                                                           y.name() + "' during the " + when +
                                                           " (its guard zone changed)", false};
  }
  // The CSR copy is the evaluator's, not an argument: a change there (a stray write the host-side
  // checks never looked for) is repaired before the reference is computed from it, and judged by
  // nothing else. The tallies of the batch were not computed (the gate); they are computed again
  // from the repaired copy, in one batch of their own.
  for (const GuardedBuffer& b : csr.arrays) {
    if (digests[at++] != b.expected_digest()) {
      std::fprintf(stderr, "sparserl-worker: the reference copy of the matrix changed during the %s; uploaded again\n",
                   when);
      csr.upload(a, dtype, checks, stream);
      for (DeviceChecks::Comparison& c : comparisons) c.gate_at.reset();  // the copy just uploaded
      DeviceChecks::Findings redone;
      checks.check({}, {}, comparisons, stream, redone);
      return std::move(redone.tallies);
    }
  }
  return std::move(found.tallies);
}

DeviceChecks::Comparison GpuSession::Candidate::comparison(int input, const void* out) const {
  const DeviceChecks::Csr view{csr.arrays[0].data(), csr.arrays[1].data(), csr.arrays[2].data(),
                               csr.rows,             csr.cols,             csr.nnz};
  return {view, xs[static_cast<std::size_t>(input)].data(), out, dtype, k, kDefaultToleranceFactor, std::nullopt, {}};
}

OutputTally GpuSession::Candidate::tally(int input, const void* out) {
  const DeviceChecks::Comparison c = comparison(input, out);
  return checked(checks.compare(c.csr, c.x, c.y, c.dtype, c.k, c.factor, stream));
}

void GpuSession::Candidate::check_output(const OutputTally& tally, const std::string& what) {
  const OutputVerdict v = output_verdict(checked(tally), y_elems);
  r.check.max_error_ratio = std::max(r.check.max_error_ratio, v.max_ratio);
  r.check.unchecked_outputs = std::max(r.check.unchecked_outputs, v.unchecked);
  if (v.error != ErrorKind::none) {
    r.check.bad_outputs = v.bad;
    r.check.first_bad_row = v.first_bad_row;
    throw CandidateFailure{v.error, what + ": " + v.detail, false};
  }
}

namespace {

// Loads the cubin into `library` and returns its kernels in launch order, each allowed the dynamic
// shared memory its launch asks for.
std::vector<cudaKernel_t> load_kernels(const GpuRequest& request, cudaLibrary_t& library) {
  cudaError_t err = cudaLibraryLoadData(&library, request.cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (err != cudaSuccess) {
    throw CandidateFailure{classify(err) == ErrorKind::none ? ErrorKind::launch_error : classify(err),
                           "loading the cubin: " + describe(err), is_sticky(err)};
  }
  std::vector<cudaKernel_t> kernels;
  for (const ResolvedLaunch& launch : request.launches) {
    cudaKernel_t kernel = nullptr;
    err = cudaLibraryGetKernel(&kernel, library, launch.kernel.c_str());
    if (err != cudaSuccess) {
      throw CandidateFailure{ErrorKind::launch_error, "kernel '" + launch.kernel + "': " + describe(err), false};
    }
    if (launch.smem_bytes > 48 * 1024) {
      err = cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(launch.smem_bytes));
      if (err != cudaSuccess) {
        throw CandidateFailure{ErrorKind::launch_error,
                               "kernel '" + launch.kernel + "' asks for " + std::to_string(launch.smem_bytes) +
                                   " bytes of shared memory: " + describe(err),
                               false};
      }
    }
    kernels.push_back(kernel);
  }
  return kernels;
}

// The timed stage's schedule: warm-up pairs, then the timed pairs in alternating order on inputs
// drawn from the checked ones in a seeded order (`last_input`: the last pair's).
std::vector<TimedRun> timing_schedule(const GpuProtocol& protocol, int inputs, int& last_input) {
  datasets::Rng order(protocol.seed, 0x7157ULL);
  std::vector<TimedRun> plan;
  for (int w = 0; w < protocol.warmup_runs; ++w) {
    plan.push_back({true, w % inputs, false});
    plan.push_back({false, w % inputs, false});
  }
  for (int rep = 0; rep < protocol.timed_runs; ++rep) {
    const int input = static_cast<int>(order.below(static_cast<std::uint64_t>(inputs)));
    plan.push_back({rep % 2 == 0, input, true});
    plan.push_back({rep % 2 != 0, input, true});
    last_input = input;
  }
  return plan;
}

// The figures of the timed runs: percentiles of both sides, throughput and bandwidth against the
// compulsory traffic (matrix, x and y once) and the device's copy bandwidth.
void fill_timing(TimingFigures& t, const std::vector<double>& cand_us, const std::vector<double>& base_us,
                 const datasets::SparseMatrix& a, int k, std::size_t vbytes, std::size_t x_elems,
                 std::size_t y_elems, double bw) {
  t.median_us = percentile(cand_us, 0.5);
  t.p10_us = percentile(cand_us, 0.1);
  t.p90_us = percentile(cand_us, 0.9);
  t.baseline_median_us = percentile(base_us, 0.5);
  t.baseline_p10_us = percentile(base_us, 0.1);
  t.baseline_p90_us = percentile(base_us, 0.9);
  const double flops = 2.0 * static_cast<double>(a.nnz()) * k;
  const double compulsory = static_cast<double>(a.nnz()) * static_cast<double>(vbytes + 4) +
                            static_cast<double>(a.rows() + 1) * 4 +
                            static_cast<double>(x_elems + y_elems) * static_cast<double>(vbytes);
  if (t.median_us > 0) {
    t.speedup = t.baseline_median_us / t.median_us;
    t.gflops = flops / (t.median_us * 1e3);
    t.bandwidth_gbs = compulsory / (t.median_us * 1e3);
    t.bandwidth_fraction = t.bandwidth_gbs / bw;
  }
  if (t.baseline_median_us > 0) {
    t.baseline_gflops = flops / (t.baseline_median_us * 1e3);
    t.baseline_bandwidth_fraction = compulsory / (t.baseline_median_us * 1e3) / bw;
  }
}

}  // namespace

EvalResult GpuSession::evaluate(const GpuRequest& request, bool& must_exit) {
  must_exit = false;
  EvalResult r;
  r.gpu_available = true;
  r.device = device_name_;
  r.device_pci_bus_id = pci_bus_id_;
  r.compiled = true;
  r.stage = Stage::compile;
  r.matrix_digest = request.matrix_digest;
  const auto wall_start = Clock::now();
  auto phase_start = wall_start;
  // Closes the phase that began at the previous call (or at the start); a phase closed again (the
  // run, memory and check steps of each input) adds to its first entry.
  auto phase = [&](const char* name) {
    const auto now = Clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - phase_start).count();
    const std::string full = std::string("gpu.") + name;
    const auto seen = std::find_if(r.phases.begin(), r.phases.end(), [&](const PhaseTime& p) { return p.name == full; });
    if (seen != r.phases.end()) seen->ms += ms;
    else r.phases.push_back({full, ms});
    phase_start = now;
  };
  cudaLibrary_t library = nullptr;
  std::string prepared_key;  // the resident format in use, dropped if a candidate changed it

  auto fail = [&](ErrorKind error, std::string message) {
    r.error = error;
    r.message = std::move(message);
    r.correct = false;
  };

  try {
    // --- matrix and format ----------------------------------------------------------------------
    // A format resident for the request's digest needs no matrix (converted from a copy whose
    // digest matched, its arrays checked on the device since): a task met again skips the store,
    // whose misses generated matrices again (0.2-4.6 s at large sizes). Otherwise the matrix is
    // loaded and its digest (computed once per loaded matrix) compared with the request's.
    Prepared* prepared = request.matrix_digest.empty() ? nullptr : resident_format(request);
    if (prepared == nullptr) {
      std::shared_ptr<const datasets::SparseMatrix> matrix;
      try {
        const datasets::DigestedMatrix loaded = load_matrix(request);
        matrix = loaded.matrix;
        if (!request.matrix_digest.empty() && loaded.digest != request.matrix_digest) {
          fail(ErrorKind::internal_error,
               "matrix " + request.task.uri + " has digest " + loaded.digest +
                   " in the GPU worker, the evaluator expected " + request.matrix_digest);
          return r;
        }
      } catch (const std::exception& e) {
        fail(ErrorKind::internal_error,
             std::string("the GPU worker cannot load the matrix: ") + e.what());
        return r;
      }
      phase("load");
      try {
        prepared = &prepare(request, *matrix);
      } catch (const datasets::FormatTooLarge& e) {
        fail(ErrorKind::resource_limit,
             std::string("format ") + request.format.str() + ": " + e.what());
        return r;
      }
    }
    r.conversion_ms = prepared->conversion_ms;
    prepared_key = prepared->key;
    ReferenceCsr& csr = reference_csr(request, prepared->rounded);
    phase("prepare");

    // --- module, kernels and operands -----------------------------------------------------------
    std::vector<cudaKernel_t> kernels = load_kernels(request, library);
    phase("module");
    Candidate candidate(request, *prepared, csr, *checks_, input_staging_, std::move(kernels), stream_, r);
    phase("inputs");

    // --- run and check -------------------------------------------------------------------------
    activity_->drain();
    const std::uint64_t check_launches = checks_->launches();
    for (int i = 0; i < candidate.inputs; ++i) {
      candidate.use_input(i);
      candidate.y.fill_nan(stream_);
      r.stage = Stage::run;  // before the launch: a fault or hang it throws is the run's verdict
      candidate.launch_all();
      phase("run");
      // Inputs and guards first: a kernel that wrote its inputs is judged for that, not for the wrong
      // output it may have caused. The output's tally comes from the same batch and wait (phase
      // "memory") and is judged only after the memory verdicts.
      const std::vector<OutputTally> tallies = candidate.verify_memory("checked runs", i, {candidate.y.data()});
      phase("memory");
      candidate.check_output(tallies.front(),
                             "random input " + std::to_string(i + 1) + " of " + std::to_string(candidate.inputs));
      r.check.inputs = i + 1;
      phase("check");
    }
    r.stage = Stage::check;
    r.correct = true;
    // The records hold the device checks' kernels too, launched after each run.
    const std::size_t all_records = activity_->drain().size();
    const auto ours = static_cast<std::size_t>(checks_->launches() - check_launches);
    const std::size_t records = all_records > ours ? all_records - ours : 0;
    r.timing.launches_per_run = static_cast<int>(records / static_cast<std::size_t>(candidate.inputs));

    if (!request.protocol.time) {
      r.wall_ms = ms_since(wall_start);
      cudaLibraryUnload(library);
      return r;
    }
    time_against_baseline(candidate, *prepared, phase);
  } catch (const CandidateFailure& f) {
    fail(f.error, f.message);
    must_exit = f.sticky;
    if (f.evict_format) prepared_.erase(prepared_key);
  } catch (const CudaFailure& e) {
    // The worker's own CUDA call failed: usually a candidate's fault surfacing late (the context is
    // poisoned), else the device is in trouble. Either way this process is done.
    const ErrorKind kind = classify(e.error());
    fail(kind == ErrorKind::none || kind == ErrorKind::crash ? ErrorKind::internal_error : kind, e.what());
    must_exit = true;
  } catch (const std::exception& e) {
    fail(ErrorKind::internal_error, std::string("GPU worker: ") + e.what());
    must_exit = true;
  }
  if (library != nullptr && !must_exit) cudaLibraryUnload(library);
  r.wall_ms = ms_since(wall_start);
  return r;
}

void GpuSession::time_against_baseline(Candidate& candidate, Prepared& prepared,
                                       const std::function<void(const char*)>& phase) {
  const GpuRequest& request = candidate.request;
  EvalResult& r = candidate.r;
  const datasets::SparseMatrix& a = candidate.a;
  const int inputs = candidate.inputs;
  Baseline& base = baseline(request, prepared);
  CusparseBaseline& cusparse = *base.cusparse;
  phase("baseline_setup");
  const TimingLaneTurn lane(timing_lane_.get());
  phase("lane_wait");
  auto flush = [&](cudaStream_t s) {
    if (request.protocol.flush_l2) {
      check_cuda(cudaMemsetAsync(flush_buffer_, static_cast<int>(++flush_value_ & 0xFFU), flush_bytes_, s),
                 "L2 flush");
    }
  };
  auto kernel_time_us = [&](std::size_t& launches) {
    const std::vector<KernelRecord> records = activity_->drain();
    launches = records.size();
    double sum = 0;
    for (const KernelRecord& rec : records) sum += rec.duration_us();
    return sum;
  };
  // One repetition of either side put on the stream without waiting: x chosen (the baseline copies
  // it into its own buffer), the L2 flushed, y filled with NaN, the kernels launched.
  auto enqueue_candidate = [&](int input) {
    candidate.use_input(input);
    flush(stream_);
    candidate.y.fill_nan(stream_);
    candidate.enqueue_all();
  };
  auto enqueue_baseline = [&](std::size_t alg, int input) {
    check_cuda(cudaMemcpyAsync(cusparse.x(), candidate.xs[input].data(), candidate.x_elems * candidate.vbytes,
                               cudaMemcpyDeviceToDevice, stream_),
               "baseline x");
    flush(stream_);
    check_cuda(cudaMemsetAsync(cusparse.y(), 0xFF, cusparse.y_bytes(), stream_), "baseline y");
    cusparse.enqueue(alg);
  };
  auto time_baseline = [&](std::size_t alg, int input, std::size_t& launches) {
    activity_->drain();
    enqueue_baseline(alg, input);
    check_cuda(cudaStreamSynchronize(stream_), "cuSPARSE run");
    return kernel_time_us(launches);
  };

  const bool hinted = base.chosen < 0 && choose_baseline_path(candidate, base, time_baseline);
  phase(hinted ? "baseline_hint" : "baseline_choice");
  const auto alg = static_cast<std::size_t>(base.chosen);

  int last_input = 0;
  const std::vector<TimedRun> plan = timing_schedule(request.protocol, inputs, last_input);

  // The whole schedule goes on the stream at once and is waited for once; each run's time is the
  // sum of its kernels' CUPTI durations, the records taken in stream order, candidate runs holding
  // one kernel per launch and baseline runs as many as the chosen path launched when it was
  // chosen. Should the records not add up (a path whose kernel count varies), the schedule is run
  // again one repetition at a time, each waited for and drained on its own.
  const auto cand_launches = static_cast<std::size_t>(r.timing.launches_per_run);  // seen in the checked runs
  const std::size_t base_launches = base.launches;
  std::vector<double> cand_us, base_us;
  activity_->drain();
  for (const TimedRun& run : plan) {
    if (run.candidate) enqueue_candidate(run.input);
    else enqueue_baseline(alg, run.input);
  }
  wait_for_candidate(stream_, request.wait_deadline_ms, r);
  std::vector<KernelRecord> records = activity_->drain();
  std::size_t expected = 0;
  for (const TimedRun& run : plan) expected += run.candidate ? cand_launches : base_launches;
  if (records.size() == expected && cand_launches > 0 && base_launches > 0) {
    std::sort(records.begin(), records.end(),
              [](const KernelRecord& x, const KernelRecord& y) { return x.start_ns < y.start_ns; });
    std::size_t next = 0;
    for (const TimedRun& run : plan) {
      const std::size_t n = run.candidate ? cand_launches : base_launches;
      double sum = 0;
      for (std::size_t i = 0; i < n; ++i) sum += records[next + i].duration_us();
      next += n;
      if (run.timed) (run.candidate ? cand_us : base_us).push_back(sum);
    }
  } else {
    phase("timed_batch_mismatch");
    std::size_t launches = 0;
    for (const TimedRun& run : plan) {
      activity_->drain();
      if (run.candidate) {
        enqueue_candidate(run.input);
        wait_for_candidate(stream_, request.wait_deadline_ms, r);
      } else {
        enqueue_baseline(alg, run.input);
        check_cuda(cudaStreamSynchronize(stream_), "cuSPARSE run");
      }
      const double us = kernel_time_us(launches);
      if (run.timed) (run.candidate ? cand_us : base_us).push_back(us);
    }
  }
  r.stage = Stage::time;
  phase("timed");
  // The memory checks, the candidate's last output and cuSPARSE's in one batch and one wait.
  const std::vector<OutputTally> tallies =
      candidate.verify_memory("timed runs", last_input, {candidate.y.data(), cusparse.y()});
  candidate.check_output(tallies[0], "the output of the last timed run");
  {
    // cuSPARSE's last output must match the same reference: a candidate that reached into the
    // baseline's memory (to slow it down or copy from it) voids the comparison.
    const OutputVerdict v = output_verdict(checked(tallies[1]), candidate.y_elems);
    if (v.error != ErrorKind::none) {
      throw CandidateFailure{ErrorKind::internal_error,
                             "cuSPARSE's output disagrees with the reference after the timed runs (" + v.detail +
                                 "): the baseline's memory was disturbed; this worker is replaced",
                             true};
    }
  }
  if (activity_->dropped() > 0) {
    throw CudaFailure(cudaErrorUnknown, "CUPTI dropped kernel records: the timing is void");
  }

  TimingFigures& t = r.timing;
  t.repetitions = request.protocol.timed_runs;
  t.launches_per_run = static_cast<int>(cand_launches);
  t.baseline_algorithm = cusparse.algorithms()[alg];
  t.baseline_paths = base.paths;
  fill_timing(t, cand_us, base_us, a, candidate.k, candidate.vbytes, candidate.x_elems, candidate.y_elems,
              copy_bandwidth_gbs());
  r.timed = true;
  phase("final_check");
}

// The fastest path for this (matrix, op, dtype, k, baseline mode), measured once per worker with the
// same protocol and kept with the baseline. A path whose output fails the check against the
// reference (or that cuSPARSE refuses to run) cannot win: the denominator is always a right answer.
// With GpuRequest::baseline_hint (an earlier worker's choice) that path alone is run - its warm-ups,
// its launches counted, its output checked - and taken with that worker's figures of every path
// (returns true); a hint naming no path here, or whose output fails, is ignored.
bool GpuSession::choose_baseline_path(
    Candidate& candidate, Baseline& base,
    const std::function<double(std::size_t, int, std::size_t&)>& time_baseline) {
  const GpuRequest& request = candidate.request;
  const int inputs = candidate.inputs;
  CusparseBaseline& cusparse = *base.cusparse;
  std::size_t launches = 0;
  const std::vector<std::string>& names = cusparse.algorithms();
  if (const auto hint = std::find(names.begin(), names.end(), request.baseline_hint);
      !request.baseline_hint.empty() && hint != names.end()) {
    const auto alg = static_cast<std::size_t>(hint - names.begin());
    const int runs = std::max(1, request.protocol.warmup_runs);
    bool ran = true;
    try {
      for (int w = 0; w < runs; ++w) time_baseline(alg, w % inputs, launches);
    } catch (const CudaFailure&) {
      throw;
    } catch (const std::runtime_error&) {
      activity_->drain();
      ran = false;
    }
    if (ran && output_verdict(candidate.tally((runs - 1) % inputs, cusparse.y()), candidate.y_elems).error ==
                   ErrorKind::none) {
      base.chosen = static_cast<int>(alg);
      base.launches = launches;
      base.paths = request.baseline_hint_paths;
      return true;
    }
  }
  const int reps = std::max(5, request.protocol.timed_runs / 4);
  const int check_input = (reps - 1) % inputs;
  double best_us = std::numeric_limits<double>::infinity();
  std::ostringstream paths;
  for (std::size_t alg = 0; alg < cusparse.algorithms().size(); ++alg) {
    paths << (alg == 0 ? "" : " ") << cusparse.algorithms()[alg] << "=";
    std::vector<double> t;
    try {
      for (int w = 0; w < request.protocol.warmup_runs; ++w) time_baseline(alg, w % inputs, launches);
      for (int i = 0; i < reps; ++i) t.push_back(time_baseline(alg, i % inputs, launches));
    } catch (const CudaFailure&) {
      throw;
    } catch (const std::runtime_error&) {
      activity_->drain();
      paths << "failed";
      continue;
    }
    if (output_verdict(candidate.tally(check_input, cusparse.y()), candidate.y_elems).error != ErrorKind::none) {
      paths << "wrong";
      continue;
    }
    const double median = percentile(t, 0.5);
    paths << format_us(median);
    if (median < best_us) {
      best_us = median;
      base.chosen = static_cast<int>(alg);
      base.launches = launches;
    }
  }
  base.paths = paths.str();
  if (base.chosen < 0) {
    throw std::runtime_error("no cuSPARSE path computed this matrix correctly (" + base.paths + ")");
  }
  return false;
}

}  // namespace sparserl::reward::gpu
