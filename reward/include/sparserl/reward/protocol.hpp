// The wire protocol between the evaluator's WorkerPool and its `sparserl-worker` processes. A frame
// is a 4-byte little-endian payload length followed by the payload; a payload is one byte of
// MessageType and the message's fields, written by Writer and read back by Reader (little-endian
// integers, IEEE doubles, length-prefixed strings and byte vectors). Everything a worker sends is
// untrusted: every read is bounds-checked, element counts are checked against the bytes left before
// anything is allocated, and a frame longer than the configured cap, a truncated frame, an unknown
// type or trailing bytes all throw ProtocolError - never undefined behaviour. The pool turns a
// ProtocolError into a `crash` result and a fresh worker.
//
// Conversation: the worker sends Hello once at start (its role, pid, the limits it really runs
// under, the GPUs it sees); then the pool sends one request at a time (CompileRequest, GpuRequest,
// TestRequest, Shutdown) and the worker answers each with exactly one response (CompileResponse,
// GpuResponse, TestResponse, or ErrorResponse for a request it refuses).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "sparserl/datasets/task.hpp"
#include "sparserl/reward/abi.hpp"
#include "sparserl/reward/compiler.hpp"
#include "sparserl/reward/eval_result.hpp"
#include "sparserl/reward/static_checks.hpp"

namespace sparserl::reward {

// Bumped whenever a message's layout changes; the pool rejects a worker that speaks another
// version.
inline constexpr std::uint32_t kProtocolVersion = 7;

// Default cap on one frame's payload, both directions. A cubin is a few hundred KB at most.
inline constexpr std::size_t kDefaultMaxFrameBytes = std::size_t{64} << 20;

class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class WorkerRole : std::uint8_t { compile = 0, gpu = 1 };
std::string_view to_string(WorkerRole role);
std::optional<WorkerRole> parse_worker_role(std::string_view text);

// -------------------------------------------------------------------------------------------------
// Binary encoding.

class Writer {
 public:
  void u8(std::uint8_t v) { out_.push_back(v); }
  void boolean(bool v) { u8(v ? 1 : 0); }
  void u32(std::uint32_t v);
  void i32(std::int32_t v) { u32(static_cast<std::uint32_t>(v)); }
  void u64(std::uint64_t v);
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  void f64(double v);
  void str(std::string_view v);                     // u32 length + bytes
  void bytes(std::span<const std::uint8_t> v);      // u32 length + bytes
  void strings(const std::vector<std::string>& v);  // u32 count + each str

  [[nodiscard]] const std::vector<std::uint8_t>& data() const { return out_; }
  [[nodiscard]] std::vector<std::uint8_t> take() { return std::move(out_); }

 private:
  std::vector<std::uint8_t> out_;
};

class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> in) : in_(in) {}

  std::uint8_t u8();
  bool boolean();  // 0 or 1; anything else is a ProtocolError
  std::uint32_t u32();
  std::int32_t i32() { return static_cast<std::int32_t>(u32()); }
  std::uint64_t u64();
  std::int64_t i64() { return static_cast<std::int64_t>(u64()); }
  double f64();
  std::string str();
  std::vector<std::uint8_t> bytes();
  std::vector<std::string> strings();
  // An element count followed by elements of at least `min_element_bytes` each: checked against the
  // bytes left so that a forged count cannot make the reader allocate gigabytes.
  std::size_t count(std::size_t min_element_bytes);

  [[nodiscard]] std::size_t remaining() const { return in_.size() - pos_; }
  // Throws unless every byte was consumed (trailing bytes mean the two sides disagree on a layout).
  void expect_end() const;

 private:
  void need(std::size_t n, std::string_view what) const;
  std::span<const std::uint8_t> in_;
  std::size_t pos_ = 0;
};

// -------------------------------------------------------------------------------------------------
// Messages.

enum class MessageType : std::uint8_t {
  hello = 1,
  compile_request = 2,
  compile_response = 3,
  gpu_request = 4,
  gpu_response = 5,
  test_request = 6,
  test_response = 7,
  error_response = 8,
  shutdown = 9,
};
std::string_view to_string(MessageType type);

