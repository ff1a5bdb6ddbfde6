#!/usr/bin/env python3
"""kvpatch on backends whose wrapper is a subclass that a module beside them defines (stdlib only).

  subclass_module_test.py --kvpatch BIN (--fixtures DIR | --sources DIR) [--variant NAME]... [--keep DIR]

A fork that traces or times its attention wraps FlashInfer's BatchMLAPagedAttentionWrapper in a subclass of its
own, in a module of its own, and builds that everywhere the backend built the wrapper. For each backend that imports
the wrapper from flashinfer, every use of it (names, `flashinfer.X` reads, annotations, forward references, comments)
is rewritten to a subclass defined in kvpatch_sub.py beside it, bound in one of three ways:
  - relative: `from .kvpatch_sub import KvpatchSubWrapper`;
  - absolute: `from kvpatch_pkg.kvpatch_sub import KvpatchSubWrapper`;
  - module:   `from . import kvpatch_sub`, then `kvpatch_sub.KvpatchSubWrapper` at every use;
or to the wrapper class itself under that name, in a compatibility module kvpatch_sub.py:
  - alias-import:   `from flashinfer import BatchMLAPagedAttentionWrapper as KvpatchSubWrapper` there, bound as in
                    relative;
  - alias-assigned: `KvpatchSubWrapper = BatchMLAPagedAttentionWrapper` there (after an optional import that falls
                    back to None), bound as in module.
The rewritten backend no longer names the wrapper at all, and keeps every line where it was (the import is put on
its statement's line). kvpatch, run on the backend by name (its directory read beside it), must then report the same
findings (rule, status, line) and summary, exit the same from check and apply, and apply must write the rewrite of
what it writes for the original. Before kvpatch followed subclasses across modules (2026-12-07), every rewrite of a
fixture with a plan site lost it: the module was not even selected, and check exited 0; before it followed aliases
of the wrapper class bound in another module (2026-12-07, later), so did every alias rewrite.
The backends are the fixtures' (fixtures/*/flashinfer_mla_backend.py) or, with --sources, every .py under DIR that
compiles and imports the wrapper (for example real SGLang releases, through check_release.py subclass).
Exit codes: 0 pass, 1 a rewrite changed the outcome, 2 usage or input error.
"""
import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import metamorphic_calls
from metamorphic_test import backends  # the fixtures' backends, or every .py under DIR, that compile

BACKEND = "flashinfer_mla_backend.py"
WRAPPER = "BatchMLAPagedAttentionWrapper"
SUB = "KvpatchSubWrapper"
SUB_MODULE = "kvpatch_sub"
PACKAGE = "kvpatch_pkg"
SUB_SOURCE = (f"from flashinfer import {WRAPPER}\n\n\n"
              f"class {SUB}({WRAPPER}):\n    \"\"\"The wrapper, traced by a fork.\"\"\"\n\n"
              "    def run(self, *args, **kwargs):\n        return super().run(*args, **kwargs)\n")
# A compatibility module that gives the wrapper class itself another name.
ALIAS_IMPORT_SOURCE = f"from flashinfer import {WRAPPER} as {SUB}\n"
ALIAS_ASSIGNED_SOURCE = (f"try:\n    from flashinfer import {WRAPPER}\nexcept ImportError:\n    {WRAPPER} = None\n\n"
                         f"{SUB} = {WRAPPER}\n")
# variant: (the import that binds the name, how each use spells it, what kvpatch_sub.py binds it to)
VARIANTS = {
    "relative": (f"from .{SUB_MODULE} import {SUB}", SUB, SUB_SOURCE),
    "absolute": (f"from {PACKAGE}.{SUB_MODULE} import {SUB}", SUB, SUB_SOURCE),
    "module": (f"from . import {SUB_MODULE}", f"{SUB_MODULE}.{SUB}", SUB_SOURCE),
    "alias-import": (f"from .{SUB_MODULE} import {SUB}", SUB, ALIAS_IMPORT_SOURCE),
    "alias-assigned": (f"from . import {SUB_MODULE}", f"{SUB_MODULE}.{SUB}", ALIAS_ASSIGNED_SOURCE),
}
CATEGORIES = ["plan_sites", "casts", "fields", "run_inputs", "run_scales"]


