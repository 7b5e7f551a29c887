// Making, writing and reading versioned split files (splits.hpp).
#include "sparserl/datasets/splits.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "compressed_output.hpp"
#include "fnv1a.hpp"
#include "sparserl/datasets/enum_names.hpp"
#include "sparserl/datasets/file_tree.hpp"
#include "sparserl/datasets/task.hpp"
#include "split_format.hpp"

namespace sparserl::datasets {

using detail::shortest;
using detail::splitmix64;
using detail::valid_name;

namespace {

constexpr auto kSplitPartNames =
    enum_names<SplitPart::train, SplitPart::test>({"train", "val", "test"});

}  // namespace

std::string_view to_string(SplitPart part) { return kSplitPartNames.name(part); }
std::optional<SplitPart> parse_split_part(std::string_view text) {
  return kSplitPartNames.parse(text);
}

namespace {

// Largest-remainder apportionment of n items by ratios summing to 1; ties go to the earlier part.
std::array<std::size_t, 3> counts_for(std::size_t n, const std::array<double, 3>& ratios) {
  std::array<std::size_t, 3> counts{};
  std::array<double, 3> remainder{};
  std::size_t given = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    const double quota = static_cast<double>(n) * ratios[i];
    counts[i] = static_cast<std::size_t>(std::floor(quota));
    remainder[i] = quota - std::floor(quota);
    given += counts[i];
  }
  while (given < n) {
    std::size_t best = 0;
    for (std::size_t i = 1; i < 3; ++i) {
      if (remainder[i] > remainder[best]) best = i;
    }
    ++counts[best];
    remainder[best] = -1.0;
    ++given;
  }
  while (given > n) {  // only if rounding pushed a floor past n; take from the last non-empty part
    for (std::size_t i = 3; i-- > 0;) {
      if (counts[i] > 0) {
        --counts[i];
        break;
      }
    }
    --given;
  }
  return counts;
}

}  // namespace

std::array<double, 3> parse_ratios(std::string_view text) {
  std::array<double, 3> out{};
  std::size_t at = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    const std::size_t comma = i < 2 ? text.find(',', at) : text.size();
    if (comma == std::string_view::npos) {
      throw SplitError("invalid ratios '" + std::string(text) +
                       "': expected three numbers TRAIN,VAL,TEST such as 0.6,0.2,0.2");
    }
    const std::string_view piece = text.substr(at, comma - at);
    auto [p, ec] = std::from_chars(piece.data(), piece.data() + piece.size(), out[i]);
    if (ec != std::errc() || p != piece.data() + piece.size() || !(out[i] >= 0.0) ||
        !std::isfinite(out[i])) {
      throw SplitError("invalid ratios '" + std::string(text) + "': '" + std::string(piece) +
                       "' is not a non-negative number");
    }
    at = comma + 1;
  }
  if (std::fabs(out[0] + out[1] + out[2] - 1.0) > 1e-9) {
    throw SplitError("invalid ratios '" + std::string(text) + "': they sum to " +
                     shortest(out[0] + out[1] + out[2]) + ", expected 1");
  }
  return out;
}

std::vector<std::string> Split::uris(SplitPart part) const {
  std::vector<std::string> out;
  for (const SplitEntry& e : part_entries(part)) out.push_back(e.uri);
  return out;
}

std::size_t Split::size() const {
  return entries[0].size() + entries[1].size() + entries[2].size();
}

std::string Split::digest() const { return detail::hex16(detail::fnv1a64(format_split(*this))); }

bool operator==(const Split& a, const Split& b) {
  return a.name == b.name && a.version == b.version && a.seed == b.seed && a.ratios == b.ratios &&
         a.index_file == b.index_file && a.index_size == b.index_size &&
         a.index_digest == b.index_digest && a.parts == b.parts && a.sources == b.sources &&
         a.entries == b.entries;
}

namespace detail {

void fill_v1_entries(Split& s) {
  for (std::size_t part = 0; part < 3; ++part) {
    s.entries[part].clear();
    for (const std::string& key : s.parts[part]) {
      SplitEntry e;
      e.uri = "suitesparse-v1/" + key;
      e.family = key.substr(0, key.find('/'));
      s.entries[part].push_back(std::move(e));
    }
  }
}

}  // namespace detail

