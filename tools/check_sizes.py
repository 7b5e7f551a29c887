#!/usr/bin/env python3
"""Size limits of the project's C++ sources: no file over 1,000 lines, no function over 150.

Scans the files git tracks (*.cpp, *.hpp, *.h, *.cu, *.cuh, *.in) and reports every file longer than
MAX_FILE_LINES and every function longer than MAX_FUNCTION_LINES, counted from the first line of
the function's declaration to its closing brace. Functions are found by a brace-matching heuristic,
not a compiler: strings, character literals, raw strings, comments and preprocessor lines are
skipped; namespaces, classes, structs, unions and extern blocks are looked into; a block whose
declaration ends in a parameter list (with qualifiers, a trailing return type or a constructor's
initialiser list) is a function (a Catch2 TEST_CASE counts as one), and so is a lambda assigned at
namespace or class scope. Lambdas and local classes inside a function count towards that function.
Known exceptions, with the reason for each, live in check_sizes_allow.txt beside this script (one
`path` or `path:function` per line, then ` # reason`); one that no longer matches anything is
reported as stale (a failure with --strict), so that the list is seen to shrink. Exits 0 when all
is within the limits; 1 listing each violation as `path:line: function NAME is N lines (max 150)`
or `path: N lines (max 1000)`; 2 on a usage error; 77 (CTest's "skipped") outside a git checkout.
Python 3 standard library only; tests/tools/check_sizes_test.py tests the heuristic itself.
"""

import argparse
import os
import subprocess
import sys
from dataclasses import dataclass

MAX_FILE_LINES = 1000
MAX_FUNCTION_LINES = 150
SKIPPED = 77  # CTest's SKIP_RETURN_CODE throughout the project
SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cu", ".cuh", ".in")
ALLOW_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_sizes_allow.txt")

# Longest first, so that `::` is never read as two colons nor `==` as an assignment.
PUNCTUATORS = ("<<=", ">>=", "->*", "...", "::", "->", "==", "!=", "<=", ">=", "&&", "||", "++",
               "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<", ".*")
RAW_STRING_PREFIXES = ("R", "u8R", "uR", "UR", "LR")
TRAILING_QUALIFIERS = {"const", "volatile", "noexcept", "override", "final", "mutable", "&", "&&",
                       "try", "throw"}
TEST_MACROS = {"TEST_CASE", "TEST_CASE_METHOD", "SCENARIO", "TEMPLATE_TEST_CASE", "SECTION"}


@dataclass
class Token:
    kind: str  # "id", "num", "str", "chr" or "punct"
    text: str  # a string's or character's contents without the quotes
    line: int


# Stands for a body already read in a declaration that runs on to its `;` (`struct {...} x;`).
AFTER_BODY = Token("punct", "}", 0)


@dataclass
class Function:
    name: str
    first_line: int
    last_line: int

    @property
    def lines(self):
        return self.last_line - self.first_line + 1


def comment_end(source, i):
    """Where the comment that starts at source[i] ends: after its `*/`, or at the end of its line
    (a backslash continuing it); None where no comment starts there."""
    if source.startswith("/*", i):
        end = source.find("*/", i + 2)
        return len(source) if end < 0 else end + 2
    if source.startswith("//", i):
        while i < len(source) and source[i] != "\n":
            i += 2 if source.startswith("\\\n", i) else 1
        return i
    return None


