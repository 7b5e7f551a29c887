// Internal to `sparserl vocab`, whose subcommands are spread over two files: vocab_command.cpp
// (the closed vocabularies: build, show, encode, check) and vocab_bpe_command.cpp (`bpe`: the
// project's byte-level BPE tokenizer, trained on a corpus). This header holds what they share.
#pragma once

#include <string>
#include <vector>

#include "cli.hpp"

namespace sparserl::tools::vocab {

struct CorpusProgram {
  std::string name;
  std::string text;
};

// Every point of the kernel design space, for both ops and dtypes (empty where agents/kernels is
// not built).
std::vector<CorpusProgram> design_space_programs();

// `sparserl vocab bpe`'s arguments and run.
Run declare_bpe(CLI::App& sub);

}  // namespace sparserl::tools::vocab
