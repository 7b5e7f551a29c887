// Task URIs (task.hpp): parsing with messages that name the URI and the broken part, and the
// canonical spelling that makes equal matrices have equal URIs (generator parameters sorted by
// key).
#include "sparserl/datasets/task.hpp"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "sparserl/datasets/enum_names.hpp"

namespace sparserl::datasets {
namespace {

constexpr auto kOpNames = enum_names<Op::spmv, Op::spmm>({"spmv", "spmm"});
constexpr auto kDTypeNames = enum_names<DType::f32, DType::f64>({"f32", "f64"});

}  // namespace

std::string_view to_string(Op op) { return kOpNames.name(op); }
std::string_view to_string(DType dtype) { return kDTypeNames.name(dtype); }
std::optional<Op> parse_op(std::string_view text) { return kOpNames.parse(text); }
std::optional<DType> parse_dtype(std::string_view text) { return kDTypeNames.parse(text); }

namespace {

constexpr std::string_view kShapes =
    "expected suitesparse-v1/GROUP/NAME, gen-v1/KIND?key=value&... or file:PATH";

[[noreturn]] void invalid(std::string_view uri, const std::string& what) {
  throw InvalidUri("invalid matrix URI '" + std::string(uri) + "': " + what);
}

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// Group and matrix names of the SuiteSparse collection: letters, digits, '_', '-', '.', '+'.
bool is_collection_name(std::string_view s) {
  if (s.empty() || s == "." || s == "..") return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return is_alnum(c) || c == '_' || c == '-' || c == '.' || c == '+';
  });
}

bool is_identifier(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return is_alnum(c) || c == '_'; });
}

// Generator values are numbers and short words: no separators, no spaces, nothing to escape.
bool is_param_value(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return is_alnum(c) || c == '_' || c == '-' || c == '.' || c == '+';
  });
}

}  // namespace

MatrixUri MatrixUri::from_argument(std::string_view text) {
  std::error_code ec;
  const std::filesystem::path path{std::string(text)};
  if (!text.empty() && text.rfind("file:", 0) != 0 && std::filesystem::is_regular_file(path, ec)) {
    MatrixUri out;
    out.scheme = Scheme::file;
    out.path = std::filesystem::absolute(path).lexically_normal().string();
    return out;
  }
  try {
    return parse(text);
  } catch (const InvalidUri& e) {
    throw InvalidUri("'" + std::string(text) + "' is neither a file nor a matrix URI (" +
                     e.what() + ")");
  }
}

