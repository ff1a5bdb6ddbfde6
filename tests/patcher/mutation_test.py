#!/usr/bin/env python3
"""kvpatch on seeded line mutations of backends (stdlib only).

  mutation_test.py --kvpatch BIN (--fixtures DIR | --sources DIR) [--count N] [--first-seed S]
                   [--keep DIR] [--forms] [--split] [--more-slips]

Each mutation deletes, doubles, swaps, indents, dedents, joins, cuts a character from, swaps a name in, or
appends a `# kvpatch: ignore[...]` comment to one to three lines of one backend: the slips a hand edit makes. The
backends are the fixtures' (every fixtures/*/flashinfer_mla_backend.py that compiles) or, with --sources,
every .py that compiles under DIR (for example real SGLang backends; not a CTest). Most results no longer compile; some
still do and hold other plan() sites and casts. For each, kvpatch must:
  - exit 0, 1 or 2 from check, diff and apply, and never report an internal error;
  - refuse (exit 2) every file that Python does not compile, of those its rules select;
  - refuse (exit 2) in all three or in none, and when refusing print no diff and write nothing;
  - when apply writes: leave files `compile()` accepts, equal to the diff applied by `git apply`,
    which a second apply does not change;
  - add no finding: after apply, check finds no more of any kind (missing, unknown, unbuildable,
    unsafe run() inputs, missing scales, errors, ignore comments that suppress nothing) than before it,
    and exits as apply did;
  - lose sight of nothing: after apply, check reports as many plan sites and updater fields as before,
    no fewer threaded and gated sites, and no more casts;
  - fix what it calls fixable, and only that: the JSON report's per-finding `edits`, made together (each
    once), give exactly the files apply writes, and after apply `check --statistics` counts, per rule and
    status, what it counted before less the fixable ones (since 2026-12-06);
  - be the same through `check --fix`: on another copy of the mutated files it writes what apply writes,
    prints the JSON report check prints after apply, and exits as that check does (2, writing nothing, where
    apply refused; since 2026-12-06).
--forms runs each seed under one of the three --kv-dtype-form values (drawn from the seed), not
only the default. --split cuts the backend in two modules before the mutation, at its first
top-level class whose name holds "IndicesUpdater": the run() calls and casts in one, the updaters
and their plan() calls in the other, importing them (the cross-file shape); the seed mutates one
of the two, and kvpatch runs on their directory.
--more-slips adds six kinds: a tab for leading spaces, the line put under a new block (`if`, `for`, `with`, `try`,
`else`), a trailing backslash or open bracket, a decorator or `async` line above it, an assignment wrapped over two
lines in parentheses, and a keyword (`return`, `yield`, `await`, `global`, `lambda:`, ...) put in front of it.
The seeds make every failure reproducible: the report names the seed, and --keep writes its input.
KVPATCH_CASE_SHARE=N in the environment runs one case in N (case_share.py; the sanitized pass of scripts/test.sh).
Exit codes: 0 pass, 1 a property failed, 2 usage or input error.
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

BACKEND = "flashinfer_mla_backend.py"
UPDATERS = "flashinfer_mla_updaters.py"
NAMES = ["kv_data_type", "q_data_type", "data_type", "plan", "run", "to", "float8_e4m3fn", "bfloat16", "self",
         "wrapper", "dtype", "kv_cache_dtype", "torch", "decode_wrapper", "prefill_wrapper_paged", "ckv_cache"]
FORMS = ["original", "upstream", "sm90"]
# The ids an added ignore comment names: every rule's, and one no rule has.
IGNORED = ["flashinfer-mla-plan-kv-dtype", "flashinfer-mla-kv-field", "flashinfer-mla-kv-cast", "fa3-kv-cast",
           "flashinfer-mla-kv-run-input", "flashinfer-mla-run-kv-scales", "flashinfer-mla-plan-kv-dtyp"]
# The summary counts that are findings: apply may lower each, never raise it. A `required` cast is a verdict,
# not a finding, and the upstream and sm90 forms turn redundant casts into guarded ones that count so.
FINDINGS = ["missing", "unknown", "unbuildable", "run_inputs_converted", "run_inputs_unknown", "run_scales_missing"]
# The counts apply leaves as they were: the plan() calls it threads, the updaters' fields (present or missing).
KEPT = ["plan_sites", "fields"]


def compiles(text, name=BACKEND):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a mutation's SyntaxWarnings are not this test's output
        try:
            compile(text, name, "exec", dont_inherit=True)
            return True
        except (SyntaxError, ValueError):
            return False


def indentation(line):
    return line[: len(line) - len(line.lstrip(" \t"))]


def more_slip(lines, i, op, rng):
    """--more-slips: the kinds added on 2026-12-03, drawn only with that option so that the seeds of the first
    ten keep their mutations."""
    line = lines[i]
    if op == 10 and line.startswith("    "):
        lines[i] = "\t" + line[4:] if rng.random() < 0.5 else "\t" + line[8:]  # a tab for 4 or 8 leading spaces
    elif op == 11 and line.strip():
        # The line put under a new block at its own indentation: a platform guard or a loop written by hand.
        head = rng.choice(["if True:", "if torch.version.cuda:", "for _ in range(1):", "with torch.no_grad():",
                           "try:", "else:"])
        lines[i : i + 1] = [indentation(line) + head, indentation(line) + "    " + line.lstrip(" \t")]
    elif op == 12 and line.strip():
        lines[i] = line + rng.choice([" \\", "\\", " ("])  # a continuation left behind, or a bracket opened
    elif op == 13:
        lines.insert(i, indentation(line) + rng.choice(["@staticmethod", "@torch.compile", "@property", "@", "async"]))
    elif op == 14 and line.strip():
        # The statement's expression wrapped over two lines in parentheses, as a formatter would.
        body = line.lstrip(" \t")
        cut = body.find(" = ")
        if cut > 0:
            lines[i : i + 1] = [indentation(line) + body[: cut + 3] + "(", indentation(line) + "    " +
                                body[cut + 3 :] + ")"]
    elif op == 15 and line.strip():
        lines[i] = indentation(line) + rng.choice(["return ", "yield ", "await ", "del ", "global ", "nonlocal ",
                                                    "assert ", "raise ", "lambda: ", "not "]) + line.lstrip(" \t")


def mutate(text, rng, more=False):
    lines = text.split("\n")
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        op = rng.randrange(16 if more else 10)
        if op >= 10:
            more_slip(lines, i, op, rng)
        if op == 0:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[i])
        elif op == 2 and i + 1 < len(lines):
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
        elif op == 3:
            old, new = rng.choice(NAMES), rng.choice(NAMES)
            lines[i] = lines[i].replace(old, new, 1)
        elif op == 4:
            lines[i] = "    " + lines[i]
        elif op == 5 and lines[i]:
            j = rng.randrange(len(lines[i]))
            lines[i] = lines[i][:j] + lines[i][j + 1:]
        elif op == 6:
            lines.insert(i, lines[rng.randrange(len(lines))])  # a line moved into another method
        elif op == 7:
            lines[i] += f"  # kvpatch: ignore[{rng.choice(IGNORED)}] fuzz"  # a suppression, fitting or not
        elif op == 8:
            lines[i] = lines[i][min(4, len(lines[i]) - len(lines[i].lstrip(" "))) :]  # dedented by up to 4 columns
        elif op == 9 and i + 1 < len(lines):
            lines[i : i + 2] = [lines[i] + " " + lines[i + 1].lstrip()]  # two lines joined
    return "\n".join(lines)


def read_text(path):
    with open(path, encoding="utf-8", newline="") as f:
        try:
            return f.read()
        except UnicodeDecodeError:
            return None


def backends(fixtures, sources):
    """(name, text) of the backends that compile: the fixtures' (the refused ones are broken on purpose),
    or every .py under sources."""
    out = []
    if fixtures:
        for name in sorted(os.listdir(fixtures)):
            path = os.path.join(fixtures, name, BACKEND)
            text = read_text(path) if os.path.isfile(path) else None
            if text is not None and compiles(text):
                out.append((f"fixtures/{name}", text))
    else:
        for top, _, files in sorted(os.walk(sources)):
            for file in sorted(f for f in files if f.endswith(".py")):
                path = os.path.join(top, file)
                text = read_text(path)
                if text is not None and compiles(text):
                    out.append((os.path.relpath(path, sources), text))
    return out


def split_backend(text):
    """The backend cut in two modules at its first top-level updater class, or None when it has none: the
    part before keeps the imports and imports the moved names from the other, which gets the imports too."""
    lines = text.split("\n")
    body = ast.parse(text).body
    cut = next((i for i, node in enumerate(body)
                if isinstance(node, ast.ClassDef) and "IndicesUpdater" in node.name), None)
    if cut is None:
        return None
    first = min([body[cut].lineno] + [d.lineno for d in body[cut].decorator_list]) - 1  # 0-based line
    imports_end = next((node.lineno - 1 for node in body if not isinstance(node, (ast.Import, ast.ImportFrom))
                        and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))), first)
    definitions = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    moved = [node.name for node in body[cut:] if isinstance(node, definitions)]
    head = "\n".join(lines[:first]) + "\n" + "".join(
        f"from pkg.{UPDATERS[:-3]} import {name}\n" for name in moved)
    tail = "\n".join(lines[:min(imports_end, first)] + lines[first:])
    return {BACKEND: head, UPDATERS: tail}


def summary(result):
    """The JSON report's summary counts, with the errors, the fields and the ignore comments' problems as three
    more; None when stdout is no report."""
    try:
        report = json.loads(result.stdout)
    except json.JSONDecodeError:
        return None
    counts = dict(report["summary"])
    counts["errors"] = len(report.get("errors", []))
    counts["fields"] = len(report.get("fields", []))
    counts["ignore_comments"] = len(report.get("ignore_comments", []))
    return counts


def with_report_edits(report, files):
    """The files with every edit the JSON report's entries carry made, each once; None when an edit names
    another file or its positions do not fall in the text."""
    edits = {}
    for kind in ("plan_sites", "casts", "fields", "run_scales"):
        for entry in report.get(kind, []):
            for e in entry.get("edits", []):
                key = (e["location"]["line"], e["location"]["column"], e["end_location"]["line"],
                       e["end_location"]["column"], e["content"])
                edits.setdefault(os.path.basename(entry["file"]), set()).add(key)
    out = dict(files)
    for name, changes in edits.items():
        if name not in files:
            return None
        data = files[name].encode("utf-8")
        starts = [0] + [i + 1 for i, byte in enumerate(data) if byte == 0x0A]
        limit = len(data)
        for line, column, end_line, end_column, content in sorted(changes, reverse=True):
            if not (1 <= line <= end_line <= len(starts)):
                return None
            begin, end = starts[line - 1] + column - 1, starts[end_line - 1] + end_column - 1
            if not begin <= end <= limit:
                return None
            data = data[:begin] + content.encode("utf-8") + data[end:]
            limit = begin
        out[name] = data.decode("utf-8")
    return out


def statistics(result):
    """`check --statistics --format json` rows as {(rule, status): (count, fixable)}; None when no report."""
    try:
        return {(r["rule"], r["status"]): (r["count"], r["fixable"]) for r in json.loads(result.stdout)}
    except (json.JSONDecodeError, KeyError, TypeError):
        return None


def write_files(directory, files):
    os.makedirs(directory, exist_ok=True)
    for name, text in files.items():
        with open(os.path.join(directory, name), "w", encoding="utf-8", newline="") as f:
            f.write(text)


def read_files(directory, names):
    out = {}
    for name in names:
        with open(os.path.join(directory, name), encoding="utf-8", newline="") as f:
            out[name] = f.read()
    return out


def check_one(kvpatch, files, scratch, options):
    """The properties above for one mutated set of files; returns the failures, and the (check, apply) exits."""
    package = os.path.join(scratch, "pkg")
    write_files(package, files)
    target = [BACKEND] if len(files) == 1 else ["."]

    def run(command, *extra, paths=target):
        return subprocess.run([kvpatch, command, "--isolated", *options, *extra, *paths], cwd=package,
                              capture_output=True, text=True, errors="replace", timeout=120, check=False)

    # The JSON report exits and writes stderr as the text one does; its summary is what apply is held to below.
    check, diff = run("check", "--format", "json"), run("diff")
    before = summary(check)
    rows_before = statistics(run("check", "--statistics", "--format", "json"))
    apply = run("apply")
    applied = read_files(package, files)
    failures = []
    for command, result in (("check", check), ("diff", diff), ("apply", apply)):
        if result.returncode not in (0, 1, 2) or "internal error" in result.stderr:
            failures.append(f"{command} exited {result.returncode}: {result.stderr.strip()[-400:]}")
    for name in (n for n, text in files.items() if not compiles(text, n)):
        # kvpatch reads only the files its rules select (by their text), and says so of one named alone.
        alone = check if len(files) == 1 else run("check", paths=[name])
        if alone.returncode != 2 and "nothing checked" not in alone.stderr:
            failures.append(f"check exited {alone.returncode} on {name}, which Python does not compile")
    refused = [r.returncode == 2 for r in (check, diff, apply)]
    if any(refused) and not all(refused):
        failures.append(f"refused by some commands only: check {check.returncode}, diff {diff.returncode}, "
                        f"apply {apply.returncode}")
    if all(refused) and (diff.stdout or applied != files):
        failures.append("refused, yet printed a diff or wrote a file")
    if applied != files:
        for name, text in applied.items():
            if text != files[name] and not compiles(text, name):
                failures.append(f"apply wrote {name}, which Python does not compile")
        original = os.path.join(scratch, "git-apply")
        write_files(original, files)
        patched = subprocess.run(["git", "apply", "-"], cwd=original, input=diff.stdout, capture_output=True,
                                 text=True, check=False)
        if patched.returncode != 0 or read_files(original, files) != applied:
            failures.append(f"the diff, through git apply, differs from apply's result {patched.stderr.strip()}")
        if run("apply").returncode == 2:
            failures.append("a second apply refused the files the first one wrote")
        if read_files(package, files) != applied:
            failures.append("a second apply changed the files again")
    elif diff.stdout and apply.returncode != 2:
        failures.append("diff printed edits that apply did not write")
    if apply.returncode != 2:
        recheck = run("check", "--format", "json")
        after = summary(recheck)
        if before is None or after is None:
            failures.append("check --format json printed no report")
        else:
            added = [f"{k} {before.get(k, 0)} -> {after.get(k, 0)}" for k in [*FINDINGS, "errors", "ignore_comments"]
                     if after.get(k, 0) > before.get(k, 0)]
            if added:
                failures.append("apply added findings: " + ", ".join(added))
            # Apply edits plan() calls and fields, it never removes one, so the report must still see each (a
            # site that fell out of view would leave `missing` lower for a wrong reason); nor does it add casts.
            lost = [f"{k} {before.get(k, 0)} -> {after.get(k, 0)}" for k in KEPT if after.get(k, 0) != before.get(k, 0)]
            planned = [c.get("threaded", 0) + c.get("gated", 0) for c in (before, after)]
            if planned[1] < planned[0]:
                lost.append(f"threaded and gated sites {planned[0]} -> {planned[1]}")
            if after.get("casts", 0) > before.get("casts", 0):
                lost.append(f"casts {before.get('casts', 0)} -> {after.get('casts', 0)}")
            if lost:
                failures.append("apply changed what check sees: " + ", ".join(lost))
        if before is not None and with_report_edits(json.loads(check.stdout), files) != applied:
            failures.append("the JSON report's edits, made together, differ from apply's result")
        rows_after = statistics(run("check", "--statistics", "--format", "json"))
        if rows_before is None or rows_after is None:
            failures.append("check --statistics --format json printed no rows")
        else:
            left = {key: count - fixable for key, (count, fixable) in rows_before.items() if count > fixable}
            now = {key: count for key, (count, _) in rows_after.items()}
            if now != left:
                failures.append(f"after apply the statistics are {sorted(now.items())}, not the unfixable "
                                f"{sorted(left.items())}")
        if recheck.returncode != apply.returncode:
            failures.append(f"apply exited {apply.returncode}, check after it {recheck.returncode}")
    failures += check_fix_differences(kvpatch, files, scratch, options, target, apply, applied,
                                      recheck if apply.returncode != 2 else None, rows_before)
    return failures, (check.returncode, apply.returncode)


def shown_fixes(text):
    """The counts `--show-fixes` lists, as {(rule, status): count}, summed over its files."""
    counts = {}
    for m in re.finditer(r"^    (\d+) x ([a-z0-9-]+) \(([a-z-]+)\)$", text, re.M):
        key = (m.group(2), m.group(3))
        counts[key] = counts.get(key, 0) + int(m.group(1))
    return counts


def check_fix_differences(kvpatch, files, scratch, options, target, apply, applied, recheck, rows_before):
    """`check --fix --show-fixes --format json` on a second copy of the original files against apply and the check
    after it; what --show-fixes lists against the fixable findings `check --statistics` counted before."""
    package = os.path.join(scratch, "fix", "pkg")
    write_files(package, files)
    fix = subprocess.run([kvpatch, "check", "--fix", "--show-fixes", "--format", "json", "--isolated", *options,
                          *target],
                         cwd=package, capture_output=True, text=True, errors="replace", timeout=120, check=False)
    failures = []
    if read_files(package, files) != applied:
        failures.append("check --fix wrote other files than apply")
    if recheck is None:
        if fix.returncode != 2:
            failures.append(f"apply refused the files, check --fix exited {fix.returncode}")
        return failures
    if fix.returncode != recheck.returncode:
        failures.append(f"check --fix exited {fix.returncode}, check after apply {recheck.returncode}")
    # The reports name the FlashInfer pin's file by its absolute path, which differs between the two copies.
    if fix.stdout.replace(os.path.join(scratch, "fix"), scratch) != recheck.stdout:
        failures.append("check --fix printed another JSON report than check after apply")
    if apply.stdout and apply.stdout not in fix.stderr:
        failures.append("check --fix did not name the files it patched on stderr")
    # Apply writes every fixable finding's edits or none, so what it lists is the fixable column, once it wrote.
    if rows_before is not None:
        wrote = applied != files
        fixable = {key: n for key, (_, n) in rows_before.items() if n > 0} if wrote else {}
        if shown_fixes(fix.stderr) != fixable:
            failures.append(f"--show-fixes listed {sorted(shown_fixes(fix.stderr).items())}, not the fixable "
                            f"{sorted(fixable.items())}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kvpatch", required=True)
    inputs = parser.add_mutually_exclusive_group(required=True)
    inputs.add_argument("--fixtures")
    inputs.add_argument("--sources")
    parser.add_argument("--count", type=int, default=400)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--keep", help="write each failing input here as seed-N/")
    parser.add_argument("--forms", action="store_true", help="draw --kv-dtype-form from the seed")
    parser.add_argument("--split", action="store_true", help="cut each backend in two modules first")
    parser.add_argument("--more-slips", action="store_true", help="draw from six more kinds of mutation too")
    args = parser.parse_args()
    kvpatch = os.path.abspath(args.kvpatch)  # each run's working directory is its scratch directory
    sources = backends(args.fixtures, args.sources)
    if args.split:
        sources = [(name, parts) for name, parts in ((n, split_backend(t)) for n, t in sources) if parts]
    else:
        sources = [(name, {BACKEND: text}) for name, text in sources]
    if not sources:
        print(f"mutation_test: no compiling backend{' with an updater class' if args.split else ''} under "
              f"{args.fixtures or args.sources}", file=sys.stderr)
        return 2
    exits, failed, tried = {}, 0, 0
    share = case_share.case_share()
    for seed in case_share.every_nth_of_each(range(args.first_seed, args.first_seed + args.count), share):
        tried += 1
        rng = random.Random(seed)
        name, original = sources[rng.randrange(len(sources))]
        files = dict(original)
        # A second generator, so that the options and the file drawn leave the mutations of a seed as they were.
        extra = random.Random(-1 - seed)
        target = sorted(files)[extra.randrange(len(files))]
        files[target] = mutate(files[target], rng, args.more_slips)
        options = ["--kv-dtype-form", extra.choice(FORMS)] if args.forms else []
        scratch = tempfile.mkdtemp(prefix="kvpatch-mutation-")
        try:
            failures, key = check_one(kvpatch, files, scratch, options)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        exits[key] = exits.get(key, 0) + 1
        if failures:
            failed += 1
            print(f"seed {seed} ({name}{', ' + ' '.join(options) if options else ''}"
                  f"{', ' + target if len(files) > 1 else ''}): " + "; ".join(failures))
            if args.keep:
                write_files(os.path.join(args.keep, f"seed-{seed}"), files)
    summary_line = ", ".join(f"check {c} / apply {a}: {n}" for (c, a), n in sorted(exits.items()))
    print(f"{tried} mutations of {len(sources)} backends{case_share.described(share)}; exits {summary_line}; "
          f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
