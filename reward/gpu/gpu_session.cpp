// One GPU evaluation, start to end (gpu_session.hpp): load the matrix, convert and upload its format,
// load the cubin, run and check on fresh inputs, time against cuSPARSE, check again.
#include "gpu/gpu_session.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <numeric>
#include <sstream>
#include <thread>

#include "gpu/cuda_errors.hpp"
#include "sparserl/datasets/random.hpp"
#include "sparserl/datasets/text.hpp"

namespace sparserl::reward::gpu {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// How many chunks parallel_rows splits n rows into: up to hardware_concurrency, at least 4096 rows
// each.
std::int64_t row_chunks(std::int64_t n) {
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(std::thread::hardware_concurrency()), 1,
                                  std::max<std::int64_t>(1, n / 4096));
}

// Runs body(chunk, begin, end) over `chunks` consecutive ranges of [0, n), one thread each.
template <typename Body>
void parallel_rows(std::int64_t n, std::int64_t chunks, Body body) {
  if (chunks <= 1) {
    body(0, 0, n);
    return;
  }
  std::vector<std::thread> pool;
  for (std::int64_t t = 0; t < chunks; ++t) {
    pool.emplace_back([&, t] { body(t, n * t / chunks, n * (t + 1) / chunks); });
  }
  for (auto& th : pool) th.join();
}

// y = A X and y_abs = |A| |X| in fp64 (X cols x k, row-major).
void reference(const datasets::SparseMatrix& a, const std::vector<double>& x, int k, std::vector<double>& y,
               std::vector<double>& y_abs) {
  y.assign(static_cast<std::size_t>(a.rows()) * k, 0.0);
  y_abs.assign(y.size(), 0.0);
  const auto row_ptr = a.row_ptr();
  const auto col_idx = a.col_idx();
  const auto val = a.values();
  parallel_rows(a.rows(), row_chunks(a.rows()), [&](std::int64_t, std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      double* yi = &y[static_cast<std::size_t>(i) * k];
      double* ai = &y_abs[static_cast<std::size_t>(i) * k];
      for (std::int64_t p = row_ptr[i]; p < row_ptr[i + 1]; ++p) {
        const double v = val[p];
        const double* xj = &x[static_cast<std::size_t>(col_idx[p]) * k];
        for (int c = 0; c < k; ++c) {
          yi[c] += v * xj[c];
          ai[c] += std::abs(v * xj[c]);
        }
      }
    }
  });
}

struct Verdict {
  ErrorKind error = ErrorKind::none;
  std::int64_t bad = 0;
  std::int64_t first_bad_row = -1;
  double max_ratio = 0;
  std::int64_t unchecked = 0;  // elements outside the dtype's range (not judged)
  std::string detail;
};

