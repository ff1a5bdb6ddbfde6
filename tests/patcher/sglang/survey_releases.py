#!/usr/bin/env python3
"""Every SGLang release on PyPI against kvpatch: a survey, not a CI test (the wheels are ~420 MB).

  survey_releases.py --kvpatch BIN [--cache DIR] [--since 0.4.0] [--markdown FILE] [VERSION ...]

Lists the releases with `pip index versions sglang` (or takes VERSIONs), downloads each wheel into
the cache that check_release.py uses, and for every distinct flashinfer_mla_backend.py runs, in a
scratch directory: check, apply, check again, py_compile, and apply a second time. It prints one row
per distinct file with the releases that ship it, and exits 1 when any file is left with findings
after apply (an unknown site, a required cast, a missing site without a fix), when the patched file
does not compile, or when a second apply changes it. releases.txt pins a hand-counted few of these.
"""
import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_release  # this directory's sibling, not an installed module

BACKEND = "flashinfer_mla_backend.py"


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


def survey_file(kvpatch, source):
    """check / apply / check / py_compile / apply on one backend file; returns a row of results."""
    with tempfile.TemporaryDirectory(prefix="kvpatch-survey-") as work:
        path = os.path.join(work, BACKEND)
        with open(path, "wb") as f:
            f.write(source)
        first = run(kvpatch, "check", "--format", "json", BACKEND, cwd=work)
        report = json.loads(first.stdout)
        row = check_release.summarise(report)
        row["edits"] = report.get("summary", {}).get("edits")
        row["check"] = first.returncode
        row["apply"] = run(kvpatch, "apply", BACKEND, cwd=work).returncode
        recheck = run(kvpatch, "check", BACKEND, cwd=work)
        row["recheck"] = recheck.returncode
        row["left"] = [line for line in recheck.stdout.decode(errors="replace").splitlines()
                       if re.search(r": (unknown|required|missing|run-input-\w+): ", line)]
        row["compiles"] = run(sys.executable, "-m", "py_compile", path, cwd=work).returncode == 0
        with open(path, "rb") as f:
            patched = f.read()
        run(kvpatch, "apply", BACKEND, cwd=work)
        with open(path, "rb") as f:
            row["idempotent"] = f.read() == patched
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="*")
    parser.add_argument("--kvpatch", required=True)
    parser.add_argument("--cache", default=os.path.join(os.getcwd(), ".cache", "sglang"))
    parser.add_argument("--since", default="0.4.0", help="oldest release to survey (default 0.4.0)")
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
            try:
                source = check_release.extract_backend(check_release.cached_archive(args.cache, version))
            except check_release.InputError:
                continue  # no MLA backend in this release
            digest = hashlib.sha256(source).hexdigest()
            by_digest.setdefault(digest, {"source": source, "versions": []})["versions"].append(version)
    except check_release.InputError as e:
        print(f"survey_releases: {e}", file=sys.stderr)
        return 2

    header = ("| releases | sha256 | plan sites (threaded / missing / gated / unknown) | KV casts (redundant / "
              "required) | edits | check, apply, recheck exit | compiles, idempotent |\n|---|---|---|---|---|---|---|")
    lines, bad = [header], 0
    for digest, entry in by_digest.items():
        row = survey_file(kvpatch, entry["source"])
        vs = entry["versions"]
        # A range only when no release between the two ships another file.
        shipping = [v for e in by_digest.values() for v in e["versions"]]
        shipping.sort(key=version_key)
        first = shipping.index(vs[0])
        contiguous = shipping[first:first + len(vs)] == vs
        named = f"{vs[0]} - {vs[-1]}" if len(vs) > 2 and contiguous else ", ".join(vs)
        ok = row["recheck"] == 0 and row["unknown"] == 0 and row["compiles"] and row["idempotent"]
        bad += not ok
        lines.append(f"| {named} ({len(vs)}) | {digest[:12]} | "
                     f"{row['sites']} ({row['threaded']} / {row['missing']} / {row['gated']} / {row['unknown']}) | "
                     f"{row['casts']} ({row['redundant']} / {row['required']}) | {row['edits']} | "
                     f"{row['check']}, {row['apply']}, {row['recheck']} | "
                     f"{'yes' if row['compiles'] else 'NO'}, {'yes' if row['idempotent'] else 'NO'} |")
        for left in row["left"]:
            lines.append(f"|   left after apply: {left} |||||||")
    files = len(by_digest)
    releases = sum(len(e["versions"]) for e in by_digest.values())
    lines.append(f"\n{releases} releases of {len(versions)} ship {BACKEND}, in {files} distinct versions of the "
                 f"file; {files - bad} of them end clean after apply, {bad} do not.")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