def flashinfer_module(name):
    return name == "flashinfer" or name.startswith("flashinfer.")


def annotation_strings(tree):
    """The string constants inside annotations (forward references)."""
    roots = []
    for n in ast.walk(tree):
        if isinstance(n, ast.arg) and n.annotation is not None:
            roots.append(n.annotation)
        elif isinstance(n, ast.AnnAssign):
            roots.append(n.annotation)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.returns is not None:
            roots.append(n.returns)
    return {id(c) for r in roots for c in ast.walk(r) if isinstance(c, ast.Constant) and isinstance(c.value, str)}


def docstrings(tree):
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body:
            first = n.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and \
                    isinstance(first.value.value, str):
                out.add(id(first.value))
    return out


def rewrite(text, variant):
    """The backend with the wrapper replaced by the subclass, or None where it does not import the wrapper from
    flashinfer or names it in a way this does not rewrite (a string that is not an annotation or a docstring, a name
    bound again, an import inside a def)."""
    try:
        p = metamorphic_calls.Parsed(text)
    except (SyntaxError, ValueError):
        return None
    binding, spelled, _ = VARIANTS[variant]
    locals_, modules, edits, imports = set(), set(), [], []
    for node in ast.walk(p.tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and flashinfer_module(node.module or ""):
            if not any(a.name == WRAPPER for a in node.names):
                continue
            if p.inside(node, metamorphic_calls.SCOPES):
                return None
            locals_ |= {a.asname or a.name for a in node.names if a.name == WRAPPER}
            kept = [a for a in node.names if a.name != WRAPPER]
            statement = (f"from {node.module} import " + ", ".join(a.name + (f" as {a.asname}" if a.asname else "")
                                                                    for a in kept) + "; ") if kept else ""
            imports.append(node)
            edits.append((*p.span(node), statement + binding + "\n" * (node.end_lineno - node.lineno)))
        elif isinstance(node, ast.Import) and any(flashinfer_module(a.name) for a in node.names):
            modules |= {a.asname or a.name.split(".")[0] for a in node.names if flashinfer_module(a.name)}
    if not locals_ and not modules:
        return None
    rebound = any((isinstance(n, metamorphic_calls.SCOPES) and getattr(n, "name", None) in locals_) or
                  (isinstance(n, ast.arg) and n.arg in locals_) for n in ast.walk(p.tree))
    if rebound:
        return None
    annotations, docs = annotation_strings(p.tree), docstrings(p.tree)
    reads = False
    for n in ast.walk(p.tree):
        if isinstance(n, ast.Name) and n.id in locals_:
            if not isinstance(n.ctx, ast.Load) or p.inside(n, ast.JoinedStr):
                return None
            edits.append((*p.span(n), spelled))
            reads = True
        elif isinstance(n, ast.Attribute) and n.attr == WRAPPER:
            root = n.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if not (isinstance(root, ast.Name) and root.id in modules) or p.inside(n, ast.JoinedStr):
                return None
            edits.append((*p.span(n), spelled))
            reads = True
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and re.search(rf"\b{WRAPPER}\b", n.value):
            if id(n) in annotations:
                words = "|".join(re.escape(w) for w in sorted(locals_ | {WRAPPER}))
                segment = p.segment(n)
                edits.append((*p.span(n), re.sub(rf"\b(?:(?:{'|'.join(sorted(modules)) or '_'})\.)*(?:{words})\b",
                                                  spelled, segment)))
            elif id(n) not in docs:
                return None
    if not reads:
        return None
    if not imports:
        # Only `import flashinfer` binds it: the subclass's import goes on that statement's line.
        first = min((n for n in ast.walk(p.tree) if isinstance(n, ast.Import) and
                     any(flashinfer_module(a.name) for a in n.names)), key=lambda n: (n.lineno, n.col_offset))
        if p.inside(first, metamorphic_calls.SCOPES):
            return None
        end = p.span(first)[1]
        edits.append((end, end, "; " + binding))
    try:
        out = p.edited(edits)
    except ValueError:
        return None
    # Comments and docstrings name it too; the rewrite must not name it anywhere for the test to mean anything.
    out = re.sub(rf"\b{WRAPPER}\b", SUB, out)
    try:
        compile(out, BACKEND, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    return out


def outcome(kvpatch, text, scratch, sub_source=SUB_SOURCE):
    """check's exit, findings and summary; apply's exit and the text it wrote, for the backend beside kvpatch_sub.py."""
    package = os.path.join(scratch, PACKAGE)
    shutil.rmtree(package, ignore_errors=True)
    os.makedirs(package)
    for name, content in (("__init__.py", ""), (f"{SUB_MODULE}.py", sub_source), (BACKEND, text)):
        with open(os.path.join(package, name), "w", encoding="utf-8", newline="") as f:
            f.write(content)
    path = os.path.join(PACKAGE, BACKEND)

    def run(*args):
        return subprocess.run([kvpatch, *args, "--isolated", path], cwd=scratch, capture_output=True, text=True,
                              errors="replace", timeout=120, check=False)

    check = run("check", "--format", "json")
    try:
        report = json.loads(check.stdout)
        findings = {k: sorted((e["rule"], e.get("status", ""), e["line"]) for e in report[k]) for k in CATEGORIES}
        findings["summary"] = report["summary"]
    except (json.JSONDecodeError, KeyError):
        findings = None
    apply = run("apply")
    with open(os.path.join(scratch, path), encoding="utf-8", newline="") as f:
        written = f.read()
    return check.returncode, findings, apply.returncode, written, check.stderr + apply.stderr


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kvpatch", required=True)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--fixtures")
    where.add_argument("--sources")
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS))
    parser.add_argument("--keep", help="write each failing rewrite there")
    args = parser.parse_args()
    kvpatch = os.path.abspath(args.kvpatch)
    variants = args.variant or list(VARIANTS)
    cases = failures = skipped = with_sites = files = 0
    with tempfile.TemporaryDirectory(prefix="kvpatch-subclass-") as scratch:
        for path, text in backends(args.fixtures, args.sources):
            rewrites = {v: rewrite(text, v) for v in variants}
            if all(r is None for r in rewrites.values()):
                skipped += 1
                continue
            files += 1
            base = outcome(kvpatch, text, scratch)
            for variant, rewritten in rewrites.items():
                if rewritten is None:
                    continue
                cases += 1
                got = outcome(kvpatch, rewritten, scratch, VARIANTS[variant][2])
                problems = []
                if got[0] != base[0] or got[2] != base[2]:
                    problems.append(f"check/apply exit {got[0]}/{got[2]}, the original's {base[0]}/{base[2]}")
                if got[1] is None or base[1] is None or got[1] != base[1]:
                    changed = [k for k in [*CATEGORIES, "summary"]
                               if not got[1] or not base[1] or got[1][k] != base[1][k]]
                    problems.append("findings differ in " + ", ".join(changed))
                expected = rewrite(base[3], variant) if base[3] != text else rewritten
                if got[3] != expected:
                    problems.append("apply wrote other text than the rewrite of what it writes for the original")
                if base[1] and base[1]["summary"].get("plan_sites", 0):
                    with_sites += 1
                if problems:
                    failures += 1
                    print(f"FAIL {path} ({variant}): " + "; ".join(problems), file=sys.stderr)
                    if got[4].strip():
                        print(got[4].strip(), file=sys.stderr)
                    if args.keep:
                        os.makedirs(args.keep, exist_ok=True)
                        name = os.path.basename(os.path.dirname(path)) + f"-{variant}.py"
                        with open(os.path.join(args.keep, name), "w", encoding="utf-8", newline="") as f:
                            f.write(rewritten)
    if cases == 0:
        print("subclass_module_test: no backend imports the wrapper from flashinfer", file=sys.stderr)
        return 2
    print(f"subclass_module_test: {cases} rewrites ({with_sites} with plan sites) of {files} backends, {skipped} "
          f"files not rewritten, {failures} changed the outcome")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
