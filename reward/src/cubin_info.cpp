// Reading kernel figures out of a cubin's ELF image (cubin_info.hpp). Every offset and size is checked
// against the image before it is read: the bytes come from a compile worker.
#include "sparserl/reward/cubin_info.hpp"

#include <cstring>
#include <map>

namespace sparserl::reward {
namespace {

constexpr std::uint32_t kShtSymtab = 2;
constexpr std::uint8_t kSttFunc = 2;
constexpr std::uint8_t kStbGlobal = 1;
constexpr std::uint8_t kEifmtSval = 0x04;  // .nv.info record with a 16-bit size and a payload
constexpr std::uint8_t kEifmtHval = 0x03;  // .nv.info record with a 16-bit value
constexpr std::uint8_t kEifmtBval = 0x02;  // .nv.info record with an 8-bit value (padded)
constexpr std::uint8_t kEifmtNval = 0x01;  // .nv.info record without a value (padded)
constexpr std::uint8_t kEiattrFrameSize = 0x11;
constexpr std::uint8_t kEiattrRegcount = 0x2f;
constexpr std::uint64_t kReservedSharedBytes = 1024;

class Image {
 public:
  explicit Image(std::string_view bytes) : bytes_(bytes) {}
  template <typename T>
  bool read(std::uint64_t offset, T& out) const {
    if (offset > bytes_.size() || bytes_.size() - offset < sizeof(T)) return false;
    std::memcpy(&out, bytes_.data() + offset, sizeof(T));
    return true;
  }
  bool range(std::uint64_t offset, std::uint64_t size) const {
    return offset <= bytes_.size() && size <= bytes_.size() - offset;
  }
  std::string_view view(std::uint64_t offset, std::uint64_t size) const {
    return bytes_.substr(static_cast<std::size_t>(offset), static_cast<std::size_t>(size));
  }
  std::string c_string(std::uint64_t offset, std::uint64_t limit) const {
    if (offset >= limit || limit > bytes_.size()) return {};
    const char* start = bytes_.data() + offset;
    const void* nul = std::memchr(start, '\0', static_cast<std::size_t>(limit - offset));
    return nul == nullptr ? std::string() : std::string(start, static_cast<const char*>(nul));
  }

