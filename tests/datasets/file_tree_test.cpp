// remove_tree (datasets/file_tree.hpp): removes nested trees, never follows a symbolic link out of
// the tree, treats a missing path as done, reports what it cannot remove; and no source that may
// share a process with LibTorch calls std::filesystem::remove_all (the reason is in file_tree.hpp).
#include "sparserl/datasets/file_tree.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "catch.hpp"
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

TEST_CASE("a scratch folder is one process's at a time", "[datasets][support]") {
  // Held by this process: another open of its lock file cannot take it (flock locks belong to
  // the open file, so a second open in one process stands for another process), and a second
  // scratch_dir of the same name in this process (a case's next section) is no conflict.
  const fs::path dir = sparserl::testing::scratch_dir("scratch_lock_held");
  CHECK(sparserl::testing::scratch_dir("scratch_lock_held") == dir);
  const int other = ::open((dir.string() + ".lock").c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(other >= 0);
  CHECK(::flock(other, LOCK_EX | LOCK_NB) != 0);
  ::close(other);
  // Held elsewhere for longer than the wait: scratch_dir says so, naming the folder, and leaves
  // its contents alone.
  const fs::path taken = fs::path(SPARSERL_TEST_BINARY_DIR) / "scratch" / "scratch_lock_taken";
  fs::create_directories(taken);
  std::ofstream(taken / "kept") << "x";
  const int holder = ::open((taken.string() + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  REQUIRE(holder >= 0);
  REQUIRE(::flock(holder, LOCK_EX | LOCK_NB) == 0);
  ::setenv("SPARSERL_SCRATCH_WAIT_S", "1", 1);
  CHECK_THROWS_WITH(sparserl::testing::scratch_dir("scratch_lock_taken"),
                    Catch::Contains("scratch_lock_taken is in use by another process for 1 s"));
  CHECK(fs::exists(taken / "kept"));
  // Released within the wait: scratch_dir waits for it, then empties the folder.
  ::setenv("SPARSERL_SCRATCH_WAIT_S", "30", 1);
  const pid_t releaser = ::fork();
  REQUIRE(releaser >= 0);
  if (releaser == 0) {
    ::usleep(500000);
    ::close(holder);  // the parent's copy still holds it: the parent closes its own below
    ::_exit(0);
  }
  ::close(holder);  // now only the child holds the lock, for half a second more
  const fs::path got = sparserl::testing::scratch_dir("scratch_lock_taken");
  CHECK(got == taken);
  CHECK_FALSE(fs::exists(taken / "kept"));
  int status = 0;
  ::waitpid(releaser, &status, 0);
  ::unsetenv("SPARSERL_SCRATCH_WAIT_S");
}