MatrixUri MatrixUri::parse(std::string_view uri) {
  MatrixUri out;
  if (uri.empty()) invalid(uri, "it is empty; " + std::string(kShapes));
  if (uri.rfind("file:", 0) == 0) {
    out.scheme = Scheme::file;
    std::string_view rest = uri.substr(5);
    if (rest.rfind("//", 0) == 0) {
      if (rest.rfind("///", 0) == 0) {
        rest.remove_prefix(2);
      } else if (rest.rfind("//localhost/", 0) == 0) {
        rest.remove_prefix(11);
      } else {
        invalid(uri,
                "a file URI names a local path (file:PATH or file:///ABSOLUTE/PATH), not a host");
      }
    }
    if (rest.empty()) invalid(uri, "the path after 'file:' is empty");
    out.path = std::string(rest);
    return out;
  }
  const std::size_t slash = uri.find('/');
  const std::string_view head = uri.substr(0, slash);
  const std::size_t dash = head.rfind("-v");
  const std::string_view family = dash == std::string_view::npos ? head : head.substr(0, dash);
  if (family != "suitesparse" && family != "gen") {
    invalid(uri, "unknown scheme '" + std::string(head) + "'; " + std::string(kShapes));
  }
  if (dash == std::string_view::npos) {
    invalid(uri, "the scheme '" + std::string(head) + "' has no version; expected '" +
                     std::string(family) + "-v1'");
  }
  out.version = std::string(head.substr(dash + 1));
  if (out.version != "v1") {
    invalid(uri, "unknown version '" + out.version + "' of " + std::string(family) +
                     " URIs (this build knows v1)");
  }
  if (slash == std::string_view::npos) {
    invalid(uri, family == "gen" ? "expected gen-v1/KIND?key=value&... after the scheme"
                                 : "expected suitesparse-v1/GROUP/NAME after the scheme");
  }
  const std::string_view rest = uri.substr(slash + 1);
  if (family == "suitesparse") {
    out.scheme = Scheme::suitesparse;
    const std::size_t cut = rest.find('/');
    if (cut == std::string_view::npos) {
      invalid(uri,
              "expected suitesparse-v1/GROUP/NAME, found no '/' between group and name "
              "(matrices without a group use the group 'ungrouped')");
    }
    const std::string_view group = rest.substr(0, cut);
    const std::string_view name = rest.substr(cut + 1);
    if (name.find('/') != std::string_view::npos) {
      invalid(uri,
              "expected suitesparse-v1/GROUP/NAME, found more than two parts after the scheme");
    }
    if (!is_collection_name(group)) {
      invalid(uri,
              "the group '" + std::string(group) +
                  "' is empty or has characters other than letters, digits, '_', '-', '.', '+'");
    }
    if (!is_collection_name(name)) {
      invalid(uri,
              "the name '" + std::string(name) +
                  "' is empty or has characters other than letters, digits, '_', '-', '.', '+'");
    }
    out.group = std::string(group);
    out.name = std::string(name);
    return out;
  }
  out.scheme = Scheme::generated;
  const std::size_t q = rest.find('?');
  const std::string_view kind = rest.substr(0, q);
  if (!is_identifier(kind)) {
    invalid(uri, "the generator kind '" + std::string(kind) +
                     "' is empty or has characters other than letters, digits and '_'");
  }
  out.kind = std::string(kind);
  if (q == std::string_view::npos) return out;
  std::string_view query = rest.substr(q + 1);
  if (query.empty()) invalid(uri, "nothing follows '?'; expected key=value&...");
  for (;;) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const std::size_t eq = pair.find('=');
    if (eq == std::string_view::npos) {
      invalid(uri, "expected key=value, found '" + std::string(pair) + "'");
    }
    const std::string_view key = pair.substr(0, eq);
    const std::string_view value = pair.substr(eq + 1);
    if (!is_identifier(key)) {
      invalid(uri, "the parameter name '" + std::string(key) +
                       "' is empty or has characters other than letters, digits and '_'");
    }
    if (!is_param_value(value)) {
      invalid(uri,
              "the value '" + std::string(value) + "' of '" + std::string(key) +
                  "' is empty or has characters other than letters, digits, '_', '-', '.', '+'");
    }
    if (!out.params.emplace(std::string(key), std::string(value)).second) {
      invalid(uri, "the parameter '" + std::string(key) + "' is given twice");
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return out;
}

std::string MatrixUri::str() const {
  switch (scheme) {
    case Scheme::suitesparse:
      return "suitesparse-" + version + "/" + group + "/" + name;
    case Scheme::file:
      return "file:" + path;
    case Scheme::generated: {
      std::string out = "gen-" + version + "/" + kind;
      char sep = '?';
      for (const auto& [key, value] : params) {  // std::map: sorted by key
        out += sep;
        out.append(key).append("=").append(value);
        sep = '&';
      }
      return out;
    }
  }
  return {};
}

std::string Task::str() const {
  std::string out = uri + " " + std::string(to_string(op)) + " " + std::string(to_string(dtype));
  if (op == Op::spmm) out += " k=" + std::to_string(k);
  return out;
}

Task Task::parse(std::string_view text) {
  std::vector<std::string_view> words;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = std::min(text.find(' ', at), text.size());
    if (end > at) words.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  auto fail = [&text](const std::string& what) -> Task {
    throw std::invalid_argument("invalid task '" + std::string(text) + "': " + what);
  };
  if (words.size() < 3 || words.size() > 4) {
    return fail("expected 'URI spmv|spmm f32|f64 [k=K]'");
  }
  Task t;
  t.uri = MatrixUri::parse(words[0]).str();
  const auto op = parse_op(words[1]);
  if (!op)
    return fail("expected the operation spmv or spmm, found '" + std::string(words[1]) + "'");
  const auto dtype = parse_dtype(words[2]);
  if (!dtype)
    return fail("expected the value type f32 or f64, found '" + std::string(words[2]) + "'");
  t.op = *op;
  t.dtype = *dtype;
  if (words.size() == 4) {
    const std::string_view k = words[3];
    long long v = 0;
    bool digits = k.size() > 2 && k.size() < 12 && k.rfind("k=", 0) == 0;
    for (std::size_t i = 2; digits && i < k.size(); ++i) {
      digits = k[i] >= '0' && k[i] <= '9';
      v = v * 10 + (k[i] - '0');
    }
    if (!digits || v < 1 || v > kMaxIndex) {
      return fail("expected k=K with K a positive integer, found '" + std::string(k) + "'");
    }
    if (t.op == Op::spmv && v != 1) return fail("spmv has k=1 (one dense column)");
    t.k = static_cast<Index>(v);
  } else if (t.op == Op::spmm) {
    return fail("spmm needs k=K (the number of dense columns)");
  }
  return t;
}

}  // namespace sparserl::datasets