def tokenize(source):
    """The tokens of C++ source text, without comments and preprocessor lines."""
    tokens = []
    i, n, line = 0, len(source), 1
    at_line_start = True
    while i < n:
        c = source[i]
        if c == "\n":
            line += 1
            at_line_start = True
            i += 1
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if c == "\\" and source.startswith("\n", i + 1):
            i += 2
            line += 1
            continue
        if c == "#" and at_line_start:
            # A directive runs to the end of the line, longer where a backslash continues it.
            while i < n and source[i] != "\n":
                end = comment_end(source, i)
                if end is None:
                    end = i + (2 if source.startswith("\\\n", i) else 1)
                line += source.count("\n", i, end)
                i = end
            continue
        at_line_start = False
        end = comment_end(source, i)
        if end is not None:
            line += source.count("\n", i, end)
            i = end
            continue
        if c.isalpha() or c == "_":
            start = i
            while i < n and (source[i].isalnum() or source[i] == "_"):
                i += 1
            word = source[start:i]
            if word in RAW_STRING_PREFIXES and source.startswith('"', i):
                open_paren = source.find("(", i + 1)
                delimiter = source[i + 1:open_paren]
                close = source.find(")" + delimiter + '"', open_paren + 1)
                end = n if open_paren < 0 or close < 0 else close + len(delimiter) + 2
                tokens.append(Token("str", source[open_paren + 1:close], line))
                line += source.count("\n", i, end)
                i = end
                continue
            tokens.append(Token("id", word, line))
            continue
        if c.isdigit() or (c == "." and i + 1 < n and source[i + 1].isdigit()):
            start = i
            hexadecimal = source.startswith(("0x", "0X"), i)
            while i < n and (source[i].isalnum() or source[i] in "_.'"):
                exponent = "pP" if hexadecimal else "eEpP"
                if source[i] in exponent and i + 1 < n and source[i + 1] in "+-":
                    i += 1
                i += 1
            tokens.append(Token("num", source[start:i], line))
            continue
        if c in "\"'":
            start_line = line
            i += 1
            start = i
            while i < n and source[i] != c:
                if source[i] == "\\":
                    if source.startswith("\n", i + 1):
                        line += 1
                    i += 1
                elif source[i] == "\n":  # an unterminated literal ends at the line's end
                    break
                i += 1
            tokens.append(Token("str" if c == '"' else "chr", source[start:i], start_line))
            i += 1
            continue
        for punct in PUNCTUATORS:
            if source.startswith(punct, i):
                tokens.append(Token("punct", punct, line))
                i += len(punct)
                break
        else:
            tokens.append(Token("punct", c, line))
            i += 1
    return tokens


def matching(tokens, i):
    """The index of the bracket that closes tokens[i] (the last token when none does)."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack = [pairs[tokens[i].text]]
    j = i + 1
    while j < len(tokens):
        t = tokens[j]
        if t.kind == "punct":
            if t.text in pairs:
                stack.append(pairs[t.text])
            elif t.text in (")", "]", "}"):
                # A stray closer of another kind ends the inner groups it was meant for.
                while stack and stack[-1] != t.text:
                    stack.pop()
                if stack:
                    stack.pop()
                if not stack:
                    return j
        j += 1
    return len(tokens) - 1


def is_punct(token, text):
    return token.kind == "punct" and token.text == text


def strip_prefix(header):
    """The declaration without its template<...> clauses, attributes and a few leading keywords."""
    k = 0
    while k < len(header):
        t = header[k]
        if t.kind == "id" and t.text == "template" and k + 1 < len(header) and \
                is_punct(header[k + 1], "<"):
            depth, k = 0, k + 1
            while k < len(header):
                if is_punct(header[k], "<"):
                    depth += 1
                elif is_punct(header[k], ">"):
                    depth -= 1
                elif is_punct(header[k], ">>"):
                    depth -= 2
                k += 1
                if depth <= 0:
                    break
        elif is_punct(t, "[") and k + 1 < len(header) and is_punct(header[k + 1], "["):
            k = matching(header, k) + 1
        elif t.kind == "id" and t.text in ("inline", "export", "typedef", "static", "constexpr"):
            k += 1
        else:
            break
    return header[k:]


def depth_zero(header):
    """The indices of the tokens outside every bracket pair of a declaration."""
    out, depth = [], 0
    for k, t in enumerate(header):
        if t.kind == "punct" and t.text in "([{":
            if depth == 0:
                out.append(k)
            depth += 1
        elif t.kind == "punct" and t.text in ")]}":
            depth -= 1
            if depth == 0:
                out.append(k)
        elif depth == 0:
            out.append(k)
    return out


def open_of(header, close):
    """The index of the bracket that opens the group closed at header[close]."""
    pairs = {")": "(", "]": "[", "}": "{"}
    depth = 0
    for k in range(close, -1, -1):
        t = header[k]
        if t.kind == "punct" and t.text in pairs:
            depth += 1
        elif t.kind == "punct" and t.text in "([{":
            depth -= 1
            if depth == 0:
                return k
    return 0


def is_initialiser_colon(header, k):
    """Whether header[k] is the `:` that opens a constructor's initialiser list."""
    if not is_punct(header[k], ":") or k == 0:
        return False
    before = header[k - 1]
    return is_punct(before, ")") or before.kind == "id" and before.text in ("noexcept", "override")


