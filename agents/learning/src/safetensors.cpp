// Reading and writing safetensors (safetensors.hpp): the header is parsed with nlohmann-json and
// checked entry by entry before any tensor is touched - known dtype, non-negative shape, offsets
// inside the data section, byte size equal to the shape's, no overlaps, no holes, no duplicate
// names - so every later read is in bounds. Files are mapped with mmap (read-only, private).
#include "sparserl/agents/safetensors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <stdexcept>

#include "sparserl/datasets/enum_names.hpp"
#include "sparserl/reward/digest.hpp"

namespace sparserl::agents {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; this reader copies bytes as they are");

// The dtypes a file may hold, in the file's spelling.
constexpr auto kTensorDtypes =
    datasets::enum_names<TensorDtype::f32, TensorDtype::f16>({"F32", "BF16", "F16"});

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The reference implementation refuses headers above 100 MB; so do we.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

[[noreturn]] void fail(const fs::path& file, const std::string& why) {
  throw std::runtime_error(file.string() + ": " + why);
}

[[noreturn]] void fail_tensor(const fs::path& file, const std::string& name,
                              const std::string& why) {
  fail(file, "tensor '" + name + "': " + why);
}

// The header's JSON, refusing a name that appears twice at the top level (nlohmann keeps the last
// one silently).
json parse_header(const fs::path& file, std::string_view text) {
  std::set<std::string> seen;
  std::string duplicate;
  const json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& value) {
    if (depth == 1 && event == json::parse_event_t::key && value.is_string()) {
      if (!seen.insert(value.get<std::string>()).second && duplicate.empty()) {
        duplicate = value.get<std::string>();
      }
    }
    return true;
  };
  json header;
  try {
    header = json::parse(text.begin(), text.end(), check);
  } catch (const json::parse_error& e) {
    fail(file, std::string("the header is not valid JSON: ") + e.what());
  }
  if (!duplicate.empty()) fail_tensor(file, duplicate, "named twice in the header");
  if (!header.is_object()) fail(file, "the header is not a JSON object");
  return header;
}

std::uint64_t unsigned_at(const fs::path& file, const std::string& name, const json& value,
                          const char* what) {
  if (!value.is_number_unsigned()) {
    fail_tensor(file, name,
                std::string(what) + " must be non-negative integers, got " + value.dump());
  }
  return value.get<std::uint64_t>();
}

TensorEntry parse_entry(const fs::path& file, const std::string& name, const json& spec) {
  if (!spec.is_object()) fail_tensor(file, name, "expected an object, got " + spec.dump());
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!spec.contains(key)) fail_tensor(file, name, std::string("missing '") + key + "'");
  }
  TensorEntry entry;
  entry.name = name;
  if (!spec["dtype"].is_string()) fail_tensor(file, name, "dtype must be a string");
  const std::string dtype = spec["dtype"].get<std::string>();
  const auto parsed = parse_tensor_dtype(dtype);
  if (!parsed)
    fail_tensor(file, name,
                "dtype " + dtype + " is not supported (" + kTensorDtypes.list(", ") + ")");
  entry.dtype = *parsed;
  if (!spec["shape"].is_array()) fail_tensor(file, name, "shape must be an array");
  std::uint64_t numel = 1;
  for (const json& d : spec["shape"]) {
    const std::uint64_t n = unsigned_at(file, name, d, "shape entries");
    if (n != 0 && numel > std::numeric_limits<std::uint64_t>::max() / 8 / n) {
      fail_tensor(file, name, "shape " + spec["shape"].dump() + " overflows");
    }
    numel *= n;
    entry.shape.push_back(static_cast<std::int64_t>(n));
  }
  const json& offsets = spec["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2) {
    fail_tensor(file, name, "data_offsets must be [begin, end], got " + offsets.dump());
  }
  entry.begin = unsigned_at(file, name, offsets[0], "data_offsets");
  entry.end = unsigned_at(file, name, offsets[1], "data_offsets");
  if (entry.end < entry.begin) {
    fail_tensor(file, name, "data_offsets " + offsets.dump() + " end before they begin");
  }
  const std::uint64_t expected = numel * element_size(entry.dtype);
  if (entry.bytes() != expected) {
    fail_tensor(file, name,
                "data_offsets " + offsets.dump() + " hold " + std::to_string(entry.bytes()) +
                    " bytes, but shape " + spec["shape"].dump() + " of " + dtype + " needs " +
                    std::to_string(expected));
  }
  return entry;
}

