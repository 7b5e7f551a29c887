// Conversions between the C++ libraries' values and Python's, shared by every
// binding file of the `sparserl._core` extension: the env's Info as a dict, a
// library's declared knobs (datasets/knobs.hpp) set from a dict of keyword
// arguments - so that Python checks keys, types and ranges exactly as the
// experiment config does, with the same messages - and read-only numpy views of
// C++ vectors that keep their owner alive.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/datasets/knobs.hpp"
#include "sparserl/datasets/task.hpp"
#include "sparserl/env/info.hpp"
#include "sparserl/reward/abi.hpp"

namespace sparserl::python {

namespace py = pybind11;

// A task's op and dtype from their names: ValueError naming the field and the accepted names.
datasets::Op op_from(const std::string& text);
datasets::DType dtype_from(const std::string& text);
// A //@format directive's argument ("csr", "sell C=32 sigma=1"): ValueError naming it otherwise.
reward::FormatSpec format_from(const std::string& text);

// Every entry of an Info, in order, as bool / int / float / str; with a `prefix`
// ("reward."), only the entries under it, their keys without it.
py::dict info_to_dict(const env::Info& info, std::string_view prefix = {});

// The value of one knob from a Python object: TypeError naming `what` and the
// key when the type is wrong (a bool is no integer, an int is a real).
datasets::KnobValue knob_value(const datasets::KnobSpec& spec, py::handle value,
                               const std::string& what);

// Sets `owner`'s knobs from `options` (key -> value). An unknown key is a
// ValueError naming `what` and listing the known keys; a value out of range a
// ValueError with the knob's own message.
template <typename Owner>
void apply_options(const datasets::Knobs<Owner>& knobs, Owner& owner, const py::dict& options,
                   std::string_view what) {
  for (const auto& [key_object, value] : options) {
    const std::string key = py::str(key_object);
    const datasets::KnobBinding<Owner>* binding = knobs.find(key);
    if (binding == nullptr) {
      std::string known;
      for (const auto& b : knobs.bindings()) known += (known.empty() ? "" : ", ") + b.spec.path;
      throw py::value_error("unknown " + std::string(what) + " '" + key + "' (known: " + known +
                            ")");
    }
    const std::string label = std::string(what) + " '" + key + "'";
    try {
      knobs.set(owner, key, knob_value(binding->spec, value, label));
    } catch (const std::invalid_argument& e) {
      throw py::value_error(std::string(what) + " " + e.what());
    }
  }
}

py::object knob_value_to_python(const datasets::KnobValue& value);

// The knobs' current values as a dict (key -> value), in declaration order.
template <typename Owner>
py::dict knob_values(const datasets::Knobs<Owner>& knobs, const Owner& owner) {
  py::dict out;
  for (const auto& b : knobs.bindings()) {
    out[py::str(b.spec.path)] = knob_value_to_python(b.get(owner));
  }
  return out;
}

// A read-only numpy view of `data` (`shape` elements), keeping `owner` alive as
// its base.
template <typename T>
py::array_t<T> readonly_view(const T* data, std::vector<py::ssize_t> shape,
                             std::shared_ptr<const void> owner) {
  auto* keep = new std::shared_ptr<const void>(std::move(owner));
  py::capsule base(keep, [](void* p) { delete static_cast<std::shared_ptr<const void>*>(p); });
  py::array_t<T> array(std::move(shape), data, base);
  py::detail::array_proxy(array.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return array;
}

// A fresh numpy array holding a copy of `values`.
template <typename T>
py::array_t<T> copy_array(const std::vector<T>& values) {
  py::array_t<T> out(static_cast<py::ssize_t>(values.size()));
  std::copy(values.begin(), values.end(), out.mutable_data());
  return out;
}

// Path lists from Python (str or os.PathLike items).
std::vector<std::string> string_list(const py::handle& items, const std::string& what);

}  // namespace sparserl::python
