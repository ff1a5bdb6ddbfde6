"""patcher.hook.framework: the hooks of .pre-commit-hooks.yaml run by the pre-commit framework itself.

`pre-commit try-repo <this tree> HOOK` in a scratch git repository that stages SGLang generation B's unpatched MLA
backend, its FlashInfer pin and an unrelated module, as a project that lists kvpatch's hooks would run them: every
hook fails there; the fixer, kvpatch-apply, writes what `kvpatch apply` writes, and its log names the patched file
and what the edits fixed (--show-fixes); once that is staged, every hook passes. hooks_file_test.cpp holds the same
file to the same rules without the framework; this test is the framework's own reading of it (its YAML schema,
`types`, `pass_filenames`, `require_serial`, how it judges a hook that modifies files).

Skipped (77) when scripts/fetch-pre-commit.sh has not installed the pinned framework; scripts/test.sh, and so CI,
always runs that first.
"""

import os
import shutil
import subprocess
import sys
import tempfile

BACKEND = "python/sglang/srt/layers/attention/flashinfer_mla_backend.py"
HOOKS = ["kvpatch", "kvpatch-all", "kvpatch-apply"]


def git(repo, *args):
    subprocess.run(["git", "-c", "user.name=kvpatch test", "-c", "user.email=test@kvpatch.invalid", *args],
                   cwd=repo, check=True, capture_output=True)


def stage_project(repo, fixtures):
    """A git repository staging the gen-b backend below python/, with its pin and a module that plans nothing."""
    fixture = os.path.join(fixtures, "gen-b-unpatched")
    files = {
        BACKEND: os.path.join(fixture, "flashinfer_mla_backend.py"),
        "python/pyproject.toml": os.path.join(fixture, "pyproject.toml"),
    }
    os.makedirs(repo)
    git(repo, "init", "-q")
    for relative, source in files.items():
        os.makedirs(os.path.dirname(os.path.join(repo, relative)), exist_ok=True)
        shutil.copyfile(source, os.path.join(repo, relative))
    with open(os.path.join(repo, "python/sglang/srt/utils.py"), "w", encoding="utf-8") as f:
        f.write("import os\n")
    git(repo, "add", ".")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def main():
    source_dir = os.environ["KVPATCH_SOURCE_DIR"]
    framework = os.path.join(source_dir, ".deps", "pre-commit")
    if not os.path.isdir(os.path.join(framework, "pre_commit")):
        print("pre-commit not installed: run scripts/fetch-pre-commit.sh", file=sys.stderr)
        return 77
    kvpatch = os.environ["KVPATCH_BIN"]
    failures = []
    with tempfile.TemporaryDirectory(prefix="kvpatch-framework-") as scratch:
        # The hooks are `language: system` with entry `kvpatch ...`: the binary under test, first on PATH.
        tools = os.path.join(scratch, "bin")
        os.makedirs(tools)
        os.symlink(kvpatch, os.path.join(tools, "kvpatch"))
        env = dict(os.environ, PATH=tools + os.pathsep + os.environ["PATH"], PYTHONPATH=framework,
                   PRE_COMMIT_HOME=os.path.join(scratch, "cache"), NO_COLOR="1")
        repo = os.path.join(scratch, "repo")
        stage_project(repo, os.environ["KVPATCH_FIXTURES_DIR"])
        # What `kvpatch apply --show-fixes` prints and writes for the same file, run directly on a copy.
        expected_dir = os.path.join(scratch, "expected")
        shutil.copytree(repo, expected_dir, ignore=shutil.ignore_patterns(".git"))
        applied = subprocess.run([kvpatch, "apply", "--show-fixes", BACKEND], cwd=expected_dir, capture_output=True,
                                 text=True, check=False)
        if applied.returncode != 0 or "fixed " not in applied.stdout:
            failures.append(f"kvpatch apply --show-fixes on a copy: exit {applied.returncode}\n{applied.stdout}"
                            f"{applied.stderr}")

        def try_hook(hook):
            r = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", source_dir, hook], cwd=repo, env=env,
                               capture_output=True, text=True, check=False)
            return r.returncode, r.stdout + r.stderr

        unpatched = read(os.path.join(repo, BACKEND))
        for hook in HOOKS:
            code, log = try_hook(hook)
            if code == 0 or "Failed" not in log:
                failures.append(f"{hook} passed on the unpatched backend (exit {code}):\n{log}")
            now = read(os.path.join(repo, BACKEND))
            if hook != "kvpatch-apply":
                if now != unpatched:
                    failures.append(f"{hook}, a check, changed the backend")
                if "missing: " not in log:
                    failures.append(f"{hook} failed without naming a missing plan site:\n{log}")
                continue
            if now != read(os.path.join(expected_dir, BACKEND)):
                failures.append("kvpatch-apply wrote other bytes than kvpatch apply")
            if "files were modified by this hook" not in log:
                failures.append(f"the framework did not see kvpatch-apply's edits:\n{log}")
            if applied.stdout not in log:
                failures.append(f"kvpatch-apply's log lacks apply's patched file and --show-fixes list "
                                f"{applied.stdout!r}:\n{log}")
        git(repo, "add", BACKEND)
        for hook in HOOKS:
            code, log = try_hook(hook)
            if code != 0 or "Passed" not in log:
                failures.append(f"{hook} failed once the fixer's edits were staged (exit {code}):\n{log}")
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    if not failures:
        print(f"the pre-commit framework ran {len(HOOKS)} hooks twice: each failed on the unpatched backend, "
              "kvpatch-apply wrote apply's edits and listed its fixes, and each passed once they were staged")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