def parameter_list_end(header, top):
    """The index of the `)` that closes a function's parameter list, or None where there is none:
    the declaration ends in `)`, perhaps followed by qualifiers, a trailing return type or a
    constructor's initialiser list."""
    end = len(header)
    for k in top:
        if is_punct(header[k], "->") or is_initialiser_colon(header, k):
            end = k
            break
    k = end - 1
    while k >= 0:
        t = header[k]
        if t.text in TRAILING_QUALIFIERS and t.kind in ("id", "punct"):
            k -= 1
            continue
        if is_punct(t, ")"):
            opening = open_of(header, k)
            if opening > 0 and header[opening - 1].text in ("noexcept", "throw"):
                k = opening - 2
                continue
            return k
        return None
    return None


def function_name(header, close):
    """The name before the parameter list that header[close] closes."""
    open_k = open_of(header, close)
    j = open_k - 1
    if j < 0:
        return "?"
    before = header[j]
    if before.kind == "id":
        if before.text in TEST_MACROS and header[open_k + 1].kind == "str":
            return '%s("%s")' % (before.text, header[open_k + 1].text)
        name = before.text
        if j >= 1 and is_punct(header[j - 1], "~"):
            name = "~" + name
            j -= 1
        while j >= 2 and is_punct(header[j - 1], "::") and header[j - 2].kind == "id":
            name = header[j - 2].text + "::" + name
            j -= 2
        if j >= 1 and header[j - 1].kind == "id" and header[j - 1].text == "operator":
            name = "operator " + name
        return name
    # An operator: `operator()(...)`, `operator==(...)`, `operator[](...)`.
    for back in range(1, 4):
        if j - back >= 0 and header[j - back].kind == "id" and header[j - back].text == "operator":
            return "operator" + "".join(t.text for t in header[j - back + 1:j + 1])
    return "?"


def classify(header):
    """What a `{` that follows this declaration opens: "scope" (looked into), "function",
    "lambda", "initialiser" (a brace in a constructor's initialiser list) or "block" (skipped)."""
    body = strip_prefix(header)
    if not body:
        return "block", None
    first = body[0]
    if first.kind == "id" and first.text == "namespace":
        return "scope", None
    if first.kind == "id" and first.text == "extern" and len(body) == 2 and body[1].kind == "str":
        return "scope", None
    top = depth_zero(body)
    for k in top:
        if is_punct(body[k], "=") and not (k > 0 and body[k - 1].text == "operator"):
            if k + 1 < len(body) and is_punct(body[k + 1], "["):
                name = body[k - 1].text if k > 0 and body[k - 1].kind == "id" else "?"
                return "lambda", name
            return "block", None
    close = parameter_list_end(body, top)
    if first.kind == "id" and first.text in ("class", "struct", "union") and close is None:
        return "scope", None
    if first.kind == "id" and first.text == "enum":
        return "block", None
    in_initialisers = any(is_initialiser_colon(body, k) for k in top)
    if close is not None and in_initialisers and body[-1].kind == "id" or \
            in_initialisers and is_punct(body[-1], ">"):
        return "initialiser", None
    if close is not None:
        return "function", function_name(body, close)
    return "block", None


