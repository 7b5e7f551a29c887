// A simple analytic cost model of the design space: from a matrix (its features and the exact
// padded sizes of each format, computed with the ABI's own constants) it predicts the kernel time
// of every design point, so that the search measures the promising points first and leaves out the
// hopeless ones when the budget is small. The model is a roofline with penalties, not a simulator:
//
//   time = max(bytes / bandwidth / efficiency, longest-row time) + extra launches * launch cost
//
//   bytes       compulsory traffic of the format: indices and values (padding included), row
//               pointers, the dense input (x, or X's rows; gathers with poor locality cost a
//               32-byte sector each) and the output
//   efficiency  how much of the bandwidth the design can use on this row-length distribution: idle
//               lanes of a group wider than the rows, threads of a warp waiting for the longest row
//               of their 32 (thread per row), uncoalesced per-thread row walks, atomics
//   longest row the time one row takes on the lanes a design gives it (a thread, a group, a block):
//               what makes thread-per-row lose 100x on a matrix with one huge row
//
// The constants are rough (an H100-class device); only the ranking matters.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sparserl/datasets/features.hpp"
#include "sparserl/datasets/sparse_matrix.hpp"
#include "sparserl/kernels/design_space.hpp"

namespace sparserl::kernels {

struct DeviceModel {
  double bandwidth_gbs = 3000;     // DRAM, bytes read + written per second / 1e9
  double l2_bandwidth_gbs = 7000;  // gathers that hit L2
  double l2_bytes = 50e6;
  double launch_us = 2.0;   // the duration of one extra small launch
  // Nonzeros per ns one thread retires on a long row alone: a step of a row loop waits for the
  // index, then the gather (two dependent loads). 0.0012 from a long row on one warp or group on
  // an H200 (2026-11-28, R-MAT scale 21, longest row 36,502: SELL C=4 on 8 lanes 3,308 us,
  // csr_adaptive on 32 lanes 1,008 us, csr_binned's warp class 1,217 us: 0.9-1.4 nonzeros per us
  // a lane); it was 0.02, which put those designs at 140-230 us, among the screened.
  double lane_rate = 0.0012;
};

struct CostEstimate {
  double us = 0;          // predicted kernel time
  double bytes = 0;       // compulsory bytes moved
  double efficiency = 1;  // fraction of the bandwidth the design can use here
  double longest_row_us = 0;
  bool feasible = true;  // false: the format would be refused (padded size over the cap) or
                         // pads more than kMaxPadding times the nonzeros
  std::string why;       // for an infeasible point: what rules it out
};

// Formats padded beyond this factor of NNZ are not worth measuring.
inline constexpr double kMaxPadding = 3.0;

class CostModel {
 public:
  // Computes the features and, lazily, each format's constants (one pass over the pattern per
  // distinct SELL or BSR shape).
  CostModel(const datasets::SparseMatrix& matrix, Op op, DType dtype, std::int64_t k,
            DeviceModel device = {});

  [[nodiscard]] CostEstimate estimate(const DesignPoint& point);
  [[nodiscard]] const datasets::MatrixFeatures& features() const { return features_; }

  // The padded stored entries of a format on this matrix (NNZ for csr and coo).
  std::int64_t stored_entries(const FormatSpec& spec);

 private:
  const datasets::SparseMatrix& matrix_;
  Op op_;
  DType dtype_;
  std::int64_t k_;
  DeviceModel device_;
  datasets::MatrixFeatures features_;
  std::map<std::string, std::int64_t> stored_;  // by FormatSpec::str()
};

// Orders candidates for measurement: the best predicted point of every generator first (so that
// each design family is measured at least once while the budget lasts), then the rest by predicted
// time. Infeasible points are dropped. Returns at most `budget` points (all when budget <= 0).
std::vector<DesignPoint> choose_candidates(const std::vector<DesignPoint>& points, CostModel& model,
                                           int budget, std::vector<double>* predicted_us = nullptr);

// The same rule on given predictions (the analytic or the learned model's; non-finite ones are
// dropped): indices into points, at most `budget` of them (all when budget <= 0).
std::vector<std::size_t> order_candidates(const std::vector<DesignPoint>& points,
                                          const std::vector<double>& predicted_us, int budget);

}  // namespace sparserl::kernels
