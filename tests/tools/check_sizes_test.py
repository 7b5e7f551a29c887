#!/usr/bin/env python3
"""Tests of tools/check_sizes.py, the size checker behind the `check_sizes` CTest test: which blocks
it counts as functions and how long, that braces in strings, characters, comments, raw strings and
directives do not fool it, where the limits fall (150 lines a function, 1,000 a file, both
inclusive), and what the command prints and returns with and without known exceptions. Plain
unittest (no pytest needed): `python3 tests/tools/check_sizes_test.py`.
"""

import contextlib
import io
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import check_sizes  # noqa: E402


def function_of(lines, name="f", signature=None):
    """C++ text of a function `lines` long, from its signature line to its closing brace."""
    assert lines >= 2
    body = ["  x += %d;" % k for k in range(lines - 2)]
    return "\n".join([signature or "int %s(int x) {" % name] + body + ["}"]) + "\n"


def sample(text):
    """C++ text written indented in a triple-quoted string, from its first line."""
    return textwrap.dedent(text).lstrip("\n")


def found(source):
    return [(f.name, f.first_line, f.lines) for f in check_sizes.find_functions(source)]


class FunctionLengthTest(unittest.TestCase):
    def test_a_151_line_function_is_flagged_and_a_150_line_one_is_not(self):
        source = function_of(150, "fits") + function_of(151, "too_long")
        violations = check_sizes.check_source("a.cpp", source)
        self.assertEqual([str(v) for v in violations],
                         ["a.cpp:151: function too_long is 151 lines (max 150)"])

    def test_length_runs_from_the_first_signature_line_to_the_closing_brace(self):
        source = "// header\n\nstatic std::vector<int>\nmake(int a,\n     int b) {\n  return {};\n}\n"
        self.assertEqual(found(source), [("make", 3, 5)])

    def test_braces_in_strings_chars_comments_and_directives_are_ignored(self):
        source = sample(r"""
            #define OPEN {
            #define CLOSE \
              }
            int f() {
              const char* s = "}}} {";
              char c = '}';
              char e = '\'';
              const char* t = "\" }";
              // }
              /* } {
                 } */
              const char* raw = R"x(} "} )" {{)x";
              int n = 1'000'000;
              return 0;
            }
            int g() { return 1; }
            """)
        self.assertEqual(found(source), [("f", 4, 12), ("g", 16, 1)])

    def test_a_long_raw_string_counts_towards_its_function(self):
        text = "\n".join("line %d {" % k for k in range(160))
        source = 'std::string tmpl() {\n  return R"cuda(%s)cuda";\n}\n' % text
        self.assertEqual(found(source), [("tmpl", 1, 162)])

    def test_namespaces_classes_and_extern_blocks_are_looked_into_not_counted(self):
        source = sample("""
            namespace a::b {
            extern "C" {
            int c_function(void) { return 0; }
            }
            namespace {
            struct Point final : Base<decltype(f())> {
              Point() : x_{1}, y_(2) {}
              explicit Point(int v) noexcept : x_{v} { y_ = v; }
              int norm() const noexcept { return x_; }
              auto sum() const -> int { return x_ + y_; }
              bool operator==(const Point& o) const { return x_ == o.x_; }
              Point& operator=(const Point& o) { x_ = o.x_; return *this; }
              int operator()(int v) const { return v; }
             private:
              int x_{0};
              int y_ = 0;
            };
            enum class Kind { a, b };
            const int kTable[] = {1, 2, 3};
            }  // namespace
            Point::~Point() {
            }
            }  // namespace a::b
            """)
        self.assertEqual([name for name, _, _ in found(source)], [
            "c_function", "Point", "Point", "norm", "sum", "operator==", "operator=",
            "operator()", "Point::~Point"])

    def test_a_lambda_assigned_at_namespace_scope_is_a_function(self):
        source = "const auto kSquare = [](int v) {\n  return v * v;\n};\nint after() { return 0; }\n"
        self.assertEqual(found(source), [("kSquare", 1, 3), ("after", 4, 1)])

    def test_lambdas_inside_a_function_count_towards_it(self):
        source = "void outer() {\n  auto f = [] {\n    return 1;\n  };\n  f();\n}\n"
        self.assertEqual(found(source), [("outer", 1, 6)])

    def test_a_test_case_is_named_by_its_title(self):
        source = 'TEST_CASE("reads { braces }", "[tag]") {\n  SECTION("inner") {}\n}\n'
        self.assertEqual(found(source), [('TEST_CASE("reads { braces }")', 1, 3)])

    def test_a_cuda_kernel_is_a_function(self):
        source = ('extern "C" __global__ void __launch_bounds__(256)\n'
                  "spmv(const int* __restrict__ row_ptr, float* y) {\n  y[0] = 0;\n}\n")
        self.assertEqual(found(source), [("spmv", 1, 4)])