def find_functions(source):
    """The functions (and namespace-scope lambdas) of C++ source text, in order."""
    tokens = tokenize(source)
    functions = []

    def scope(i):
        header = []
        while i < len(tokens):
            t = tokens[i]
            if t.kind != "punct":
                header.append(t)
                i += 1
                continue
            if t.text == "}":
                return i + 1
            if t.text == ";":
                header = []
                i += 1
                continue
            if t.text in ("(", "["):
                j = matching(tokens, i)
                header.extend(tokens[i:j + 1])
                i = j + 1
                continue
            if t.text == ":" and len(header) == 1 and header[0].text in (
                    "public", "private", "protected"):
                header = []
                i += 1
                continue
            if t.text == "{":
                kind, name = classify(header)
                if kind == "scope":
                    i = scope(i + 1)
                    # A class's declaration runs on to its `;`, a namespace's ends at its brace.
                    opened = strip_prefix(header)[0].text
                    header = [] if opened in ("namespace", "extern") else [AFTER_BODY]
                    continue
                j = matching(tokens, i)
                if kind in ("function", "lambda"):
                    functions.append(Function(name, header[0].line, tokens[j].line))
                    # A function ends at its brace; a lambda's declaration runs on to its `;`.
                    header = [] if kind == "function" else [AFTER_BODY]
                else:
                    header.extend(tokens[i:j + 1])
                i = j + 1
                continue
            header.append(t)
            i += 1
        return i

    i = 0
    while i < len(tokens):
        i = scope(i)
    return functions


@dataclass
class Violation:
    path: str
    line: int  # 0 for a whole file
    name: str  # "" for a whole file
    lines: int

    def __str__(self):
        if self.name:
            return "%s:%d: function %s is %d lines (max %d)" % (
                self.path, self.line, self.name, self.lines, MAX_FUNCTION_LINES)
        return "%s: %d lines (max %d)" % (self.path, self.lines, MAX_FILE_LINES)


def check_source(path, source, max_file_lines=MAX_FILE_LINES,
                 max_function_lines=MAX_FUNCTION_LINES):
    """The violations in one file's text."""
    violations = []
    line_count = source.count("\n") + (0 if source.endswith("\n") or not source else 1)
    if line_count > max_file_lines:
        violations.append(Violation(path, 0, "", line_count))
    for function in find_functions(source):
        if function.lines > max_function_lines:
            violations.append(Violation(path, function.first_line, function.name, function.lines))
    return violations


def read_allow_list(path):
    """The allowed exceptions: {entry: reason}, entry being `path` or `path:function`."""
    allowed = {}
    if not os.path.exists(path):
        return allowed
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            text = raw.strip()
            if not text or text.startswith("#"):
                continue
            entry, sep, reason = text.rpartition(" # ")
            if not sep or not entry.strip() or not reason.strip():
                raise ValueError("%s:%d: expected `path[:function] # reason`" % (path, number))
            allowed[entry.strip()] = reason.strip()
    return allowed


def entry_of(violation):
    return "%s:%s" % (violation.path, violation.name) if violation.name else violation.path


def tracked_sources(root):
    """The C++ sources git tracks under root, or None where root is not a git checkout."""
    try:
        listing = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return sorted(p for p in listing.decode("utf-8").split("\0") if p.endswith(SOURCE_SUFFIXES))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", help="the checkout (default: the one this script is in)")
    parser.add_argument("--allow", default=ALLOW_FILE, help="the known exceptions")
    parser.add_argument("--strict", action="store_true", help="fail on stale exceptions too")
    parser.add_argument("files", nargs="*", help="check these files instead of git's list")
    args = parser.parse_args(argv)
    root = args.root or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        allowed = read_allow_list(args.allow)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    paths = args.files or tracked_sources(root)
    if paths is None:
        print("%s is not a git checkout: nothing to check (skipped)" % root, file=sys.stderr)
        return SKIPPED
    violations, used = [], set()
    for path in paths:
        full = path if os.path.isabs(path) else os.path.join(root, path)
        with open(full, encoding="utf-8", errors="replace") as f:
            found = check_source(path, f.read())
        for violation in found:
            entry = entry_of(violation)
            if entry in allowed:
                used.add(entry)
            else:
                violations.append(violation)
    stale = [] if args.files else sorted(set(allowed) - used)
    for violation in violations:
        print(violation)
    for entry in stale:
        print("%s: listed in %s but within the limits now; remove the line" % (
            entry, os.path.basename(args.allow)))
    failed = violations or (args.strict and stale)
    if failed:
        print("%d over the limits, %d stale exceptions" % (len(violations), len(stale)),
              file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
