// The compile cache: keys change with everything that changes the cubin, identical requests give
// identical results, the LRU is bounded, the disk store survives a new process and shrugs off
// corrupt files, and concurrent users get consistent answers. Most cases use a counting stand-in
// compiler; one goes through NVRTC.
#include "sparserl/reward/compile_cache.hpp"

#include <atomic>
#include <fstream>
#include <thread>

#include "catch.hpp"
#include "test_support.hpp"

using namespace sparserl::reward;

namespace {

CompileRequest request(const std::string& source, const std::string& arch = "sm_90") {
  CompileRequest r;
  r.source = source;
  r.arch = arch;
  return r;
}

// A deterministic stand-in for NVRTC that counts its calls.
struct FakeCompiler {
  std::atomic<int> calls{0};
  CompileResult operator()(const CompileRequest& r) {
    ++calls;
    CompileResult out;
    out.ok = r.source.find("broken") == std::string::npos;
    out.internal_error = r.source.find("internal") != std::string::npos;
    out.log = "log of " + r.source;
    if (out.ok) out.cubin = "cubin:" + r.source + ":" + r.arch;
    out.kernels = {{"k", 16, 0, 0, 0, 0, 0}};
    out.arch = r.arch;
    out.nvrtc_version = "13.0";
    out.compile_ms = 10;
    return out;
  }
};

std::function<CompileResult(const CompileRequest&)> use(FakeCompiler& fake) {
  return [&fake](const CompileRequest& r) { return fake(r); };
}

}  // namespace

TEST_CASE("cache keys change with source, arch, options and compiler version",
          "[reward][compile_cache]") {
  const std::string prelude_f32 = "typedef float value_t;\n#define M 10\n";
  const std::string prelude_f64 = "typedef double value_t;\n#define M 10\n";
  const std::string program = "extern \"C\" __global__ void k() {}\n";
  const std::string key = compile_cache_key(request(prelude_f32 + program), "13.0");
  CHECK(key.size() == 64);
  CHECK(key == compile_cache_key(request(prelude_f32 + program), "13.0"));
  CHECK(key != compile_cache_key(request(prelude_f64 + program), "13.0"));
  CHECK(key !=
        compile_cache_key(request("typedef float value_t;\n#define M 11\n" + program), "13.0"));
  CHECK(key != compile_cache_key(request(prelude_f32 + program, "sm_80"), "13.0"));
  CHECK(key != compile_cache_key(request(prelude_f32 + program), "12.8"));
  CompileRequest with_option = request(prelude_f32 + program);
  with_option.options = {"--use_fast_math"};
  CHECK(key != compile_cache_key(with_option, "13.0"));
}

TEST_CASE("identical requests compile once and give identical results", "[reward][compile_cache]") {
  FakeCompiler fake;
  CompileCache cache;
  const CompileResult first = cache.get_or_compile(request("a"), use(fake));
  const CompileResult second = cache.get_or_compile(request("a"), use(fake));
  CHECK(fake.calls == 1);
  CHECK_FALSE(first.cached);
  CHECK(second.cached);
  CompileResult second_uncached = second;
  second_uncached.cached = false;
  CHECK(second_uncached == first);
  // A changed prelude or arch misses.
  cache.get_or_compile(request("b"), use(fake));
  cache.get_or_compile(request("a", "sm_80"), use(fake));
  CHECK(fake.calls == 3);
  // Compile errors are cached, internal errors are not.
  cache.get_or_compile(request("broken"), use(fake));
  CHECK(cache.get_or_compile(request("broken"), use(fake)).cached);
  CHECK(fake.calls == 4);
  cache.get_or_compile(request("internal"), use(fake));
  CHECK_FALSE(cache.get_or_compile(request("internal"), use(fake)).cached);
  CHECK(fake.calls == 6);
  const CompileCacheStats s = cache.stats();
  CHECK(s.hits == 2);
  CHECK(s.misses == 6);
  CHECK(s.entries == 4);
}