// Compares the kernel's output (host bytes in the dtype) with the reference. Rows whose exact result
// cannot be represented in the dtype (an entry, or sum_j |a_ij x_j|, beyond its largest finite
// value: real matrices such as SuiteSparse's `temp` hold entries above FLT_MAX) have no right f32
// answer, so their elements are counted as unchecked instead of judged. Rows are compared in
// parallel chunks whose tallies merge in row order, so the verdict and its detail (the first bad
// row, the worst element: the first of the largest ratio) are those of one pass in row order.
Verdict compare(std::span<const std::uint8_t> out_bytes, DType dtype, const datasets::SparseMatrix& a, int k,
                const std::vector<double>& ref, const std::vector<double>& ref_abs, double factor) {
  Verdict v;
  const double eps = dtype == DType::f32 ? std::numeric_limits<float>::epsilon()
                                         : std::numeric_limits<double>::epsilon();
  const double largest = dtype == DType::f32 ? static_cast<double>(std::numeric_limits<float>::max())
                                             : std::numeric_limits<double>::max();
  const auto row_ptr = a.row_ptr();
  const auto values = a.values();
  struct Tally {
    std::int64_t unchecked = 0, unwritten = 0, first_unwritten = -1, wrong = 0, first_wrong = -1;
    double max_ratio = 0, worst_got = 0, worst_ref = 0;
  };
  const std::int64_t chunks = row_chunks(a.rows());
  std::vector<Tally> tallies(static_cast<std::size_t>(chunks));
  parallel_rows(a.rows(), chunks, [&](std::int64_t chunk, std::int64_t begin, std::int64_t end) {
    Tally& t = tallies[static_cast<std::size_t>(chunk)];
    for (std::int64_t i = begin; i < end; ++i) {
      const double scale = factor * eps * (std::sqrt(static_cast<double>(row_ptr[i + 1] - row_ptr[i])) + 2.0);
      bool row_representable = true;
      for (std::int64_t p = row_ptr[i]; p < row_ptr[i + 1]; ++p) {
        if (!(std::abs(values[p]) <= largest)) row_representable = false;
      }
      for (int c = 0; c < k; ++c) {
        const std::size_t e = static_cast<std::size_t>(i) * k + c;
        if (!row_representable || !(ref_abs[e] <= largest)) {
          ++t.unchecked;
          continue;
        }
        const double got = dtype == DType::f32
                               ? static_cast<double>(reinterpret_cast<const float*>(out_bytes.data())[e])
                               : reinterpret_cast<const double*>(out_bytes.data())[e];
        if (std::isnan(got)) {
          if (t.unwritten++ == 0) t.first_unwritten = i;
          continue;
        }
        const double diff = std::abs(got - ref[e]);
        const double tol = scale * ref_abs[e];
        const double ratio = diff == 0 ? 0 : (tol > 0 ? diff / tol : std::numeric_limits<double>::infinity());
        if (ratio > t.max_ratio) {
          t.max_ratio = ratio;
          t.worst_got = got;
          t.worst_ref = ref[e];
        }
        if (!(diff <= tol)) {
          if (t.wrong++ == 0) t.first_wrong = i;
        }
      }
    }
  });
  std::int64_t unwritten = 0, first_unwritten = -1, wrong = 0, first_wrong = -1;
  double worst_diff = 0, worst_ref = 0;
  for (const Tally& t : tallies) {  // in row order
    v.unchecked += t.unchecked;
    if (first_unwritten < 0) first_unwritten = t.first_unwritten;
    unwritten += t.unwritten;
    if (first_wrong < 0) first_wrong = t.first_wrong;
    wrong += t.wrong;
    if (t.max_ratio > v.max_ratio) {
      v.max_ratio = t.max_ratio;
      worst_diff = t.worst_got;
      worst_ref = t.worst_ref;
    }
  }
  std::ostringstream detail;
  if (unwritten > 0) {
    v.error = ErrorKind::unwritten_output;
    v.bad = unwritten;
    v.first_bad_row = first_unwritten;
    detail << unwritten << " of " << ref.size() << " output elements were never written (still NaN), first in row "
           << first_unwritten;
  } else if (wrong > 0) {
    v.error = ErrorKind::wrong_answer;
    v.bad = wrong;
    v.first_bad_row = first_wrong;
    detail.precision(9);
    detail << wrong << " of " << ref.size() << " output elements are outside the tolerance, first in row "
           << first_wrong << "; worst got " << worst_diff << " expected " << worst_ref << " (error "
           << v.max_ratio << "x the tolerance)";
  }
  v.detail = detail.str();
  return v;
}

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double pos = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = static_cast<std::size_t>(std::ceil(pos));
  return values[lo] + (values[hi] - values[lo]) * (pos - static_cast<double>(lo));
}

// Seeded random x in [-1, 1], rounded to the dtype; `bytes` holds the dtype's representation.
void random_input(std::uint64_t seed, std::uint64_t stream, std::size_t n, DType dtype, std::vector<double>& x,
                  std::vector<std::uint8_t>& bytes) {
  datasets::Rng rng(seed, stream);
  x.resize(n);
  bytes.resize(n * datasets::dtype_bytes(dtype));
  for (std::size_t i = 0; i < n; ++i) {
    double v = rng.uniform_pm1();
    if (dtype == DType::f32) {
      const auto f = static_cast<float>(v);
      v = f;
      std::memcpy(bytes.data() + i * 4, &f, 4);
    } else {
      std::memcpy(bytes.data() + i * 8, &v, 8);
    }
    x[i] = v;
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
};

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

struct GpuSession::Baseline {
  std::string key;
  std::unique_ptr<CusparseBaseline> cusparse;
  int chosen = -1;
  std::size_t launches = 0;  // kernels one run of the chosen path launches
  std::string paths;  // every path's median (or why it cannot win), TimingFigures::baseline_paths
  [[nodiscard]] std::size_t device_bytes() const { return cusparse ? cusparse->device_bytes() : 0; }
};

GpuSession::GpuSession(int device) : device_(device) {
  check_cuda(cudaSetDevice(device_), "cudaSetDevice");
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, device_), "cudaGetDeviceProperties");
  device_name_ = prop.name;
  l2_bytes_ = static_cast<std::size_t>(prop.l2CacheSize);
  resident_budget_bytes_ = static_cast<std::size_t>(kResidentFraction * static_cast<double>(prop.totalGlobalMem));
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
}

