// A task written out as text (prompt_text.hpp): the sentences and their order are those the Python
// package's build_prompt() has always produced, so a prompt reads the same from C++ and Python.
#include "sparserl/env/prompt_text.hpp"

#include <cctype>
#include <stdexcept>

namespace sparserl::env {
namespace {

std::string operation(const datasets::Task& task) {
  return task.op == datasets::Op::spmm
             ? "SpMM, Y = A X (X is N x K row-major, Y is M x K row-major)"
             : "SpMV, y = A x (x has N entries, y has M)";
}

// A format's kernel signature, each argument with its type, length and meaning, and the prelude the
// evaluator prepends for this matrix (without its #line).
std::string format_section(const datasets::SparseMatrix& matrix, const datasets::Task& task,
                           const reward::FormatSpec& spec) {
  if (auto problem = spec.validate()) throw std::invalid_argument("prompt format: " + *problem);
  const std::string op(datasets::to_string(task.op));
  const reward::Signature& signature = reward::signature(task.op, spec.format);
  std::string out = "Format " + spec.str() +
                    ": every launched kernel takes these arguments, in this order:\n" +
                    signature.declaration(op + "_" + std::string(reward::to_string(spec.format)));
  for (const reward::KernelArg& a : signature.args) {
    out += "\n  " + std::string(a.name) + " (" + std::string(reward::c_type(a.kind)) + ", " +
           std::string(a.length) + " elements): " + std::string(a.doc);
  }
  std::string prelude =
      reward::render_prelude(task.dtype, reward::compute_constants(matrix, task.op, task.k, spec));
  prelude = prelude.substr(0, prelude.find("#line"));
  while (!prelude.empty() && std::isspace(static_cast<unsigned char>(prelude.back()))) {
    prelude.pop_back();
  }
  return out + "\nThe evaluator prepends this prelude to the program:\n" + prelude;
}

}  // namespace

std::string prompt_text(const datasets::SparseMatrix& matrix, const datasets::Task& task,
                        const MatrixObservation& observation, const PromptTextOptions& options) {
  std::string pairs;
  for (int i = 0; i < observation.count; ++i) {
    const auto at = static_cast<std::size_t>(i);
    pairs += (i > 0 ? " (" : "(") + std::to_string(observation.rows[at]) + "," +
             std::to_string(observation.cols[at]) + ")";
  }
  const std::string sampled =
      observation.count == matrix.nnz()
          ? "all of them"
          : std::to_string(observation.count) + " of them, sampled across the matrix";
  std::vector<std::string> parts = {
      "Task: " + operation(task) + ", values " + std::string(datasets::to_string(task.dtype)) +
          (task.op == datasets::Op::spmm ? ", K = " + std::to_string(task.k) : "") + ".",
      "Matrix " + task.uri + ": M = " + std::to_string(matrix.rows()) +
          " rows, N = " + std::to_string(matrix.cols()) +
          " columns, NNZ = " + std::to_string(matrix.nnz()) + " nonzeros.",
      "Nonzero indices (row,col), " + sampled + ":", pairs};
  if (options.instructions) {
    parts.emplace_back(
        "Write a CUDA program for this matrix: device code only (no host code, no #include), "
        "starting with its directives:\n"
        "//@format csr | coo | ell | sell C=<slice height> sigma=<window> | bsr R=<rows> "
        "C=<cols>\n"
        "//@launch KERNEL grid=EXPR block=EXPR [smem=EXPR]   (1 to 8 launches, run in order; "
        "EXPR uses integers, the prelude constants, + - * /, ceil_div, min, max)\n"
        "Kernels are extern \"C\" __global__; every output element must be written.");
  }
  for (const reward::FormatSpec& spec : options.formats) {
    parts.push_back(format_section(matrix, task, spec));
  }
  if (options.instructions)
    parts.emplace_back("Answer with the program in one ```cuda code block.");
  std::string text;
  for (const std::string& part : parts) text += (text.empty() ? "" : "\n\n") + part;
  return text;
}

}  // namespace sparserl::env
