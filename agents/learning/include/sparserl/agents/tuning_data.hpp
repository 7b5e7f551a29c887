// The training data of the first two stages, read from the HDF5 dataset that `sparserl tune`
// writes (agents/kernels/include/sparserl/kernels/tuning_output.hpp, docs/design-space.md):
//   /corpus  every distinct correct program of the search        -> the pretraining corpus
//   /sft     the best correct program of each task, with the task -> the SFT pairs
// Only the columns named here are read (program; task, program, correct), so added columns do not
// break the reader. No LibTorch here.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "sparserl/agents/training.hpp"
#include "sparserl/datasets/task.hpp"

namespace sparserl::agents {

// The programs of /corpus (of one op when asked), in file order. std::runtime_error naming the file
// and the dataset when it is missing or malformed.
std::vector<std::string> read_corpus(const std::filesystem::path& file,
                                     std::optional<datasets::Op> op = std::nullopt);
// The (task, program) rows of /sft whose program is correct, in file order.
std::vector<SftPair> read_sft_pairs(const std::filesystem::path& file);

}  // namespace sparserl::agents