std::map<std::string, std::string> parse_metadata(const fs::path& file, const json& value) {
  if (!value.is_object()) fail(file, "__metadata__ must be an object of strings");
  std::map<std::string, std::string> out;
  for (const auto& [key, text] : value.items()) {
    if (!text.is_string()) fail(file, "__metadata__ '" + key + "' must be a string");
    out[key] = text.get<std::string>();
  }
  return out;
}

// Entries in offset order must tile the data section exactly.
void check_layout(const fs::path& file, std::vector<TensorEntry>& tensors,
                  std::uint64_t data_bytes) {
  std::sort(tensors.begin(), tensors.end(), [](const TensorEntry& a, const TensorEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t at = 0;
  for (const TensorEntry& t : tensors) {
    if (t.end > data_bytes) {
      fail_tensor(file, t.name,
                  "data_offsets end at " + std::to_string(t.end) + " past the data section (" +
                      std::to_string(data_bytes) + " bytes; truncated file?)");
    }
    if (t.begin < at) fail_tensor(file, t.name, "overlaps the tensor before it");
    if (t.begin > at) {
      fail_tensor(file, t.name,
                  "starts at " + std::to_string(t.begin) + ", leaving a hole after byte " +
                      std::to_string(at));
    }
    at = t.end;
  }
  if (at != data_bytes) {
    fail(file, "the tensors end at byte " + std::to_string(at) + " of a " +
                   std::to_string(data_bytes) + "-byte data section");
  }
}

void write_bytes(const fs::path& file, const std::string& header, std::uint64_t header_length,
                 std::span<const TensorToWrite> tensors) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(file.string() + ": cannot write");
  char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<char>((header_length >> (8 * i)) & 0xff);
  out.write(length, 8);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  for (const TensorToWrite& t : tensors) {
    out.write(reinterpret_cast<const char*>(t.data.data()),
              static_cast<std::streamsize>(t.data.size()));
  }
  if (!out.flush()) throw std::runtime_error(file.string() + ": write failed");
}

std::uint64_t checked_bytes(const TensorToWrite& t) {
  std::uint64_t numel = 1;
  for (std::int64_t d : t.shape) {
    if (d < 0) throw std::invalid_argument("safetensors: tensor '" + t.name + "': negative shape");
    numel *= static_cast<std::uint64_t>(d);
  }
  const std::uint64_t bytes = numel * element_size(t.dtype);
  if (bytes != t.data.size()) {
    throw std::invalid_argument("safetensors: tensor '" + t.name +
                                "': " + std::to_string(t.data.size()) + " bytes for a shape of " +
                                std::to_string(bytes));
  }
  return bytes;
}

}  // namespace

std::string_view to_string(TensorDtype dtype) { return kTensorDtypes.name(dtype); }

std::optional<TensorDtype> parse_tensor_dtype(std::string_view name) {
  return kTensorDtypes.parse(name);
}

std::size_t element_size(TensorDtype dtype) { return dtype == TensorDtype::f32 ? 4 : 2; }

float bf16_to_float(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

std::uint16_t float_to_bf16(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7fffffffU) > 0x7f800000U) return static_cast<std::uint16_t>((bits >> 16) | 0x40);
  const std::uint32_t rounding = 0x7fffU + ((bits >> 16) & 1U);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

float f16_to_float(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000U) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1fU;
  std::uint32_t mantissa = bits & 0x3ffU;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000U | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0) return std::bit_cast<float>(sign);
    // Subnormal half: a normal float once the mantissa is shifted up.
    int e = -1;
    do {
      ++e;
      mantissa <<= 1;
    } while ((mantissa & 0x400U) == 0);
    return std::bit_cast<float>(sign | static_cast<std::uint32_t>(127 - 15 - e) << 23 |
                                (mantissa & 0x3ffU) << 13);
  }
  return std::bit_cast<float>(sign | (exponent + 127 - 15) << 23 | mantissa << 13);
}

std::int64_t TensorEntry::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

