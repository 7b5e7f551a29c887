// Conversions shared by the binding files (convert.hpp).
#include "convert.hpp"

#include <pybind11/stl.h>

#include <variant>

#include "sparserl/reward/program.hpp"

namespace sparserl::python {

namespace {

std::string type_name(py::handle value) {
  return py::str(py::type::handle_of(value).attr("__name__"));
}

[[noreturn]] void wrong_type(const std::string& what, const char* expected, py::handle value) {
  throw py::type_error(what + ": expected " + expected + ", got " + type_name(value) + " " +
                       std::string(py::repr(value)));
}

bool is_integer(py::handle value) {
  if (py::isinstance<py::bool_>(value) || py::isinstance<py::float_>(value)) return false;
  return py::isinstance<py::int_>(value) || py::hasattr(value, "__index__");
}

std::int64_t to_integer(py::handle value, const std::string& what) {
  if (!is_integer(value)) wrong_type(what, "an integer", value);
  return py::int_(py::reinterpret_borrow<py::object>(value).attr("__index__")())
      .cast<std::int64_t>();
}

double to_real(py::handle value, const std::string& what) {
  if (py::isinstance<py::bool_>(value) ||
      !(py::isinstance<py::float_>(value) || is_integer(value))) {
    wrong_type(what, "a number", value);
  }
  return py::float_(py::reinterpret_borrow<py::object>(value)).cast<double>();
}

// A list knob takes a list or tuple (or one bare item).
py::list as_list(py::handle value) {
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    return py::list(py::reinterpret_borrow<py::object>(value));
  }
  py::list one;
  one.append(value);
  return one;
}

}  // namespace

datasets::Op op_from(const std::string& text) {
  if (auto op = datasets::parse_op(text)) return *op;
  throw py::value_error("op: expected 'spmv' or 'spmm', got '" + text + "'");
}

datasets::DType dtype_from(const std::string& text) {
  if (auto dtype = datasets::parse_dtype(text)) return *dtype;
  throw py::value_error("dtype: expected 'f32' or 'f64', got '" + text + "'");
}

reward::FormatSpec format_from(const std::string& text) {
  const reward::ParseResult parsed =
      reward::parse_program("//@format " + text + "\n//@launch k grid=1 block=1\n");
  if (!parsed.ok()) {
    throw py::value_error("format '" + text + "': " + parsed.error.message);
  }
  return parsed.program->format;
}

py::dict info_to_dict(const env::Info& info, std::string_view prefix) {
  py::dict out;
  for (const auto& [key, value] : info.entries()) {
    if (!key.starts_with(prefix)) continue;
    const py::str name(key.substr(prefix.size()));
    std::visit([&out, &name](const auto& v) { out[name] = py::cast(v); }, value);
  }
  return out;
}

datasets::KnobValue knob_value(const datasets::KnobSpec& spec, py::handle value,
                               const std::string& what) {
  using datasets::KnobType;
  switch (spec.type) {
    case KnobType::integer:
      return to_integer(value, what);
    case KnobType::real:
      return to_real(value, what);
    case KnobType::boolean:
      if (!py::isinstance<py::bool_>(value)) wrong_type(what, "True or False", value);
      return value.cast<bool>();
    case KnobType::string:
      if (!py::isinstance<py::str>(value)) wrong_type(what, "a string", value);
      return value.cast<std::string>();
    case KnobType::string_list: {
      std::vector<std::string> out;
      for (py::handle item : as_list(value)) {
        if (!py::isinstance<py::str>(item)) wrong_type(what, "a list of strings", item);
        out.push_back(item.cast<std::string>());
      }
      return out;
    }
    case KnobType::integer_list: {
      std::vector<std::int64_t> out;
      for (py::handle item : as_list(value)) out.push_back(to_integer(item, what));
      return out;
    }
    case KnobType::real_list: {
      std::vector<double> out;
      for (py::handle item : as_list(value)) out.push_back(to_real(item, what));
      return out;
    }
  }
  throw py::type_error(what + ": unsupported knob type");
}

py::object knob_value_to_python(const datasets::KnobValue& value) {
  return std::visit([](const auto& v) -> py::object { return py::cast(v); }, value);
}

std::vector<std::string> string_list(const py::handle& items, const std::string& what) {
  std::vector<std::string> out;
  if (items.is_none()) return out;
  py::module_ os = py::module_::import("os");
  if (py::isinstance<py::str>(items) || py::hasattr(items, "__fspath__")) {
    out.push_back(os.attr("fspath")(items).cast<std::string>());
    return out;
  }
  for (py::handle item : items) {
    if (!py::isinstance<py::str>(item) && !py::hasattr(item, "__fspath__")) {
      wrong_type(what, "a path or a list of paths", item);
    }
    out.push_back(os.attr("fspath")(item).cast<std::string>());
  }
  return out;
}

}  // namespace sparserl::python
