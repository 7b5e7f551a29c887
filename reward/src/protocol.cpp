// The worker protocol's binary encoding (protocol.hpp): Writer/Reader primitives, the field layout
// of every message, and blocking frame I/O for the worker side. Field order here IS the wire
// format; a change to any encode_/decode_ pair must bump kProtocolVersion.
#include "sparserl/reward/protocol.hpp"

#include <unistd.h>

#include <array>
#include <bit>
#include <cerrno>
#include <cstring>

#include "sparserl/datasets/enum_names.hpp"
#include "sparserl/datasets/knobs.hpp"

namespace sparserl::reward {

namespace {

constexpr auto kWorkerRoleNames =
    datasets::enum_names<WorkerRole::compile, WorkerRole::gpu>({"compile", "gpu"});
constexpr auto kMessageTypeNames = datasets::enum_names<MessageType::hello, MessageType::shutdown>(
    {"Hello", "CompileRequest", "CompileResponse", "GpuRequest", "GpuResponse", "TestRequest",
     "TestResponse", "ErrorResponse", "Shutdown"});
constexpr auto kTestActionNames =
    datasets::enum_names<TestAction::echo, TestAction::gpu_caches>(
        {"echo", "crash_segv", "crash_abort", "hang_busy", "hang_sleep", "flood_protocol",
         "flood_stderr", "noise_stdout", "exit_early", "reply_then_exit", "spawn_grandchild",
         "report", "write_file", "open_files", "burn_cpu", "stderr_then_crash", "visible_devices",
         "gpu_caches"});
constexpr auto kBaselineModeNames =
    datasets::enum_names<BaselineMode::best, BaselineMode::csr>({"best", "csr"});

}  // namespace

std::string_view to_string(WorkerRole role) { return kWorkerRoleNames.name(role); }
std::optional<WorkerRole> parse_worker_role(std::string_view text) {
  return kWorkerRoleNames.parse(text);
}
std::string_view to_string(MessageType type) { return kMessageTypeNames.name(type); }
std::string_view to_string(TestAction action) { return kTestActionNames.name(action); }
std::string_view to_string(BaselineMode mode) { return kBaselineModeNames.name(mode); }
std::optional<BaselineMode> parse_baseline_mode(std::string_view text) {
  return kBaselineModeNames.parse(text);
}

std::string GpuCacheLimits::str() const {
  return datasets::knob_text::real(resident_fraction) + "," + std::to_string(matrix_entries) + "," +
         std::to_string(matrix_bytes);
}

std::optional<GpuCacheLimits> GpuCacheLimits::parse(std::string_view text) {
  namespace kt = datasets::knob_text;
  const std::vector<std::string> fields = kt::split_list(text);
  if (fields.size() != 3) return std::nullopt;
  GpuCacheLimits limits;
  try {
    limits.resident_fraction = kt::parse_real(fields[0]);
    limits.matrix_entries = kt::parse_integer<std::uint32_t>(fields[1]);
    limits.matrix_bytes = kt::parse_integer<std::uint64_t>(fields[2]);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
  if (limits.problem()) return std::nullopt;
  return limits;
}

std::size_t GpuCacheLimits::resident_bytes(std::size_t device_bytes) const {
  return static_cast<std::size_t>(resident_fraction * static_cast<double>(device_bytes));
}

std::optional<std::string> GpuCacheLimits::problem() const {
  if (!(resident_fraction > 0 && resident_fraction <= 0.45)) {
    return "the resident fraction must be in (0, 0.45] (two caches share the device with the "
           "candidates and the policy), got " + std::to_string(resident_fraction);
  }
  if (matrix_entries < 1) return std::string("the matrix store keeps at least 1 matrix, got 0");
  if (matrix_bytes < (1u << 20)) {
    return "the matrix store's bytes must be at least 1 MiB, got " + std::to_string(matrix_bytes);
  }
  return std::nullopt;
}

std::string GpuProtocol::str() const {
  return "seed=" + std::to_string(seed) + " inputs=" + std::to_string(random_inputs) +
         " warmup=" + std::to_string(warmup_runs) + " reps=" + std::to_string(timed_runs) +
         " flush_l2=" + (flush_l2 ? "1" : "0") + " time=" + (time ? "1" : "0") +
         " baseline=" + std::string(to_string(baseline));
}

// -------------------------------------------------------------------------------------------------
// Writer / Reader

void Writer::u32(std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

void Writer::u64(std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

void Writer::f64(double v) { u64(std::bit_cast<std::uint64_t>(v)); }

void Writer::str(std::string_view v) {
  if (v.size() > 0xffffffffu)
    throw ProtocolError("string of " + std::to_string(v.size()) +
                        " bytes is too long for the protocol");
  u32(static_cast<std::uint32_t>(v.size()));
  out_.insert(out_.end(), v.begin(), v.end());
}

void Writer::bytes(std::span<const std::uint8_t> v) {
  if (v.size() > 0xffffffffu) throw ProtocolError("byte vector too long for the protocol");
  u32(static_cast<std::uint32_t>(v.size()));
  out_.insert(out_.end(), v.begin(), v.end());
}

void Writer::strings(const std::vector<std::string>& v) {
  u32(static_cast<std::uint32_t>(v.size()));
  for (const auto& s : v) str(s);
}

void Reader::need(std::size_t n, std::string_view what) const {
  if (n > remaining()) {
    throw ProtocolError("truncated message: " + std::string(what) + " needs " + std::to_string(n) +
                        " bytes, " + std::to_string(remaining()) + " left");
  }
}

std::uint8_t Reader::u8() {
  need(1, "u8");
  return in_[pos_++];
}

bool Reader::boolean() {
  const std::uint8_t v = u8();
  if (v > 1) throw ProtocolError("invalid boolean byte " + std::to_string(v));
  return v == 1;
}

std::uint32_t Reader::u32() {
  need(4, "u32");
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t{in_[pos_ + i]} << (8 * i);
  pos_ += 4;
  return v;
}

std::uint64_t Reader::u64() {
  need(8, "u64");
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{in_[pos_ + i]} << (8 * i);
  pos_ += 8;
  return v;
}

double Reader::f64() { return std::bit_cast<double>(u64()); }

std::string Reader::str() {
  const std::uint32_t n = u32();
  need(n, "string");
  std::string s(reinterpret_cast<const char*>(in_.data() + pos_), n);
  pos_ += n;
  return s;
}

std::vector<std::uint8_t> Reader::bytes() {
  const std::uint32_t n = u32();
  need(n, "byte vector");
  std::vector<std::uint8_t> v(in_.begin() + static_cast<std::ptrdiff_t>(pos_),
                              in_.begin() + static_cast<std::ptrdiff_t>(pos_ + n));
  pos_ += n;
  return v;
}

std::size_t Reader::count(std::size_t min_element_bytes) {
  const std::uint32_t n = u32();
  if (min_element_bytes > 0 && n > remaining() / min_element_bytes) {
    throw ProtocolError("element count " + std::to_string(n) + " cannot fit in the " +
                        std::to_string(remaining()) + " bytes left");
  }
  return n;
}

std::vector<std::string> Reader::strings() {
  const std::size_t n = count(4);
  std::vector<std::string> v;
  v.reserve(n);
  for (std::size_t i = 0; i < n; ++i) v.push_back(str());
  return v;
}

void Reader::expect_end() const {
  if (remaining() != 0) {
    throw ProtocolError(std::to_string(remaining()) + " unexpected trailing bytes in message");
  }
}

// -------------------------------------------------------------------------------------------------
// Field layouts

namespace {

template <typename Enum>
Enum read_enum(Reader& r, int max_value, std::string_view what) {
  const std::uint8_t v = r.u8();
  if (v > max_value) {
    throw ProtocolError("invalid " + std::string(what) + " value " + std::to_string(v));
  }
  return static_cast<Enum>(v);
}

void write_limits(Writer& w, const std::vector<ResourceLimit>& limits) {
  w.u32(static_cast<std::uint32_t>(limits.size()));
  for (const auto& l : limits) {
    w.str(l.name);
    w.u64(l.soft);
    w.u64(l.hard);
  }
}

std::vector<ResourceLimit> read_limits(Reader& r) {
  std::vector<ResourceLimit> out(r.count(20));
  for (auto& l : out) {
    l.name = r.str();
    l.soft = r.u64();
    l.hard = r.u64();
  }
  return out;
}

void write_descriptors(Writer& w, const std::vector<OpenDescriptor>& fds) {
  w.u32(static_cast<std::uint32_t>(fds.size()));
  for (const auto& d : fds) {
    w.i32(d.fd);
    w.str(d.target);
  }
}

std::vector<OpenDescriptor> read_descriptors(Reader& r) {
  std::vector<OpenDescriptor> out(r.count(8));
  for (auto& d : out) {
    d.fd = r.i32();
    d.target = r.str();
  }
  return out;
}

void write_gpu_info(Writer& w, const GpuInfo& g) {
  w.u32(static_cast<std::uint32_t>(g.devices.size()));
  for (const auto& d : g.devices) {
    w.i32(d.ordinal);
    w.str(d.name);
    w.str(d.arch);
    w.i32(d.cc_major);
    w.i32(d.cc_minor);
    w.u64(d.total_memory_bytes);
    w.i32(d.multiprocessors);
    w.i32(d.max_threads_per_block);
    w.i64(d.max_grid_x);
    w.i64(d.shared_memory_per_block);
    w.i64(d.shared_memory_per_block_optin);
    w.i64(d.l2_cache_bytes);
    w.str(d.pci_bus_id);
  }
  w.i32(g.runtime_version);
  w.i32(g.driver_version);
  w.str(g.error);
}

GpuInfo read_gpu_info(Reader& r) {
  GpuInfo g;
  g.devices.resize(r.count(60));
  for (auto& d : g.devices) {
    d.ordinal = r.i32();
    d.name = r.str();
    d.arch = r.str();
    d.cc_major = r.i32();
    d.cc_minor = r.i32();
    d.total_memory_bytes = r.u64();
    d.multiprocessors = r.i32();
    d.max_threads_per_block = r.i32();
    d.max_grid_x = r.i64();
    d.shared_memory_per_block = r.i64();
    d.shared_memory_per_block_optin = r.i64();
    d.l2_cache_bytes = r.i64();
    d.pci_bus_id = r.str();
  }
  g.runtime_version = r.i32();
  g.driver_version = r.i32();
  g.error = r.str();
  return g;
}

void encode(Writer& w, const Hello& m) {
  w.u32(m.protocol_version);
  w.u8(static_cast<std::uint8_t>(m.role));
  w.i32(m.pid);
  w.i32(m.pgid);
  w.i32(m.parent_death_signal);
  w.boolean(m.test_mode);
  write_limits(w, m.limits);
  write_descriptors(w, m.descriptors);
  w.u32(static_cast<std::uint32_t>(m.cpus.size()));
  for (std::int32_t c : m.cpus) w.i32(c);
  w.str(m.compiler_version);
  write_gpu_info(w, m.gpu);
}

Hello decode_hello(Reader& r) {
  Hello m;
  m.protocol_version = r.u32();
  m.role = read_enum<WorkerRole>(r, 1, "worker role");
  m.pid = r.i32();
  m.pgid = r.i32();
  m.parent_death_signal = r.i32();
  m.test_mode = r.boolean();
  m.limits = read_limits(r);
  m.descriptors = read_descriptors(r);
  m.cpus.resize(r.count(4));
  for (auto& c : m.cpus) c = r.i32();
  m.compiler_version = r.str();
  m.gpu = read_gpu_info(r);
  return m;
}

void encode(Writer& w, const CompileRequest& m) {
  w.str(m.source);
  w.str(m.arch);
  w.strings(m.options);
  w.str(m.name);
}

CompileRequest decode_compile_request(Reader& r) {
  CompileRequest m;
  m.source = r.str();
  m.arch = r.str();
  m.options = r.strings();
  m.name = r.str();
  return m;
}

void encode(Writer& w, const CompileResponse& m) { w.str(serialize(m.result)); }

CompileResponse decode_compile_response(Reader& r) {
  std::optional<CompileResult> result = deserialize_compile_result(r.str());
  if (!result) throw ProtocolError("malformed CompileResult in CompileResponse");
  return CompileResponse{std::move(*result)};
}

void encode(Writer& w, const GpuRequest& m) {
  w.str(m.task.uri);
  w.u8(static_cast<std::uint8_t>(m.task.op));
  w.u8(static_cast<std::uint8_t>(m.task.dtype));
  w.i32(m.task.k);
  w.str(m.data_dir);
  w.strings(m.index_dirs);
  w.str(m.matrix_digest);
  w.u8(static_cast<std::uint8_t>(m.format.format));
  w.i32(m.format.params.sell_c);
  w.i64(m.format.params.sell_sigma);
  w.i32(m.format.params.bsr_r);
  w.i32(m.format.params.bsr_c);
  w.u32(static_cast<std::uint32_t>(m.launches.size()));
  for (const auto& l : m.launches) {
    w.str(l.kernel);
    w.i64(l.grid);
    w.i32(l.block);
    w.i64(l.smem_bytes);
    w.i32(l.line);
  }
  w.str(m.cubin);
  w.u64(m.protocol.seed);
  w.i32(m.protocol.random_inputs);
  w.i32(m.protocol.warmup_runs);
  w.i32(m.protocol.timed_runs);
  w.boolean(m.protocol.flush_l2);
  w.boolean(m.protocol.time);
  w.u8(static_cast<std::uint8_t>(m.protocol.baseline));
  w.u32(m.wait_deadline_ms);
  w.str(m.baseline_hint);
  w.str(m.baseline_hint_paths);
}

GpuRequest decode_gpu_request(Reader& r) {
  GpuRequest m;
  m.task.uri = r.str();
  m.task.op = read_enum<datasets::Op>(r, 1, "op");
  m.task.dtype = read_enum<datasets::DType>(r, 1, "dtype");
  m.task.k = r.i32();
  m.data_dir = r.str();
  m.index_dirs = r.strings();
  m.matrix_digest = r.str();
  m.format.format = read_enum<Format>(r, static_cast<int>(Format::bsr), "format");
  m.format.params.sell_c = r.i32();
  m.format.params.sell_sigma = r.i64();
  m.format.params.bsr_r = r.i32();
  m.format.params.bsr_c = r.i32();
  m.launches.resize(r.count(28));
  for (auto& l : m.launches) {
    l.kernel = r.str();
    l.grid = r.i64();
    l.block = r.i32();
    l.smem_bytes = r.i64();
    l.line = r.i32();
  }
  m.cubin = r.str();
  m.protocol.seed = r.u64();
  m.protocol.random_inputs = r.i32();
  m.protocol.warmup_runs = r.i32();
  m.protocol.timed_runs = r.i32();
  m.protocol.flush_l2 = r.boolean();
  m.protocol.time = r.boolean();
  {
    const std::uint8_t mode = r.u8();
    if (mode > static_cast<std::uint8_t>(BaselineMode::csr)) {
      throw ProtocolError("GpuRequest: unknown baseline mode " + std::to_string(mode));
    }
    m.protocol.baseline = static_cast<BaselineMode>(mode);
  }
  m.wait_deadline_ms = r.u32();
  m.baseline_hint = r.str();
  m.baseline_hint_paths = r.str();
  return m;
}

void encode(Writer& w, const GpuResponse& m) {
  write_eval_result(w, m.result);
  w.boolean(m.worker_exits);
}

GpuResponse decode_gpu_response(Reader& r) {
  GpuResponse m;
  m.result = read_eval_result(r);
  m.worker_exits = r.boolean();
  return m;
}

void encode(Writer& w, const TestRequest& m) {
  w.u8(static_cast<std::uint8_t>(m.action));
  w.i64(m.amount);
  w.str(m.path);
}

constexpr int kMaxTestAction = static_cast<int>(TestAction::gpu_caches);

TestRequest decode_test_request(Reader& r) {
  TestRequest m;
  m.action = read_enum<TestAction>(r, kMaxTestAction, "test action");
  m.amount = r.i64();
  m.path = r.str();
  return m;
}

void encode(Writer& w, const TestResponse& m) {
  w.u8(static_cast<std::uint8_t>(m.action));
  w.i64(m.value);
  w.str(m.text);
  write_descriptors(w, m.descriptors);
  write_limits(w, m.limits);
  w.boolean(m.worker_exits);
}

TestResponse decode_test_response(Reader& r) {
  TestResponse m;
  m.action = read_enum<TestAction>(r, kMaxTestAction, "test action");
  m.value = r.i64();
  m.text = r.str();
  m.descriptors = read_descriptors(r);
  m.limits = read_limits(r);
  m.worker_exits = r.boolean();
  return m;
}

void encode(Writer& w, const ErrorResponse& m) { w.str(m.message); }

ErrorResponse decode_error_response(Reader& r) {
  ErrorResponse m;
  m.message = r.str();
  return m;
}

void encode(Writer&, const Shutdown&) {}

}  // namespace

void write_eval_result(Writer& w, const EvalResult& r) {
  w.u8(static_cast<std::uint8_t>(r.stage));
  w.u8(static_cast<std::uint8_t>(r.error));
  w.str(r.message);
  w.str(r.static_reason);
  w.boolean(r.compiled);
  w.boolean(r.correct);
  w.boolean(r.timed);
  w.boolean(r.gpu_available);
  const CompileFigures& c = r.compile;
  w.f64(c.compile_ms);
  w.i32(c.max_registers);
  w.i32(c.static_smem_bytes);
  w.i32(c.spill_bytes);
  w.i32(c.local_bytes);
  w.str(c.arch);
  w.str(c.log);
  w.boolean(c.cached);
  const CheckFigures& k = r.check;
  w.i32(k.inputs);
  w.f64(k.max_error_ratio);
  w.i64(k.bad_outputs);
  w.i64(k.first_bad_row);
  w.i64(k.unchecked_outputs);
  const TimingFigures& t = r.timing;
  w.f64(t.median_us);
  w.f64(t.p10_us);
  w.f64(t.p90_us);
  w.i32(t.launches_per_run);
  w.i32(t.repetitions);
  w.f64(t.baseline_median_us);
  w.f64(t.baseline_p10_us);
  w.f64(t.baseline_p90_us);
  w.str(t.baseline_algorithm);
  w.str(t.baseline_paths);
  w.f64(t.speedup);
  w.f64(t.gflops);
  w.f64(t.bandwidth_gbs);
  w.f64(t.bandwidth_fraction);
  w.f64(t.baseline_gflops);
  w.f64(t.baseline_bandwidth_fraction);
  w.f64(r.conversion_ms);
  w.f64(r.wall_ms);
  w.str(r.device);
  w.str(r.device_pci_bus_id);
  w.str(r.program_digest);
  w.str(r.matrix_digest);
  w.boolean(r.result_cached);
  w.u32(static_cast<std::uint32_t>(r.phases.size()));
  for (const PhaseTime& p : r.phases) {
    w.str(p.name);
    w.f64(p.ms);
  }
}

EvalResult read_eval_result(Reader& in) {
  EvalResult r;
  r.stage = read_enum<Stage>(in, static_cast<int>(Stage::time), "stage");
  r.error = read_enum<ErrorKind>(in, static_cast<int>(ErrorKind::internal_error), "error kind");
  r.message = in.str();
  r.static_reason = in.str();
  r.compiled = in.boolean();
  r.correct = in.boolean();
  r.timed = in.boolean();
  r.gpu_available = in.boolean();
  CompileFigures& c = r.compile;
  c.compile_ms = in.f64();
  c.max_registers = in.i32();
  c.static_smem_bytes = in.i32();
  c.spill_bytes = in.i32();
  c.local_bytes = in.i32();
  c.arch = in.str();
  c.log = in.str();
  c.cached = in.boolean();
  CheckFigures& k = r.check;
  k.inputs = in.i32();
  k.max_error_ratio = in.f64();
  k.bad_outputs = in.i64();
  k.first_bad_row = in.i64();
  k.unchecked_outputs = in.i64();
  TimingFigures& t = r.timing;
  t.median_us = in.f64();
  t.p10_us = in.f64();
  t.p90_us = in.f64();
  t.launches_per_run = in.i32();
  t.repetitions = in.i32();
  t.baseline_median_us = in.f64();
  t.baseline_p10_us = in.f64();
  t.baseline_p90_us = in.f64();
  t.baseline_algorithm = in.str();
  t.baseline_paths = in.str();
  t.speedup = in.f64();
  t.gflops = in.f64();
  t.bandwidth_gbs = in.f64();
  t.bandwidth_fraction = in.f64();
  t.baseline_gflops = in.f64();
  t.baseline_bandwidth_fraction = in.f64();
  r.conversion_ms = in.f64();
  r.wall_ms = in.f64();
  r.device = in.str();
  r.device_pci_bus_id = in.str();
  r.program_digest = in.str();
  r.matrix_digest = in.str();
  r.result_cached = in.boolean();
  const std::uint32_t phases = in.u32();
  for (std::uint32_t i = 0; i < phases; ++i) {
    PhaseTime p;
    p.name = in.str();
    p.ms = in.f64();
    r.phases.push_back(std::move(p));
  }
  return r;
}

MessageType message_type(const Message& message) {
  struct Visitor {
    MessageType operator()(const Hello&) const { return MessageType::hello; }
    MessageType operator()(const CompileRequest&) const { return MessageType::compile_request; }
    MessageType operator()(const CompileResponse&) const { return MessageType::compile_response; }
    MessageType operator()(const GpuRequest&) const { return MessageType::gpu_request; }
    MessageType operator()(const GpuResponse&) const { return MessageType::gpu_response; }
    MessageType operator()(const TestRequest&) const { return MessageType::test_request; }
    MessageType operator()(const TestResponse&) const { return MessageType::test_response; }
    MessageType operator()(const ErrorResponse&) const { return MessageType::error_response; }
    MessageType operator()(const Shutdown&) const { return MessageType::shutdown; }
  };
  return std::visit(Visitor{}, message);
}

std::vector<std::uint8_t> encode_payload(const Message& message) {
  Writer w;
  w.u8(static_cast<std::uint8_t>(message_type(message)));
  std::visit([&w](const auto& m) { encode(w, m); }, message);
  return w.take();
}

Message decode_payload(std::span<const std::uint8_t> payload) {
  Reader r(payload);
  if (payload.empty()) throw ProtocolError("empty message");
  const std::uint8_t type = r.u8();
  Message m;
  switch (static_cast<MessageType>(type)) {
    case MessageType::hello:
      m = decode_hello(r);
      break;
    case MessageType::compile_request:
      m = decode_compile_request(r);
      break;
    case MessageType::compile_response:
      m = decode_compile_response(r);
      break;
    case MessageType::gpu_request:
      m = decode_gpu_request(r);
      break;
    case MessageType::gpu_response:
      m = decode_gpu_response(r);
      break;
    case MessageType::test_request:
      m = decode_test_request(r);
      break;
    case MessageType::test_response:
      m = decode_test_response(r);
      break;
    case MessageType::error_response:
      m = decode_error_response(r);
      break;
    case MessageType::shutdown:
      m = Shutdown{};
      break;
    default:
      throw ProtocolError("unknown message type " + std::to_string(type));
  }
  r.expect_end();
  return m;
}

std::vector<std::uint8_t> encode_frame(const Message& message) {
  std::vector<std::uint8_t> payload = encode_payload(message);
  if (payload.size() > 0xffffffffu) throw ProtocolError("message too large for one frame");
  std::vector<std::uint8_t> frame;
  frame.reserve(payload.size() + 4);
  const auto n = static_cast<std::uint32_t>(payload.size());
  for (int i = 0; i < 4; ++i) frame.push_back(static_cast<std::uint8_t>(n >> (8 * i)));
  frame.insert(frame.end(), payload.begin(), payload.end());
  return frame;
}

std::uint32_t decode_frame_length(std::span<const std::uint8_t, 4> prefix,
                                  std::size_t max_frame_bytes) {
  std::uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= std::uint32_t{prefix[i]} << (8 * i);
  if (n == 0) throw ProtocolError("frame of length 0");
  if (n > max_frame_bytes) {
    throw ProtocolError("frame of " + std::to_string(n) + " bytes exceeds the cap of " +
                        std::to_string(max_frame_bytes) + " bytes");
  }
  return n;
}

namespace {

// Reads exactly n bytes; returns how many were read before end of stream.
std::size_t read_fully(int fd, std::uint8_t* out, std::size_t n) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, out + got, n - got);
    if (r == 0) return got;
    if (r < 0) {
      if (errno == EINTR) continue;
      throw ProtocolError(std::string("read failed: ") + std::strerror(errno));
    }
    got += static_cast<std::size_t>(r);
  }
  return got;
}

}  // namespace

bool read_frame(int fd, std::vector<std::uint8_t>& payload, std::size_t max_frame_bytes) {
  std::array<std::uint8_t, 4> prefix{};
  const std::size_t got = read_fully(fd, prefix.data(), 4);
  if (got == 0) return false;
  if (got < 4) throw ProtocolError("stream ended inside a frame's length prefix");
  const std::uint32_t n = decode_frame_length(prefix, max_frame_bytes);
  payload.resize(n);
  if (read_fully(fd, payload.data(), n) != n) {
    throw ProtocolError("stream ended inside a frame of " + std::to_string(n) + " bytes");
  }
  return true;
}

void write_frame(int fd, std::span<const std::uint8_t> frame) {
  std::size_t done = 0;
  while (done < frame.size()) {
    const ssize_t w = ::write(fd, frame.data() + done, frame.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw ProtocolError(std::string("write failed: ") + std::strerror(errno));
    }
    done += static_cast<std::size_t>(w);
  }
}

std::string baseline_key(const GpuRequest& request) {
  const int k = request.task.op == datasets::Op::spmm ? request.task.k : 1;
  return request.matrix_digest + "|" + std::string(datasets::to_string(request.task.op)) + "|" +
         std::string(datasets::to_string(request.task.dtype)) + "|" + std::to_string(k) + "|" +
         std::string(to_string(request.protocol.baseline));
}

}  // namespace sparserl::reward
