// sparserl._core's datasets part: tasks and matrix URIs, the matrix store,
// matrices as read-only numpy arrays (CSR, fp64 values), their features, and
// split files. The Python package's sparserl.datasets module builds its
// friendlier functions (splits by name, scipy matrices) on these.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "bindings.hpp"
#include "convert.hpp"
#include "sparserl/datasets/features.hpp"
#include "sparserl/datasets/matrix_market.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/datasets/splits.hpp"
#include "sparserl/datasets/suitesparse_index.hpp"
#include "sparserl/datasets/task.hpp"

namespace sparserl::python {

namespace {

py::dict split_entry(const datasets::SplitEntry& e) {
  py::dict d;
  d["uri"] = e.uri;
  d["family"] = e.family;
  d["nnz"] = e.nnz;
  d["regime"] = e.regime ? py::object(py::str(std::string(to_string(*e.regime)))) : py::none();
  d["source"] = std::string(to_string(e.source));
  return d;
}

py::dict split_to_dict(const datasets::Split& split) {
  py::dict d;
  d["name"] = split.name;
  d["version"] = split.version;
  d["seed"] = split.seed;
  d["digest"] = split.digest();
  py::dict parts;
  for (datasets::SplitPart part : datasets::kSplitParts) {
    py::list entries;
    for (const datasets::SplitEntry& e : split.part_entries(part)) entries.append(split_entry(e));
    parts[py::str(std::string(to_string(part)))] = entries;
  }
  d["parts"] = parts;
  return d;
}

py::dict features_to_dict(const datasets::SparseMatrix& matrix) {
  const datasets::MatrixFeatures f = datasets::compute_features(matrix);
  const std::vector<double> values = f.to_vector();
  const std::vector<std::string>& names = datasets::feature_names();
  py::dict d;
  for (std::size_t i = 0; i < names.size() && i < values.size(); ++i)
    d[py::str(names[i])] = values[i];
  return d;
}

void bind_task(py::module_& m) {
  py::class_<datasets::Task>(m, "Task",
                             "One episode's question: a matrix URI, the "
                             "operation, the value type and K.")
      .def(py::init([](const std::string& uri, const std::string& op, const std::string& dtype,
                       std::int64_t k) {
             datasets::Task t;
             t.uri = datasets::MatrixUri::from_argument(uri).str();
             t.op = op_from(op);
             t.dtype = dtype_from(dtype);
             if (k < 1 || k > datasets::kMaxIndex) {
               throw py::value_error("k: expected an integer >= 1, got " + std::to_string(k));
             }
             t.k = t.op == datasets::Op::spmv ? 1 : static_cast<datasets::Index>(k);
             return t;
           }),
           py::arg("uri"), py::arg("op") = "spmv", py::arg("dtype") = "f32", py::arg("k") = 1)
      .def_static("parse", &datasets::Task::parse, py::arg("text"),
                  "The inverse of str(task): 'URI spmv f32' or 'URI spmm f64 k=32'.")
      .def_readonly("uri", &datasets::Task::uri)
      .def_property_readonly("op",
                             [](const datasets::Task& t) { return std::string(to_string(t.op)); })
      .def_property_readonly(
          "dtype", [](const datasets::Task& t) { return std::string(to_string(t.dtype)); })
      .def_readonly("k", &datasets::Task::k)
      .def("__str__", &datasets::Task::str)
      .def("__repr__", [](const datasets::Task& t) { return "Task('" + t.str() + "')"; })
      .def("__eq__",
           [](const datasets::Task& a, const datasets::Task& b) { return a.str() == b.str(); })
      .def("__hash__", [](const datasets::Task& t) { return py::hash(py::str(t.str())); })
      .def(py::pickle([](const datasets::Task& t) { return t.str(); },
                      [](const std::string& text) { return datasets::Task::parse(text); }));
}

void bind_matrix(py::module_& m) {
  py::class_<MatrixHandle>(m, "Matrix",
                           "A matrix as the project holds it: canonical CSR, fp64 values.")
      .def_property_readonly("rows", [](const MatrixHandle& h) { return h.matrix->rows(); })
      .def_property_readonly("cols", [](const MatrixHandle& h) { return h.matrix->cols(); })
      .def_property_readonly("nnz", [](const MatrixHandle& h) { return h.matrix->nnz(); })
      .def_property_readonly(
          "shape",
          [](const MatrixHandle& h) { return py::make_tuple(h.matrix->rows(), h.matrix->cols()); })
      .def_readonly("uri", &MatrixHandle::uri)
      .def_property_readonly("row_ptr",
                             [](const MatrixHandle& h) {
                               const auto s = h.matrix->row_ptr();
                               return readonly_view(s.data(), {static_cast<py::ssize_t>(s.size())},
                                                    h.matrix);
                             })
      .def_property_readonly("col_idx",
                             [](const MatrixHandle& h) {
                               const auto s = h.matrix->col_idx();
                               return readonly_view(s.data(), {static_cast<py::ssize_t>(s.size())},
                                                    h.matrix);
                             })
      .def_property_readonly("values",
                             [](const MatrixHandle& h) {
                               const auto s = h.matrix->values();
                               return readonly_view(s.data(), {static_cast<py::ssize_t>(s.size())},
                                                    h.matrix);
                             })
      .def("digest", [](const MatrixHandle& h) { return h.matrix->digest(); })
      .def("pattern_digest", [](const MatrixHandle& h) { return h.matrix->pattern_digest(); })
      .def(
          "features", [](const MatrixHandle& h) { return features_to_dict(*h.matrix); },
          "The pattern features (datasets/features.hpp), raw: counts, density, "
          "row statistics.")
      .def("__repr__", [](const MatrixHandle& h) {
        return "Matrix('" + h.uri + "', " + std::to_string(h.matrix->rows()) + " x " +
               std::to_string(h.matrix->cols()) + ", nnz " + std::to_string(h.matrix->nnz()) + ")";
      });
}

void bind_store(py::module_& m) {
  py::class_<datasets::MatrixStore, std::shared_ptr<datasets::MatrixStore>>(
      m, "MatrixStore",
      "Where a matrix URI becomes a matrix: a data folder and SuiteSparse "
      "index folders.")
      .def(
          py::init([](const py::object& data_dir, const py::object& index_dirs, std::size_t cache) {
            datasets::StoreOptions options;
            for (const std::string& dir : string_list(index_dirs, "index_dirs")) {
              options.indexes.emplace_back(dir);
            }
            options.cache_capacity = cache;
            const std::vector<std::string> data = string_list(data_dir, "data_dir");
            return std::make_shared<datasets::MatrixStore>(
                data.empty() ? datasets::default_data_dir() : std::filesystem::path(data.front()),
                options);
          }),
          py::arg("data_dir") = py::none(), py::arg("index_dirs") = py::list(),
          py::arg("cache") = 8)
      .def(
          "load",
          [](datasets::MatrixStore& store, const std::string& uri) {
            MatrixHandle h;
            const datasets::MatrixUri parsed = datasets::MatrixUri::from_argument(uri);
            h.uri = parsed.str();
            py::gil_scoped_release release;
            h.matrix = store.load(parsed);
            return h;
          },
          py::arg("uri"))
      .def(
          "resolve",
          [](const datasets::MatrixStore& store, const std::string& uri) {
            return store.resolve(datasets::MatrixUri::from_argument(uri)).string();
          },
          py::arg("uri"))
      .def("indexed_uris", &datasets::MatrixStore::indexed_uris)
      .def_property_readonly("data_dir",
                             [](const datasets::MatrixStore& s) { return s.data_dir().string(); });
}

}  // namespace

void bind_datasets(py::module_& m) {
  py::register_exception<datasets::MatrixNotFound>(m, "MatrixNotFound", PyExc_FileNotFoundError);
  py::register_exception<datasets::MatrixMarketError>(m, "MatrixMarketError", PyExc_ValueError);
  py::register_exception<datasets::SplitError>(m, "SplitError", PyExc_ValueError);
  py::register_exception<datasets::IndexError>(m, "IndexFileError", PyExc_ValueError);
  bind_task(m);
  bind_matrix(m);
  bind_store(m);
  m.def(
      "canonical_uri",
      [](const std::string& text) { return datasets::MatrixUri::from_argument(text).str(); },
      py::arg("text"),
      "The canonical URI of a matrix URI, a file: URI or the path of an "
      "existing file.");
  m.def(
      "read_split",
      [](const std::string& path) { return split_to_dict(datasets::read_split(path)); },
      py::arg("path"), "A split file as a dict: name, version, seed, digest, parts.");
  m.def(
      "pattern_feature_names", [] { return datasets::feature_names(); },
      "The names of Matrix.features(), raw pattern features.");
}

}  // namespace sparserl::python
