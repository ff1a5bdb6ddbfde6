#!/usr/bin/env python3
"""kvpatch on rewrites that leave the program as Python reads it (stdlib only).

  metamorphic_test.py --kvpatch BIN (--fixtures DIR | --sources DIR) [--count N] [--first-seed S] [--keep DIR]
                      [--only lines|calls] [--kind KIND]...

Each seed takes one backend that compiles and rewrites one place in it the way another author might have written
the same code:
  - a backslash continuation after `(`, `[`, `{` or `,` at a line's end, before an attribute's dot (`a \\` then
    `.b` on the next line), or after ` = `;
  - a comment after `(` or `,` at a line's end, or a comment line and a blank line before a statement;
  - parentheses around an assignment's value or target (`x = (v)`, `(x) = v`) or a call's receiver (`(w).plan(`);
  - an annotation on an assigned name (`x: object = v`);
  - and the rewrites made from Python's own parse that metamorphic_calls.py lists (keywords, quotes, renamed
    locals and imports, calls split or joined, definitions swapped, a conditional as an if statement, a local first
    assigned None, ...).
Python must still compile the result. kvpatch's `check` must then report the same findings (rule, status and line,
lines moved by the rewrite taken into account: a finding inside the rewritten lines counts as on their first) and
exit the same, and `apply` must exit the same and write code that compiles. Tree-sitter keeps comments and
continuations as nodes among the children and reads `(x)` as a target as a tuple pattern: each of these once changed
what kvpatch found (2026-12-03), as did `partial` and `torch` imported under other names (2026-12-03, later).
KVPATCH_CASE_SHARE=N in the environment runs one case in N (case_share.py; the sanitized pass of scripts/test.sh).
Exit codes: 0 pass, 1 a rewrite changed the outcome, 2 usage or input error.
"""

import argparse
import ast
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import warnings

import case_share
import metamorphic_calls

BACKEND = "flashinfer_mla_backend.py"
CATEGORIES = ["plan_sites", "casts", "fields", "run_inputs", "run_scales"]
LINES_PER_SEED = 20  # a seed draws another line when its line has nothing to rewrite


def compiles(text):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(text, BACKEND, "exec", dont_inherit=True)
            return True
        except (SyntaxError, ValueError):
            return False


def backends(fixtures, sources):
    paths = []
    if fixtures:
        paths = [os.path.join(fixtures, name, BACKEND) for name in sorted(os.listdir(fixtures))]
    else:
        for top, _, files in sorted(os.walk(sources)):
            paths += [os.path.join(top, f) for f in sorted(files) if f.endswith(".py")]
    out = []
    for path in paths:
        try:
            with open(path, encoding="utf-8", newline="") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError):
            continue
        if "\r" not in text and compiles(text):  # the rewrites split lines on "\n"
            out.append((path, text))
    return out


def rewrites(parsed, i, only=None):
    """(kind, new text, region) for line i (0-based); region as in metamorphic_calls."""
    out = line_rewrites(parsed.lines, i) if only != "calls" else []
    return out + (metamorphic_calls.rewrites_at(parsed, i + 1) if only != "lines" else [])