Split make_split(const SuiteSparseIndex& index, const SplitSpec& spec) {
  if (!valid_name(spec.name)) {
    throw SplitError("invalid split name '" + spec.name +
                     "': expected letters, digits, '_', '-', '.' (e.g. shared-v1)");
  }
  const std::string ratio_text =
      shortest(spec.ratios[0]) + "," + shortest(spec.ratios[1]) + "," + shortest(spec.ratios[2]);
  (void)parse_ratios(ratio_text);  // validates
  if (index.size() == 0) throw SplitError(index.source() + ": the index lists no matrices");
  Split s;
  s.name = spec.name;
  s.seed = spec.seed;
  s.ratios = spec.ratios;
  s.index_file = std::filesystem::path(index.source()).filename().string();
  s.index_size = index.size();
  s.index_digest = index.digest();
  const std::uint64_t salt = splitmix64(spec.seed);
  std::vector<std::pair<std::uint64_t, std::string>> order;
  for (const IndexEntry& e : index.entries()) {
    const std::string key = e.key();
    order.emplace_back(splitmix64(detail::fnv1a64(key) ^ salt), key);
  }
  std::sort(order.begin(), order.end());
  const auto counts = counts_for(order.size(), spec.ratios);
  std::size_t at = 0;
  for (std::size_t part = 0; part < 3; ++part) {
    for (std::size_t i = 0; i < counts[part]; ++i) s.parts[part].push_back(order[at++].second);
    std::sort(s.parts[part].begin(), s.parts[part].end());
  }
  detail::fill_v1_entries(s);
  return s;
}

namespace detail {

void write_split_preamble(std::ostream& out, const Split& s) {
  out << "# split " << s.name << "\n";
  out << "# version " << s.version << "\n";
  out << "# seed " << s.seed << "\n";
  out << "# ratios " << shortest(s.ratios[0]) << "," << shortest(s.ratios[1]) << ","
      << shortest(s.ratios[2]) << "\n";
}

}  // namespace detail

std::string format_split(const Split& s) {
  if (s.version == Split::kBenchmarkFormatVersion) return detail::format_benchmark_split(s);
  std::ostringstream out;
  detail::write_split_preamble(out, s);
  out << "# index " << s.index_file << " " << s.index_size << " " << s.index_digest << "\n";
  out << "# counts train " << s.parts[0].size() << " val " << s.parts[1].size() << " test "
      << s.parts[2].size() << "\n";
  out << "# Made by `sparserl data split`. Never edit this file: make a new split under a new "
         "name.\n";
  for (SplitPart part : kSplitParts) {
    for (const std::string& key : s.keys(part)) out << to_string(part) << " " << key << "\n";
  }
  return out.str();
}

namespace {

// The header lines both versions share, and the version-specific ones.
struct HeaderState {
  std::set<std::string> seen;
  std::optional<std::array<std::size_t, 3>> declared_counts;
};

std::uint64_t parse_unsigned(const std::string& word, const std::function<void(const std::string&)>& fail,
                             const std::string& what) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
  if (ec != std::errc() || p != word.data() + word.size()) fail("expected " + what + ", found '" + word + "'");
  return v;
}

// One '# KEY ...' line; false when it is a comment.
bool parse_header_line(const std::vector<std::string>& words, Split& s, HeaderState& h,
                       const std::function<void(const std::string&)>& fail) {
  const std::string& key = words[1];
  const bool known = key == "split" || key == "version" || key == "seed" || key == "ratios" ||
                     key == "index" || key == "counts" || key == "source";
  if (!known) return false;
  if (key != "source" && !h.seen.insert(key).second) fail("the header line '" + key + "' appears twice");
  h.seen.insert(key);
  auto expect = [&](std::size_t n, const char* shape) {
    if (words.size() != n + 2) fail("expected '# " + key + " " + shape + "'");
  };
  if (key == "split") {
    expect(1, "NAME");
    if (!valid_name(words[2])) fail("invalid split name '" + words[2] + "'");
    s.name = words[2];
  } else if (key == "version") {
    expect(1, "1|2");
    if (words[2] != "1" && words[2] != "2") {
      fail("unsupported split file version '" + words[2] + "' (this build reads versions 1 and 2)");
    }
    s.version = words[2] == "1" ? Split::kFormatVersion : Split::kBenchmarkFormatVersion;
  } else if (key == "seed") {
    expect(1, "SEED");
    s.seed = parse_unsigned(words[2], fail, "an unsigned integer seed");
  } else if (key == "ratios") {
    expect(1, "TRAIN,VAL,TEST");
    try {
      s.ratios = parse_ratios(words[2]);
    } catch (const SplitError& e) {
      fail(e.what());
    }
  } else if (key == "index") {
    expect(3, "FILE MATRICES DIGEST");
    s.index_file = words[2];
    s.index_size = parse_unsigned(words[3], fail, "the number of matrices in the index");
    s.index_digest = words[4];
  } else if (key == "source") {
    expect(4, "SOURCE NAME MATRICES DIGEST");
    SplitSource src;
    const auto kind = parse_matrix_source(words[2]);
    if (!kind) fail("unknown source '" + words[2] + "' (expected shared, catalogue or generated)");
    src.source = *kind;
    src.name = words[3];
    src.size = parse_unsigned(words[4], fail, "the number of matrices of the source");
    src.digest = words[5];
    s.sources.push_back(std::move(src));
  } else {  // counts
    expect(6, "train N val N test N");
    std::array<std::size_t, 3> counts{};
    for (std::size_t i = 0; i < 3; ++i) {
      const std::string& label = words[2 + 2 * i];
      if (label != to_string(kSplitParts[i])) fail("expected '# counts train N val N test N'");
      counts[i] = parse_unsigned(words[3 + 2 * i], fail, "a count after '" + label + "'");
    }
    h.declared_counts = counts;
  }
  return true;
}

