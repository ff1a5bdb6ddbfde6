#!/usr/bin/env python3
"""Every SGLang release on PyPI against kvpatch: a survey, not a CI test (the wheels are ~420 MB).

  survey_releases.py --kvpatch BIN [--cache DIR] [--since 0.4.0] [--kv-dtype-form original|upstream|sm90]
                     [--markdown FILE] [VERSION ...]

Lists the releases with `pip index versions sglang` (or takes VERSIONs), downloads each wheel into
the cache that check_release.py uses, and for every distinct sglang/srt/layers/attention/ directory
(its .py files, as the README's `kvpatch check python/sglang/srt/layers/attention/` reads them) runs,
in a scratch copy: check, apply, check again, py_compile of every file, and apply a second time; and,
in a git repository, replays the first manual patch on its flashinfer_mla_backend.py as
check_release.py does (decode fixed, prefill missed, staged: pre-commit must refuse it). It
prints one row per distinct directory with the releases that ship it, and exits 1 when any is left
with a plan site or cast that apply could not settle (unknown, missing, run-input-*; a `required`
cast is a verdict, not a failure, and so is a site held back because the pinned FlashInfer is older than
0.6.14 and cannot build the FP8 KV plan, and a site already threaded that such a FlashInfer cannot build,
which check reports as unbuildable), when a patched file does not compile, or when a second apply
changes anything, or when the replay fails. releases.txt pins a hand-counted few of the MLA backends.
Each scratch copy carries a pyproject.toml with the wheel's exact flashinfer_python pin, as an SGLang
checkout's python/pyproject.toml does, so kvpatch adds run() FP8 scales exactly where that FlashInfer
(0.6.14 or later) needs them; directories are surveyed once per (files, pin).
"""
import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_release  # this directory's sibling, not an installed module

ATTENTION = "sglang/srt/layers/attention/"
# How check words a plan site it leaves missing because the pinned FlashInfer (before 0.6.14) cannot build
# the FP8 KV plan, and the field of a class whose sites are all held back: verdicts, like a required cast.
HELD_BACK = "cannot build a plan with a BF16 query and an FP8 KV cache"
NO_FIELD_FOR_HELD_SITES = "is threaded (see the reasons its plan sites give)"


def attention_sources(archive):
    """The .py files under sglang/srt/layers/attention/ in a wheel, by path below that directory."""
    with zipfile.ZipFile(archive) as z:
        return {n[len(ATTENTION):]: z.read(n) for n in z.namelist() if n.startswith(ATTENTION) and n.endswith(".py")}


def version_key(version):
    return [int(x) if x.isdigit() else x for x in re.split(r"[.]|(?<=\d)(?=post)", version) if x]


def pypi_versions():
    done = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "sglang", "--disable-pip-version-check"],
                          capture_output=True, text=True, check=False)
    match = re.search(r"Available versions: (.*)", done.stdout)
    if done.returncode != 0 or match is None:
        raise check_release.InputError(f"pip index versions sglang failed (is PyPI reachable?): {done.stderr.strip()}")
    return [v.strip() for v in match.group(1).split(",") if v.strip()]


def run(*args, cwd):
    return subprocess.run(list(args), cwd=cwd, capture_output=True, check=False)


def replay_manual_patch(kvpatch, source, pin):
    """check_release.py's replay of the first manual patch on one flashinfer_mla_backend.py: 'refused'
    with the prefill site count when pre-commit refuses the decode-only patch and takes the full one,
    '-' when there is no prefill site to miss or no patch at all, else what went wrong."""
    with tempfile.TemporaryDirectory(prefix="kvpatch-survey-git-") as repo:
        try:
            c, target = check_release.published_repo(kvpatch, repo, source, "published", pin)
        except check_release.InputError as e:
            return f"FAILED: {e}"
        report = json.loads(c.kv("check", "--format", "json", check_release.REPO_PATH).stdout)
        diff_text = c.kv("diff", check_release.REPO_PATH).stdout.decode()
        c.kv("apply", check_release.REPO_PATH)
        with open(target, "rb") as f:
            patched = f.read()
        check_release.check_first_manual_patch(c, target, source, patched, diff_text, report)
        if c.failures:
            return "FAILED: " + "; ".join(c.failures)
        prefill = check_release.prefill_sites_missing(report)
        if prefill and not diff_text:
            return "- (no edits)"
        return f"refused ({prefill} prefill site{'s' if prefill != 1 else ''})" if prefill else "-"


