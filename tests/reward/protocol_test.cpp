// The worker protocol: every message survives a round trip through its frame, and everything a
// hostile or broken worker could send (truncated frames, garbage, forged counts, oversize lengths,
// bad enum bytes, trailing bytes) is a ProtocolError - never a crash, a hang or a huge allocation.
// Also the names and JSON form of EvalResult.
#include "sparserl/reward/protocol.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "catch.hpp"
#include "sparserl/datasets/random.hpp"
#include "test_support.hpp"

using namespace sparserl::reward;
using sparserl::testing::has_substring;

namespace {

EvalResult sample_result() {
  EvalResult r;
  r.stage = Stage::time;
  r.error = ErrorKind::none;
  r.message = "all good \"quoted\"\nnext line";
  r.static_reason = "";
  r.compiled = r.correct = r.timed = r.gpu_available = true;
  r.compile = {12.5, 32, 1024, 8, 16, "sm_90", "ptxas info", true};
  r.check = {4, 0.25, 0, -1};
  r.timing.median_us = 10.5;
  r.timing.p10_us = 9.75;
  r.timing.p90_us = 11.25;
  r.timing.launches_per_run = 2;
  r.timing.repetitions = 50;
  r.timing.baseline_median_us = 12.0;
  r.timing.baseline_algorithm = "CSR_ALG2";
  r.timing.baseline_paths = "CSR_ALG1=12.5 CSR_ALG2=12 SELL_ALG1=wrong";
  r.timing.speedup = 12.0 / 10.5;
  r.timing.gflops = 123.0;
  r.timing.bandwidth_gbs = 2500.0;
  r.timing.bandwidth_fraction = 0.83;
  r.timing.baseline_gflops = 100.0;
  r.timing.baseline_bandwidth_fraction = 0.7;
  r.conversion_ms = 3.5;
  r.wall_ms = 40.0;
  r.device = "NVIDIA H100 80GB HBM3";
  r.program_digest = std::string(64, 'a');
  r.matrix_digest = "0123456789abcdef";
  r.result_cached = false;
  r.phases = {{"checks", 0.5}, {"gpu.timed", 6.25}, {"gpu.final_check", 1.0}};
  return r;
}

CompileResult sample_compile_result() {
  CompileResult c;
  c.ok = true;
  c.log = "ptxas info    : Used 32 registers";
  c.cubin = std::string(
                "\x7f"
                "ELF\0\0\x01\x02",
                8) +
            std::string(300, '\0');
  c.kernels = {{"spmv", 32, 0, 0, 0, 0, 368}, {"zero_y", 8, 128, 16, 4, 4, 360}};
  c.compile_ms = 21.5;
  c.arch = "sm_90";
  c.nvrtc_version = "13.0";
  return c;
}

GpuRequest sample_gpu_request() {
  GpuRequest g;
  g.task.uri = "suitesparse-v1/HB/west0067";
  g.task.op = sparserl::datasets::Op::spmm;
  g.task.dtype = sparserl::datasets::DType::f64;
  g.task.k = 32;
  g.data_dir = "/data/matrices";
  g.index_dirs = {"/data/index-a", "/data/index-b"};
  g.matrix_digest = "fedcba9876543210";
  g.format.format = Format::sell;
  g.format.params.sell_c = 32;
  g.format.params.sell_sigma = 256;
  g.launches = {{"zero_y", 10, 256, 0, 3}, {"spmm", 1 << 20, 128, 4096, 4}};
  g.cubin = std::string(1000, '\x01');
  g.protocol = {42, 3, 5, 50, true, true, BaselineMode::csr};
  g.wait_deadline_ms = 2500;
  g.baseline_hint = "CSR_ALG2";
  g.baseline_hint_paths = "CSR_ALG1=12.5us CSR_ALG2=9.1us COO_ALG1=wrong";
  return g;
}

Hello sample_hello() {
  Hello h;
  h.role = WorkerRole::gpu;
  h.pid = 1234;
  h.pgid = 1234;
  h.parent_death_signal = 9;
  h.test_mode = true;
  h.limits = {{"core", 0, 0},
              {"cpu", 3600, 3600},
              {"as", ResourceLimit::kUnlimited, ResourceLimit::kUnlimited}};
  h.descriptors = {{0, "socket:[1]"}, {1, "/dev/null"}, {2, "pipe:[2]"}};
  h.cpus = {0, 1};
  h.compiler_version = "nvrtc 13.0";
  GpuDevice d;
  d.ordinal = 0;
  d.name = "NVIDIA H100 80GB HBM3";
  d.arch = "sm_90";
  d.cc_major = 9;
  d.total_memory_bytes = 85'000'000'000ULL;
  d.multiprocessors = 132;
  d.max_threads_per_block = 1024;
  d.max_grid_x = 2147483647;
  d.shared_memory_per_block = 49152;
  d.shared_memory_per_block_optin = 232448;
  d.l2_cache_bytes = 52428800;
  d.pci_bus_id = "0000:19:00.0";
  h.gpu.devices = {d};
  h.gpu.runtime_version = 13000;
  h.gpu.driver_version = 13000;
  return h;
}

std::vector<Message> every_message() {
  TestResponse tr;
  tr.action = TestAction::report;
  tr.value = -7;
  tr.text = "EMFILE";
  tr.descriptors = {{3, "socket:[9]"}};
  tr.limits = {{"nofile", 64, 64}};
  tr.worker_exits = true;
  return {sample_hello(),
          CompileRequest{"typedef float value_t;\n__global__ void k() {}",
                         "sm_80",
                         {"-DX=1", "--use_fast_math"},
                         "program.cu"},
          CompileResponse{sample_compile_result()},
          sample_gpu_request(),
          GpuResponse{sample_result(), true},
          TestRequest{TestAction::write_file, 1 << 20, "/tmp/x"},
          tr,
          ErrorResponse{"refused"},
          Shutdown{}};
}

template <typename T>
concept EqualityComparable = requires(const T& a, const T& b) {
  a == b;
};

// Equality through the frame. Messages without operator== (they hold types that have none) are
// compared by their re-encoding: every sample field has a distinct value, so a decoder that swapped
// or dropped a field would re-encode differently.
void require_same(const Message& a, const Message& b) {
  REQUIRE(a.index() == b.index());
  std::visit(
      [&a, &b](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (EqualityComparable<T>) {
          REQUIRE(x == std::get<T>(b));
        } else {
          REQUIRE(encode_payload(a) == encode_payload(b));
        }
      },
      a);
  if (auto* ga = std::get_if<GpuResponse>(&a)) {
    REQUIRE(ga->result.to_json() == std::get<GpuResponse>(b).result.to_json());
  }
}

Message round_trip(const Message& m) {
  const std::vector<std::uint8_t> frame = encode_frame(m);
  REQUIRE(frame.size() >= 5);
  std::span<const std::uint8_t, 4> prefix(frame.data(), 4);
  const std::uint32_t n = decode_frame_length(prefix, kDefaultMaxFrameBytes);
  REQUIRE(n == frame.size() - 4);
  return decode_payload(std::span<const std::uint8_t>(frame.data() + 4, n));
}

}  // namespace

