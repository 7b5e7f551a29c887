// Safetensors, the weight format of Hugging Face model folders, read and written without LibTorch.
// A file is an 8-byte little-endian header length N, N bytes of JSON (each tensor's dtype, shape
// and [begin, end) byte offsets into the data that follows, plus an optional "__metadata__" object
// of strings), then the tensors' bytes, contiguous and without holes. Files are memory-mapped and
// validated when opened - every offset, shape and size, so a truncated or hand-edited file is
// refused with the file and the tensor named rather than read out of bounds. A model folder holds
// one model.safetensors, or shards listed by model.safetensors.index.json ("weight_map": tensor ->
// file); SafetensorsCheckpoint opens either. Only the float types of language-model weights are
// accepted (F32, BF16, F16); any other dtype is refused by its name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sparserl::agents {

enum class TensorDtype { f32, bf16, f16 };
std::string_view to_string(TensorDtype dtype);  // "F32", "BF16", "F16" (the file's spelling)
std::optional<TensorDtype> parse_tensor_dtype(std::string_view name);
std::size_t element_size(TensorDtype dtype);

// IEEE half and bfloat16 bit patterns to float and back (round to nearest even, as torch does).
float bf16_to_float(std::uint16_t bits);
std::uint16_t float_to_bf16(float value);
float f16_to_float(std::uint16_t bits);

struct TensorEntry {
  std::string name;
  TensorDtype dtype = TensorDtype::f32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;  // byte offsets into the data section
  [[nodiscard]] std::int64_t numel() const;
  [[nodiscard]] std::uint64_t bytes() const { return end - begin; }
};

// One .safetensors file, mapped read-only for the object's lifetime. Throws std::runtime_error
// "FILE: tensor 'NAME': why" (or "FILE: why" for the header) when the file is malformed.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::filesystem::path& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  SafetensorsFile(SafetensorsFile&& other) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&& other) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  // In file order (by offset).
  [[nodiscard]] const std::vector<TensorEntry>& tensors() const { return tensors_; }
  [[nodiscard]] const TensorEntry* find(std::string_view name) const;
  [[nodiscard]] std::span<const std::byte> data(const TensorEntry& entry) const;
  [[nodiscard]] const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::filesystem::path path_;
  const std::byte* mapped_ = nullptr;
  std::size_t mapped_size_ = 0;
  std::size_t data_start_ = 0;
  std::vector<TensorEntry> tensors_;
  std::map<std::string, std::string> metadata_;
};

// The weights of a model folder: model.safetensors, or model.safetensors.index.json and the shards
// it names (each tensor must be in the shard the index gives). Throws std::runtime_error naming
// the folder, the file and the tensor.
class SafetensorsCheckpoint {
 public:
  explicit SafetensorsCheckpoint(const std::filesystem::path& folder);

  struct Tensor {
    const TensorEntry* entry = nullptr;
    const SafetensorsFile* file = nullptr;
    [[nodiscard]] std::span<const std::byte> data() const { return file->data(*entry); }
  };
  [[nodiscard]] std::optional<Tensor> find(std::string_view name) const;
  [[nodiscard]] std::vector<std::string> names() const;  // sorted
  [[nodiscard]] const std::filesystem::path& folder() const { return folder_; }
  [[nodiscard]] bool sharded() const { return files_.size() > 1 || index_; }
  // A SHA-256 of the weights: every tensor's name, dtype and shape, and its bytes - all of them up
  // to 64 KiB, else 16 windows of 4 KiB spread over them. Another model, another fine-tune or
  // another dtype differs; an edit of a few weights inside a large tensor may not.
  [[nodiscard]] std::string weights_digest() const;

 private:
  std::filesystem::path folder_;
  bool index_ = false;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, Tensor, std::less<>> tensors_;
};

// A tensor's values as floats, whatever its dtype (the reference forward of the tests, tools).
std::vector<float> to_floats(TensorDtype dtype, std::span<const std::byte> data);

struct TensorToWrite {
  std::string name;
  TensorDtype dtype = TensorDtype::f32;
  std::vector<std::int64_t> shape;
  std::span<const std::byte> data;  // numel * element_size bytes, little-endian
};

// Writes one .safetensors file: tensors in the given order, the header padded with spaces to a
// multiple of 8 bytes (as the reference implementation does, so the data section is aligned).
// std::invalid_argument for a duplicate name or a size that does not match the shape.
void write_safetensors(const std::filesystem::path& file, std::span<const TensorToWrite> tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Writes a model folder's weights: model.safetensors, or - when max_shard_bytes > 0 and the tensors
// exceed it - shards model-0000i-of-0000n.safetensors (filled in order, a new shard when the next
// tensor would pass the limit) and model.safetensors.index.json, as save_pretrained names them.
// Weight files of an earlier save in the folder are removed first, so no stale index remains.
void write_safetensors_folder(const std::filesystem::path& folder,
                              std::span<const TensorToWrite> tensors,
                              const std::map<std::string, std::string>& metadata = {},
                              std::uint64_t max_shard_bytes = 0);

}  // namespace sparserl::agents
