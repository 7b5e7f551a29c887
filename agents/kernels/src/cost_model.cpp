// The analytic cost model (cost_model.hpp): bytes per format, a bandwidth efficiency per design
// from the row-length distribution, the longest row's time on the lanes a design gives it, and
// launch overheads; and the candidate choice that puts one point of every design family first.
#include "sparserl/kernels/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include "sparserl/datasets/formats.hpp"
#include "sparserl/reward/abi.hpp"

namespace sparserl::kernels {
namespace {

// Expected maximum of n row lengths over the mean, in standard deviations (a normal approximation,
// about sqrt(2 ln n)): how long a warp of thread-per-row waits for its slowest row.
double spread(double rows_per_warp) {
  if (rows_per_warp <= 1) return 0;
  return std::sqrt(2.0 * std::log(rows_per_warp));
}

int auto_lanes(double mean) {
  int lanes = 1;
  while (lanes < 32 && lanes * 2 <= mean) lanes *= 2;
  return lanes;
}

// Count of launches in a point's program, from its generator.
int launches_of(const DesignPoint& p) {
  const std::string& g = p.generator;
  if (g == "csr_merge" || g == "coo_segmented" || g == "coo_tiled" || g == "spmm_csr_merge" ||
      g == "spmm_coo" || g == "csr_split" || g == "csr_segscan" || g == "csr_nnzsplit" ||
      g == "spmm_csr_split")
    return 2;
  if (g == "csr_binned") {
    const std::string& c = p.param("classes");
    return 1 + static_cast<int>(std::count(c.begin(), c.end(), ','));
  }
  return 1;
}

// What the cost model needs of the matrix and the task to rate a design's use of the bandwidth.
struct RowShape {
  double nnz = 0;
  double mean = 0;  // row length
  double sd = 0;
  double max_row = 0;
  double k = 1;
  double value_bytes = 4;
};

// A design's bandwidth efficiency, the lanes it puts on one long row and the traffic it adds.
struct DesignFit {
  double efficiency = 1.0;
  double lanes_on_long_row = 1;
  double extra_bytes = 0;
};

// The SpMM designs: column tiles (every lane of a group owns `cols` columns per step) and how each
// design spreads a row.
DesignFit spmm_fit(const DesignPoint& p, const RowShape& r) {
  const std::string& g = p.generator;
  const double lanes = p.int_param("lanes");
  const double width = lanes * p.int_param("cols");
  const double chunks = std::ceil(r.k / width);
  DesignFit fit;
  double eff = r.k / (chunks * width);
  if (p.int_param("cols") == 1) eff *= 0.85;
  if (static_cast<std::int64_t>(r.k) % p.int_param("cols") != 0) eff *= 0.7;
  // Each lane walks the whole row once per chunk of columns.
  fit.lanes_on_long_row = 1.0 / chunks;
  const double rows_per_warp = 32.0 / lanes;
  // How long a warp of row groups waits for its longest row of at most `longest` entries.
  const auto wait = [&](double longest) {
    return r.mean > 0
               ? r.mean / std::max(r.mean, std::min(longest, r.mean + spread(rows_per_warp) * r.sd))
               : 1.0;
  };
  if (g == "spmm_csr_rowgroup") {
    eff *= wait(r.max_row);
    if (p.param("cache") == "1") eff *= r.mean >= lanes ? 1.05 : 0.9;
  } else if (g == "spmm_csr_merge" || g == "spmm_coo") {
    eff *= g == "spmm_csr_merge" ? 0.85 : 0.7;
    fit.lanes_on_long_row = 1e9;
  } else if (g == "spmm_bsr") {
    eff *= 0.85;
  } else if (g == "spmm_csr_split") {
    // Rows of at most `split` entries on a group each, longer ones in chunks over many groups.
    const double split = p.int_param("split");
    eff *= 0.9 * wait(std::min(r.max_row, split));
    if (r.max_row > split) fit.lanes_on_long_row = 1e9;
  }
  fit.efficiency = eff;
  fit.extra_bytes = (chunks - 1) * r.nnz * (4 + r.value_bytes) * 0.3;  // re-walks mostly hit L1
  return fit;
}

// The bytes a format's arrays move once: indices and values as stored (padding included), row
// pointers, and for COO y zeroed and then added to.
double format_bytes(const FormatSpec& spec, double nnz, double rows, double stored, double vb,
                    double k) {
  switch (spec.format) {
    case Format::csr:
      return nnz * (4 + vb) + (rows + 1) * 4;
    case Format::coo:
      return nnz * (8 + vb) + rows * vb * k * 2;
    case Format::ell:
      return stored * (4 + vb);
    case Format::sell:
      return stored * (4 + vb) + rows * 4;
    case Format::bsr: {
      const double cells = spec.params.bsr_r * spec.params.bsr_c;
      return stored * vb + stored / cells * 4 + rows / spec.params.bsr_r * 4;
    }
  }
  return 0;
}

}  // namespace

CostModel::CostModel(const datasets::SparseMatrix& matrix, Op op, DType dtype, std::int64_t k,
                     DeviceModel device)
    : matrix_(matrix),
      op_(op),
      dtype_(dtype),
      k_(op == Op::spmm ? std::max<std::int64_t>(k, 1) : 1),
      device_(device),
      features_(datasets::compute_features(matrix)) {}

std::int64_t CostModel::stored_entries(const FormatSpec& spec) {
  if (spec.format == Format::csr || spec.format == Format::coo) return features_.nnz;
  if (spec.format == Format::ell) return features_.rows * features_.row_nnz_max;
  const std::string key = spec.str();
  const auto it = stored_.find(key);
  if (it != stored_.end()) return it->second;
  const reward::Constants c = reward::compute_constants(matrix_, op_, k_, spec);
  const std::int64_t stored = reward::stored_entries(c, spec.format);
  stored_[key] = stored;
  return stored;
}

CostEstimate CostModel::estimate(const DesignPoint& p) {
  CostEstimate e;
  const auto& f = features_;
  const double vb = static_cast<double>(datasets::dtype_bytes(dtype_));
  const double k = static_cast<double>(k_);
  const double rows = static_cast<double>(f.rows);
  const double cols = static_cast<double>(f.cols);
  const double nnz = static_cast<double>(f.nnz);
  const double mean = std::max(f.row_nnz_mean, 0.0);
  const double sd = f.row_nnz_std;
  const double max_row = static_cast<double>(f.row_nnz_max);
  const FormatSpec spec = p.format();
  const std::string& g = p.generator;

  // Padding and the format's size cap.
  const double stored = static_cast<double>(stored_entries(spec));
  if (stored > static_cast<double>(datasets::kDefaultMaxStoredEntries)) {
    e.feasible = false;
    e.why = spec.str() + " would store " + std::to_string(static_cast<long long>(stored)) +
            " entries (over the cap)";
  } else if (nnz > 0 && stored > kMaxPadding * nnz + 64) {
    e.feasible = false;
    e.why = spec.str() + " pads " + std::to_string(stored / nnz) + "x";
  }

  // The dense input: whole rows of X when gathers are local or X fits in L2, a sector per gather
  // otherwise; gathers with poor locality also cost L2 traffic.
  const double x_bytes = cols * vb * k;
  const double locality = std::clamp(f.profile / 256.0, 0.0, 1.0);  // 0: banded, 1: random
  const double gather_bytes = std::max(32.0, vb * k);
  double dram_x = x_bytes;
  if (x_bytes > device_.l2_bytes) dram_x += locality * std::max(0.0, nnz * gather_bytes - x_bytes);
  const double gather_us = locality * nnz * gather_bytes / (device_.l2_bandwidth_gbs * 1e3);

  const double bytes = rows * vb * k + dram_x + format_bytes(spec, nnz, rows, stored, vb, k);

  double eff = 1.0;
  double lanes_on_long_row = 1;  // lanes a design puts on one long row
  double long_row = max_row;     // the longest row those lanes take (csr_split: at most SPLIT_ROW)
  double serial_us = -1;         // when set, the longest row's time some other way
  double extra_bytes = 0;
  // Nonzeros per us per lane. The device's rate was measured on matrices far larger than L2 (each
  // step waits on DRAM twice); where the matrix and x fit in L2 the steps wait on L2, taken here as
  // 4x faster (the latency ratio, not measured for these kernels).
  const double resident = nnz * (4 + vb) + (rows + 1) * 4 + x_bytes <= device_.l2_bytes ? 4.0 : 1.0;
  const double lane_rate = device_.lane_rate * 1e3 * resident;
  if (g == "csr_scalar") {
    eff = mean > 0 ? mean / std::max(mean, std::min(max_row, mean + spread(32) * sd)) : 1.0;
    eff *= std::sqrt(std::min(1.0, 8.0 / std::max(mean, 1.0)));
    if (p.param("unroll") == "max" && max_row <= 32) eff *= 1.05;
  } else if (g == "csr_vector" || g == "csr_xstage") {
    const double lanes = p.param("lanes") == "auto" ? auto_lanes(mean) : p.int_param("lanes");
    const double steps = std::max(1.0, std::ceil(mean / lanes));
    eff = mean > 0 ? std::min(1.0, mean / (lanes * steps)) : 1.0;
    const double rows_per_warp = 32.0 / lanes;
    eff *= mean > 0 ? mean / std::max(mean, std::min(max_row, mean + spread(rows_per_warp) * sd))
                    : 1.0;
    eff = std::max(eff, 0.03);
    if (lanes > 1) eff *= 1.0 - 0.02 * std::log2(lanes);  // shuffle reduction per row
    if (g == "csr_vector" && p.int_param("vec") > 1) eff *= mean >= 4.0 * lanes ? 1.05 : 0.95;
    if (g == "csr_xstage") eff *= locality < 0.25 ? 1.1 : 0.8;
    lanes_on_long_row = lanes;
  } else if (g == "csr_adaptive") {
    eff = 0.8;
    lanes_on_long_row = p.int_param("lanes");
  } else if (g == "csr_binned") {
    eff = 0.85;
    const int launches = launches_of(p);
    extra_bytes += (launches - 1) * (rows + 1) * 4.0;
    const std::string& c = p.param("classes");
    lanes_on_long_row = c.find('s') != std::string::npos   ? 1e9  // split over warps
                        : c.find('b') != std::string::npos ? p.int_param("block")
                                                           : 32;
  } else if (g == "csr_merge" || g == "coo_segmented") {
    eff = g == "csr_merge" ? 0.8 : 0.7;
    lanes_on_long_row = 1e9;  // rows are split across threads
    if (g == "coo_segmented") {
      // One atomicAdd per row and warp (items=1) or per thread (items > 1): a long row's atomics
      // land on one address one after another, about 2 ns each - bench-v2's circuit rows of 280k-
      // 420k entries took coo_segmented items=1 61-62 us where COO_ALG1 took 27-29 (H200,
      // 2026-11-28; 13k atomics a row).
      const int items = p.int_param("items");
      serial_us = max_row / (items == 1 ? 32.0 : items) * 0.002;
    }
  } else if (g == "coo_tiled") {
    // COO bytes; ITEMS gathers in flight per lane, per slab of 32 one segmented scan; one atomic
    // per block of tiles on a long row (the warps' open rows merged). Measured on bench-v2's
    // circuit val matrices (H200): 34-35 us with one atomic a tile (f8cd19d), 32-33 us at items=4
    // with the merge (e841276; items=16 39-43 us), against COO_ALG1's 27-29; 4-6% behind
    // coo_segmented items=1 on short power-law rows.
    eff = 0.8;
    serial_us = max_row / (32.0 * p.int_param("items") * p.int_param("block") / 32) * 0.002;
  } else if (g == "csr_split") {
    // The bulk: short rows on groups of LANES lanes (idle lanes when rows are shorter), medium
    // rows a warp each; rows over SPLIT_ROW in chunks over many warps (two searches per chunk).
    const double lanes = p.int_param("lanes");
    const double split = p.int_param("split");
    const double steps = std::max(1.0, std::ceil(mean / lanes));
    eff = mean > 0 ? std::min(1.0, mean / (lanes * steps)) : 1.0;
    eff = 0.9 * std::max(eff, 0.3);
    lanes_on_long_row = 32;  // rows of up to SPLIT_ROW on one warp; longer ones split over warps
    long_row = std::min(max_row, split);
    if (max_row > split) extra_bytes += nnz / split * 32 * 4 * 8;  // search probes, mostly L2
  } else if (g == "csr_segscan") {
    // Per-lane sums inside a row, a segmented scan per slab with row ends: leaner than the merge
    // path on long rows, about as costly on short ones.
    eff = mean >= 32 ? 0.9 : 0.75;
    lanes_on_long_row = 1e9;
  } else if (g == "csr_nnzsplit") {
    // CSR bytes balanced like COO (no row index per entry): per slab one ballot and a five-shuffle
    // segmented scan, per tile one row search and a pass over its row starts (the zeroing launch
    // reads row_ptr once more, or searches once per tile boundary). The searches cost per tile,
    // not per nonzero: a warp-wide probe of row_ptr per step, ceil(log32(rows)) dependent steps,
    // twice; charged as 256 bytes a step, which puts items=2 at the 190-455 us it measured on
    // issue 25's unseen structures (H200, 2026-11-28, 12-25M nonzeros: 1.5-2.4x this model's
    // earlier figures) and makes the long tiles cheap. A row longer than a tile is summed by one
    // atomicAdd per tile on one address, one after another (about 2 ns each): the arrow's two 4M
    // rows, 62,500 atomics each at items=2.
    const double tile = 32.0 * p.int_param("items");
    const double steps = std::max(1.0, std::ceil(std::log(std::max(rows, 2.0)) / std::log(32.0)));
    eff = mean >= 32 ? 0.9 : 0.8;
    serial_us = max_row / tile * 0.002;
    extra_bytes += (rows + 1) * 4.0 + std::ceil(nnz / tile) * 2.0 * steps * 256.0;
  } else if (g == "ell") {
    eff = 0.95;
  } else if (g == "sell") {
    const int c = p.int_param("C");
    lanes_on_long_row = c >= 32 ? 1 : 32.0 / c;
    eff = 0.9 * (p.int_param("sigma") > 1 ? 0.95 : 1.0);
  } else if (g == "bsr_row") {
    eff = 0.7;
  } else if (g == "bsr_warp") {
    eff = 0.9;
    lanes_on_long_row = 32.0 / (spec.params.bsr_r * spec.params.bsr_c) * spec.params.bsr_c;
  } else if (p.op == Op::spmm) {
    const DesignFit fit = spmm_fit(
        p, {.nnz = nnz, .mean = mean, .sd = sd, .max_row = max_row, .k = k, .value_bytes = vb});
    eff = fit.efficiency;
    lanes_on_long_row = fit.lanes_on_long_row;
    extra_bytes += fit.extra_bytes;
  }

  e.bytes = bytes + extra_bytes;
  e.efficiency = std::clamp(eff, 0.01, 1.0);
  e.longest_row_us = serial_us >= 0 ? serial_us : long_row / (lanes_on_long_row * lane_rate);
  const double stream_us = e.bytes / (device_.bandwidth_gbs * 1e3) / e.efficiency + gather_us;
  e.us = std::max(stream_us, e.longest_row_us) + launches_of(p) * device_.launch_us;
  return e;
}

// A family whose best point is predicted this many times slower than the best is not measured
// ahead of the others.
constexpr double kFamilyMargin = 4.0;

std::vector<std::size_t> order_candidates(const std::vector<DesignPoint>& points,
                                          const std::vector<double>& predicted_us, int budget) {
  struct Scored {
    std::size_t index;
    double us;
  };
  std::vector<Scored> scored;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (std::isfinite(predicted_us[i])) scored.push_back({i, predicted_us[i]});
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const Scored& a, const Scored& b) { return a.us < b.us; });
  const std::size_t limit =
      budget <= 0 ? scored.size() : std::min(scored.size(), static_cast<std::size_t>(budget));
  std::vector<std::size_t> chosen;
  std::set<std::size_t> taken;
  std::set<std::string> families;
  // First the best point of each generator that the model does not rule out by a wide margin, in
  // order of their best predictions: the model is rough, a measurement per family is not.
  const double cutoff = scored.empty() ? 0.0 : scored.front().us * kFamilyMargin;
  for (const Scored& s : scored) {
    if (chosen.size() >= limit || s.us > cutoff) break;
    if (families.insert(points[s.index].generator).second) {
      chosen.push_back(s.index);
      taken.insert(s.index);
    }
  }
  for (const Scored& s : scored) {
    if (chosen.size() >= limit) break;
    if (taken.insert(s.index).second) chosen.push_back(s.index);
  }
  return chosen;
}

std::vector<DesignPoint> choose_candidates(const std::vector<DesignPoint>& points, CostModel& model,
                                           int budget, std::vector<double>* predicted_us) {
  std::vector<double> us;
  for (const DesignPoint& p : points) {
    const CostEstimate e = model.estimate(p);
    us.push_back(e.feasible ? e.us : std::numeric_limits<double>::infinity());
  }
  std::vector<DesignPoint> out;
  if (predicted_us) predicted_us->clear();
  for (std::size_t i : order_candidates(points, us, budget)) {
    out.push_back(points[i]);
    if (predicted_us) predicted_us->push_back(us[i]);
  }
  return out;
}

}  // namespace sparserl::kernels
