// Building a format's kernel arguments as host bytes (kernel_arrays.hpp).
#include "sparserl/reward/kernel_arrays.hpp"

#include <chrono>
#include <cstring>
#include <span>
#include <stdexcept>

namespace sparserl::reward {
namespace {

// Each array is copied once, from the matrix or its converted format into the bytes uploaded.
HostArray index_array(std::string name, std::span<const datasets::Index> v) {
  HostArray a{std::move(name), ArgKind::index_array, static_cast<std::int64_t>(v.size()), {}};
  a.bytes.resize(v.size() * sizeof(datasets::Index));
  if (!v.empty()) std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}

HostArray value_array(std::string name, std::span<const double> v, DType dtype) {
  HostArray a{std::move(name), ArgKind::value_array, static_cast<std::int64_t>(v.size()), {}};
  if (dtype == DType::f64) {
    a.bytes.resize(v.size() * sizeof(double));
    if (!v.empty()) std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  } else {
    a.bytes.resize(v.size() * sizeof(float));
    auto* out = reinterpret_cast<float*>(a.bytes.data());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = static_cast<float>(v[i]);
  }
  return a;
}

}  // namespace

datasets::SparseMatrix round_values(const datasets::SparseMatrix& matrix, DType dtype) {
  datasets::SparseMatrix out = matrix;
  if (dtype == DType::f32) {
    for (double& v : out.mutable_values()) v = static_cast<double>(static_cast<float>(v));
  }
  return out;
}

KernelArrays build_kernel_arrays(const datasets::SparseMatrix& matrix, const FormatSpec& spec, DType dtype,
                                 std::int64_t max_stored) {
  if (auto bad = spec.validate()) throw std::invalid_argument(*bad);
  const auto start = std::chrono::steady_clock::now();
  KernelArrays out;
  out.rounded = round_values(matrix, dtype);
  const datasets::SparseMatrix& a = out.rounded;
  std::vector<HostArray>& args = out.matrix_args;
  switch (spec.format) {
    case Format::csr:
      args.push_back(index_array("row_ptr", a.row_ptr()));
      args.push_back(index_array("col_idx", a.col_idx()));
      args.push_back(value_array("val", a.values(), dtype));
      out.stored_entries = a.nnz();
      break;
    case Format::coo: {
      datasets::CooMatrix m = datasets::to_coo(a);
      args.push_back(index_array("row_idx", m.row_idx));
      args.push_back(index_array("col_idx", m.col_idx));
      args.push_back(value_array("val", m.val, dtype));
      out.stored_entries = m.nnz();
      break;
    }
    case Format::ell: {
      datasets::EllMatrix m = datasets::to_ell(a, max_stored);
      args.push_back(index_array("col_idx", m.col_idx));
      args.push_back(value_array("val", m.val, dtype));
      out.stored_entries = static_cast<std::int64_t>(m.val.size());
      break;
    }
    case Format::sell: {
      datasets::SellMatrix m = datasets::to_sell(a, spec.params.sell_c,
                                                 static_cast<datasets::Index>(spec.effective_sigma()), max_stored);
      args.push_back(index_array("slice_ptr", m.slice_ptr));
      args.push_back(index_array("row_perm", m.row_perm));
      args.push_back(index_array("col_idx", m.col_idx));
      args.push_back(value_array("val", m.val, dtype));
      out.stored_entries = static_cast<std::int64_t>(m.val.size());
      break;
    }
    case Format::bsr: {
      datasets::BsrMatrix m = datasets::to_bsr(a, spec.params.bsr_r, spec.params.bsr_c, max_stored);
      args.push_back(index_array("block_row_ptr", m.block_row_ptr));
      args.push_back(index_array("block_col_idx", m.block_col_idx));
      args.push_back(value_array("val", m.val, dtype));
      out.stored_entries = static_cast<std::int64_t>(m.val.size());
      break;
    }
  }
  out.conversion_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace sparserl::reward
