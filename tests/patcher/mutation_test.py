#!/usr/bin/env python3
"""kvpatch on seeded line mutations of the fixtures' backends (stdlib only).

  mutation_test.py --kvpatch BIN --fixtures DIR [--count N] [--first-seed S] [--keep DIR]

Each mutation deletes, doubles, swaps, re-indents, cuts a character from, or swaps a name in one to
three lines of one fixture's backend: the slips a hand edit makes. Most results no longer compile;
some still do and hold other plan() sites and casts. For each, kvpatch must:
  - exit 0, 1 or 2 from check, diff and apply, and never report an internal error;
  - refuse (exit 2) in all three or in none, and when refusing print no diff and write nothing;
  - when apply writes: leave a file `compile()` accepts, equal to the diff applied by `git apply`,
    which a second apply does not change.
The seeds make every failure reproducible: the report names the seed, and --keep writes its input.
Exit codes: 0 pass, 1 a property failed, 2 usage or input error.
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile

BACKEND = "flashinfer_mla_backend.py"
NAMES = ["kv_data_type", "q_data_type", "data_type", "plan", "run", "to", "float8_e4m3fn", "bfloat16", "self",
         "wrapper", "dtype", "kv_cache_dtype", "torch", "decode_wrapper", "prefill_wrapper_paged", "ckv_cache"]


def compiles(text):
    try:
        compile(text, BACKEND, "exec", dont_inherit=True)
        return True
    except (SyntaxError, ValueError):
        return False


def mutate(text, rng):
    lines = text.split("\n")
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        op = rng.randrange(7)
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
    return "\n".join(lines)


def backends(fixtures):
    """The fixtures' backend texts that compile (the refused fixtures are broken on purpose)."""
    out = []
    for name in sorted(os.listdir(fixtures)):
        path = os.path.join(fixtures, name, BACKEND)
        if os.path.isfile(path):
            with open(path, encoding="utf-8", newline="") as f:
                try:
                    text = f.read()
                except UnicodeDecodeError:
                    continue
            if compiles(text):
                out.append((name, text))
    return out


def check_one(kvpatch, text, scratch):
    """The properties above for one mutated text; returns the failures, and the (check, apply) exits."""
    path = os.path.join(scratch, BACKEND)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)

    def run(command):
        return subprocess.run([kvpatch, command, "--isolated", BACKEND], cwd=scratch, capture_output=True,
                              text=True, errors="replace", timeout=120, check=False)

    check, diff = run("check"), run("diff")
    apply = run("apply")
    with open(path, encoding="utf-8", newline="") as f:
        applied = f.read()
    failures = []
    for command, result in (("check", check), ("diff", diff), ("apply", apply)):
        if result.returncode not in (0, 1, 2) or "internal error" in result.stderr:
            failures.append(f"{command} exited {result.returncode}: {result.stderr.strip()[-400:]}")
    refused = [r.returncode == 2 for r in (check, diff, apply)]
    if any(refused) and not all(refused):
        failures.append(f"refused by some commands only: check {check.returncode}, diff {diff.returncode}, "
                        f"apply {apply.returncode}")
    if all(refused) and (diff.stdout or applied != text):
        failures.append("refused, yet printed a diff or wrote the file")
    if applied != text:
        if not compiles(applied):
            failures.append("apply wrote a file Python does not compile")
        original = os.path.join(scratch, "git-apply")
        os.makedirs(original)
        with open(os.path.join(original, BACKEND), "w", encoding="utf-8", newline="") as f:
            f.write(text)
        patched = subprocess.run(["git", "apply", "-"], cwd=original, input=diff.stdout, capture_output=True,
                                 text=True, check=False)
        with open(os.path.join(original, BACKEND), encoding="utf-8", newline="") as f:
            if patched.returncode != 0 or f.read() != applied:
                failures.append(f"the diff, through git apply, differs from apply's result {patched.stderr.strip()}")
        if run("apply").returncode == 2:
            failures.append("a second apply refused the file the first one wrote")
        with open(path, encoding="utf-8", newline="") as f:
            if f.read() != applied:
                failures.append("a second apply changed the file again")
    elif diff.stdout and apply.returncode != 2:
        failures.append("diff printed edits that apply did not write")
    return failures, (check.returncode, apply.returncode)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kvpatch", required=True)
    parser.add_argument("--fixtures", required=True)
    parser.add_argument("--count", type=int, default=400)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--keep", help="write each failing input here as seed-N.py")
    args = parser.parse_args()
    kvpatch = os.path.abspath(args.kvpatch)  # each run's working directory is its scratch directory
    sources = backends(args.fixtures)
    if not sources:
        print(f"mutation_test: no compiling {BACKEND} under {args.fixtures}", file=sys.stderr)
        return 2
    exits, failed = {}, 0
    for seed in range(args.first_seed, args.first_seed + args.count):
        rng = random.Random(seed)
        name, original = sources[rng.randrange(len(sources))]
        text = mutate(original, rng)
        scratch = tempfile.mkdtemp(prefix="kvpatch-mutation-")
        try:
            failures, key = check_one(kvpatch, text, scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        exits[key] = exits.get(key, 0) + 1
        if failures:
            failed += 1
            print(f"seed {seed} (fixtures/{name}): " + "; ".join(failures))
            if args.keep:
                os.makedirs(args.keep, exist_ok=True)
                with open(os.path.join(args.keep, f"seed-{seed}.py"), "w", encoding="utf-8", newline="") as f:
                    f.write(text)
    summary = ", ".join(f"check {c} / apply {a}: {n}" for (c, a), n in sorted(exits.items()))
    print(f"{args.count} mutations of {len(sources)} backends; exits {summary}; {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