 private:
  std::string_view bytes_;
};

struct Section {
  std::string name;
  std::uint32_t type = 0;
  std::uint64_t offset = 0, size = 0;
  std::uint32_t link = 0;
};

bool fail(std::string* error, const std::string& why) {
  if (error != nullptr) *error = why;
  return false;
}

}  // namespace

std::optional<CubinInfo> read_cubin_info(std::string_view elf, std::string* error) {
  const Image image(elf);
  if (elf.size() < 64 || std::memcmp(elf.data(), "\x7f" "ELF", 4) != 0 || elf[4] != 2 || elf[5] != 1) {
    fail(error, "not a 64-bit little-endian ELF image");
    return std::nullopt;
  }
  std::uint64_t shoff = 0;
  std::uint16_t shentsize = 0, shnum = 0, shstrndx = 0;
  image.read(0x28, shoff);
  image.read(0x3a, shentsize);
  image.read(0x3c, shnum);
  image.read(0x3e, shstrndx);
  if (shentsize < 64 || shstrndx >= shnum || !image.range(shoff, std::uint64_t{shentsize} * shnum)) {
    fail(error, "the section header table lies outside the image");
    return std::nullopt;
  }
  std::vector<Section> sections(shnum);
  std::vector<std::uint32_t> name_offsets(shnum);
  for (std::uint16_t i = 0; i < shnum; ++i) {
    const std::uint64_t at = shoff + std::uint64_t{shentsize} * i;
    image.read(at, name_offsets[i]);
    image.read(at + 4, sections[i].type);
    image.read(at + 24, sections[i].offset);
    image.read(at + 32, sections[i].size);
    image.read(at + 40, sections[i].link);
  }
  const Section& strings = sections[shstrndx];
  if (!image.range(strings.offset, strings.size)) {
    fail(error, "the section name table lies outside the image");
    return std::nullopt;
  }
  for (std::uint16_t i = 0; i < shnum; ++i) {
    sections[i].name = image.c_string(strings.offset + name_offsets[i], strings.offset + strings.size);
  }

  CubinInfo info;
  std::map<std::uint32_t, std::size_t> kernel_of_symbol;
  std::map<std::string, int> shared_of_kernel;
  // On sm_80 and later a block's first 1 KiB of shared memory is reserved for the system: when the
  // image has a .nv.shared.reserved section, each kernel's shared section starts with that region,
  // which ptxas does not count as the kernel's own.
  bool reserved_region = false;
  for (const Section& s : sections) {
    if (s.name.rfind(".nv.shared.reserved", 0) == 0) reserved_region = true;
  }
  for (const Section& s : sections) {
    if (s.name.rfind(".nv.global", 0) == 0) info.global_bytes += static_cast<std::int64_t>(s.size);
    if (s.name.rfind(".nv.shared.", 0) == 0 && s.name.rfind(".nv.shared.reserved", 0) != 0) {
      std::uint64_t bytes = s.size;
      if (reserved_region && bytes >= kReservedSharedBytes) bytes -= kReservedSharedBytes;
      shared_of_kernel[s.name.substr(11)] = static_cast<int>(bytes);
    }
  }
  for (const Section& s : sections) {
    if (s.type != kShtSymtab) continue;
    if (!image.range(s.offset, s.size) || s.link >= shnum) {
      fail(error, "the symbol table lies outside the image");
      return std::nullopt;
    }
    const Section& names = sections[s.link];
    for (std::uint64_t at = s.offset, index = 0; at + 24 <= s.offset + s.size; at += 24, ++index) {
      std::uint32_t name = 0;
      std::uint8_t info_byte = 0;
      image.read(at, name);
      image.read(at + 4, info_byte);
      if ((info_byte & 0xf) != kSttFunc || (info_byte >> 4) != kStbGlobal) continue;
      CubinKernel k;
      k.name = image.c_string(names.offset + name, names.offset + names.size);
      if (k.name.empty()) continue;
      if (auto it = shared_of_kernel.find(k.name); it != shared_of_kernel.end()) k.static_smem_bytes = it->second;
      kernel_of_symbol[static_cast<std::uint32_t>(index)] = info.kernels.size();
      info.kernels.push_back(std::move(k));
    }
  }
  for (const Section& s : sections) {
    if (s.name != ".nv.info") continue;
    if (!image.range(s.offset, s.size)) {
      fail(error, ".nv.info lies outside the image");
      return std::nullopt;
    }
    std::uint64_t at = s.offset;
    const std::uint64_t end = s.offset + s.size;
    while (at + 4 <= end) {
      std::uint8_t format = 0, attribute = 0;
      std::uint16_t size = 0;
      image.read(at, format);
      image.read(at + 1, attribute);
      image.read(at + 2, size);
      if (format != kEifmtSval) {
        if (format != kEifmtHval && format != kEifmtBval && format != kEifmtNval) break;  // unknown: stop
        at += 4;
        continue;
      }
      if (at + 4 + size > end) break;
      if ((attribute == kEiattrRegcount || attribute == kEiattrFrameSize) && size >= 8) {
        std::uint32_t symbol = 0, value = 0;
        image.read(at + 4, symbol);
        image.read(at + 8, value);
        if (auto it = kernel_of_symbol.find(symbol); it != kernel_of_symbol.end()) {
          CubinKernel& k = info.kernels[it->second];
          (attribute == kEiattrRegcount ? k.registers : k.frame_bytes) = static_cast<int>(value);
        }
      }
      at += 4 + size;
    }
  }
  return info;
}

}  // namespace sparserl::reward