GpuSession::~GpuSession() {
  baselines_.clear();
  prepared_.clear();
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
    options.cache_capacity = 4;
    store_ = std::make_unique<datasets::MatrixStore>(request.data_dir, options);
    store_key_ = key;
  }
  return store_->load_digested(datasets::MatrixUri::parse(request.task.uri));
}

GpuSession::Prepared& GpuSession::prepare(const GpuRequest& request, const datasets::SparseMatrix& matrix) {
  const std::string key = request.matrix_digest + "|" + request.format.str() + "|" +
                          std::string(datasets::to_string(request.task.dtype));
  if (Prepared* hit = prepared_.find(key)) return *hit;
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
  p->conversion_ms = ms_since(start);
  return prepared_.insert(std::move(p), resident_budget_bytes_);
}

GpuSession::Baseline& GpuSession::baseline(const GpuRequest& request, const Prepared& prepared) {
  const int k = request.task.op == Op::spmm ? request.task.k : 1;
  const std::string key = request.matrix_digest + "|" + std::string(datasets::to_string(request.task.op)) + "|" +
                          std::string(datasets::to_string(request.task.dtype)) + "|" + std::to_string(k) + "|" +
                          std::string(to_string(request.protocol.baseline));
  if (Baseline* hit = baselines_.find(key)) return *hit;
  auto b = std::make_unique<Baseline>();
  b->key = key;
  b->cusparse = std::make_unique<CusparseBaseline>(prepared.rounded, request.task.op, request.task.dtype, k,
                                                   request.protocol.baseline, stream_);
  return baselines_.insert(std::move(b), resident_budget_bytes_);
}

// One evaluation's candidate on the device: its kernels, its operands (the checked inputs x, which
// the timed runs reuse, and y), the kernel parameters (one slot per ABI argument, in registry order:
// matrix arrays, x, y) and the steps that launch, guard and check it. Failures are thrown as
// CandidateFailure and recorded in r.
struct GpuSession::Candidate {
  // The fp64 reference of one input (y = A x and sum_j |a_ij x_j|), computed once per evaluation and
  // input while every input's fits kReferenceCacheBytes, else recomputed in one reused slot.
  struct Reference {
    int input = -1;
    std::vector<double> y, abs;
  };
  static constexpr std::size_t kReferenceCacheBytes = std::size_t{512} << 20;

  Candidate(const GpuRequest& req, const Prepared& prep, std::vector<cudaKernel_t> loaded,
            cudaStream_t on_stream, HostStaging& read_back, EvalResult& result);

  void use_input(int input) { slots[x_slot] = xs[input].data(); }
  void enqueue_all();  // launches every kernel on the stream, without waiting
  void launch_all();   // enqueue_all() and wait for the stream
  void verify_memory(const char* when);
  void check_output(int input, const std::string& what);
  const Reference& reference_of(int input);

  const GpuRequest& request;
  const Prepared& prepared;
  const datasets::SparseMatrix& a;
  std::vector<cudaKernel_t> kernels;
  cudaStream_t stream;
  EvalResult& r;
  const DType dtype;
  const int k;
  const std::size_t vbytes;
  const int inputs;
  const std::size_t x_elems;
  const std::size_t y_elems;
  std::vector<std::vector<double>> x_values;
  std::vector<GuardedBuffer> xs;
  GuardedBuffer y;
  std::vector<void*> slots;
  std::size_t x_slot = 0;
  std::vector<void*> params;
  std::vector<Reference> references;
  HostStaging& staging;  // the session's read-back memory

 private:
  // The inputs x, uploaded before y is allocated (members are initialised in declaration order).
  std::vector<GuardedBuffer> upload_inputs();
};