// One resource limit as getrlimit reports it. kUnlimited stands for RLIM_INFINITY.
struct ResourceLimit {
  static constexpr std::uint64_t kUnlimited = ~std::uint64_t{0};
  std::string name;  // "core", "cpu", "fsize", "nofile", "as"
  std::uint64_t soft = kUnlimited;
  std::uint64_t hard = kUnlimited;
  friend bool operator==(const ResourceLimit&, const ResourceLimit&) = default;
};

// An open descriptor of the worker and what it points at (readlink of /proc/self/fd/N).
struct OpenDescriptor {
  std::int32_t fd = -1;
  std::string target;
  friend bool operator==(const OpenDescriptor&, const OpenDescriptor&) = default;
};

// One CUDA device as the GPU worker's runtime sees it.
struct GpuDevice {
  std::int32_t ordinal = 0;
  std::string name;  // "NVIDIA H100 80GB HBM3"
  std::string arch;  // "sm_90"
  std::int32_t cc_major = 0, cc_minor = 0;
  std::uint64_t total_memory_bytes = 0;
  std::int32_t multiprocessors = 0;
  std::int32_t max_threads_per_block = 0;
  std::int64_t max_grid_x = 0;
  std::int64_t shared_memory_per_block = 0;  // default static + dynamic limit (48 KiB)
  std::int64_t shared_memory_per_block_optin =
      0;  // with cudaFuncAttributeMaxDynamicSharedMemorySize
  std::int64_t l2_cache_bytes = 0;
  std::string pci_bus_id;
  friend bool operator==(const GpuDevice&, const GpuDevice&) = default;
};

struct GpuInfo {
  std::vector<GpuDevice> devices;    // empty: no usable GPU
  std::int32_t runtime_version = 0;  // cudaRuntimeGetVersion (e.g. 13000), 0 if unknown
  std::int32_t driver_version = 0;   // cudaDriverGetVersion, 0 without a driver
  std::string error;                 // why there is no device ("no CUDA-capable device"), or empty
  friend bool operator==(const GpuInfo&, const GpuInfo&) = default;
};

// What a GPU worker keeps between requests (gpu/gpu_session.hpp), set at its start
// (`sparserl-worker --gpu-caches FRACTION,ENTRIES,BYTES`, EvaluatorConfig::gpu_caches): the share
// of the device's memory for resident converted formats, and as much again for resident cuSPARSE
// baselines (least recently used out first), and the loaded matrices its store keeps (entries and
// bytes). An RL run on bench-v2's 40 large train matrices (641M nonzeros) meets each again every
// few updates; the defaults (1/8, 16, 8 GiB) had its GPU worker convert, set up and load them
// again.
struct GpuCacheLimits {
  double resident_fraction = 0.125;         // of the device's memory, each cache: (0, 0.45]
  std::uint32_t matrix_entries = 16;        // >= 1
  std::uint64_t matrix_bytes = 8ull << 30;  // >= 1 MiB
  // "FRACTION,ENTRIES,BYTES" (the worker's argument); parse() takes that form, nullopt if it is
  // not one or a value is out of range (problem() says which).
  std::string str() const;
  static std::optional<GpuCacheLimits> parse(std::string_view text);
  std::optional<std::string> problem() const;
  // Each resident cache's budget on a device of `device_bytes`.
  std::size_t resident_bytes(std::size_t device_bytes) const;
  friend bool operator==(const GpuCacheLimits&, const GpuCacheLimits&) = default;
};

// Worker -> pool, once, before anything else.
struct Hello {
  std::uint32_t protocol_version = kProtocolVersion;
  WorkerRole role = WorkerRole::compile;
  std::int32_t pid = 0;
  std::int32_t pgid = 0;
  std::int32_t parent_death_signal = 0;  // prctl(PR_GET_PDEATHSIG); 9 = SIGKILL
  bool test_mode = false;
  std::vector<ResourceLimit> limits;  // as the worker really runs
  std::vector<OpenDescriptor>
      descriptors;                 // open at the time of Hello (expected: 0 1 2 + protocol)
  std::vector<std::int32_t> cpus;  // the CPUs it may run on (sched_getaffinity)
  std::string compiler_version;    // compile role: "nvrtc 13.0"
  GpuInfo gpu;                     // gpu role
  friend bool operator==(const Hello&, const Hello&) = default;
};

