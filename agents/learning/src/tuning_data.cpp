// Reading `sparserl tune`'s dataset.h5 with the HDF5 C API: each group holds one 1-D dataset per
// column, variable-length UTF-8 strings for text and integers for flags, all of one length.
#include "sparserl/agents/tuning_data.hpp"

#include <hdf5.h>

#include <cstdint>
#include <stdexcept>

namespace sparserl::agents {

namespace {

class File {
 public:
  explicit File(const std::filesystem::path& path) : path_(path) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // errors become exceptions naming the file
    if (!std::filesystem::exists(path)) throw std::runtime_error(path.string() + ": no such file");
    id_ = H5Fopen(path.string().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (id_ < 0) throw std::runtime_error(path.string() + ": not an HDF5 file");
  }
  ~File() { H5Fclose(id_); }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  [[nodiscard]] std::vector<std::string> strings(const std::string& name) const {
    const hid_t ds = open(name);
    const hsize_t n = length(ds, name);
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, H5T_VARIABLE);
    H5Tset_cset(type, H5T_CSET_UTF8);
    std::vector<char*> data(n, nullptr);
    std::vector<std::string> out;
    if (n > 0 && H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) < 0) {
      H5Tclose(type);
      H5Dclose(ds);
      throw std::runtime_error(path_.string() + ": " + name + " is not a dataset of strings");
    }
    for (char* s : data) out.emplace_back(s != nullptr ? s : "");
    if (n > 0) {
      const hid_t space = H5Dget_space(ds);
      H5Dvlen_reclaim(type, space, H5P_DEFAULT, data.data());
      H5Sclose(space);
    }
    H5Tclose(type);
    H5Dclose(ds);
    return out;
  }

  [[nodiscard]] std::vector<std::int64_t> integers(const std::string& name) const {
    const hid_t ds = open(name);
    const hsize_t n = length(ds, name);
    std::vector<std::int64_t> out(n);
    if (n > 0 && H5Dread(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0) {
      H5Dclose(ds);
      throw std::runtime_error(path_.string() + ": " + name + " is not a dataset of integers");
    }
    H5Dclose(ds);
    return out;
  }

 private:
  [[nodiscard]] hid_t open(const std::string& name) const {
    const hid_t ds = H5Dopen2(id_, name.c_str(), H5P_DEFAULT);
    if (ds < 0) {
      throw std::runtime_error(
          path_.string() + ": no dataset " + name +
          " (expected the dataset.h5 of `sparserl tune`, docs/design-space.md)");
    }
    return ds;
  }
  [[nodiscard]] hsize_t length(hid_t ds, const std::string& name) const {
    const hid_t space = H5Dget_space(ds);
    hsize_t dims[1] = {0};
    const int rank = H5Sget_simple_extent_ndims(space);
    if (rank == 1) H5Sget_simple_extent_dims(space, dims, nullptr);
    H5Sclose(space);
    if (rank != 1) {
      H5Dclose(ds);
      throw std::runtime_error(path_.string() + ": " + name + " is not one-dimensional");
    }
    return dims[0];
  }

  std::filesystem::path path_;
  hid_t id_ = -1;
};

void require_same_length(const std::filesystem::path& file, const std::string& group, std::size_t a,
                         std::size_t b) {
  if (a != b) {
    throw std::runtime_error(file.string() + ": the columns of " + group + " differ in length (" +
                             std::to_string(a) + " and " + std::to_string(b) + " rows)");
  }
}

}  // namespace

std::vector<std::string> read_corpus(const std::filesystem::path& file,
                                     std::optional<datasets::Op> op) {
  const File f(file);
  std::vector<std::string> programs = f.strings("/corpus/program");
  if (!op) return programs;
  const std::vector<std::string> ops = f.strings("/corpus/op");
  require_same_length(file, "/corpus", programs.size(), ops.size());
  std::vector<std::string> out;
  for (std::size_t i = 0; i < programs.size(); ++i) {
    if (ops[i] == datasets::to_string(*op)) out.push_back(std::move(programs[i]));
  }
  return out;
}

std::vector<SftPair> read_sft_pairs(const std::filesystem::path& file) {
  const File f(file);
  const std::vector<std::string> tasks = f.strings("/sft/task");
  const std::vector<std::string> programs = f.strings("/sft/program");
  const std::vector<std::int64_t> correct = f.integers("/sft/correct");
  require_same_length(file, "/sft", tasks.size(), programs.size());
  require_same_length(file, "/sft", tasks.size(), correct.size());
  std::vector<SftPair> out;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (correct[i] == 0) continue;
    try {
      out.push_back({datasets::Task::parse(tasks[i]), programs[i]});
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(file.string() + ": /sft/task row " + std::to_string(i) + ": " +
                               e.what());
    }
  }
  return out;
}

}  // namespace sparserl::agents
