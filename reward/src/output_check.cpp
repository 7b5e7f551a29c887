// The output check's rule on the host, the verdict's wording, and the CUDA source of the GPU worker's
// check kernels (output_check.hpp). The device kernels restate reference_output() and tally_output()
// operation for operation: keep the two in step (reward_device_checks_gpu_tests compares them).
#include "sparserl/reward/output_check.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <thread>

namespace sparserl::reward {
namespace {

// How many chunks the host splits n rows into: up to hardware_concurrency, at least 4096 rows each.
std::int64_t row_chunks(std::int64_t n) {
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(std::thread::hardware_concurrency()), 1,
                                  std::max<std::int64_t>(1, n / 4096));
}

// Runs body(chunk, begin, end) over `chunks` consecutive ranges of [0, n), one thread each.
template <typename Body>
void parallel_rows(std::int64_t n, std::int64_t chunks, Body body) {
  if (chunks <= 1) {
    body(0, 0, n);
    return;
  }
  std::vector<std::thread> pool;
  for (std::int64_t t = 0; t < chunks; ++t) {
    pool.emplace_back([&, t] { body(t, n * t / chunks, n * (t + 1) / chunks); });
  }
  for (auto& th : pool) th.join();
}

}  // namespace

OutputTally merge(OutputTally a, const OutputTally& b) {
  a.unchecked += b.unchecked;
  a.unwritten += b.unwritten;
  a.first_unwritten = std::min(a.first_unwritten, b.first_unwritten);
  a.wrong += b.wrong;
  a.first_wrong = std::min(a.first_wrong, b.first_wrong);
  a.bad_index += b.bad_index;
  if (b.max_ratio > a.max_ratio || (b.max_ratio == a.max_ratio && b.max_ratio > 0 && b.worst_index < a.worst_index)) {
    a.max_ratio = b.max_ratio;
    a.worst_index = b.worst_index;
    a.worst_got = b.worst_got;
    a.worst_ref = b.worst_ref;
  }
  return a;
}

OutputVerdict output_verdict(const OutputTally& t, std::size_t elements) {
  OutputVerdict v;
  v.max_ratio = t.max_ratio;
  v.unchecked = t.unchecked;
  std::ostringstream detail;
  if (t.unwritten > 0) {
    v.error = ErrorKind::unwritten_output;
    v.bad = t.unwritten;
    v.first_bad_row = t.first_unwritten;
    detail << t.unwritten << " of " << elements
           << " output elements were never written (still NaN), first in row " << t.first_unwritten;
  } else if (t.wrong > 0) {
    v.error = ErrorKind::wrong_answer;
    v.bad = t.wrong;
    v.first_bad_row = t.first_wrong;
    detail.precision(9);
    detail << t.wrong << " of " << elements << " output elements are outside the tolerance, first in row "
           << t.first_wrong << "; worst got " << t.worst_got << " expected " << t.worst_ref << " (error "
           << t.max_ratio << "x the tolerance)";
  }
  v.detail = detail.str();
  return v;
}

double dtype_epsilon(DType dtype) {
  return dtype == DType::f32 ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
}

double dtype_largest(DType dtype) {
  return dtype == DType::f32 ? static_cast<double>(std::numeric_limits<float>::max())
                             : std::numeric_limits<double>::max();
}

void reference_output(const datasets::SparseMatrix& a, std::span<const double> x, int k, std::vector<double>& y,
                      std::vector<double>& y_abs) {
  y.assign(static_cast<std::size_t>(a.rows()) * k, 0.0);
  y_abs.assign(y.size(), 0.0);
  const auto row_ptr = a.row_ptr();
  const auto col_idx = a.col_idx();
  const auto val = a.values();
  parallel_rows(a.rows(), row_chunks(a.rows()), [&](std::int64_t, std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      double* yi = &y[static_cast<std::size_t>(i) * k];
      double* ai = &y_abs[static_cast<std::size_t>(i) * k];
      for (std::int64_t p = row_ptr[i]; p < row_ptr[i + 1]; ++p) {
        const double v = val[p];
        const double* xj = &x[static_cast<std::size_t>(col_idx[p]) * k];
        for (int c = 0; c < k; ++c) {
          yi[c] += v * xj[c];
          ai[c] += std::abs(v * xj[c]);
        }
      }
    }
  });
}

OutputTally tally_output(std::span<const std::uint8_t> out, DType dtype, const datasets::SparseMatrix& a, int k,
                         std::span<const double> ref, std::span<const double> ref_abs, double factor) {
  const double eps = dtype_epsilon(dtype);
  const double largest = dtype_largest(dtype);
  const auto row_ptr = a.row_ptr();
  const auto values = a.values();
  const std::int64_t chunks = row_chunks(a.rows());
  std::vector<OutputTally> tallies(static_cast<std::size_t>(chunks));
  parallel_rows(a.rows(), chunks, [&](std::int64_t chunk, std::int64_t begin, std::int64_t end) {
    OutputTally& t = tallies[static_cast<std::size_t>(chunk)];
    for (std::int64_t i = begin; i < end; ++i) {
      const double scale = factor * eps * (std::sqrt(static_cast<double>(row_ptr[i + 1] - row_ptr[i])) + 2.0);
      bool row_representable = true;
      for (std::int64_t p = row_ptr[i]; p < row_ptr[i + 1]; ++p) {
        if (!(std::abs(values[p]) <= largest)) row_representable = false;
      }
      for (int c = 0; c < k; ++c) {
        const std::size_t e = static_cast<std::size_t>(i) * k + c;
        if (!row_representable || !(ref_abs[e] <= largest)) {
          ++t.unchecked;
          continue;
        }
        const double got = dtype == DType::f32
                               ? static_cast<double>(reinterpret_cast<const float*>(out.data())[e])
                               : reinterpret_cast<const double*>(out.data())[e];
        if (std::isnan(got)) {
          if (t.unwritten++ == 0) t.first_unwritten = i;
          continue;
        }
        const double diff = std::abs(got - ref[e]);
        const double tol = scale * ref_abs[e];
        const double ratio = diff == 0 ? 0 : (tol > 0 ? diff / tol : std::numeric_limits<double>::infinity());
        if (ratio > t.max_ratio) {  // rows in order: the first of the largest
          t.max_ratio = ratio;
          t.worst_index = static_cast<std::int64_t>(e);
          t.worst_got = got;
          t.worst_ref = ref[e];
        }
        if (!(diff <= tol)) {
          if (t.wrong++ == 0) t.first_wrong = i;
        }
      }
    }
  });
  OutputTally total;
  for (const OutputTally& t : tallies) total = merge(total, t);
  return total;
}

std::vector<std::string> device_checks_options() {
  // No contraction into fused multiply-adds: the reference must round as the host's does.
  return {"--fmad=false"};
}

}  // namespace sparserl::reward
