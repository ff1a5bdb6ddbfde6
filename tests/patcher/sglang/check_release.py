#!/usr/bin/env python3
"""Real SGLang releases against kvpatch (stdlib only).

  check_release.py download --releases FILE --cache DIR
      fetch every pinned wheel with `python3 -m pip download --no-deps sglang==X` unless it is cached.
  check_release.py check ENTRY --releases FILE --cache DIR --kvpatch BIN
      take flashinfer_mla_backend.py from the cached wheel, put it in a scratch git repository at
      python/sglang/srt/layers/attention/, and assert the hand-counted expectations of releases.txt;
      then replay the first manual patch (decode fixed, prefill missed) there: `kvpatch pre-commit`
      must refuse it naming every prefill plan site, and accept the full patch.
      ENTRY is a release (0.5.6: checked with the FlashInfer its wheel pins) or a release with its
      FlashInfer pin raised, as a user who upgraded FlashInfer has it (0.5.6+flashinfer0.6.14).
  check_release.py mutate --releases FILE --cache DIR --kvpatch BIN [MUTATION_TEST_OPTION...]
      take each pinned release's flashinfer_mla_backend.py from its cached wheel and run
      tests/patcher/mutation_test.py --sources over them with the options given after it (seeds,
      --forms, --split): the fixtures are files we wrote, these are SGLang's own shapes.
  check_release.py subclass --releases FILE --cache DIR --kvpatch BIN [SUBCLASS_TEST_OPTION...]
      the same for tests/patcher/subclass_module_test.py: each release's wrapper replaced by a subclass that a
      module beside the backend defines.

Exit codes: 0 pass, 1 an expectation failed, 2 usage or input error (bad releases file, no wheel).
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

BACKEND_SUFFIX = "sglang/srt/layers/attention/flashinfer_mla_backend.py"
REPO_PATH = "python/sglang/srt/layers/attention/flashinfer_mla_backend.py"
INT_KEYS = ("sites", "threaded", "missing", "gated", "unknown", "ignored", "unbuildable", "casts", "redundant",
            "required", "fields_missing", "scales_missing", "edits", "check", "recheck")
FLASHINFER_PIN = re.compile(r"flashinfer[-_]python\s*(?:\[[^\]]*\])?\s*==\s*([0-9][0-9A-Za-z.+!]*)", re.IGNORECASE)


class InputError(Exception):
    """A problem with the test's inputs rather than with kvpatch: exit 2."""


def parse_lines(text):
    lines = [int(x) for x in text.split(",") if x]
    return sorted(lines)


def load_releases(path):
    releases = {}
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            version, *pairs = line.split()
            entry = {"line": number}
            for pair in pairs:
                if "=" not in pair:
                    raise InputError(f"{path}:{number}: expected key=value, got {pair!r}")
                key, value = pair.split("=", 1)
                entry[key] = value
            for key in INT_KEYS:
                if key not in entry:
                    raise InputError(f"{path}:{number}: release {version} lacks {key}=")
                entry[key] = int(entry[key])
            for key in ("site_lines", "cast_lines", "scale_lines"):
                entry[key] = parse_lines(entry.get(key, ""))
            if "flashinfer" not in entry:
                raise InputError(f"{path}:{number}: release {version} lacks flashinfer= (its pin, or none)")
            if "sha256" not in entry:
                raise InputError(f"{path}:{number}: release {version} lacks sha256=")
            releases[version] = entry
    return releases


def split_entry(entry):
    """'0.5.6+flashinfer0.6.14' -> ('0.5.6', '0.6.14'); '0.5.6' -> ('0.5.6', None)."""
    version, _, upgraded = entry.partition("+flashinfer")
    return version, upgraded or None


def cached_archive(cache, version):
    prefix = f"sglang-{version}"
    for name in sorted(os.listdir(cache)) if os.path.isdir(cache) else []:
        rest = name[len(prefix):]
        if name.startswith(prefix) and rest.startswith(("-", ".tar")):
            return os.path.join(cache, name)
    return None