// Pool -> compile worker: compiler.hpp's CompileRequest (source with prelude, arch, options, name).
// Compile worker -> pool: compiler.hpp's CompileResult, carried in its own versioned encoding
// (serialize / deserialize_compile_result), so the two cannot drift apart.
struct CompileResponse {
  CompileResult result;
  friend bool operator==(const CompileResponse&, const CompileResponse&) = default;
};

// Which of cuSPARSE's paths the speedup's denominator is the best of (cusparse_baseline.hpp): best
// (every format and algorithm the matrix suits: CSR, COO, sliced ELL, BSR, blocked ELL) or csr (CSR
// algorithms only - the baseline before bench-v2, kept so that older figures stay reproducible).
enum class BaselineMode : std::uint8_t { best = 0, csr = 1 };
std::string_view to_string(BaselineMode mode);
std::optional<BaselineMode> parse_baseline_mode(std::string_view text);

// How a GPU worker checks and times a kernel. Part of the result cache key (every field).
struct GpuProtocol {
  std::uint64_t seed = 0;          // seeds the random inputs of this evaluation
  std::int32_t random_inputs = 3;  // fresh random x (values in [-1, 1]) checked per evaluation
  std::int32_t warmup_runs = 5;
  std::int32_t timed_runs = 50;  // repetitions, candidate and cuSPARSE interleaved
  bool flush_l2 = true;          // flush the L2 cache before each repetition
  bool time = true;              // false: check only
  BaselineMode baseline = BaselineMode::best;
  // A stable text form for cache keys and logs: "seed=.. inputs=.. warmup=.. reps=.. flush_l2=..
  // time=.. baseline=..".
  [[nodiscard]] std::string str() const;
  friend bool operator==(const GpuProtocol&, const GpuProtocol&) = default;
};

// Pool -> GPU worker: run, check and time one compiled program on one task.
struct GpuRequest {
  datasets::Task task;                  // uri, op, dtype, k
  std::string data_dir;                 // where the worker's MatrixStore finds matrices
  std::vector<std::string> index_dirs;  // index folders for the MatrixStore
  std::string matrix_digest;            // SparseMatrix::digest() the loaded matrix must have
  FormatSpec format;
  std::vector<ResolvedLaunch> launches;  // evaluated on the matrix's constants, in run order
  std::string cubin;                     // CompileResult::cubin
  GpuProtocol protocol;
  // The worker's own limit on each wait for the candidate's kernels (the checked runs, the timed
  // schedule), in ms; 0: none. A wait that runs past it ends the request as ErrorKind::timeout and
  // the worker exits (the driver then stops the kernel). The evaluator sets it from the task's
  // earlier answers (EvaluatorConfig::gpu_deadline_factor): unlike the pool's deadline on the whole
  // request it leaves out the matrix's load, conversion and cuSPARSE set-up, so a hung kernel on a
  // 10M-nonzero matrix costs seconds, not 20 x a cold answer (about 100 s, measured by the soak).
  std::uint32_t wait_deadline_ms = 0;
  // cuSPARSE's path for this (matrix, op, dtype, k, baseline mode) as an earlier GPU worker chose
  // it (TimingFigures::baseline_algorithm, and its baseline_paths), empty before one has. A worker
  // without that baseline yet - a fresh one, e.g. after a faulting candidate ended the last - runs
  // the path, checks its output and takes it with those figures instead of timing every path again
  // (EvaluatorConfig::gpu_baseline_hints).
  std::string baseline_hint;
  std::string baseline_hint_paths;
};

// What a GPU worker keeps one cuSPARSE baseline for, and the evaluator its baseline hint:
// "MATRIX_DIGEST|op|dtype|k|baseline mode" (k 1 for SpMV).
std::string baseline_key(const GpuRequest& request);