SafetensorsFile::SafetensorsFile(const fs::path& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    ::close(fd);
    fail(path, "cannot stat");
  }
  mapped_size_ = static_cast<std::size_t>(info.st_size);
  if (mapped_size_ < 8) {
    ::close(fd);
    fail(path, std::to_string(mapped_size_) + " bytes: too short for a safetensors header");
  }
  void* address = ::mmap(nullptr, mapped_size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (address == MAP_FAILED) fail(path, std::string("cannot map: ") + std::strerror(errno));
  mapped_ = static_cast<const std::byte*>(address);

  try {
    std::uint64_t header_length = 0;
    for (int i = 7; i >= 0; --i) {
      header_length = (header_length << 8) | std::to_integer<std::uint64_t>(mapped_[i]);
    }
    if (header_length > kMaxHeaderBytes || header_length > mapped_size_ - 8) {
      fail(path, "header length " + std::to_string(header_length) + " exceeds the file (" +
                     std::to_string(mapped_size_) + " bytes; not a safetensors file?)");
    }
    const std::string_view text(reinterpret_cast<const char*>(mapped_ + 8), header_length);
    if (text.empty() || text.front() != '{') fail(path, "the header does not start with '{'");
    const json header = parse_header(path, text);
    data_start_ = 8 + static_cast<std::size_t>(header_length);
    for (const auto& [name, spec] : header.items()) {
      if (name == "__metadata__") {
        metadata_ = parse_metadata(path, spec);
      } else {
        tensors_.push_back(parse_entry(path, name, spec));
      }
    }
    check_layout(path, tensors_, mapped_size_ - data_start_);
  } catch (...) {
    ::munmap(const_cast<std::byte*>(mapped_), mapped_size_);
    mapped_ = nullptr;
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (mapped_ != nullptr) ::munmap(const_cast<std::byte*>(mapped_), mapped_size_);
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& other) noexcept
    : path_(std::move(other.path_)),
      mapped_(std::exchange(other.mapped_, nullptr)),
      mapped_size_(other.mapped_size_),
      data_start_(other.data_start_),
      tensors_(std::move(other.tensors_)),
      metadata_(std::move(other.metadata_)) {}

const TensorEntry* SafetensorsFile::find(std::string_view name) const {
  for (const TensorEntry& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::span<const std::byte> SafetensorsFile::data(const TensorEntry& entry) const {
  return {mapped_ + data_start_ + entry.begin, static_cast<std::size_t>(entry.bytes())};
}

SafetensorsCheckpoint::SafetensorsCheckpoint(const fs::path& folder) : folder_(folder) {
  const fs::path single = folder / "model.safetensors";
  const fs::path index = folder / "model.safetensors.index.json";
  if (fs::exists(index)) {
    index_ = true;
    json parsed;
    try {
      std::ifstream in(index);
      parsed = json::parse(in);
    } catch (const json::exception& e) {
      fail(index, std::string("not valid JSON: ") + e.what());
    }
    if (!parsed.contains("weight_map") || !parsed["weight_map"].is_object()) {
      fail(index, "missing the 'weight_map' object");
    }
    std::map<std::string, const SafetensorsFile*> opened;
    for (const auto& [name, shard] : parsed["weight_map"].items()) {
      if (!shard.is_string()) fail(index, "weight_map '" + name + "' must name a file");
      const std::string file = shard.get<std::string>();
      if (file.find('/') != std::string::npos || file == ".." || file.empty()) {
        fail(index, "weight_map '" + name + "' names '" + file + "' outside the folder");
      }
      if (!opened.contains(file)) {
        files_.push_back(std::make_unique<SafetensorsFile>(folder / file));
        opened[file] = files_.back().get();
      }
      const TensorEntry* entry = opened[file]->find(name);
      if (entry == nullptr) {
        fail(folder / file, "tensor '" + name + "' is missing (" + index.filename().string() +
                                " places it in this shard)");
      }
      tensors_[name] = {entry, opened[file]};
    }
  } else if (fs::exists(single)) {
    files_.push_back(std::make_unique<SafetensorsFile>(single));
    for (const TensorEntry& t : files_.back()->tensors())
      tensors_[t.name] = {&t, files_.back().get()};
  } else {
    const bool pickled = fs::exists(folder / "pytorch_model.bin") ||
                         fs::exists(folder / "pytorch_model.bin.index.json");
    fail(folder, std::string("no model.safetensors or model.safetensors.index.json") +
                     (pickled ? " (the folder has PyTorch .bin weights: re-save them with "
                                "save_pretrained, which writes safetensors)"
                              : ""));
  }
}

std::optional<SafetensorsCheckpoint::Tensor> SafetensorsCheckpoint::find(
    std::string_view name) const {
  const auto found = tensors_.find(name);
  if (found == tensors_.end()) return std::nullopt;
  return found->second;
}

std::vector<std::string> SafetensorsCheckpoint::names() const {
  std::vector<std::string> out;
  for (const auto& [name, tensor] : tensors_) out.push_back(name);
  return out;
}

std::string SafetensorsCheckpoint::weights_digest() const {
  // Small tensors whole; larger ones through 16 windows spread over their bytes, so the digest of a
  // 7B model reads megabytes, not gigabytes.
  constexpr std::size_t kWhole = 64 * 1024, kWindow = 4 * 1024, kWindows = 16;
  reward::Sha256 sha;
  for (const auto& [name, tensor] : tensors_) {
    const TensorEntry& e = *tensor.entry;
    sha.update_field(name).update_field(to_string(e.dtype));
    for (const std::int64_t d : e.shape) sha.update_field(std::to_string(d));
    const std::span<const std::byte> bytes = tensor.data();
    const auto text = [](std::span<const std::byte> b) {
      return std::string_view(reinterpret_cast<const char*>(b.data()), b.size());
    };
    if (bytes.size() <= kWhole) {
      sha.update_field(text(bytes));
      continue;
    }
    for (std::size_t w = 0; w < kWindows; ++w) {
      const std::size_t at = (bytes.size() - kWindow) * w / (kWindows - 1);
      sha.update_field(text(bytes.subspan(at, kWindow)));
    }
  }
  return sha.finish_hex();
}

std::vector<float> to_floats(TensorDtype dtype, std::span<const std::byte> data) {
  const std::size_t n = data.size() / element_size(dtype);
  std::vector<float> out(n);
  if (dtype == TensorDtype::f32) {
    std::memcpy(out.data(), data.data(), n * 4);
    return out;
  }
  for (std::size_t i = 0; i < n; ++i) {
    std::uint16_t bits = 0;
    std::memcpy(&bits, data.data() + 2 * i, 2);
    out[i] = dtype == TensorDtype::bf16 ? bf16_to_float(bits) : f16_to_float(bits);
  }
  return out;
}

void write_safetensors(const fs::path& file, std::span<const TensorToWrite> tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  std::set<std::string> names;
  for (const TensorToWrite& t : tensors) {
    if (t.name == "__metadata__" || !names.insert(t.name).second) {
      throw std::invalid_argument("safetensors: tensor name '" + t.name + "' used twice");
    }
    const std::uint64_t bytes = checked_bytes(t);
    header[t.name] = {{"dtype", to_string(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  write_bytes(file, text, text.size(), tensors);
}

void write_safetensors_folder(const fs::path& folder, std::span<const TensorToWrite> tensors,
                              const std::map<std::string, std::string>& metadata,
                              std::uint64_t max_shard_bytes) {
  fs::create_directories(folder);
  const std::regex shard_name(R"(model-\d{5}-of-\d{5}\.safetensors)");
  for (const auto& entry : fs::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (name == "model.safetensors" || name == "model.safetensors.index.json" ||
        std::regex_match(name, shard_name)) {
      fs::remove(entry.path());
    }
  }
  // Shards: [first, last) ranges of `tensors`.
  std::vector<std::pair<std::size_t, std::size_t>> shards;
  std::uint64_t total = 0, in_shard = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::uint64_t bytes = checked_bytes(tensors[i]);
    if (shards.empty() ||
        (max_shard_bytes > 0 && in_shard > 0 && in_shard + bytes > max_shard_bytes)) {
      shards.emplace_back(i, i);
      in_shard = 0;
    }
    shards.back().second = i + 1;
    in_shard += bytes;
    total += bytes;
  }
  if (shards.size() <= 1) {
    write_safetensors(folder / "model.safetensors", tensors, metadata);
    return;
  }
  json weight_map = json::object();
  char name[64];
  for (std::size_t s = 0; s < shards.size(); ++s) {
    std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", s + 1, shards.size());
    const auto [first, last] = shards[s];
    write_safetensors(folder / name, tensors.subspan(first, last - first), metadata);
    for (std::size_t i = first; i < last; ++i) weight_map[tensors[i].name] = name;
  }
  const json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  std::ofstream out(folder / "model.safetensors.index.json", std::ios::trunc);
  out << index.dump(2) << "\n";
  if (!out.flush())
    throw std::runtime_error((folder / "model.safetensors.index.json").string() + ": write failed");
}

}  // namespace sparserl::agents
