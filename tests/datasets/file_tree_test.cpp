// remove_tree (datasets/file_tree.hpp): removes nested trees, never follows a symbolic link out of
// the tree, treats a missing path as done, reports what it cannot remove; and no source that may
// share a process with LibTorch calls std::filesystem::remove_all (the reason is in file_tree.hpp).
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "catch.hpp"
#include "sparserl/datasets/file_tree.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using sparserl::datasets::remove_tree;

namespace {

void touch(const fs::path& p) { std::ofstream(p) << "x"; }

}  // namespace

TEST_CASE("remove_tree removes a nested tree and counts its entries", "[datasets][files]") {
  const fs::path dir = sparserl::testing::scratch_dir("file_tree_nested");
  const fs::path root = dir / "tree";
  fs::create_directories(root / "a" / "b");
  touch(root / "f1");
  touch(root / "a" / "f2");
  touch(root / "a" / "b" / "f3");
  CHECK(remove_tree(root) == 6);  // 3 files, 3 folders
  CHECK_FALSE(fs::exists(root));
  CHECK(fs::exists(dir));
}

TEST_CASE("remove_tree removes a symbolic link, not what it points to", "[datasets][files]") {
  const fs::path dir = sparserl::testing::scratch_dir("file_tree_symlink");
  fs::create_directories(dir / "outside");
  touch(dir / "outside" / "keep");
  fs::create_directories(dir / "tree");
  fs::create_directory_symlink(dir / "outside", dir / "tree" / "link");
  remove_tree(dir / "tree");
  CHECK_FALSE(fs::exists(dir / "tree"));
  CHECK(fs::exists(dir / "outside" / "keep"));
}

TEST_CASE("remove_tree: a missing path is done, a single file is removed", "[datasets][files]") {
  const fs::path dir = sparserl::testing::scratch_dir("file_tree_missing");
  CHECK(remove_tree(dir / "absent") == 0);
  std::error_code ec;
  CHECK(remove_tree(dir / "absent" / "deeper", ec) == 0);
  CHECK_FALSE(ec);
  touch(dir / "file");
  CHECK(remove_tree(dir / "file") == 1);
  CHECK_FALSE(fs::exists(dir / "file"));
}

TEST_CASE("remove_tree names the entry it cannot remove", "[datasets][files]") {
  if (::geteuid() == 0) {
    // Permissions do not stop root; procfs does (nothing in it can be unlinked).
    std::error_code ec;
    CHECK(remove_tree("/proc/self/fdinfo", ec) == 0);
    CHECK(ec);
    CHECK_THROWS_WITH(remove_tree("/proc/self/fdinfo"),
                      sparserl::testing::has_substring("/proc/self/fdinfo/"));
    return;
  }
  const fs::path dir = sparserl::testing::scratch_dir("file_tree_denied");
  fs::create_directories(dir / "tree" / "locked");
  touch(dir / "tree" / "locked" / "f");
  ::chmod((dir / "tree" / "locked").c_str(), 0500);
  std::error_code ec;
  remove_tree(dir / "tree", ec);
  CHECK(ec);
  CHECK_THROWS_WITH(remove_tree(dir / "tree"), sparserl::testing::has_substring("locked"));
  ::chmod((dir / "tree" / "locked").c_str(), 0700);
  remove_tree(dir / "tree");
  CHECK_FALSE(fs::exists(dir / "tree"));
}

TEST_CASE("no source that may share a process with LibTorch calls std::filesystem::remove_all",
          "[datasets][files]") {
  const fs::path source = SPARSERL_TEST_SOURCE_DIR;
  int scanned = 0;
  for (const char* folder : {"agents", "env", "experiments", "reward", "tools", "datasets/src"}) {
    for (const auto& entry : fs::recursive_directory_iterator(source / folder)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".cpp" && ext != ".hpp") continue;
      std::ifstream in(entry.path());
      std::ostringstream text;
      text << in.rdbuf();
      ++scanned;
      INFO(entry.path().string());
      CHECK(text.str().find("remove_all(") == std::string::npos);
    }
  }
  CHECK(scanned > 50);
}