class FileLengthTest(unittest.TestCase):
    def test_a_file_over_1000_lines_is_flagged_and_one_of_1000_is_not(self):
        fits = "int x;\n" * 1000
        self.assertEqual(check_sizes.check_source("fits.hpp", fits), [])
        too_long = fits + "int y;"  # the last line need not end in a newline
        self.assertEqual([str(v) for v in check_sizes.check_source("long.hpp", too_long)],
                         ["long.hpp: 1001 lines (max 1000)"])


class CommandTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = self.dir.name
        subprocess.run(["git", "init", "-q", self.root], check=True)
        self.write("src/ok.cpp", function_of(150, "fits"))
        self.write("src/long.cpp", function_of(151, "too_long") + function_of(151, "also_long"))
        self.write("notes.txt", "{" * 2000)  # not a C++ source: never read
        subprocess.run(["git", "-C", self.root, "add", "."], check=True)

    def tearDown(self):
        self.dir.cleanup()

    def write(self, path, text):
        full = os.path.join(self.root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(text)

    def run_checker(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = check_sizes.main(["--root", self.root, *args])
        return code, out.getvalue().splitlines()

    def test_violations_are_listed_with_exit_code_1(self):
        code, lines = self.run_checker("--allow", os.path.join(self.root, "none.txt"))
        self.assertEqual(code, 1)
        self.assertEqual(lines, ["src/long.cpp:1: function too_long is 151 lines (max 150)",
                                 "src/long.cpp:152: function also_long is 151 lines (max 150)"])

    def test_listed_exceptions_pass_and_new_violations_do_not(self):
        self.write("allow.txt", "# comment\nsrc/long.cpp:too_long # being split elsewhere\n")
        code, lines = self.run_checker("--allow", os.path.join(self.root, "allow.txt"))
        self.assertEqual(code, 1)
        self.assertEqual(lines, ["src/long.cpp:152: function also_long is 151 lines (max 150)"])
        self.write("allow.txt", "src/long.cpp:too_long # a\nsrc/long.cpp:also_long # b\n")
        self.assertEqual(self.run_checker("--allow", os.path.join(self.root, "allow.txt")),
                         (0, []))

    def test_a_stale_exception_is_reported_and_fails_only_when_strict(self):
        self.write("allow.txt", "src/long.cpp:too_long # a\nsrc/long.cpp:also_long # b\n"
                   "src/ok.cpp:fits # was long once\n")
        allow = os.path.join(self.root, "allow.txt")
        stale = ["src/ok.cpp:fits: listed in allow.txt but within the limits now; remove the line"]
        self.assertEqual(self.run_checker("--allow", allow), (0, stale))
        self.assertEqual(self.run_checker("--allow", allow, "--strict"), (1, stale))

    def test_an_exception_without_a_reason_is_a_usage_error(self):
        self.write("allow.txt", "src/long.cpp:too_long\n")
        code, _ = self.run_checker("--allow", os.path.join(self.root, "allow.txt"))
        self.assertEqual(code, 2)

    def test_outside_a_git_checkout_the_check_is_skipped(self):
        with tempfile.TemporaryDirectory() as bare:
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = check_sizes.main(["--root", bare])
            self.assertEqual(code, check_sizes.SKIPPED)


if __name__ == "__main__":
    unittest.main()