def line_rewrites(lines, i):
    """The rewrites of line i's text alone."""
    line = lines[i]
    code = line.strip()
    if not code or code.startswith("#") or '"' in line or "'" in line or "#" in line:
        return []
    indent = line[: len(line) - len(line.lstrip())]

    def instead(*new):  # line i replaced by the new lines
        return "\n".join([*lines[:i], *new, *lines[i + 1 :]]), (i + 1, i + 1, i + len(new))

    out = []
    if code.endswith(("(", "[", "{", ",")):
        out.append(("continuation at the end", *instead(line + " \\")))
        if code.endswith(("(", ",")):
            out.append(("comment at the end", *instead(line + "  # a note")))
    for m in re.finditer(r"(?<=[\w)\]])\.(?=[A-Za-z_])", line):
        j = m.start()
        out.append(("continuation before a dot", *instead(line[:j] + " \\", indent + "        " + line[j:])))
    assignment = re.match(r"^(\s*)([\w.]+) = (.+)$", line)
    if assignment and not assignment.group(3).rstrip().endswith(("(", "[", "{", ",", "\\")):
        lead, target, value = assignment.groups()
        out.append(("continuation after =", *instead(f"{lead}{target} = \\", f"{lead}        {value}")))
        out.append(("value in parentheses", *instead(f"{lead}{target} = ({value})")))
        out.append(("target in parentheses", *instead(f"{lead}({target}) = {value}")))
        if "." not in target:
            out.append(("annotated target", *instead(f"{lead}{target}: object = {value}")))
        else:  # an attribute's annotation is evaluated (a name that is always bound) and not stored
            out.append(("annotated attribute", *instead(f"{lead}{target}: object = {value}")))
    receiver = re.search(r"\b([\w.]+)\.(plan|run)\(", line)
    if receiver:
        wrapped = line.replace(receiver.group(0), f"({receiver.group(1)}).{receiver.group(2)}(", 1)
        out.append(("receiver in parentheses", *instead(wrapped)))
    previous = lines[i - 1].rstrip() if i > 0 else ""
    if not code.startswith((")", "]", "}", "else", "elif", "except", "finally", "@")) and not previous.endswith(
        ("(", "[", "{", ",", "\\")
    ):
        out.append(("comment line before", *instead(indent + "# a note", "", line)))
    return out


def outcome(kvpatch, text, scratch):
    """check's exit and findings as (rule, status, line, guard dtype), apply's exit, and the text apply wrote."""
    path = os.path.join(scratch, BACKEND)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)

    def run(command, *extra):
        return subprocess.run([kvpatch, command, "--isolated", *extra, BACKEND], cwd=scratch, capture_output=True,
                              text=True, errors="replace", timeout=120, check=False)

    check = run("check", "--format", "json")
    try:
        report = json.loads(check.stdout)
        # A cast guarded for the other dtypes and one removed are both `redundant`: the guard's dtype tells them apart.
        findings = {k: sorted((e["rule"], e.get("status", ""), e["line"], e.get("kept_for_dtypes_other_than", ""))
                              for e in report[k]) for k in CATEGORIES}
        findings["summary"] = report["summary"]
    except (json.JSONDecodeError, KeyError):
        findings = None
    apply = run("apply")
    with open(path, encoding="utf-8", newline="") as f:
        written = f.read()
    return check.returncode, findings, apply.returncode, written, check.stderr + apply.stderr


def canonical(findings, first, last, end):
    """The findings with lines first..last (1-based) counted as on `first` and the lines after them moved as if
    `last` were `end`: a rewrite's findings, and the original's, then compare line for line."""
    return relocated(findings, lambda n: first if first <= n <= last else n - last + end if n > last else n)


def relocated(findings, moved):
    """The findings with each line where the rewrite moved it."""
    if findings is None:
        return findings
    out = {"summary": findings["summary"]}
    for k in CATEGORIES:
        out[k] = sorted((r, s, moved(n), x) for r, s, n, x in findings[k])
    return out


# Kinds that add a local which a fix may then remove with the code reading it (a cast's dtype, `dtype = q.dtype`):
# the local must go exactly when nothing reads it any more. Where it goes, every cast that read it went too, so apply
# must write the very text it writes for the original, with at most one edit more (none where the local goes in the
# same edit as a cast, a whole `if` the two were all of); where it stays, the edits are the original's.
LOCALS_A_FIX_MAY_TAKE = {"cast's dtype through a local": metamorphic_calls.CAST_DTYPE_LOCAL,
                         "one dtype local for a block's casts": metamorphic_calls.CAST_DTYPE_LOCAL}


def local_taken(local, written, problems):
    """Whether apply took the local's assignment out of the text it wrote; a problem where it left the local unread
    or took it while something still reads it."""
    assigned = len(re.findall(rf"^[ \t]*{local} = ", written, re.MULTILINE))
    read = len(re.findall(rf"\b{local}\b", written)) - assigned
    if assigned and not read:
        problems.append(f"apply left {local} assigned and unread")
    if read and not assigned:
        problems.append(f"apply took {local}'s assignment while it is still read")
    return not assigned


