// The files of a Hugging Face model folder, without a network: safetensors written and read back
// (every dtype, metadata, sharded folders with their index), bf16 / f16 conversions against known
// bit patterns, malformed files refused with the file and the tensor named (truncated, a header
// past the end, not JSON, an unsupported dtype, a size that does not match the shape, overlapping
// or holed offsets, a name used twice, an index naming a tensor its shard lacks), and config.json
// of both families in transformers 4's and 5's spellings, with every unsupported setting refused by
// its key.
#include <cstring>
#include <fstream>
#include <string>

#include "catch.hpp"
#include "sparserl/agents/hf_config.hpp"
#include "sparserl/agents/safetensors.hpp"
#include "test_support.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::agents;
namespace fs = std::filesystem;

std::span<const std::byte> bytes_of(const std::vector<float>& v) {
  return {reinterpret_cast<const std::byte*>(v.data()), v.size() * 4};
}

// A hand-made safetensors file: 8-byte length, the header text as given, `data_bytes` zero bytes.
fs::path raw_file(const fs::path& dir, const std::string& name, const std::string& header,
                  std::size_t data_bytes, std::uint64_t claimed_length = 0) {
  const fs::path path = dir / name;
  std::ofstream out(path, std::ios::binary);
  std::uint64_t length = claimed_length ? claimed_length : header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((length >> (8 * i)) & 0xff));
  out << header << std::string(data_bytes, '\0');
  return path;
}

std::string refusal(const fs::path& path) {
  try {
    SafetensorsFile file(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(accepted)";
}

std::string config_refusal(const std::string& json) {
  try {
    (void)parse_hf_config(json, "dir/config.json");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(accepted)";
}

// A Qwen2.5-Coder-0.5B-like config.json as transformers 4 writes it.
const char* kQwenConfig = R"({
  "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
  "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
  "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 24,
  "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24,
  "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000.0,
  "sliding_window": 32768, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})";

std::string with(std::string json, const std::string& key, const std::string& value) {
  const std::string needle = "\"" + key + "\": ";
  const auto at = json.find(needle);
  if (at == std::string::npos) return json.insert(1, needle + value + ", ");
  const auto end = json.find_first_of(",}", at);
  return json.replace(at + needle.size(), end - at - needle.size(), value);
}

}  // namespace

TEST_CASE("safetensors round-trip every dtype, shape and metadata", "[agents][hf]") {
  const fs::path dir = sparserl::testing::scratch_dir("hf_safetensors_round_trip");
  const std::vector<float> a = {1.0f, -2.5f, 3.25f, 0.0f, 1e-3f, 65504.0f};
  const std::vector<std::uint16_t> b = {float_to_bf16(1.0f), float_to_bf16(-0.15625f)};
  const std::vector<std::uint16_t> h = {0x3c00, 0xc000, 0x0001, 0x7bff};  // 1, -2, 2^-24, 65504
  const std::vector<TensorToWrite> tensors = {
      {"a", TensorDtype::f32, {2, 3}, bytes_of(a)},
      {"b", TensorDtype::bf16, {2}, {reinterpret_cast<const std::byte*>(b.data()), 4}},
      {"scalar", TensorDtype::f16, {}, {reinterpret_cast<const std::byte*>(h.data()), 2}},
      {"h", TensorDtype::f16, {4}, {reinterpret_cast<const std::byte*>(h.data()), 8}},
      {"empty", TensorDtype::f32, {0, 5}, {}}};
  write_safetensors(dir / "x.safetensors", tensors, {{"format", "pt"}});
  // The header is padded so the data section starts 8-byte aligned.
  CHECK((fs::file_size(dir / "x.safetensors") - (4 * 6 + 4 + 2 + 8)) % 8 == 0);

  const SafetensorsFile file(dir / "x.safetensors");
  REQUIRE(file.tensors().size() == 5);
  CHECK(file.metadata().at("format") == "pt");
  const TensorEntry* ea = file.find("a");
  REQUIRE(ea != nullptr);
  CHECK(ea->shape == std::vector<std::int64_t>{2, 3});
  CHECK(to_floats(ea->dtype, file.data(*ea)) == a);
  CHECK(to_floats(TensorDtype::bf16, file.data(*file.find("b"))) ==
        std::vector<float>{1.0f, -0.15625f});
  CHECK(to_floats(TensorDtype::f16, file.data(*file.find("h"))) ==
        std::vector<float>{1.0f, -2.0f, std::ldexp(1.0f, -24), 65504.0f});
  CHECK(file.find("scalar")->shape.empty());
  CHECK(file.find("scalar")->numel() == 1);
  CHECK(file.find("empty")->bytes() == 0);
  CHECK(file.find("missing") == nullptr);
  // bf16 rounds to nearest even: 1 + 2^-8 lies halfway between 1 and 1 + 2^-7.
  CHECK(bf16_to_float(float_to_bf16(1.0f + std::ldexp(1.0f, -8))) == 1.0f);
  CHECK(bf16_to_float(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8))) ==
        1.0f + std::ldexp(1.0f, -6));
}

