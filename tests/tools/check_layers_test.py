#!/usr/bin/env python3
"""Tests of tools/check_layers.py, the layering check behind the `check_layers` CTest test: on a
made-up git tree, an include of a higher library is reported with its file, line and the allowed
libraries; includes downward, of the library itself, from tests/ and of non-project headers pass;
env and kernels may not include each other; untracked files are not read; outside a git checkout
the check is skipped. Plain unittest: `python3 tests/tools/check_layers_test.py`.
"""

import contextlib
import io
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import check_layers  # noqa: E402


class LayeringTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        subprocess.run(["git", "init", "-q", self.root], check=True)

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, path, text, track=True):
        full = os.path.join(self.root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
        if track:
            subprocess.run(["git", "add", path], cwd=self.root, check=True)

    def run_check(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = check_layers.main(["--root", self.root])
        return code, out.getvalue()

    def test_downward_and_own_includes_pass(self):
        self.write("reward/src/a.cpp", '#include "sparserl/datasets/x.hpp"\n'
                                       '#include "sparserl/reward/y.hpp"\n#include <vector>\n')
        self.write("experiments/src/b.cpp", '#if __has_include("sparserl/agents/p.hpp")\n'
                                            '#include "sparserl/agents/p.hpp"\n#endif\n')
        self.write("tests/env/t.cpp", '#include "sparserl/experiments/z.hpp"\n')
        code, out = self.run_check()
        self.assertEqual(code, 0, out)
        self.assertIn("the layering holds in 3 tracked files", out)

    def test_an_upward_include_is_reported_with_file_line_and_allowed(self):
        self.write("datasets/src/a.cpp", '// x\n\n  #  include "sparserl/env/episode.hpp"\n')
        code, out = self.run_check()
        self.assertEqual(code, 1)
        self.assertIn("datasets/src/a.cpp:3: datasets includes sparserl/env (allowed: datasets)",
                      out)

    def test_env_and_kernels_are_siblings(self):
        self.write("agents/kernels/src/k.cpp", '#include "sparserl/env/tokenizer.hpp"\n')
        self.write("env/src/e.cpp", '#include "sparserl/kernels/design_space.hpp"\n')
        self.write("agents/learning/src/l.cpp", '#include "sparserl/kernels/design_space.hpp"\n'
                                                '#include "sparserl/experiments/x.hpp"\n')
        code, out = self.run_check()
        self.assertEqual(code, 1)
        self.assertIn("agents/kernels/src/k.cpp:1: kernels includes sparserl/env", out)
        self.assertIn("env/src/e.cpp:1: env includes sparserl/kernels", out)
        self.assertIn("agents/learning/src/l.cpp:2: agents includes sparserl/experiments", out)
        self.assertNotIn("l.cpp:1", out)
        self.assertIn("3 includes break the layering", out)

    def test_untracked_files_are_not_read(self):
        self.write("datasets/src/a.cpp", '#include "sparserl/tools/x.hpp"\n', track=False)
        code, out = self.run_check()
        self.assertEqual(code, 0, out)

    def test_outside_a_git_checkout_the_check_is_skipped(self):
        with tempfile.TemporaryDirectory() as plain:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                code = check_layers.main(["--root", plain])
        self.assertEqual(code, check_layers.SKIPPED)


if __name__ == "__main__":
    unittest.main()