// GPU worker -> pool.
struct GpuResponse {
  EvalResult result;
  // The worker hit a CUDA error that poisons its context and exits right after this response; the
  // pool replaces it without charging anyone.
  bool worker_exits = false;
};

// Test mode only (`sparserl-worker --test-mode`): make the worker misbehave for real, so that CPU
// tests exercise every failure path of the pool.
enum class TestAction : std::uint8_t {
  echo = 0,                // answer at once (value = amount, text = path)
  crash_segv = 1,          // raise SIGSEGV
  crash_abort = 2,         // abort()
  hang_busy = 3,           // spin forever
  hang_sleep = 4,          // sleep forever
  flood_protocol = 5,      // write endless bytes to the protocol channel
  flood_stderr = 6,        // write endless bytes to stderr (and never answer)
  noise_stdout = 7,        // write `amount` bytes to fd 1 (stdout), then answer normally
  exit_early = 8,          // exit(amount) before answering
  reply_then_exit = 9,     // answer with worker_exits = true, then exit(0)
  spawn_grandchild = 10,   // fork a child that sleeps; answer with its pid (value)
  report = 11,             // answer with the open descriptors and the limits
  write_file = 12,         // write `amount` bytes to `path`; value = bytes written
  open_files = 13,         // open /dev/null up to `amount` times; value = how many succeeded
  burn_cpu = 14,           // spin for `amount` ms of wall time, then answer
  stderr_then_crash = 15,  // write `path` to stderr, then SIGSEGV
  visible_devices = 16,    // answer with CUDA_VISIBLE_DEVICES as the worker got it (text)
  gpu_caches = 17,         // answer with the GpuCacheLimits the worker runs under (text: str())
};
std::string_view to_string(TestAction action);

struct TestRequest {
  TestAction action = TestAction::echo;
  std::int64_t amount = 0;
  std::string path;
  friend bool operator==(const TestRequest&, const TestRequest&) = default;
};

struct TestResponse {
  TestAction action = TestAction::echo;
  std::int64_t value = 0;
  std::string text;                         // errno text of the failing call, or the echo
  std::vector<OpenDescriptor> descriptors;  // report
  std::vector<ResourceLimit> limits;        // report
  bool worker_exits = false;
  friend bool operator==(const TestResponse&, const TestResponse&) = default;
};

// Worker -> pool: the request was understood but refused (wrong role, test request without test
// mode).
struct ErrorResponse {
  std::string message;
  friend bool operator==(const ErrorResponse&, const ErrorResponse&) = default;
};

// Pool -> worker: exit cleanly.
struct Shutdown {
  friend bool operator==(const Shutdown&, const Shutdown&) = default;
};

using Message = std::variant<Hello, CompileRequest, CompileResponse, GpuRequest, GpuResponse,
                             TestRequest, TestResponse, ErrorResponse, Shutdown>;
MessageType message_type(const Message& message);

// Payload (type byte + fields), without the length prefix.
std::vector<std::uint8_t> encode_payload(const Message& message);
// Throws ProtocolError for an empty payload, an unknown type, a short or overlong body.
Message decode_payload(std::span<const std::uint8_t> payload);

// The whole frame: 4-byte little-endian length, then the payload.
std::vector<std::uint8_t> encode_frame(const Message& message);
// Reads the length prefix; throws ProtocolError for 0 or a length above max_frame_bytes.
std::uint32_t decode_frame_length(std::span<const std::uint8_t, 4> prefix,
                                  std::size_t max_frame_bytes);

// Blocking frame I/O on a descriptor (the worker's side, and tests). read_frame returns false on a
// clean end of stream before the first byte of a frame; a stream that ends inside a frame, a read
// error, or an oversize length throws ProtocolError. write_frame retries on EINTR and short writes
// and throws ProtocolError when the descriptor fails.
bool read_frame(int fd, std::vector<std::uint8_t>& payload, std::size_t max_frame_bytes);
void write_frame(int fd, std::span<const std::uint8_t> frame);

// EvalResult and its parts on the wire (used inside GpuResponse; exposed for the result disk
// cache).
void write_eval_result(Writer& w, const EvalResult& r);
EvalResult read_eval_result(Reader& r);

}  // namespace sparserl::reward