def download(releases, cache):
    os.makedirs(cache, exist_ok=True)
    failures = 0
    for version in dict.fromkeys(split_entry(entry)[0] for entry in releases):
        if cached_archive(cache, version):
            print(f"sglang {version}: cached")
            continue
        # Download into a private directory, then move: a concurrent reader never sees half a file.
        staging = tempfile.mkdtemp(prefix=".download-", dir=cache)
        try:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                   "-q", "-d", staging, f"sglang=={version}"]
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            names = os.listdir(staging)
            if done.returncode != 0 or len(names) != 1:
                print(f"sglang {version}: pip download failed (is PyPI reachable?): {done.stderr.strip()}",
                      file=sys.stderr)
                failures += 1
                continue
            os.replace(os.path.join(staging, names[0]), os.path.join(cache, names[0]))
            print(f"sglang {version}: downloaded {names[0]}")
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return 1 if failures else 0


def extract_backend(archive):
    if archive.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as z:
            names = [n for n in z.namelist() if n.endswith(BACKEND_SUFFIX)]
            if len(names) == 1:
                return z.read(names[0])
    else:
        with tarfile.open(archive) as t:
            members = [m for m in t.getmembers() if m.name.endswith(BACKEND_SUFFIX)]
            if len(members) == 1:
                return t.extractfile(members[0]).read()
    raise InputError(f"{archive}: no single {BACKEND_SUFFIX} inside")


def flashinfer_pin(archive):
    """The exact flashinfer_python release the wheel requires, from its METADATA; None without an exact pin."""
    if not archive.endswith((".whl", ".zip")):
        return None
    with zipfile.ZipFile(archive) as z:
        names = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        if len(names) != 1:
            return None
        for line in z.read(names[0]).decode(errors="replace").splitlines():
            match = FLASHINFER_PIN.search(line) if line.startswith("Requires-Dist:") else None
            if match:
                return match.group(1)
    return None


class Checker:
    def __init__(self, kvpatch, repo):
        self.kvpatch = kvpatch
        self.repo = repo
        self.failures = []

    def expect(self, ok, message):
        if not ok:
            self.failures.append(message)

    def run(self, *args, cwd=None):
        return subprocess.run(list(args), cwd=cwd or self.repo, capture_output=True, check=False)

    def kv(self, *args):
        return self.run(self.kvpatch, *args)


def summarise(report):
    sites = report.get("plan_sites", [])
    casts = report.get("casts", [])
    fields = report.get("fields", [])
    scales = report.get("run_scales", [])
    by_status = {}
    for site in sites:
        by_status[site.get("status")] = by_status.get(site.get("status"), 0) + 1
    cast_status = {}
    for cast in casts:
        cast_status[cast.get("status")] = cast_status.get(cast.get("status"), 0) + 1
    return {
        "sites": len(sites),
        "threaded": by_status.get("threaded", 0),
        "missing": by_status.get("missing", 0),
        "gated": by_status.get("gated", 0),
        "unknown": by_status.get("unknown", 0),
        "ignored": by_status.get("ignored", 0),
        "unbuildable": sum(1 for s in sites if "unbuildable" in s),
        "casts": len(casts),
        "redundant": cast_status.get("redundant", 0),
        "required": cast_status.get("required", 0),
        "fields_missing": sum(1 for f in fields if f.get("status") == "missing"),
        "scales_missing": sum(1 for r in scales if r.get("status") == "missing"),
        "scale_lines": sorted(r.get("line") for r in scales),
        "site_lines": sorted(s.get("line") for s in sites),
        "cast_lines": sorted(c.get("line") for c in casts),
    }


GIT = ["git", "-c", "user.name=kvpatch-test", "-c", "user.email=kvpatch-test@invalid", "-c", "core.autocrlf=false"]


