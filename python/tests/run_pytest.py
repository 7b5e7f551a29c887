#!/usr/bin/env python3
"""Runs the Python package's pytest tests for CTest: `run_pytest.py [--gpu] [pytest args]`.

Exits 77 (CTest's "skipped") when pytest or numpy is not installed for this interpreter, saying
which; with --gpu it runs only the tests marked gpu and exits 77 when every one of them skipped
(no GPU), so that a machine without a GPU never reports them passed."""

import os
import sys

SKIPPED = 77


def main(argv):
    gpu = "--gpu" in argv
    args = [a for a in argv if a != "--gpu"]
    for module in ("pytest", "numpy"):
        try:
            __import__(module)
        except ImportError:
            print(f"skipped: {module} is not installed for {sys.executable} "
                  f"(Debian: python3-{module})")
            return SKIPPED
    import pytest

    class Outcomes:
        def __init__(self):
            self.passed = self.skipped = self.failed = 0

        def pytest_runtest_logreport(self, report):
            if report.when == "call" and report.passed:
                self.passed += 1
            elif report.skipped:
                self.skipped += 1
            elif report.failed:
                self.failed += 1

    outcomes = Outcomes()
    here = os.path.dirname(os.path.abspath(__file__))
    code = pytest.main(["-q", "-rs", "-p", "no:cacheprovider", "--rootdir", here,
                        "-m", "gpu" if gpu else "not gpu", *(args or [here])],
                       plugins=[outcomes])
    if gpu and code in (0, 5) and outcomes.passed == 0 and outcomes.failed == 0:
        return SKIPPED
    return int(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