GpuSession::Candidate::Candidate(const GpuRequest& req, const Prepared& prep,
                                 std::vector<cudaKernel_t> loaded, cudaStream_t on_stream,
                                 HostStaging& read_back, EvalResult& result)
    : request(req),
      prepared(prep),
      a(prep.rounded),
      kernels(std::move(loaded)),
      stream(on_stream),
      r(result),
      dtype(request.task.dtype),
      k(request.task.op == Op::spmm ? request.task.k : 1),
      vbytes(datasets::dtype_bytes(dtype)),
      inputs(std::max(1, request.protocol.random_inputs)),
      x_elems(static_cast<std::size_t>(a.cols()) * k),
      y_elems(static_cast<std::size_t>(a.rows()) * k),
      x_values(inputs),
      xs(upload_inputs()),
      y(k == 1 ? "y" : "Y", y_elems * vbytes),
      references(y_elems * 2 * sizeof(double) * static_cast<std::size_t>(inputs) <= kReferenceCacheBytes
                     ? static_cast<std::size_t>(inputs)
                     : 1),
      staging(read_back) {
  for (const GuardedBuffer& b : prepared.matrix_args) slots.push_back(b.data());
  x_slot = slots.size();
  slots.push_back(xs[0].data());
  slots.push_back(y.data());
  params.resize(slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) params[i] = &slots[i];
}

std::vector<GuardedBuffer> GpuSession::Candidate::upload_inputs() {
  std::vector<GuardedBuffer> buffers;
  std::vector<std::uint8_t> bytes;
  for (int i = 0; i < inputs; ++i) {
    random_input(request.protocol.seed, static_cast<std::uint64_t>(i), x_elems, dtype, x_values[i], bytes);
    buffers.emplace_back(k == 1 ? "x" : "X", x_elems * vbytes);
    buffers.back().upload(bytes, stream);
  }
  return buffers;
}

void GpuSession::Candidate::enqueue_all() {
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
  cudaError_t e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) {
    throw CandidateFailure{classify(e), "running the program: " + describe(e), is_sticky(e)};
  }
}

void GpuSession::Candidate::verify_memory(const char* when) {
  for (const GuardedBuffer& b : prepared.matrix_args) {
    if (!b.unchanged(stream, staging)) {
      throw CandidateFailure{ErrorKind::input_mutated, std::string("the input array '") + b.name() +
                                                           "' changed during the " + when, false};
    }
  }
  for (const GuardedBuffer& b : xs) {
    if (!b.unchanged(stream, staging)) {
      throw CandidateFailure{ErrorKind::input_mutated,
                             std::string("the input array '") + b.name() + "' changed during the " + when, false};
    }
  }
  auto guards = [&](const GuardedBuffer& b) {
    if (!b.guards_intact(stream)) {
      throw CandidateFailure{ErrorKind::illegal_address, std::string("the program wrote outside the array '") +
                                                             b.name() + "' during the " + when +
                                                             " (its guard zone changed)", false};
    }
  };
  for (const GuardedBuffer& b : prepared.matrix_args) guards(b);
  for (const GuardedBuffer& b : xs) guards(b);
  guards(y);
}

const GpuSession::Candidate::Reference& GpuSession::Candidate::reference_of(int input) {
  Reference& slot = references[references.size() == 1 ? 0 : static_cast<std::size_t>(input)];
  if (slot.input != input) {
    reference(a, x_values[static_cast<std::size_t>(input)], k, slot.y, slot.abs);
    slot.input = input;
  }
  return slot;
}