def published_repo(kvpatch, repo, source, message, flashinfer=None):
    """A git repository in `repo` whose one commit holds the backend at REPO_PATH and, as an SGLang checkout
    does, python/pyproject.toml pinning `flashinfer` (when given); its Checker and the backend's path."""
    target = os.path.join(repo, REPO_PATH)
    os.makedirs(os.path.dirname(target))
    with open(target, "wb") as f:
        f.write(source)
    if flashinfer:
        with open(os.path.join(repo, "python", "pyproject.toml"), "w", encoding="utf-8") as f:
            f.write(f'[project]\nname = "sglang"\ndependencies = [\n  "flashinfer_python=={flashinfer}",\n]\n')
    c = Checker(kvpatch, repo)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", message]):
        done = c.run(*GIT, *args)
        if done.returncode != 0:
            raise InputError(f"git {' '.join(args)} failed: {done.stderr.decode(errors='replace')}")
    return c, target


def prefill_sites_missing(report):
    """How many plan sites of *Prefill classes a check report calls missing: what the first patch missed."""
    return sum(1 for s in report.get("plan_sites", []) if "Prefill" in s["class"] and s["status"] == "missing")


def diff_hunks(diff_text):
    """A unified diff of one file: its header lines and its hunks, each with the first old line it changes."""
    header, hunks = [], []
    for line in diff_text.splitlines(keepends=True):
        if line.startswith("@@"):
            old_start = int(line.split()[1].lstrip("-").split(",")[0])
            hunks.append({"lines": [line], "old_start": old_start})
        elif hunks:
            hunks[-1]["lines"].append(line)
        else:
            header.append(line)
    for hunk in hunks:
        old_line = hunk["old_start"]
        for line in hunk["lines"][1:]:
            if line.startswith(("-", "+")):
                break
            old_line += 1
        hunk["first_change"] = old_line
    return header, hunks


def decode_only_diff(diff_text, report):
    """The diff less the hunks that fix the prefill path: what the first manual patch applied.

    Each hunk fixes the nearest finding at or above its first changed line (a plan site's edit is
    inside its call, a field's right after its anchor, a cast's on its line). Prefill findings are
    plan sites and fields of *Prefill classes, and casts and run() scales in forward_extend.
    """
    findings = [(s["line"], "Prefill" in s["class"]) for s in report.get("plan_sites", [])]
    findings += [(f["line"], "Prefill" in f["class"]) for f in report.get("fields", []) if f.get("status") == "missing"]
    findings += [(c["line"], c.get("method") == "forward_extend") for c in report.get("casts", [])]
    findings += [(r["line"], r.get("method") == "forward_extend") for r in report.get("run_scales", [])]
    findings.sort()
    header, hunks = diff_hunks(diff_text)
    kept, dropped = [], 0
    for hunk in hunks:
        owner = [prefill for line, prefill in findings if line <= hunk["first_change"]]
        if owner and owner[-1]:
            dropped += 1
        else:
            kept.append(hunk)
    return "".join(header + [line for h in kept for line in h["lines"]]), dropped