TEST_CASE("Writer and Reader round-trip every primitive, little-endian", "[reward][protocol]") {
  Writer w;
  w.u8(0xfe);
  w.boolean(true);
  w.u32(0x01020304u);
  w.i32(-5);
  w.u64(0x0102030405060708ULL);
  w.i64(std::numeric_limits<std::int64_t>::min());
  w.f64(-0.0);
  w.f64(std::numeric_limits<double>::infinity());
  w.f64(std::nan(""));
  w.str("");
  w.str(std::string("a\0b", 3));
  w.bytes(std::vector<std::uint8_t>{0, 255, 7});
  w.strings({"x", "", "yz"});
  const auto& d = w.data();
  REQUIRE(d[2] == 0x04);  // little-endian u32
  REQUIRE(d[5] == 0x01);

  Reader r(d);
  REQUIRE(r.u8() == 0xfe);
  REQUIRE(r.boolean());
  REQUIRE(r.u32() == 0x01020304u);
  REQUIRE(r.i32() == -5);
  REQUIRE(r.u64() == 0x0102030405060708ULL);
  REQUIRE(r.i64() == std::numeric_limits<std::int64_t>::min());
  const double z = r.f64();
  REQUIRE(z == 0.0);
  REQUIRE(std::signbit(z));
  REQUIRE(std::isinf(r.f64()));
  REQUIRE(std::isnan(r.f64()));
  REQUIRE(r.str().empty());
  REQUIRE(r.str() == std::string("a\0b", 3));
  REQUIRE(r.bytes() == std::vector<std::uint8_t>{0, 255, 7});
  REQUIRE(r.strings() == std::vector<std::string>{"x", "", "yz"});
  REQUIRE(r.remaining() == 0);
  REQUIRE_NOTHROW(r.expect_end());
  REQUIRE_THROWS_AS(r.u8(), ProtocolError);
}