void GpuSession::Candidate::check_output(int input, const std::string& what) {
  const std::span<std::uint8_t> out = staging.get(y_elems * vbytes);
  y.download(out, stream);
  const Reference& ref = reference_of(input);
  Verdict v = compare(out, dtype, a, k, ref.y, ref.abs, kDefaultToleranceFactor);
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

  auto fail = [&](ErrorKind error, std::string message) {
    r.error = error;
    r.message = std::move(message);
    r.correct = false;
  };

  try {
    // --- matrix and format ----------------------------------------------------------------------
    std::shared_ptr<const datasets::SparseMatrix> matrix;
    try {
      // The digest of the worker's copy is checked on every request, but computed once per loaded
      // matrix (a full pass over it: 0.11-0.17 s at 8M nonzeros on the CI machine's CPU).
      const datasets::DigestedMatrix loaded = load_matrix(request);
      matrix = loaded.matrix;
      if (!request.matrix_digest.empty() && loaded.digest != request.matrix_digest) {
        fail(ErrorKind::internal_error,
             "matrix " + request.task.uri + " has digest " + loaded.digest +
                 " in the GPU worker, the evaluator expected " + request.matrix_digest);
        return r;
      }
    } catch (const std::exception& e) {
      fail(ErrorKind::internal_error, std::string("the GPU worker cannot load the matrix: ") + e.what());
      return r;
    }
    phase("load");
    Prepared* prepared = nullptr;
    try {
      prepared = &prepare(request, *matrix);
    } catch (const datasets::FormatTooLarge& e) {
      fail(ErrorKind::resource_limit, std::string("format ") + request.format.str() + ": " + e.what());
      return r;
    }
    r.conversion_ms = prepared->conversion_ms;
    phase("prepare");

    // --- module, kernels and operands -----------------------------------------------------------
    std::vector<cudaKernel_t> kernels = load_kernels(request, library);
    phase("module");
    Candidate candidate(request, *prepared, std::move(kernels), stream_, staging_, r);
    phase("inputs");

    // --- run and check -------------------------------------------------------------------------
    activity_->drain();
    for (int i = 0; i < candidate.inputs; ++i) {
      candidate.use_input(i);
      candidate.y.fill_nan(stream_);
      candidate.launch_all();
      r.stage = Stage::run;
      phase("run");
      // Inputs and guards first: a kernel that wrote its inputs is judged for that, not for the wrong
      // output it may have caused.
      candidate.verify_memory("checked runs");
      phase("memory");
      candidate.check_output(i, "random input " + std::to_string(i + 1) + " of " + std::to_string(candidate.inputs));
      r.check.inputs = i + 1;
      phase("check");
    }
    r.stage = Stage::check;
    r.correct = true;
    std::vector<KernelRecord> check_records = activity_->drain();
    r.timing.launches_per_run = static_cast<int>(check_records.size() / static_cast<std::size_t>(candidate.inputs));

    if (!request.protocol.time) {
      r.wall_ms = ms_since(wall_start);
      cudaLibraryUnload(library);
      return r;
    }
    time_against_baseline(candidate, *prepared, phase);
  } catch (const CandidateFailure& f) {
    fail(f.error, f.message);
    must_exit = f.sticky;
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

  if (base.chosen < 0) choose_baseline_path(candidate, base, time_baseline);
  phase("baseline_choice");
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
  if (const cudaError_t e = cudaStreamSynchronize(stream_); e != cudaSuccess) {
    throw CandidateFailure{classify(e), "running the program: " + describe(e), is_sticky(e)};
  }
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
        if (const cudaError_t e = cudaStreamSynchronize(stream_); e != cudaSuccess) {
          throw CandidateFailure{classify(e), "running the program: " + describe(e), is_sticky(e)};
        }
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
  candidate.verify_memory("timed runs");
  candidate.check_output(last_input, "the output of the last timed run");
  {
    // cuSPARSE's last output must match the same reference: a candidate that reached into the
    // baseline's memory (to slow it down or copy from it) voids the comparison.
    const std::span<std::uint8_t> base_out = staging_.get(cusparse.y_bytes());
    check_cuda(cudaMemcpy(base_out.data(), cusparse.y(), base_out.size(), cudaMemcpyDeviceToHost), "baseline y");
    const Candidate::Reference& ref = candidate.reference_of(last_input);
    const Verdict v = compare(base_out, candidate.dtype, a, candidate.k, ref.y, ref.abs, kDefaultToleranceFactor);
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
void GpuSession::choose_baseline_path(
    Candidate& candidate, Baseline& base,
    const std::function<double(std::size_t, int, std::size_t&)>& time_baseline) {
  const GpuRequest& request = candidate.request;
  const int inputs = candidate.inputs;
  CusparseBaseline& cusparse = *base.cusparse;
  std::size_t launches = 0;
  const int reps = std::max(5, request.protocol.timed_runs / 4);
  const int check_input = (reps - 1) % inputs;
  const Candidate::Reference& ref = candidate.reference_of(check_input);
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
    const std::span<std::uint8_t> base_out = staging_.get(cusparse.y_bytes());
    check_cuda(cudaMemcpy(base_out.data(), cusparse.y(), base_out.size(), cudaMemcpyDeviceToHost),
               "baseline path output");
    if (compare(base_out, candidate.dtype, candidate.a, candidate.k, ref.y, ref.abs, kDefaultToleranceFactor)
            .error != ErrorKind::none) {
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
}

}  // namespace sparserl::reward::gpu