TEST_CASE("a sharded model folder is read through its index", "[agents][hf]") {
  const fs::path dir = sparserl::testing::scratch_dir("hf_safetensors_sharded");
  std::vector<std::vector<float>> values;
  std::vector<TensorToWrite> tensors;
  for (int i = 0; i < 5; ++i) values.emplace_back(10, static_cast<float>(i));
  for (int i = 0; i < 5; ++i) {
    tensors.push_back({"t" + std::to_string(i), TensorDtype::f32, {10}, bytes_of(values[i])});
  }
  write_safetensors_folder(dir, tensors, {}, 100);  // 40 bytes each: two per shard
  CHECK(fs::exists(dir / "model.safetensors.index.json"));
  CHECK(fs::exists(dir / "model-00003-of-00003.safetensors"));
  CHECK_FALSE(fs::exists(dir / "model.safetensors"));
  const SafetensorsCheckpoint sharded(dir);
  CHECK(sharded.sharded());
  CHECK(sharded.names() == std::vector<std::string>{"t0", "t1", "t2", "t3", "t4"});
  const auto t3 = sharded.find("t3");
  REQUIRE(t3.has_value());
  CHECK(t3->file->path().filename() == "model-00002-of-00003.safetensors");
  CHECK(to_floats(TensorDtype::f32, t3->data()) == values[3]);

  // Saving again unsharded removes the shards and the index.
  write_safetensors_folder(dir, tensors);
  CHECK_FALSE(fs::exists(dir / "model.safetensors.index.json"));
  CHECK_FALSE(fs::exists(dir / "model-00001-of-00003.safetensors"));
  CHECK_FALSE(SafetensorsCheckpoint(dir).sharded());

  // An index that places a tensor in a shard without it names both.
  write_safetensors_folder(dir, tensors, {}, 100);
  std::ofstream(dir / "model.safetensors.index.json")
      << R"({"weight_map": {"t0": "model-00001-of-00003.safetensors",
                             "t4": "model-00001-of-00003.safetensors"}})";
  try {
    SafetensorsCheckpoint broken(dir);
    FAIL("accepted an index naming a tensor its shard lacks");
  } catch (const std::runtime_error& e) {
    CHECK_THAT(e.what(),
               sparserl::testing::has_substring("model-00001-of-00003.safetensors: tensor 't4' is missing"));
  }
  const fs::path empty = sparserl::testing::scratch_dir("hf_safetensors_no_weights");
  std::ofstream(empty / "pytorch_model.bin") << "pickle";
  try {
    SafetensorsCheckpoint none(empty);
    FAIL("accepted a folder without safetensors");
  } catch (const std::runtime_error& e) {
    CHECK_THAT(e.what(), sparserl::testing::has_substring("no model.safetensors") && sparserl::testing::has_substring(".bin"));
  }
}