TEST_CASE("Every message round-trips through its frame", "[reward][protocol]") {
  for (const Message& m : every_message()) {
    INFO("message " << to_string(message_type(m)));
    const Message back = round_trip(m);
    require_same(m, back);
    REQUIRE(message_type(back) == message_type(m));
  }
}

TEST_CASE("GpuRequest and CompileRequest fields land where they belong", "[reward][protocol]") {
  const auto g = std::get<GpuRequest>(round_trip(sample_gpu_request()));
  REQUIRE(g.task.uri == "suitesparse-v1/HB/west0067");
  REQUIRE(g.task.op == sparserl::datasets::Op::spmm);
  REQUIRE(g.task.dtype == sparserl::datasets::DType::f64);
  REQUIRE(g.task.k == 32);
  REQUIRE(g.index_dirs.size() == 2);
  REQUIRE(g.format.format == Format::sell);
  REQUIRE(g.format.params.sell_sigma == 256);
  REQUIRE(g.launches.size() == 2);
  REQUIRE(g.launches[1] == ResolvedLaunch{"spmm", 1 << 20, 128, 4096, 4});
  REQUIRE(g.cubin.size() == 1000);
  REQUIRE(g.protocol == GpuProtocol{42, 3, 5, 50, true, true, BaselineMode::csr});
  REQUIRE(g.protocol.str() == "seed=42 inputs=3 warmup=5 reps=50 flush_l2=1 time=1 baseline=csr");
  REQUIRE(g.wait_deadline_ms == 2500);
  REQUIRE(g.baseline_hint == "CSR_ALG2");
  REQUIRE(g.baseline_hint_paths == "CSR_ALG1=12.5us CSR_ALG2=9.1us COO_ALG1=wrong");
  REQUIRE(parse_baseline_mode("best") == BaselineMode::best);
  REQUIRE_FALSE(parse_baseline_mode("cusparse"));
  const auto c =
      std::get<CompileRequest>(round_trip(CompileRequest{"src", "sm_80", {"-DA", "-DB"}, "p.cu"}));
  REQUIRE(c.source == "src");
  REQUIRE(c.arch == "sm_80");
  REQUIRE(c.options == std::vector<std::string>{"-DA", "-DB"});
  REQUIRE(c.name == "p.cu");
}

TEST_CASE("Default-constructed messages round-trip too", "[reward][protocol]") {
  const std::vector<Message> defaults = {Hello{},        CompileRequest{}, CompileResponse{},
                                         GpuRequest{},   GpuResponse{},    TestRequest{},
                                         TestResponse{}, ErrorResponse{},  Shutdown{}};
  for (const Message& m : defaults) {
    INFO("message " << to_string(message_type(m)));
    require_same(m, round_trip(m));
  }
}

TEST_CASE("A truncated payload is a ProtocolError at every cut", "[reward][protocol]") {
  for (const Message& m : every_message()) {
    const std::vector<std::uint8_t> payload = encode_payload(m);
    INFO("message " << to_string(message_type(m)) << " of " << payload.size() << " bytes");
    for (std::size_t cut = 0; cut < payload.size(); ++cut) {
      // Shutdown is one byte: its only cut is the empty payload.
      REQUIRE_THROWS_AS(decode_payload(std::span<const std::uint8_t>(payload.data(), cut)),
                        ProtocolError);
    }
  }
}