def survey_tree(kvpatch, sources, form, pin):
    """check / apply / check / py_compile / apply on one attention directory; returns a row of results."""
    row = {"flashinfer": pin or "none"}
    with tempfile.TemporaryDirectory(prefix="kvpatch-survey-") as work:
        if pin:
            with open(os.path.join(work, "pyproject.toml"), "w", encoding="utf-8") as f:
                f.write(f'[project]\nname = "sglang"\ndependencies = ["flashinfer_python=={pin}"]\n')
        for name, data in sources.items():
            os.makedirs(os.path.dirname(os.path.join(work, name)), exist_ok=True)
            with open(os.path.join(work, name), "wb") as f:
                f.write(data)
        backend = "flashinfer_mla_backend.py"
        row["manual"] = (replay_manual_patch(kvpatch, sources[backend], pin)
                         if form == "original" and backend in sources else "-")
        form_args = ("--kv-dtype-form", form)
        first = run(kvpatch, "check", *form_args, "--format", "json", ".", cwd=work)
        report = json.loads(first.stdout)
        row.update(check_release.summarise(report))
        row["edits"] = report.get("summary", {}).get("edits")
        row["files"] = len({s.get("file") for s in report.get("plan_sites", []) + report.get("casts", [])})
        row["check"] = first.returncode
        row["apply"] = run(kvpatch, "apply", *form_args, ".", cwd=work).returncode
        recheck = run(kvpatch, "check", *form_args, ".", cwd=work)
        row["recheck"] = recheck.returncode
        open_lines = [line for line in recheck.stdout.decode(errors="replace").splitlines()
                      if re.search(r": (unknown|missing|run-input-\w+): ", line)]
        row["held"] = sum(1 for line in open_lines if HELD_BACK in line)
        row["left"] = [line for line in open_lines if HELD_BACK not in line and NO_FIELD_FOR_HELD_SITES not in line]
        patched = {}
        row["compiles"] = True
        for name in sources:
            path = os.path.join(work, name)
            row["compiles"] &= run(sys.executable, "-m", "py_compile", path, cwd=work).returncode == 0
            with open(path, "rb") as f:
                patched[name] = f.read()
        run(kvpatch, "apply", *form_args, ".", cwd=work)
        row["idempotent"] = True
        for name in sources:
            with open(os.path.join(work, name), "rb") as f:
                row["idempotent"] &= f.read() == patched[name]
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="*")
    parser.add_argument("--kvpatch", required=True)
    parser.add_argument("--cache", default=os.path.join(os.getcwd(), ".cache", "sglang"))
    parser.add_argument("--since", default="0.4.0", help="oldest release to survey (default 0.4.0)")
    parser.add_argument("--kv-dtype-form", choices=("original", "upstream", "sm90"), default="original",
                        help="the KV field's form, passed to every kvpatch run (default original)")
    parser.add_argument("--markdown", help="also write the table as Markdown to this file")
    args = parser.parse_args()
    kvpatch = os.path.abspath(args.kvpatch)  # the scratch runs happen in other directories
    try:
        versions = args.versions or [v for v in pypi_versions() if version_key(v) >= version_key(args.since)]
        versions.sort(key=version_key)
        if check_release.download({v: {} for v in versions}, args.cache) != 0:
            return 2
        by_digest = {}
        for version in versions:
            archive = check_release.cached_archive(args.cache, version)
            sources = attention_sources(archive)
            if not sources:
                continue  # no attention package in this release
            pin = check_release.flashinfer_pin(archive)
            digest = hashlib.sha256(b"".join(name.encode() + b"\0" + data for name, data in sorted(sources.items())))
            files_digest = digest.hexdigest()
            digest.update(b"flashinfer==" + (pin or "none").encode())
            entry = by_digest.setdefault(digest.hexdigest(), {"sources": sources, "versions": [], "pin": pin,
                                                              "files_digest": files_digest})
            entry["versions"].append(version)
    except check_release.InputError as e:
        print(f"survey_releases: {e}", file=sys.stderr)
        return 2

    header = ("| releases | FlashInfer pin | files with findings | plan sites (threaded / missing / gated / unknown) | "
              "KV casts (redundant / required) | run() FP8 scales missing | edits | "
              "plan sites held back (FlashInfer before 0.6.14) | threaded sites unbuildable (the same) | "
              "check, apply, recheck exit | compiles, idempotent | decode-only patch, staged |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|")
    # Survey each distinct directory once, then give each release its directory's result, and merge
    # runs of consecutive releases whose results read the same into one row.
    results = {digest: survey_tree(kvpatch, entry["sources"], args.kv_dtype_form, entry["pin"])
               for digest, entry in by_digest.items()}
    per_release = sorted(((v, d) for d, e in by_digest.items() for v in e["versions"]), key=lambda x: version_key(x[0]))
    lines, bad, groups = [header], 0, []
    for version, digest in per_release:
        row = results[digest]
        cells = (f"{row['flashinfer']} | {row['files']} | {row['sites']} ({row['threaded']} / {row['missing']} / "
                 f"{row['gated']} / {row['unknown']}) | {row['casts']} ({row['redundant']} / {row['required']}) | "
                 f"{row['scales_missing']} | {row['edits']} | {row['held']} | {row['unbuildable']} | "
                 f"{row['check']}, {row['apply']}, {row['recheck']} | "
                 f"{'yes' if row['compiles'] else 'NO'}, {'yes' if row['idempotent'] else 'NO'} | {row['manual']}")
        if groups and groups[-1]["cells"] == cells and not row["left"]:
            groups[-1]["versions"].append(version)
        else:
            groups.append({"cells": cells, "versions": [version], "left": row["left"]})
    for row in results.values():
        # Held back and unbuildable are verdicts on the FlashInfer pin, not on kvpatch.
        settled = row["recheck"] == 0 or (row["held"] + row["unbuildable"] > 0 and not row["left"])
        bad += not (settled and row["unknown"] == 0 and row["compiles"] and row["idempotent"]
                    and not row["manual"].startswith("FAILED"))
    for g in groups:
        vs = g["versions"]
        named = vs[0] if len(vs) == 1 else f"{vs[0]} - {vs[-1]}"
        lines.append(f"| {named} ({len(vs)}) | {g['cells']} |")
        for left in g["left"]:
            lines.append(f"|   left after apply: {left} ||||||||||||")
    files = len(by_digest)
    releases = sum(len(e["versions"]) for e in by_digest.values())
    directories = len({e["files_digest"] for e in by_digest.values()})
    lines.append(f"\n{releases} releases of {len(versions)} ship {ATTENTION}, in {directories} distinct versions of "
                 f"it, {files} with their FlashInfer pins; {files - bad} end settled after apply, {bad} do not.")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
