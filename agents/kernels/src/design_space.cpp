// The generator registry, design points (ids, parsing, formats) and the DesignSpace: enumeration in
// registry order, deterministic sampling (splitmix64, no std:: distributions, so every platform
// draws the same points), feature-based pruning and the representative subset.
#include "sparserl/kernels/design_space.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <stdexcept>

#include "program_text.hpp"
#include "sparserl/datasets/random.hpp"

namespace sparserl::kernels {
namespace detail {

const std::vector<GeneratorDef>& generator_defs() {
  static const std::vector<GeneratorDef> defs = [] {
    std::vector<GeneratorDef> all = csr_spmv_generators();
    for (auto& g : format_spmv_generators()) all.push_back(std::move(g));
    for (auto& g : split_spmv_generators()) all.push_back(std::move(g));
    for (auto& g : nnz_split_spmv_generators()) all.push_back(std::move(g));
    for (auto& g : spmm_generators()) all.push_back(std::move(g));
    return all;
  }();
  return defs;
}

const GeneratorDef* find_generator_def(std::string_view name) {
  for (const GeneratorDef& g : generator_defs()) {
    if (g.info.name == name) return &g;
  }
  return nullptr;
}

}  // namespace detail

namespace {

using datasets::splitmix64;

const detail::GeneratorDef& def_of(const DesignPoint& p) {
  const detail::GeneratorDef* def = detail::find_generator_def(p.generator);
  if (def == nullptr) throw std::invalid_argument("unknown kernel generator '" + p.generator + "'");
  if (def->info.op != p.op) {
    throw std::invalid_argument("generator " + p.generator + " is for " +
                                std::string(to_string(def->info.op)) + ", not " +
                                std::string(to_string(p.op)));
  }
  return *def;
}

// Throws unless the point's parameters are one of the generator's combinations for its dtype.
void check_point(const DesignPoint& p) {
  const detail::GeneratorDef& def = def_of(p);
  for (const auto& combo : def.enumerate(p.dtype)) {
    if (combo == p.params) return;
  }
  throw std::invalid_argument("'" + p.id() + "' is not a point of the " +
                              std::string(to_string(p.op)) + " " + std::string(to_string(p.dtype)) +
                              " design space");
}

}  // namespace

std::string DesignPoint::id() const {
  std::string s = generator;
  for (const DesignParam& p : params) s += " " + p.name + "=" + p.value;
  return s;
}

const std::string& DesignPoint::param(std::string_view name) const {
  for (const DesignParam& p : params) {
    if (p.name == name) return p.value;
  }
  throw std::invalid_argument("design point '" + id() + "' has no parameter " + std::string(name));
}

int DesignPoint::int_param(std::string_view name) const {
  const std::string& v = param(name);
  try {
    std::size_t used = 0;
    const int i = std::stoi(v, &used);
    if (used == v.size()) return i;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument("design point '" + id() + "': parameter " + std::string(name) + "=" +
                              v + " is not an integer");
}

FormatSpec DesignPoint::format() const { return def_of(*this).format(*this); }

DesignPoint DesignPoint::parse(Op op, DType dtype, std::string_view id) {
  DesignPoint p;
  p.op = op;
  p.dtype = dtype;
  std::vector<std::string> words;
  std::size_t i = 0;
  while (i < id.size()) {
    while (i < id.size() && id[i] == ' ') ++i;
    std::size_t j = i;
    while (j < id.size() && id[j] != ' ') ++j;
    if (j > i) words.emplace_back(id.substr(i, j - i));
    i = j;
  }
  if (words.empty()) throw std::invalid_argument("empty design id");
  p.generator = words[0];
  const std::string text(id);
  const detail::GeneratorDef* def = detail::find_generator_def(p.generator);
  if (def == nullptr) {
    throw std::invalid_argument("design id '" + text + "': unknown generator " + p.generator);
  }
  if (def->info.op != op) {
    throw std::invalid_argument("design id '" + text + "': " + p.generator + " is a " +
                                std::string(to_string(def->info.op)) + " design");
  }
  for (std::size_t w = 1; w < words.size(); ++w) {
    const std::size_t eq = words[w].find('=');
    if (eq == std::string::npos || eq == 0) {
      throw std::invalid_argument("design id '" + text + "': expected name=value, got " + words[w]);
    }
    p.params.push_back({words[w].substr(0, eq), words[w].substr(eq + 1)});
  }
  std::vector<std::string> names;
  for (const DesignParam& dp : p.params) names.push_back(dp.name);
  if (names != def->info.param_names) {
    std::string expected;
    for (const std::string& n : def->info.param_names) expected += " " + n + "=...";
    throw std::invalid_argument("design id '" + text + "': expected " + p.generator + expected);
  }
  check_point(p);
  return p;
}

const std::vector<GeneratorInfo>& generators() {
  static const std::vector<GeneratorInfo> infos = [] {
    std::vector<GeneratorInfo> out;
    for (const detail::GeneratorDef& d : detail::generator_defs()) out.push_back(d.info);
    return out;
  }();
  return infos;
}

const GeneratorInfo* find_generator(std::string_view name) {
  const detail::GeneratorDef* d = detail::find_generator_def(name);
  return d == nullptr ? nullptr : &d->info;
}

std::string render_program(const DesignPoint& point) {
  check_point(point);
  return def_of(point).render(point);
}

DesignSpace::DesignSpace(Op op, DType dtype) : op_(op), dtype_(dtype) {
  for (const detail::GeneratorDef& def : detail::generator_defs()) {
    if (def.info.op != op) continue;
    for (auto& params : def.enumerate(dtype)) {
      DesignPoint p;
      p.generator = def.info.name;
      p.op = op;
      p.dtype = dtype;
      p.params = std::move(params);
      points_.push_back(std::move(p));
    }
  }
}

std::optional<DesignPoint> DesignSpace::find(std::string_view id) const {
  for (const DesignPoint& p : points_) {
    if (p.id() == id) return p;
  }
  return std::nullopt;
}

std::vector<DesignPoint> DesignSpace::sample(std::size_t n, std::uint64_t seed) const {
  std::vector<std::size_t> order(points_.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  n = std::min(n, order.size());
  std::uint64_t state = seed ^ 0x5EED5EED5EED5EEDull;
  // Partial Fisher-Yates: the first n positions are a uniform sample without replacement.
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t span = order.size() - i;
    const std::size_t j = i + static_cast<std::size_t>(splitmix64(state) % span);
    std::swap(order[i], order[j]);
  }
  order.resize(n);
  std::sort(order.begin(), order.end());
  std::vector<DesignPoint> out;
  out.reserve(n);
  for (std::size_t i : order) out.push_back(points_[i]);
  return out;
}

std::vector<DesignPoint> DesignSpace::pruned(const datasets::MatrixFeatures& f,
                                             std::int64_t k) const {
  const double mean = std::max(f.row_nnz_mean, 1.0);
  const double rows = static_cast<double>(std::max<std::int64_t>(f.rows, 1));
  const double nnz = static_cast<double>(std::max<std::int64_t>(f.nnz, 1));
  const auto max_row = static_cast<double>(f.row_nnz_max);
  const bool irregular = f.row_nnz_gini > 0.35 || max_row > 8 * mean + 32;
  k = std::max<std::int64_t>(k, 1);
  std::vector<DesignPoint> out;
  for (const DesignPoint& p : points_) {
    const std::string& g = p.generator;
    bool keep = true;
    if (g == "csr_scalar") {
      keep = p.param("unroll") != "max" || max_row <= 32;
      keep = keep && mean <= 24;
    } else if (g == "csr_vector") {
      if (p.param("lanes") != "auto") {
        const double lanes = p.int_param("lanes");
        // A group much wider than the rows idles; one much narrower leaves parallelism unused.
        keep = lanes <= 2 * mean + 2 && lanes * 16 >= mean;
      }
    } else if (g == "csr_xstage") {
      // The block's column window must fit the 4096-entry stage for most blocks.
      keep = f.bandwidth > 0 && f.profile * 2 + 256 < 4096 && p.int_param("lanes") <= 2 * mean + 2;
    } else if (g == "csr_adaptive" || g == "csr_binned") {
      keep = max_row > 2 * mean + 8;
      const std::string& classes = g == "csr_binned" ? p.param("classes") : std::string();
      if (classes.find('b') != std::string::npos || classes.find('s') != std::string::npos) {
        keep = keep && max_row > 1024;  // a block or a split class for rows that need one
      }
    } else if (g == "coo_segmented" || g == "coo_tiled" || g == "csr_segscan") {
      keep = irregular;
    } else if (g == "csr_nnzsplit") {
      // Balanced by nonzeros for rows whose lengths vary widely (power laws).
      keep = irregular || f.row_nnz_std > mean;
    } else if (g == "csr_split" || g == "spmm_csr_split") {
      // A split pays where a few rows are much longer than the rest; a threshold far above the
      // longest row is the same program as the smallest one without its long-row launch.
      const double split = p.int_param("split");
      const bool smallest = p.param("split") == (g == "csr_split" ? "512" : "64");
      keep = max_row > 2 * mean + 8 && (smallest || max_row > split / 4);
      if (g == "csr_split") {
        const double lanes = p.int_param("lanes");
        keep = keep && lanes <= 2 * mean + 2 && lanes * 16 >= mean;
      }
    } else if (g == "ell" || g == "spmm_ell") {
      // ELL pads every row to the longest.
      keep = rows * max_row <= 1.3 * nnz + rows && rows * max_row <= 5.0e8;
      if (g == "ell" && p.param("unroll") == "max") keep = keep && max_row <= 32;
    } else if (g == "sell" || g == "spmm_sell") {
      const int sigma = p.int_param("sigma");
      // Sorting pays only when lengths vary; without it the slices pad to their longest row.
      keep = sigma == 1 ? f.row_nnz_std <= 0.5 * mean + 1 : f.row_nnz_std > 0.1 * mean;
      keep = keep && max_row < 100000;
      // C < 32 shares a row among 32 / C lanes, for rows long enough to share; C = 32 is one
      // thread per row (cuSPARSE's SELL_ALG1, the best path on bench-v2's regular families), for
      // rows short enough for one thread.
      if (g == "sell") {
        const int c = p.int_param("C");
        keep = keep && (c == 32 ? mean <= 32 : c * 2 <= std::max(32.0, 64.0 / mean));
      }
    } else if (g == "bsr_row" || g == "bsr_warp" || g == "spmm_bsr") {
      keep = f.dense_block_share >= 0.5;
    }
    if (p.op == Op::spmm) {
      const std::int64_t lanes = p.int_param("lanes");
      const std::int64_t cols = p.int_param("cols");
      const std::int64_t width = lanes * cols;
      // A tile of columns wider than K idles; a much narrower one walks the row many times.
      keep = keep && (width <= k || lanes == 1) && width * 8 >= k;
      if (g == "spmm_coo") keep = keep && irregular;
    }
    if (keep) out.push_back(p);
  }
  // Never empty: the general designs stay even when every rule above dropped them.
  if (out.empty()) {
    for (const DesignPoint& p : points_) {
      if (p.generator == "csr_merge" || p.generator == "spmm_csr_merge" ||
          (p.generator == "csr_vector" && p.param("lanes") == "auto") ||
          (p.generator == "spmm_csr_rowgroup" && p.param("lanes") == "1")) {
        out.push_back(p);
      }
    }
  }
  return out;
}

std::vector<DesignPoint> DesignSpace::representatives() const {
  std::vector<DesignPoint> out;
  std::set<std::string> seen;
  for (const DesignPoint& p : points_) {
    const detail::GeneratorDef& def = def_of(p);
    std::string key = p.generator;
    for (const std::string& s : def.structural_params) key += " " + s + "=" + p.param(s);
    if (seen.insert(key).second) out.push_back(p);
  }
  return out;
}

}  // namespace sparserl::kernels