TEST_CASE("Trailing bytes, unknown types and bad enum or bool bytes are refused",
          "[reward][protocol]") {
  std::vector<std::uint8_t> p = encode_payload(ErrorResponse{"x"});
  p.push_back(0);
  REQUIRE_THROWS_WITH(decode_payload(p), has_substring("trailing"));

  const std::vector<std::uint8_t> unknown = {0x77};
  REQUIRE_THROWS_WITH(decode_payload(unknown), has_substring("unknown message type 119"));
  REQUIRE_THROWS_WITH(decode_payload(std::vector<std::uint8_t>{}), has_substring("empty"));

  std::vector<std::uint8_t> t = encode_payload(TestRequest{TestAction::echo, 0, ""});
  t[1] = 200;  // the action byte
  REQUIRE_THROWS_WITH(decode_payload(t), has_substring("invalid test action value 200"));

  std::vector<std::uint8_t> g = encode_payload(GpuResponse{});
  g.back() = 2;  // worker_exits is a bool
  REQUIRE_THROWS_WITH(decode_payload(g), has_substring("invalid boolean"));

  std::vector<std::uint8_t> c = encode_payload(CompileResponse{sample_compile_result()});
  c[10] ^= 0xff;  // inside the serialized CompileResult
  REQUIRE_THROWS_AS(decode_payload(c), ProtocolError);
}

TEST_CASE("A forged element count cannot make the reader allocate", "[reward][protocol]") {
  Writer w;
  w.u8(static_cast<std::uint8_t>(MessageType::test_response));
  w.u8(0);             // action
  w.i64(0);            // value
  w.str("");           // text
  w.u32(0x7fffffffu);  // descriptor count: 2^31 elements in a 20-byte message
  REQUIRE_THROWS_WITH(decode_payload(w.data()), has_substring("cannot fit"));

  Writer s;
  s.u8(static_cast<std::uint8_t>(MessageType::error_response));
  s.u32(0xffffffffu);  // a 4 GiB string
  REQUIRE_THROWS_WITH(decode_payload(s.data()), has_substring("truncated"));
}

TEST_CASE("Frame lengths of 0 or over the cap are refused", "[reward][protocol]") {
  const std::array<std::uint8_t, 4> zero = {0, 0, 0, 0};
  REQUIRE_THROWS_WITH(decode_frame_length(zero, 1024), has_substring("length 0"));
  const std::array<std::uint8_t, 4> big = {0x01, 0x04, 0, 0};  // 1025
  REQUIRE_THROWS_WITH(decode_frame_length(big, 1024), has_substring("exceeds the cap of 1024"));
  const std::array<std::uint8_t, 4> ok = {0x00, 0x04, 0, 0};  // 1024
  REQUIRE(decode_frame_length(ok, 1024) == 1024);
  const std::array<std::uint8_t, 4> junk = {0xab, 0xab, 0xab, 0xab};
  REQUIRE_THROWS_AS(decode_frame_length(junk, kDefaultMaxFrameBytes), ProtocolError);
}

TEST_CASE("Garbage and mutated payloads decode or throw ProtocolError, nothing else",
          "[reward][protocol]") {
  sparserl::datasets::Rng rng(2024);
  int decoded = 0, refused = 0;
  auto attempt = [&](const std::vector<std::uint8_t>& bytes) {
    try {
      (void)decode_payload(bytes);
      ++decoded;
    } catch (const ProtocolError&) {
      ++refused;
    }
  };
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<std::uint8_t> bytes(rng.next() % 200);
    for (auto& b : bytes) b = static_cast<std::uint8_t>(rng.next());
    if (!bytes.empty()) bytes[0] = static_cast<std::uint8_t>(1 + rng.next() % 9);  // a real type
    attempt(bytes);
  }
  const std::vector<Message> messages = every_message();
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<std::uint8_t> bytes = encode_payload(messages[rng.next() % messages.size()]);
    const int flips = 1 + static_cast<int>(rng.next() % 4);
    for (int f = 0; f < flips; ++f) {
      bytes[rng.next() % bytes.size()] = static_cast<std::uint8_t>(rng.next());
    }
    attempt(bytes);
  }
  REQUIRE(decoded + refused == 6000);
  REQUIRE(refused > 0);
}