// A version-1 entry line: PART GROUP/NAME.
void parse_v1_entry(const std::vector<std::string>& words, std::string_view line, Split& s,
                    std::set<std::string>& seen, const std::function<void(const std::string&)>& fail) {
  if (words.size() != 2) fail("expected 'PART GROUP/NAME', found '" + std::string(line) + "'");
  const auto part = parse_split_part(words[0]);
  if (!part) fail("unknown part '" + words[0] + "' (expected train, val or test)");
  try {
    (void)MatrixUri::parse("suitesparse-v1/" + words[1]);
  } catch (const InvalidUri& e) {
    fail("expected GROUP/NAME, found '" + words[1] + "' (" + e.what() + ")");
  }
  if (!seen.insert(words[1]).second) fail("the matrix " + words[1] + " is listed twice");
  s.parts[static_cast<std::size_t>(*part)].push_back(words[1]);
}

}  // namespace

Split parse_split(std::string_view text, const std::string& source) {
  Split s;
  s.version = 0;
  std::int64_t line_no = 0;
  const std::function<void(const std::string&)> fail = [&](const std::string& what) {
    throw SplitError(source + ":" + std::to_string(line_no) + ": " + what);
  };
  HeaderState header;
  std::set<std::string> seen;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t nl = std::min(text.find('\n', at), text.size());
    std::string_view line = text.substr(at, nl - at);
    at = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::vector<std::string> words;
    {
      std::istringstream ws{std::string(line)};
      for (std::string w; ws >> w;) words.push_back(w);
    }
    if (words.empty()) continue;
    if (words[0] == "#") {
      if (words.size() >= 2) parse_header_line(words, s, header, fail);
      continue;
    }
    if (words[0][0] == '#') continue;
    if (s.version == 0) fail("a matrix line before the '# version' line");
    if (s.version == Split::kFormatVersion) {
      parse_v1_entry(words, line, s, seen, fail);
    } else {
      detail::parse_benchmark_entry(words, line, s, seen, fail);
    }
  }
  const bool v2 = s.version == Split::kBenchmarkFormatVersion;
  for (const char* key : {"split", "version", "seed", "ratios", "counts"}) {
    if (header.seen.count(key) == 0) {
      throw SplitError(source + ": not a split file: the header line '# " + key + "' is missing");
    }
  }
  const char* inputs = v2 ? "source" : "index";
  if (header.seen.count(inputs) == 0) {
    throw SplitError(source + ": not a version-" + std::to_string(s.version) +
                     " split file: the header line '# " + inputs + "' is missing");
  }
  if (header.seen.count(v2 ? "index" : "source") != 0) {
    throw SplitError(source + ": a version-" + std::to_string(s.version) + " split file has no '# " +
                     (v2 ? "index" : "source") + "' line");
  }
  for (std::size_t i = 0; i < 3; ++i) {
    const std::size_t listed = v2 ? s.entries[i].size() : s.parts[i].size();
    if ((*header.declared_counts)[i] != listed) {
      throw SplitError(source + ": the header declares " +
                       std::to_string((*header.declared_counts)[i]) + " " +
                       std::string(to_string(kSplitParts[i])) + " matrices, the file lists " +
                       std::to_string(listed));
    }
    std::sort(s.parts[i].begin(), s.parts[i].end());
    std::sort(s.entries[i].begin(), s.entries[i].end(),
              [](const SplitEntry& a, const SplitEntry& b) { return a.uri < b.uri; });
  }
  if (!v2) {
    detail::fill_v1_entries(s);
    if (s.size() != s.index_size) {
      throw SplitError(source + ": the split lists " + std::to_string(s.size()) +
                       " matrices but its index had " + std::to_string(s.index_size));
    }
  }
  return s;
}

Split read_split(const std::filesystem::path& file) {
  const std::optional<std::string> text = read_file_bytes(file);
  if (!text) throw SplitError(file.string() + ": cannot open the split file");
  return parse_split(*text, file.string());
}

void write_split(const std::filesystem::path& file, const Split& split) {
  std::error_code ec;
  if (std::filesystem::exists(file, ec)) {
    throw SplitError(file.string() +
                     ": already exists; a split file is never edited in place "
                     "(write a new split under a new name)");
  }
  detail::AtomicFile out(file);
  out.write(format_split(split));
  try {
    out.commit_no_clobber();
  } catch (const std::runtime_error& e) {
    throw SplitError(e.what());
  }
}

}  // namespace sparserl::datasets
