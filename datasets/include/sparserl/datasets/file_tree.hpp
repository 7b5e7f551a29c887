// Whole files and folder trees: reading a file's bytes in one call, and removing a folder tree
// without std::filesystem::remove_all. PyTorch's CUDA wheels (LibTorch 2.x on
// the Ubuntu GPU hosts) export their own copy of std::filesystem::remove_all from libtorch.so, and
// the dynamic linker binds every caller in the process to it; that copy calls a libstdc++ internal
// its build environment had and the host's libstdc++ lacks, through a null PLT slot, so any
// remove_all of a non-empty folder jumps to address 0 (seen on the H100 host as a SIGSEGV when a
// checkpoint folder was replaced). Everything that may share a process with LibTorch removes trees
// with remove_tree instead; a test keeps remove_all out of those sources.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>

namespace sparserl::datasets {

// Every byte of `file` (opened in binary mode), or nullopt where it cannot be opened: the caller
// names the file, and why it wanted it, in its own error (errno still says why the open failed).
std::optional<std::string> read_file_bytes(const std::filesystem::path& file);

// Removes `path` and everything below it (symbolic links are removed, never followed); a missing
// path is not an error. Returns the number of entries removed; throws std::filesystem_error naming
// the first entry that could not be removed.
std::uintmax_t remove_tree(const std::filesystem::path& path);
// The same, reporting a failure through `error` instead (0 removed entries counted up to it).
std::uintmax_t remove_tree(const std::filesystem::path& path, std::error_code& error) noexcept;

}  // namespace sparserl::datasets