def check_first_manual_patch(c, target, source, patched, diff_text, report):
    """Stage the decode-only patch: pre-commit must name every prefill plan site; then the full patch passes.
    Returns what it showed, for the summary line."""
    prefill_sites = prefill_sites_missing(report)
    if prefill_sites == 0:
        return "no prefill site to miss"
    if not diff_text:
        return "no patch to replay (kvpatch makes no edits)"
    half, dropped = decode_only_diff(diff_text, report)
    c.expect(dropped > 0, "no hunk of kvpatch diff fixes the prefill path")
    with open(target, "wb") as f:
        f.write(source)
    patch_file = os.path.join(c.repo, ".git", "decode-only.diff")
    with open(patch_file, "w", encoding="utf-8") as f:
        f.write(half)
    applied = c.run(*GIT, "apply", patch_file)
    c.expect(applied.returncode == 0,
             f"git apply rejects the decode-only diff: {applied.stderr.decode(errors='replace')}")
    c.run(*GIT, "add", REPO_PATH)
    hook = c.kv("pre-commit", "--format", "json")
    c.expect(hook.returncode == 1, f"pre-commit on the decode-only patch exits {hook.returncode}, expected 1")
    try:
        staged = json.loads(hook.stdout)
    except json.JSONDecodeError as e:
        c.failures.append(f"pre-commit --format json is not JSON: {e}")
        staged = {}
    missing = [s for s in staged.get("plan_sites", []) if s.get("status") == "missing"]
    c.expect(len(missing) == prefill_sites and all("Prefill" in s.get("class", "") for s in missing),
             f"pre-commit on the decode-only patch names {[(s.get('class'), s.get('line')) for s in missing]} as "
             f"missing, expected the {prefill_sites} prefill plan site(s) and nothing else")
    with open(target, "wb") as f:
        f.write(patched)
    c.run(*GIT, "add", REPO_PATH)
    full = c.kv("pre-commit")
    c.expect(full.returncode == 0, f"pre-commit on the full patch exits {full.returncode}: "
                                   f"{full.stdout.decode(errors='replace')}")
    lines = ", ".join(str(s.get("line")) for s in missing)
    return f"pre-commit refused the decode-only patch, naming the prefill site(s) at staged line(s) {lines}"


def check(entry, releases, cache, kvpatch):
    if entry not in releases:
        raise InputError(f"release {entry} is not pinned in the releases file")
    expected = releases[entry]
    version, upgraded = split_entry(entry)
    archive = cached_archive(cache, version)
    if archive is None:
        raise InputError(f"no cached wheel for sglang {version} in {cache}; run the download step first")
    source = extract_backend(archive)
    digest = hashlib.sha256(source).hexdigest()
    if digest != expected["sha256"]:
        raise InputError(f"sglang {version}: flashinfer_mla_backend.py has sha256 {digest}, pinned "
                         f"{expected['sha256']}; recount the release by hand before updating the pin")

    pin = flashinfer_pin(archive)
    if (pin or "none") != expected["flashinfer"]:
        raise InputError(f"sglang {version}: the wheel pins flashinfer_python {pin or 'not exactly'}, releases.txt "
                         f"says {expected['flashinfer']}")

    with tempfile.TemporaryDirectory(prefix=f"kvpatch-sglang-{version}-") as repo:
        c, target = published_repo(kvpatch, repo, source, f"sglang {version}", upgraded or pin)

        # What check reports on the release as published, counted against releases.txt.
        report_run = c.kv("check", "--format", "json", REPO_PATH)
        c.expect(report_run.returncode == expected["check"],
                 f"check exit {report_run.returncode}, expected {expected['check']}: "
                 f"{report_run.stderr.decode(errors='replace')}")
        try:
            report = json.loads(report_run.stdout)
        except json.JSONDecodeError as e:
            c.failures.append(f"check --format json is not JSON: {e}")
            report = {}
        got = summarise(report)
        for key in ("sites", "threaded", "missing", "gated", "unknown", "ignored", "unbuildable", "casts", "redundant",
                    "required", "fields_missing", "scales_missing", "site_lines", "cast_lines", "scale_lines"):
            c.expect(got[key] == expected[key], f"{key}: kvpatch reports {got[key]}, hand count {expected[key]}")
        edits = report.get("summary", {}).get("edits")
        c.expect(edits == expected["edits"], f"summary.edits: kvpatch reports {edits}, expected {expected['edits']}")

        diff_run = c.kv("diff", REPO_PATH)
        apply_run = c.kv("apply", REPO_PATH)
        # apply exits 1 exactly when findings it cannot fix remain, as check after it does.
        c.expect(apply_run.returncode == expected["recheck"], f"apply exit {apply_run.returncode}, "
                                                             f"expected {expected['recheck']}: "
                                            f"{apply_run.stderr.decode(errors='replace')}")
        with open(target, "rb") as f:
            patched = f.read()

        recheck = c.kv("check", REPO_PATH)
        c.expect(recheck.returncode == expected["recheck"],
                 f"check after apply exit {recheck.returncode}, expected {expected['recheck']}: "
                 f"{recheck.stdout.decode(errors='replace')}")
        compiled = c.run(sys.executable, "-m", "py_compile", target)
        c.expect(compiled.returncode == 0, f"py_compile rejects the patched file: "
                                           f"{compiled.stderr.decode(errors='replace')}")

        second = c.kv("apply", REPO_PATH)
        with open(target, "rb") as f:
            unchanged = second.returncode == expected["recheck"] and f.read() == patched
            c.expect(unchanged, "a second apply changed the file")

        git_diff = c.run(*GIT, "diff", "--stat").stdout.decode()
        c.expect(bool(git_diff.strip()) == (expected["edits"] > 0),
                 f"git diff after apply is {'non-empty' if git_diff.strip() else 'empty'}, "
                 f"expected {expected['edits']} edits")

        # kvpatch diff from the published file, applied by git, must give what apply wrote.
        with open(target, "wb") as f:
            f.write(source)
        patch_file = os.path.join(repo, ".git", "kvpatch.diff")
        with open(patch_file, "wb") as f:
            f.write(diff_run.stdout)
        if diff_run.stdout:
            applied = c.run(*GIT, "apply", patch_file)
            c.expect(applied.returncode == 0, f"git apply rejects kvpatch diff: "
                                              f"{applied.stderr.decode(errors='replace')}")
        with open(target, "rb") as f:
            c.expect(f.read() == patched, "kvpatch diff applied by git differs from kvpatch apply")

        manual = check_first_manual_patch(c, target, source, patched, diff_run.stdout.decode(), report)

    if c.failures:
        for failure in c.failures:
            print(f"sglang {entry}: {failure}", file=sys.stderr)
        return 1
    print(f"sglang {entry}: {got['sites']} plan sites, {got['casts']} casts, {edits} edits, all as counted; {manual}")
    return 0