TEST_CASE("read_frame and write_frame carry frames over a pipe", "[reward][protocol]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const auto a = encode_frame(ErrorResponse{"first"});
  const auto b = encode_frame(TestRequest{TestAction::echo, 3, "second"});
  write_frame(fds[1], a);
  write_frame(fds[1], b);
  ::close(fds[1]);
  std::vector<std::uint8_t> payload;
  REQUIRE(read_frame(fds[0], payload, kDefaultMaxFrameBytes));
  REQUIRE(std::get<ErrorResponse>(decode_payload(payload)).message == "first");
  REQUIRE(read_frame(fds[0], payload, kDefaultMaxFrameBytes));
  REQUIRE(std::get<TestRequest>(decode_payload(payload)).path == "second");
  REQUIRE_FALSE(read_frame(fds[0], payload, kDefaultMaxFrameBytes));  // clean end of stream
  ::close(fds[0]);

  SECTION("a stream that ends inside a frame is an error") {
    REQUIRE(::pipe(fds) == 0);
    write_frame(fds[1], std::span<const std::uint8_t>(a.data(), a.size() - 1));
    ::close(fds[1]);
    REQUIRE_THROWS_WITH(read_frame(fds[0], payload, kDefaultMaxFrameBytes),
                        has_substring("ended inside a frame"));
    ::close(fds[0]);
  }
  SECTION("an oversize length is refused before reading the body") {
    REQUIRE(::pipe(fds) == 0);
    const std::uint8_t prefix[4] = {0xff, 0xff, 0xff, 0x0f};
    write_frame(fds[1], prefix);
    ::close(fds[1]);
    REQUIRE_THROWS_WITH(read_frame(fds[0], payload, 4096), has_substring("exceeds the cap"));
    ::close(fds[0]);
  }
}

TEST_CASE("Stage and ErrorKind names round-trip", "[reward][eval_result]") {
  for (Stage s :
       {Stage::parse, Stage::static_check, Stage::compile, Stage::run, Stage::check, Stage::time}) {
    REQUIRE(parse_stage(to_string(s)) == s);
  }
  for (int k = 0; k <= static_cast<int>(ErrorKind::internal_error); ++k) {
    const auto kind = static_cast<ErrorKind>(k);
    REQUIRE(to_string(kind) != "unknown");
    REQUIRE(parse_error_kind(to_string(kind)) == kind);
  }
  REQUIRE(to_string(ErrorKind::illegal_address) == "illegal_address");
  REQUIRE(to_string(Stage::static_check) == "static_check");
  REQUIRE_FALSE(parse_error_kind("segfault").has_value());
  REQUIRE_FALSE(parse_stage("").has_value());
}