# Kinds that add a local read by a plan or run call: where apply changes what the call is given, it must not leave the
# local assigned and unread (ruff's F841), but in an `__init__`, where kvpatch leaves the local and passes the field.
LOCALS_A_FIX_MUST_KEEP_READ = {"last argument through a local": "argument_local"}


def local_left_unread(local, written):
    """Whether the written text assigns the local outside any `__init__` and reads it nowhere."""
    try:
        tree = ast.parse(written)
    except SyntaxError:
        return False
    assigned = reads = 0
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or function.name == "__init__":
            continue
        for n in ast.walk(function):
            if isinstance(n, ast.Name) and n.id == local:
                assigned += isinstance(n.ctx, ast.Store)
                reads += isinstance(n.ctx, ast.Load)
    return assigned > 0 and reads == 0


# Kinds that bind a value to a second, unread local beside the first (`x = twin = v`): a fix must neither remove that
# statement nor change v, since the twin still holds it; it may fix the code that reads x instead, and only where the
# original's fix took x's statement (a dtype local read only by a removed cast) may apply then make one edit fewer.
TWINS = {"a local bound with a twin": metamorphic_calls.TWIN_LOCAL}


def twin_values(twin, text):
    """The text of each `... = twin = v` statement's v, in order."""
    return re.findall(rf"\b{twin} = (.*)$", text, re.MULTILINE)


def twin_statement_taken(twin, rewritten, base_applied):
    """Whether the original's fix removed a statement the rewrite gave a twin: `x = v`, written `x = twin = v`, occurs
    on fewer lines of the original's applied text than of the original."""
    original_lines = rewritten.replace(f"{twin} = ", "").splitlines()
    applied_lines = base_applied.splitlines()
    for m in re.finditer(rf"^(.*\b){twin} = (.*)$", rewritten, re.MULTILINE):
        statement = m.group(1) + m.group(2)
        if applied_lines.count(statement) < original_lines.count(statement):
            return True
    return False


def edits_allowed(base, got, differences):
    """The original's outcome with the rewrite's edit count, where the rewrite made that many more edits (one of
    `differences`); unchanged otherwise, or where either report is missing."""
    if base[1] is None or got[1] is None:
        return base
    edits = got[1]["summary"]["edits"]
    if edits - base[1]["summary"]["edits"] not in differences:
        return base
    return (base[0], {**base[1], "summary": {**base[1]["summary"], "edits": edits}}, *base[2:])


def problems_of(kvpatch, base, rewritten, region, scratch, kind):
    """What the rewrite changed in kvpatch's outcome against the original's (base), and the rewrite's outcome."""
    got = outcome(kvpatch, rewritten, scratch)
    problems = []
    local = LOCALS_A_FIX_MAY_TAKE.get(kind)
    if local and got[2] != 2 and base[2] != 2 and local_taken(local, got[3], problems):
        if got[3] != base[3]:
            problems.append(f"apply took {local} but wrote other text than for the original")
        base = edits_allowed(base, got, (0, 1))
    twin = TWINS.get(kind)
    if twin and got[2] != 2:
        if twin_values(twin, got[3]) != twin_values(twin, rewritten):
            problems.append(f"apply removed {twin}'s statement or changed its value")
        if base[2] != 2 and twin_statement_taken(twin, rewritten, base[3]):
            base = edits_allowed(base, got, (-1,))
    kept = LOCALS_A_FIX_MUST_KEEP_READ.get(kind)
    if kept and got[2] != 2 and local_left_unread(kept, got[3]):
        problems.append(f"apply left {kept} assigned and unread")
    if got[0] != base[0]:
        problems.append(f"check exited {got[0]}, not {base[0]}")
    if callable(region):
        same = got[1] == relocated(base[1], region)
    else:
        first, last, end = region or (0, -1, -1)
        same = canonical(got[1], first, end, end) == canonical(base[1], first, last, end)
    if not same:
        problems.append("check's findings changed")
    if got[2] != base[2]:
        problems.append(f"apply exited {got[2]}, not {base[2]}")
    if got[2] != 2 and not compiles(got[3]):
        problems.append("apply wrote code Python does not compile")
    return problems, got