TEST_CASE("the memory level is a bounded LRU", "[reward][compile_cache]") {
  FakeCompiler fake;
  CompileCacheOptions options;
  options.max_entries = 2;
  CompileCache cache(options);
  cache.get_or_compile(request("a"), use(fake));
  cache.get_or_compile(request("b"), use(fake));
  cache.get_or_compile(request("a"), use(fake));  // a is now the most recent
  cache.get_or_compile(request("c"), use(fake));  // evicts b
  CHECK(fake.calls == 3);
  CHECK(cache.stats().entries == 2);
  CHECK(cache.get_or_compile(request("a"), use(fake)).cached);
  CHECK_FALSE(cache.get_or_compile(request("b"), use(fake)).cached);
  CHECK(fake.calls == 4);
}

TEST_CASE("the disk store survives the process and ignores corrupt files",
          "[reward][compile_cache]") {
  const auto dir = sparserl::testing::scratch_dir("compile_cache_disk");
  CompileCacheOptions options;
  options.directory = dir;
  FakeCompiler fake;
  const std::string key = compile_cache_key(request("a"), nvrtc_version());
  CompileResult original;
  {
    CompileCache cache(options);
    original = cache.get_or_compile(request("a"), use(fake));
  }
  REQUIRE(std::filesystem::exists(dir / (key + ".compile")));
  {
    CompileCache fresh(options);  // as a new process would
    const CompileResult again = fresh.get_or_compile(request("a"), use(fake));
    CHECK(fake.calls == 1);
    CHECK(again.cached);
    CHECK(fresh.stats().disk_hits == 1);
    CompileResult uncached = again;
    uncached.cached = false;
    CHECK(uncached == original);
  }
  const auto corrupt = [&](const std::string& bytes) {
    std::ofstream(dir / (key + ".compile"), std::ios::binary | std::ios::trunc) << bytes;
    CompileCache fresh(options);
    const int before = fake.calls;
    const CompileResult r = fresh.get_or_compile(request("a"), use(fake));
    CHECK(fake.calls == before + 1);  // recompiled
    CHECK_FALSE(r.cached);
    CHECK(fresh.stats().corrupt_files == 1);
    // ... and the file was replaced by a good one.
    CompileCache next(options);
    CHECK(next.get_or_compile(request("a"), use(fake)).cached);
  };
  std::string good;
  {
    std::ifstream in(dir / (key + ".compile"), std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(in), {});
  }
  corrupt("garbage");
  corrupt(good.substr(0, good.size() / 2));
  std::string flipped = good;
  flipped[flipped.size() - 3] ^= 0x20;
  corrupt(flipped);
  // A good file under another key's name is not that key's result.
  {
    CompileCache cache(options);
    cache.get_or_compile(request("b"), use(fake));
  }
  const std::string key_b = compile_cache_key(request("b"), nvrtc_version());
  std::filesystem::copy_file(dir / (key_b + ".compile"), dir / (key + ".compile"),
                             std::filesystem::copy_options::overwrite_existing);
  CompileCache fresh(options);
  CHECK_FALSE(fresh.find(key).has_value());
  CHECK(fresh.stats().corrupt_files == 1);
  // No temporary files are left behind.
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    CHECK(entry.path().extension() == ".compile");
  }
}

TEST_CASE("concurrent users get consistent answers", "[reward][compile_cache]") {
  FakeCompiler fake;
  CompileCacheOptions options;
  options.max_entries = 8;  // smaller than the key set: evictions happen under contention
  CompileCache cache(options);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        const std::string source = "src" + std::to_string((i * 7 + t) % 12);
        const CompileResult r = cache.get_or_compile(request(source), use(fake));
        if (r.cubin != "cubin:" + source + ":sm_90") ++wrong;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(wrong == 0);
  const CompileCacheStats s = cache.stats();
  CHECK(s.hits + s.misses == 1800);
  CHECK(s.misses == static_cast<std::uint64_t>(fake.calls.load()));
  CHECK(s.entries <= 8);
}

TEST_CASE("a real compile through the cache is byte-identical on a hit",
          "[reward][compile_cache]") {
  CompileCache cache;
  const CompileRequest r =
      request("typedef float value_t;\nextern \"C\" __global__ void k(value_t* y) { y[0] = 1; }\n");
  const CompileResult first = cache.get_or_compile(r);
  REQUIRE(first.ok);
  const CompileResult second = cache.get_or_compile(r);
  CHECK(second.cached);
  CHECK(second.cubin == first.cubin);
  CHECK(second.kernels == first.kernels);
  CHECK(second.log == first.log);
}