TEST_CASE("EvalResult::to_json has every field under stable keys", "[reward][eval_result]") {
  EvalResult r = sample_result();
  r.timing.p90_us = std::nan("");
  r.compile.log = std::string("tab\there \x01 \\ end");
  const std::string j = r.to_json();
  // Keys in this order, each once. A double keeps its '.0' (12.0, 0.0: nlohmann writes a double so
  // that it reads back as one; the hand-written writer printed 12 and 0).
  std::size_t last = 0;
  for (const char* key : {"\"stage\":\"time\"",
                          "\"error\":\"none\"",
                          "\"ok\":true",
                          "\"message\":",
                          "\"static_reason\":\"\"",
                          "\"compiled\":true",
                          "\"correct\":true",
                          "\"timed\":true",
                          "\"gpu_available\":true",
                          "\"compile\":{",
                          "\"compile_ms\":12.5",
                          "\"max_registers\":32",
                          "\"static_smem_bytes\":1024",
                          "\"spill_bytes\":8",
                          "\"local_bytes\":16",
                          "\"arch\":\"sm_90\"",
                          "\"log\":",
                          "\"cached\":true",
                          "\"check\":{",
                          "\"inputs\":4",
                          "\"max_error_ratio\":0.25",
                          "\"bad_outputs\":0",
                          "\"first_bad_row\":-1",
                          "\"timing\":{",
                          "\"median_us\":10.5",
                          "\"p10_us\":9.75",
                          "\"p90_us\":null",
                          "\"launches_per_run\":2",
                          "\"repetitions\":50",
                          "\"baseline_median_us\":12.0",
                          "\"baseline_p10_us\":0.0",
                          "\"baseline_p90_us\":0.0",
                          "\"baseline_algorithm\":\"CSR_ALG2\"",
                          "\"baseline_paths\":\"CSR_ALG1=12.5 CSR_ALG2=12 SELL_ALG1=wrong\"",
                          "\"speedup\":",
                          "\"gflops\":123.0",
                          "\"bandwidth_gbs\":2500.0",
                          "\"bandwidth_fraction\":0.83",
                          "\"baseline_gflops\":100.0",
                          "\"baseline_bandwidth_fraction\":0.7",
                          "\"conversion_ms\":3.5",
                          "\"wall_ms\":40.0",
                          "\"device\":\"NVIDIA H100 80GB HBM3\"",
                          "\"program_digest\":\"aaaa",
                          "\"matrix_digest\":\"0123456789abcdef\"",
                          "\"result_cached\":false",
                          "\"phases_ms\":{\"checks\":0.5,\"gpu.timed\":6.25,\"gpu.final_check\":1.0}"}) {
    INFO(key);
    REQUIRE_THAT(j, has_substring(key));
    const std::size_t at = j.find(key);
    REQUIRE(at >= last);
    REQUIRE(j.find(key, at + 1) == std::string::npos);
    last = at;
  }
  REQUIRE_THAT(j, has_substring(R"("all good \"quoted\"\nnext line")"));
  REQUIRE_THAT(j, has_substring(R"("tab\there \u0001 \\ end")"));
  // A log that is not UTF-8 is still written, as valid JSON: the bad byte becomes U+FFFD.
  r.compile.log = std::string("bad \xff") + " byte";
  REQUIRE_THAT(r.to_json(), has_substring("\"log\":\"bad \xef\xbf\xbd byte\""));
  REQUIRE(j.front() == '{');
  REQUIRE(j.back() == '}');
  REQUIRE(j.find('\n') == std::string::npos);

  EvalResult failed;
  failed.error = ErrorKind::timeout;
  REQUIRE_THAT(failed.to_json(), has_substring("\"error\":\"timeout\",\"ok\":false"));
}

TEST_CASE("A baseline's key names the matrix, op, dtype, k (SpMM only) and baseline mode", "[reward][protocol]") {
  GpuRequest g;
  g.matrix_digest = "abc";
  g.task.op = sparserl::datasets::Op::spmv;
  g.task.dtype = sparserl::datasets::DType::f32;
  g.task.k = 8;  // not SpMM's: ignored
  g.protocol.baseline = BaselineMode::best;
  const std::string spmv = baseline_key(g);
  CHECK(spmv == "abc|spmv|f32|1|best");
  g.protocol.seed = 99;  // another evaluation of the same baseline
  g.baseline_hint = "CSR_ALG2";
  CHECK(baseline_key(g) == spmv);
  g.protocol.baseline = BaselineMode::csr;
  CHECK(baseline_key(g) == "abc|spmv|f32|1|csr");
  g.task.op = sparserl::datasets::Op::spmm;
  g.task.dtype = sparserl::datasets::DType::f64;
  CHECK(baseline_key(g) == "abc|spmm|f64|8|csr");
}

TEST_CASE("GPU cache limits go to the worker as FRACTION,ENTRIES,BYTES and back", "[reward][protocol]") {
  const GpuCacheLimits defaults;
  CHECK(defaults.str() == "0.125,16,8589934592");
  CHECK(GpuCacheLimits::parse(defaults.str()) == defaults);
  const GpuCacheLimits larger{.resident_fraction = 0.3, .matrix_entries = 48,
                              .matrix_bytes = 24ull << 30};
  const auto parsed = GpuCacheLimits::parse(larger.str());
  REQUIRE(parsed);
  CHECK(*parsed == larger);
  CHECK(parsed->resident_fraction == 0.3);  // %.17g: the double itself, not a rounding of it
  // Neither another form nor a value out of range.
  for (const char* bad : {"", "0.3", "0.3,48", "0.3,48,1,2", "x,48,1048576", "0.3,-1,1048576",
                          "0.3,48,", ",48,1048576", "0.3 ,48,1048576", "0.5,48,1048576",
                          "0,48,1048576", "0.3,0,1048576", "0.3,48,1048575", "nan,48,1048576"}) {
    INFO("'" << bad << "'");
    CHECK_FALSE(GpuCacheLimits::parse(bad));
  }
  CHECK_THAT(GpuCacheLimits{.resident_fraction = 0.5}.problem().value_or(""),
             has_substring("(0, 0.45]"));
  CHECK_THAT(GpuCacheLimits{.matrix_entries = 0}.problem().value_or(""),
             has_substring("at least 1 matrix"));
  CHECK_THAT(GpuCacheLimits{.matrix_bytes = 1000}.problem().value_or(""),
             has_substring("at least 1 MiB"));
  CHECK_FALSE(defaults.problem());
}
