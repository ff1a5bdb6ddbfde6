#!/usr/bin/env python3
"""kvpatch's compile checks against CPython's own: the interpreter running this script is the judge.

1. Refused: every snippet of CPython's syntax tests (test_syntax.py's doctests and `_check_error`
   calls) that this interpreter's compile() refuses must be refused by kvpatch (exit 2, the file
   among the JSON report's errors), unless a later Python takes it: kvpatch accepts what Python 3.14
   accepts, and `except A, B:` (PEP 758) is the one such form these suites refuse.
2. Accepted: no file of the interpreter's standard library (its tests included) that compile()
   takes may be refused by kvpatch's compile checks. A file tree-sitter's grammar cannot parse is
   counted and printed, not failed: that is the grammar's limit, not a check of ours.

Each snippet and file is written with a comment naming the wrapper class, so that the rules select
it. Usage: cpython_syntax_corpus.py --kvpatch PATH
KVPATCH_CASE_SHARE=N in the environment checks one library file in N (case_share.py; the sanitized pass of
scripts/test.sh); every snippet is checked whatever N is (they are small).
"""
import argparse
import ast
import doctest
import json
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import warnings

import case_share

MARKER = "# BatchMLAPagedAttentionWrapper\n"


def syntax_test_snippets(test_syntax: str) -> list:
    """The code of test_syntax.py's SyntaxError doctests and `_check_error` calls."""
    module = ast.parse(open(test_syntax, encoding="utf-8").read())
    snippets = []
    for node in ast.walk(module):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for example in doctest.DocTestParser().get_examples(node.value.value):
                if "SyntaxError" in example.want or "IndentationError" in example.want:
                    snippets.append(example.source)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "_check_error"
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            snippets.append(node.args[0].value)
    return list(dict.fromkeys(snippets))


def compiles(text: str, name: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(text, name, "exec", dont_inherit=True)
            return True
        except (SyntaxError, ValueError):
            return False


# `except A, B:` headers without `as`, which Python 3.14 reads as `except (A, B):` (PEP 758).
UNPARENTHESIZED_EXCEPT = re.compile(r"^(\s*except\*?\s+)([^()\n:]+,[^()\n:]+?)(\s*:)", re.MULTILINE)


def valid_since_3_14(text: str) -> bool:
    """Whether the snippet compiles once each unparenthesized exception list is parenthesized."""
    if not any(" as " not in m.group(2) for m in UNPARENTHESIZED_EXCEPT.finditer(text)):
        return False
    return compiles(UNPARENTHESIZED_EXCEPT.sub(
        lambda m: m.group(0) if " as " in m.group(2) else f"{m.group(1)}({m.group(2)}){m.group(3)}", text), "s.py")


def write(tree: str, index: int, text: str) -> str:
    name = f"f{index:05d}.py"
    sep = "" if text.endswith("\n") else "\n"
    with open(os.path.join(tree, name), "w", encoding="utf-8", newline="") as f:
        f.write(MARKER + text + sep)
    return name


def check_tree(kvpatch: str, tree: str) -> dict:
    """file -> error message, from one `kvpatch check` over the whole tree."""
    run = subprocess.run([kvpatch, "check", "--isolated", "--format", "json", "."], check=False, cwd=tree,
                         capture_output=True, text=True)
    if run.returncode not in (0, 1, 2) or not run.stdout.strip():
        sys.exit(f"kvpatch check exited {run.returncode}: {run.stderr[-2000:]}")
    return {e["file"]: e["message"] for e in json.loads(run.stdout)["errors"]}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kvpatch", required=True, type=os.path.abspath)
    args = parser.parse_args()
    stdlib = sysconfig.get_paths()["stdlib"]
    test_syntax = os.path.join(stdlib, "test", "test_syntax.py")
    if not os.path.exists(test_syntax):
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        sys.exit(f"{test_syntax} is missing: {sys.executable} has no test suite "
                 f"(Debian: apt-get install libpython{version}-testsuite)")
    failures = []

    with tempfile.TemporaryDirectory() as tree:
        snippets, later = {}, 0
        for snippet in syntax_test_snippets(test_syntax):
            if compiles(snippet, "snippet.py"):
                continue
            if valid_since_3_14(snippet):
                later += 1
                continue
            snippets[write(tree, len(snippets), snippet)] = snippet
        errors = check_tree(args.kvpatch, tree)
        accepted = [s for n, s in snippets.items() if n not in errors]
        failures += [f"refused by compile(), accepted by kvpatch: {s!r}" for s in accepted]
        print(f"refused: {len(snippets) - len(accepted)} of {len(snippets)} snippets of test_syntax.py that "
              f"compile() refuses ({sys.version.split()[0]}; {later} more that Python 3.14 compiles, PEP 758, "
              "left out)")

    share = case_share.case_share()
    with tempfile.TemporaryDirectory() as tree:
        files, paths = {}, []
        for top, dirs, names in os.walk(stdlib):
            dirs[:] = sorted(d for d in dirs if d not in ("site-packages", "dist-packages", "__pycache__"))
            paths += [os.path.join(top, n) for n in sorted(names) if n.endswith(".py")]
        for path in case_share.every_nth_of_each(paths, share):
            try:
                text = open(path, "rb").read().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if compiles(text, path):
                files[write(tree, len(files), text)] = os.path.relpath(path, stdlib)
        errors = check_tree(args.kvpatch, tree)
        grammar = [files[n] for n, message in errors.items() if "Python would not compile" not in message]
        for name, message in errors.items():
            if "Python would not compile" in message:
                failures.append(f"compiled by Python, refused by kvpatch: {files[name]}: {message}")
        print(f"accepted: {len(files) - len(errors)} of {len(files)} standard-library files compile() takes"
              f"{case_share.described(share)}; "
              f"{len(grammar)} the grammar cannot parse{': ' + ', '.join(grammar) if grammar else ''}")

    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