def drawn(args, sources, parsed):
    """(seed, path, 0-based line, kind, rewritten text, region) for each seed: one backend, one line, one rewrite."""
    for seed in range(args.first_seed, args.first_seed + args.count):
        rng = random.Random(seed)
        path, text = sources[rng.randrange(len(sources))]
        if path not in parsed:
            parsed[path] = metamorphic_calls.Parsed(text)
        for _ in range(LINES_PER_SEED):
            i = rng.randrange(len(parsed[path].lines))
            candidates = [r for r in rewrites(parsed[path], i, args.only) if compiles(r[1])]
            if candidates:
                break
        else:
            continue
        yield (seed, path, i, *rng.choice(candidates))


def every_one(args, sources, parsed):
    """Every rewrite of the kinds args.kind names, of every line of every backend, in order (seed shown as -1)."""
    for path, text in sources:
        parsed[path] = metamorphic_calls.Parsed(text)
        for i in range(len(parsed[path].lines)):
            makers = [metamorphic_calls.BY_KIND.get(k) for k in args.kind]
            if not all(makers):
                makers = [lambda p, line, i=i: rewrites(p, i, args.only)]
            for make in makers:
                for kind, rewritten, region in make(parsed[path], i + 1):
                    if kind in args.kind and compiles(rewritten):
                        yield (-1, path, i, kind, rewritten, region)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kvpatch", required=True)
    inputs = parser.add_mutually_exclusive_group(required=True)
    inputs.add_argument("--fixtures")
    inputs.add_argument("--sources")
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--keep", help="write each rewritten input that fails here as seed-N.py")
    parser.add_argument("--only", choices=["lines", "calls"], help="draw only the rewrites of one line's text, or only "
                        "those from Python's parse (metamorphic_calls.py)")
    parser.add_argument("--kind", action="append", help="instead of drawing seeds, make every rewrite of this kind "
                        "(as the summary names it, e.g. '__init__ moved into a base class') wherever it applies; "
                        "may be given more than once")
    args = parser.parse_args()
    kvpatch = os.path.abspath(args.kvpatch)
    sources = backends(args.fixtures, args.sources)
    if not sources:
        print(f"metamorphic_test: no compiling backend under {args.fixtures or args.sources}", file=sys.stderr)
        return 2
    share = case_share.case_share()
    scratch = tempfile.mkdtemp(prefix="kvpatch-metamorphic-")
    baselines, parsed, failed, tried, kinds = {}, {}, 0, 0, {}
    try:
        cases = every_one(args, sources, parsed) if args.kind else drawn(args, sources, parsed)
        cases = case_share.every_nth_of_each(cases, share, lambda case: case[3])
        for seed, path, i, kind, rewritten, region in cases:
            if path not in baselines:
                baselines[path] = outcome(kvpatch, parsed[path].text, scratch)
            problems, got = problems_of(kvpatch, baselines[path], rewritten, region, scratch, kind)
            tried += 1
            kinds[kind] = kinds.get(kind, 0) + 1
            if problems:
                failed += 1
                print(f"seed {seed} ({path}:{i + 1}, {kind}): " + "; ".join(problems) + f" {got[4].strip()[-300:]}")
                if args.keep:
                    os.makedirs(args.keep, exist_ok=True)
                    name = f"seed-{seed}.py" if seed >= 0 else f"{os.path.basename(os.path.dirname(path))}-{i + 1}.py"
                    with open(os.path.join(args.keep, name), "w", encoding="utf-8", newline="") as f:
                        f.write(rewritten)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if args.kind and tried == 0:
        print(f"metamorphic_test: no rewrite of kinds {args.kind!r} applies to these backends", file=sys.stderr)
        return 2
    counted = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
    print(f"{tried} rewrites of {len(sources)} backends{case_share.described(share)} ({counted}); {failed} changed "
          "the outcome")
    return 1 if failed else 0

if __name__ == "__main__":
    sys.exit(main())