TEST_CASE("malformed safetensors are refused naming the file and the tensor", "[agents][hf]") {
  const fs::path dir = sparserl::testing::scratch_dir("hf_safetensors_malformed");
  const std::string ok = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  CHECK(refusal(raw_file(dir, "ok.safetensors", ok, 8)) == "(accepted)");

  std::ofstream(dir / "short.safetensors") << "abc";
  CHECK_THAT(refusal(dir / "short.safetensors"),
             sparserl::testing::has_substring("short.safetensors") && sparserl::testing::has_substring("too short"));
  struct Case {
    std::string file, header;
    std::size_t data_bytes;
    std::uint64_t claimed_length;
    std::string expected;
  };
  const auto entry = [](const char* name, const char* dtype, const char* shape, int begin,
                        int end) {
    return "\"" + std::string(name) + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
           ",\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(end) + "]}";
  };
  const std::vector<Case> cases = {
      {"truncated", ok, 4, 0, "truncated.safetensors: tensor 'w': data_offsets end at 8 past"},
      {"length", ok, 8, 1u << 20, "length.safetensors: header length 1048576 exceeds the file"},
      {"json", "{\"w\": [1,", 0, 0, "json.safetensors: the header is not valid JSON"},
      {"i64", "{" + entry("ids", "I64", "[1]", 0, 8) + "}", 8, 0,
       "i64.safetensors: tensor 'ids': dtype I64 is not supported (F32, BF16, F16)"},
      {"size", "{" + entry("w", "BF16", "[3]", 0, 8) + "}", 8, 0,
       "size.safetensors: tensor 'w': data_offsets [0,8] hold 8 bytes, but shape [3] of BF16 "
       "needs 6"},
      {"overlap", "{" + entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "F32", "[1]", 4, 8) + "}",
       8, 0, "overlap.safetensors: tensor 'b': overlaps"},
      {"hole", "{" + entry("a", "F32", "[1]", 0, 4) + "," + entry("b", "F32", "[1]", 8, 12) + "}",
       12, 0, "hole.safetensors: tensor 'b': starts at 8, leaving a hole"},
      {"trailing", ok, 12, 0, "trailing.safetensors: the tensors end at byte 8 of a 12-byte"},
      {"twice", "{" + entry("w", "F32", "[1]", 0, 4) + "," + entry("w", "F32", "[1]", 4, 8) + "}",
       8, 0, "twice.safetensors: tensor 'w': named twice"},
      {"negative", "{" + entry("w", "F32", "[-1]", 0, 4) + "}", 4, 0,
       "negative.safetensors: tensor 'w': shape entries must be"},
      {"meta", R"({"__metadata__":{"format":1}})", 0, 0,
       "meta.safetensors: __metadata__ 'format' must be a string"},
  };
  for (const Case& c : cases) {
    INFO(c.file);
    CHECK_THAT(
        refusal(raw_file(dir, c.file + ".safetensors", c.header, c.data_bytes, c.claimed_length)),
        sparserl::testing::has_substring(c.expected));
  }
  const std::vector<float> three(3, 1.0f);
  const std::vector<TensorToWrite> mismatched = {{"w", TensorDtype::f32, {4}, bytes_of(three)}};
  CHECK_THROWS_WITH(write_safetensors(dir / "w.safetensors", mismatched),
                    sparserl::testing::has_substring("tensor 'w': 12 bytes for a shape of 16"));
}

TEST_CASE("config.json of both families is read in either transformers spelling", "[agents][hf]") {
  const HfModelConfig q = parse_hf_config(kQwenConfig, "qwen/config.json");
  CHECK(q.family == HfFamily::qwen2);
  CHECK(q.hidden_size == 896);
  CHECK(q.num_key_value_heads == 2);
  CHECK(q.head_dim == 64);
  CHECK(q.kv_groups() == 7);
  CHECK(q.qkv_bias());
  CHECK_FALSE(q.o_proj_bias());
  CHECK(q.rope_theta == 1e6);
  CHECK(q.rope_scaling.type == "default");
  CHECK(q.tie_word_embeddings);
  CHECK(q.torch_dtype == "bfloat16");
  CHECK(q.eos_token_ids == std::vector<std::int64_t>{151643});
  CHECK_FALSE(q.pad_token_id.has_value());
  // Qwen2.5-Coder-0.5B has 494,032,768 parameters (tied), as its model card says 0.49B.
  CHECK(q.parameter_count() == 494032768);

  // transformers 5: rope_parameters and dtype; Llama with GQA defaults and a list of eos ids.
  const HfModelConfig l = parse_hf_config(
      R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
          "num_hidden_layers": 2, "num_attention_heads": 8, "vocab_size": 100,
          "dtype": "float32", "eos_token_id": [5, 6], "attention_bias": true,
          "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                              "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                              "original_max_position_embeddings": 8192}})",
      "llama/config.json");
  CHECK(l.family == HfFamily::llama);
  CHECK(l.num_key_value_heads == 8);  // absent: no grouping
  CHECK(l.head_dim == 8);
  CHECK(l.max_position_embeddings == 2048);  // Llama's default
  CHECK(l.qkv_bias());
  CHECK(l.o_proj_bias());
  CHECK(l.rope_theta == 500000.0);
  CHECK(l.rope_scaling.type == "llama3");
  CHECK(l.rope_scaling.factor == 8.0);
  CHECK(l.rope_scaling.original_max_position_embeddings == 8192);
  CHECK(l.eos_token_ids == std::vector<std::int64_t>{5, 6});
  CHECK_FALSE(l.tie_word_embeddings);

  // An absent key is the family's default, as save_pretrained leaves defaults out: LlamaConfig's
  // are Llama-2-7B's (6,738,415,616 parameters).
  const HfModelConfig defaults = parse_hf_config(R"({"model_type": "llama"})", "l2/config.json");
  CHECK(defaults.parameter_count() == 6738415616);
  CHECK(defaults.bos_token_id == 1);
  CHECK(defaults.eos_token_ids == std::vector<std::int64_t>{2});

  // Per-layer-type rope_parameters (transformers 5 with layer_types).
  const HfModelConfig nested =
      parse_hf_config(with(kQwenConfig, "rope_parameters",
                           R"({"full_attention": {"rope_type": "default", "rope_theta": 5000.0}})"),
                      "nested/config.json");
  CHECK(nested.rope_theta == 5000.0);
}