def over_backends(releases, cache, kvpatch, script, options):
    """A test script of tests/patcher run with --sources over every pinned release's backend, one directory per
    release."""
    with tempfile.TemporaryDirectory(prefix="kvpatch-sglang-backends-") as sources:
        for version in dict.fromkeys(split_entry(entry)[0] for entry in releases):
            archive = cached_archive(cache, version)
            if archive is None:
                raise InputError(f"no wheel of sglang {version} in {cache}; run the download command first")
            os.makedirs(os.path.join(sources, version))
            with open(os.path.join(sources, version, "flashinfer_mla_backend.py"), "wb") as f:
                f.write(extract_backend(archive))
        script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), script)
        cmd = [sys.executable, script, "--kvpatch", kvpatch, "--sources", sources, *options]
        return subprocess.run(cmd, check=False).returncode


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("download", "check", "mutate", "subclass"))
    parser.add_argument("version", nargs="?")
    parser.add_argument("--releases", required=True)
    parser.add_argument("--cache", required=True)
    parser.add_argument("--kvpatch")
    args, rest = parser.parse_known_args()
    if rest and args.command not in ("mutate", "subclass"):
        parser.error(f"unrecognized arguments: {' '.join(rest)}")  # only mutate and subclass pass options on
    try:
        releases = load_releases(args.releases)
        if args.command == "download":
            return download(releases, args.cache)
        if args.command in ("mutate", "subclass"):
            if not args.kvpatch:
                raise InputError(f"{args.command} needs --kvpatch")
            if args.version:
                raise InputError(f"{args.command} takes no ENTRY: it runs over every pinned release")
            script = "mutation_test.py" if args.command == "mutate" else "subclass_module_test.py"
            return over_backends(releases, args.cache, os.path.abspath(args.kvpatch), script, rest)
        if not args.version or not args.kvpatch:
            raise InputError("check needs VERSION and --kvpatch")
        return check(args.version, releases, args.cache, os.path.abspath(args.kvpatch))  # runs in scratch dirs
    except InputError as e:
        print(f"check_release.py: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
