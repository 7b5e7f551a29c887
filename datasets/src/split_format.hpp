// Internal to sparserl::datasets: the pieces the two split file formats share (splits.cpp reads and
// writes version 1 and the header of both; benchmark_split.cpp makes, writes and reads the entry
// lines of version 2).
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/datasets/splits.hpp"

namespace sparserl::datasets::detail {

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A split's name: letters, digits, '_', '-', '.'.
inline bool valid_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

// The shortest decimal that reads back to v.
inline std::string shortest(double v) {
  char buf[32];
  return {buf, std::to_chars(buf, buf + sizeof buf, v).ptr};
}

// The lines both versions open with: # split, # version, # seed, # ratios.
void write_split_preamble(std::ostream& out, const Split& s);

// Version 1: the entries of each part made from its GROUP/NAME keys.
void fill_v1_entries(Split& s);

// Version 2: the whole file's text, and one entry line read into s.entries (`seen` holds the URIs
// read so far; `fail` throws a SplitError naming the file and line).
std::string format_benchmark_split(const Split& s);
void parse_benchmark_entry(const std::vector<std::string>& words, std::string_view line, Split& s,
                           std::set<std::string>& seen,
                           const std::function<void(const std::string&)>& fail);

}  // namespace sparserl::datasets::detail