TEST_CASE("config.json settings the decoder lacks are refused by key", "[agents][hf]") {
  CHECK_THAT(config_refusal(with(kQwenConfig, "model_type", "\"mistral\"")),
             sparserl::testing::has_substring("dir/config.json: key 'model_type': 'mistral' is not supported"));
  CHECK_THAT(config_refusal(R"({"hidden_size": 8})"),
             sparserl::testing::has_substring("dir/config.json: key 'model_type': missing"));
  CHECK_THAT(config_refusal(with(kQwenConfig, "hidden_size", "\"896\"")),
             sparserl::testing::has_substring("key 'hidden_size': expected an integer, got \"896\""));
  CHECK_THAT(config_refusal(with(kQwenConfig, "num_hidden_layers", "0")),
             sparserl::testing::has_substring("key 'num_hidden_layers': expected at least 1"));
  CHECK_THAT(
      config_refusal(with(kQwenConfig, "num_key_value_heads", "4")),
      sparserl::testing::has_substring("num_attention_heads = 14: not a multiple of num_key_value_heads = 4"));
  CHECK_THAT(config_refusal(with(kQwenConfig, "hidden_act", "\"gelu\"")),
             sparserl::testing::has_substring("hidden_act = 'gelu': only silu"));
  CHECK_THAT(config_refusal(with(kQwenConfig, "use_sliding_window", "true")),
             sparserl::testing::has_substring("key 'use_sliding_window': sliding-window attention"));
  CHECK_THAT(config_refusal(with(kQwenConfig, "rope_scaling", R"({"type": "yarn", "factor": 4})")),
             sparserl::testing::has_substring("key 'rope_scaling.rope_type': 'yarn' is not implemented"));
  CHECK_THAT(config_refusal(with(kQwenConfig, "partial_rotary_factor", "0.5")),
             sparserl::testing::has_substring("key 'partial_rotary_factor': partial rotary"));
  CHECK_THAT(config_refusal(
                 with(kQwenConfig, "layer_types", R"(["full_attention", "sliding_attention"])")),
             sparserl::testing::has_substring("key 'layer_types': \"sliding_attention\" layers"));
  CHECK_THAT(config_refusal(with(kQwenConfig, "torch_dtype", "\"int8\"")),
             sparserl::testing::has_substring("torch_dtype = 'int8'"));
  CHECK_THAT(config_refusal("[1, 2]"), sparserl::testing::has_substring("dir/config.json: expected a JSON object"));
  CHECK_THROWS_WITH(read_hf_config("/nonexistent/folder"),
                    sparserl::testing::has_substring("/nonexistent/folder") && sparserl::testing::has_substring("cannot read"));
}

TEST_CASE("config.json is written back with the keys it came with", "[agents][hf]") {
  HfModelConfig q = parse_hf_config(kQwenConfig, "qwen/config.json");
  q.torch_dtype = "float32";
  const std::string text = hf_config_json(q);
  CHECK_THAT(text, sparserl::testing::has_substring("\"initializer_range\": 0.02"));  // not modelled, kept
  CHECK_THAT(text, sparserl::testing::has_substring("\"dtype\": \"float32\""));
  CHECK_THAT(text, sparserl::testing::has_substring("\"torch_dtype\": \"float32\""));
  CHECK_THAT(text, sparserl::testing::has_substring("\"rope_scaling\": null"));
  CHECK_THAT(text, !sparserl::testing::has_substring("\"attention_bias\""));  // not a Qwen2 key
  const HfModelConfig again = parse_hf_config(text, "again/config.json");
  CHECK(again.hidden_size == q.hidden_size);
  CHECK(again.rope_theta == q.rope_theta);
  CHECK(again.torch_dtype == "float32");
  CHECK(hf_config_json(again) == text);  // writing is deterministic

  HfModelConfig scaled = parse_hf_config(
      with(kQwenConfig, "rope_scaling", R"({"rope_type": "linear", "factor": 2.0})"), "s");
  const HfModelConfig read_back = parse_hf_config(hf_config_json(scaled), "s2");
  CHECK(read_back.rope_scaling.type == "linear");
  CHECK(read_back.rope_scaling.factor == 2.0);
}
