#!/usr/bin/env python3
"""kvpatch's refusals against CPython's compile(), over seeded edits of standard-library files.

  syntax_differential_test.py --kvpatch BIN [--count N] [--first-seed S] [--keep DIR]

cpython_syntax_corpus.py holds kvpatch to CPython's own syntax tests and to every library file as it
is. This script feeds it what neither holds: each seed picks one file of the running interpreter's
standard library that compile() takes and makes one or two edits of the kind a slip makes (delete,
join, dedent or move a line; cut or insert a token such as `*`, `as`, `yield` or a bracket). kvpatch
must then agree with compile(): refuse (exit 2) what Python refuses, and not refuse what Python
compiles, unless the message says tree-sitter's grammar cannot parse the file (its limit, counted and
printed). Each file gets a comment naming the wrapper class, so that the rules select it, and its own
directory, so that no other file joins the run.

Not the patcher's rules: the compile checks they rely on. The grammar takes many forms Python refuses
(`(*a.b)`, `f(x as y)`, `[1, yield]`), and a file kvpatch misreads it may edit into one Python refuses.
The seeds make every failure reproducible: the report names the seed, and --keep writes its input.
KVPATCH_CASE_SHARE=N in the environment runs one seed in N (case_share.py; the sanitized pass of scripts/test.sh).
Exit codes: 0 pass, 1 a disagreement, 2 usage error.
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import warnings

import case_share

MARKER = "# BatchMLAPagedAttentionWrapper\n"
# Tokens an edit cuts from or inserts into a line: brackets, stars, binding keywords and their neighbours.
CUT = ["(", ")", "[", "]", ",", ":", "*", "**", "=", ".", "lambda", "yield", "await", "async", "not", "in", "as"]
INSERT = ["*", "**", "(", ")", ",", ":", "=", "yield ", "await ", "lambda: ", "*a, ", " if x else y", "async ",
          "del ", "global x; ", "nonlocal x; ", "return ", "break; ", "@d\n", " as z", ".x", "[0]"]
# kvpatch's messages when tree-sitter cannot parse the file, or parses it otherwise than Python reads it
GRAMMAR_LIMITS = ("syntax error at column", "grammar misreads this file")
# What CPython refuses and kvpatch's checks accept by design, erring towards accepting (patcher/README.md,
# "Code Python would not compile"): a nonlocal counts as bound when its name appears anywhere in an
# enclosing function, and uses in imports, comprehensions and nested defaults are not counted.
# And what a newer Python compiles: `except A, B:` (Python 3.14, PEP 758).
LENIENT = ("no binding for nonlocal", "prior to global declaration", "prior to nonlocal declaration",
           "before global declaration", "before nonlocal declaration", "multiple exception types must be parenthesized")


def refusal(text):
    """compile()'s reason for refusing the text, or None when it compiles."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an edit's SyntaxWarnings are not this test's output
        try:
            compile(text, "m.py", "exec", dont_inherit=True)
            return None
        except (SyntaxError, ValueError) as e:
            return str(e)


def compiles(text):
    return refusal(text) is None


def library_files():
    """The interpreter's own library, tests included; third-party packages left out."""
    root = sysconfig.get_paths()["stdlib"]
    found = []
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in ("site-packages", "dist-packages", "__pycache__"))
        found += [os.path.join(top, f) for f in sorted(files) if f.endswith(".py")]
    return root, found


def edit(rng, lines):
    """One slip, in place."""
    i = rng.randrange(len(lines))
    kind = rng.randrange(6)
    if kind == 0:
        del lines[i]
    elif kind == 1 and i + 1 < len(lines):
        lines[i] = lines[i].rstrip("\n") + " " + lines.pop(i + 1).lstrip()
    elif kind == 2:
        indent = len(lines[i]) - len(lines[i].lstrip())
        lines[i] = lines[i][min(4, indent):]
    elif kind == 3:
        present = [t for t in CUT if t in lines[i]]
        if present:
            token = rng.choice(present)
            at = lines[i].find(token)
            lines[i] = lines[i][:at] + lines[i][at + len(token):]
    elif kind == 4:
        at = rng.randrange(len(lines[i]) + 1)
        lines[i] = lines[i][:at] + rng.choice(INSERT) + lines[i][at:]
    else:
        lines.insert(rng.randrange(len(lines)), lines.pop(i))


def edited(rng, files):
    """The seed's file and its edited text, or None when the file is unusable as it is."""
    path = rng.choice(files)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        return None
    if not text or not compiles(text):
        return None
    lines = text.splitlines(True)
    for _ in range(rng.randrange(1, 3)):
        if lines:
            edit(rng, lines)
    return path, MARKER + "".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kvpatch", required=True)
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--keep", help="write each disagreeing input here as seed-N.py")
    args = parser.parse_args()
    root, files = library_files()
    if not files:
        print(f"no .py files under {root}", file=sys.stderr)
        return 2
    disagreements = 0
    counts = {"refused by both": 0, "accepted by both": 0, "grammar limit": 0, "lenient by design": 0,
              "unusable file": 0}
    share = case_share.case_share()
    seeds = list(case_share.every_nth_of_each(range(args.first_seed, args.first_seed + args.count), share))
    scratch = tempfile.mkdtemp(prefix="kvpatch-syntax-diff-")
    try:
        for seed in seeds:
            picked = edited(random.Random(seed), files)
            if picked is None:
                counts["unusable file"] += 1
                continue
            path, text = picked
            directory = os.path.join(scratch, str(seed))
            os.makedirs(directory)
            target = os.path.join(directory, "m.py")
            with open(target, "w", encoding="utf-8") as f:
                f.write(text)
            result = subprocess.run([args.kvpatch, "check", "--isolated", target], capture_output=True, text=True,
                                    check=False)
            shutil.rmtree(directory)
            reason = refusal(text)
            python_takes = reason is None
            refused = result.returncode == 2
            problem = None
            if result.returncode not in (0, 1, 2) or "internal error" in result.stderr:
                problem = f"kvpatch exited {result.returncode}"
            elif python_takes and refused and any(limit in result.stderr for limit in GRAMMAR_LIMITS):
                counts["grammar limit"] += 1
            elif python_takes and refused:
                problem = "refused by kvpatch, compiled by Python"
            elif not python_takes and not refused and any(words in reason for words in LENIENT):
                counts["lenient by design"] += 1
            elif not python_takes and not refused:
                problem = f"refused by Python ({reason}), accepted by kvpatch (exit {result.returncode})"
            else:
                counts["refused by both" if refused else "accepted by both"] += 1
            if problem:
                disagreements += 1
                print(f"FAIL seed {seed} ({os.path.relpath(path, root)}): {problem}: {result.stderr.strip()[:300]}")
                if args.keep:
                    os.makedirs(args.keep, exist_ok=True)
                    with open(os.path.join(args.keep, f"seed-{seed}.py"), "w", encoding="utf-8") as f:
                        f.write(text)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    summary = ", ".join(f"{name} {n}" for name, n in counts.items())
    print(f"{len(seeds)} edits of {len(files)} library files{case_share.described(share)} "
          f"(Python {sys.version.split()[0]}): {summary}; "
          f"{disagreements} disagreements")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
