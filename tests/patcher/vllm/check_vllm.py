#!/usr/bin/env python3
"""A real vLLM release against kvpatch (stdlib only).

  check_vllm.py download --cache DIR
      take every Python file of vLLM 0.34.0's wheel on PyPI into DIR unless they are there already. The wheel
      is 239 MB, its 3,604 Python files 15 MB of it: only the zip's directory and those files' bytes are
      fetched, with HTTP range requests, as `unzip` would read them from a local copy. PyPI's simple index must
      list the wheel with the pinned sha256, the wheel's RECORD must match its own pinned sha256, and every file
      the sha256 and size its RECORD gives, so the expectations are about the exact files read here.
  check_vllm.py check --cache DIR --kvpatch BIN
      run kvpatch over the whole package and assert what was counted by reading it: one plan site,
      `_SM90State._plan` in v1/attention/backends/mla/flashinfer_mla_sparse_sm90.py, whose
      `kv_data_type=self.kv_dtype` is the KV-cache dtype its builder hands the constructor, so `threaded`; no
      cast, no field, no edit, no file refused; `check` exits 0 under every --kv-dtype-form, `diff` prints
      nothing.

Exit codes: 0 pass, 1 an expectation failed, 2 usage or input error (no network, a hash that differs).
"""
import argparse
import base64
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import zipfile

VERSION = "0.34.0"
WHEEL = f"vllm-{VERSION}-cp38-abi3-manylinux_2_28_x86_64.whl"
WHEEL_SHA256 = "79ca4b3cd74aec08c4bf476bdf0cb15735b605ae5368526a2faae1e30f044ca2"  # as PyPI listed it, 2026-12-05
RECORD = f"vllm-{VERSION}.dist-info/RECORD"
RECORD_SHA256 = "6ebff4575a01ba88538eba8e70bff472f20042e915ebdd15e5757753dd59f419"  # read 2026-12-05, 764,383 bytes
SITE = ("v1/attention/backends/mla/flashinfer_mla_sparse_sm90.py", 363)  # the one plan site, counted by hand
INDEX = "https://pypi.org/simple/vllm/"
FORMS = ("original", "upstream", "sm90")
READ_AHEAD = 4 << 20  # bytes per range request: zipfile reads a directory or a member in small steps, and the
# wheel keeps its Python files in a few runs between its libraries


class InputError(Exception):
    """A problem with the test's inputs rather than with kvpatch: exit 2."""


def fetch(url, headers=None):
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=180) as response:
        return response.status, response.read()


class RangeFile(io.RawIOBase):
    """A remote file read with HTTP range requests, seekable, so that zipfile can read one member of a large wheel."""

    def __init__(self, url, size):
        super().__init__()
        self.url, self.size, self.position = url, size, 0
        self.block_start, self.block = 0, b""
        self.requests = 0

    def seekable(self):
        return True

    def readable(self):
        return True

    def tell(self):
        return self.position

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = max(0, base + offset)
        return self.position

    def read(self, n=-1):
        if n is None or n < 0:
            n = self.size - self.position
        n = min(n, self.size - self.position)
        if n <= 0:
            return b""
        start, end = self.position, self.position + n
        if not (self.block_start <= start and end <= self.block_start + len(self.block)):
            last = min(self.size, max(end, start + READ_AHEAD)) - 1
            status, body = fetch(self.url, {"Range": f"bytes={start}-{last}"})
            self.requests += 1
            if status != 206 or len(body) != last - start + 1:
                raise InputError(f"{self.url}: range {start}-{last} answered {status} with {len(body)} bytes")
            self.block_start, self.block = start, body
        data = self.block[start - self.block_start : end - self.block_start]
        self.position = end
        return data

    def readinto(self, buffer):
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def wheel_listing():
    """The pinned wheel's URL and size from PyPI's simple index (its JSON form), its sha256 checked against the pin."""
    try:
        _, body = fetch(INDEX, {"Accept": "application/vnd.pypi.simple.v1+json"})
    except OSError as e:
        raise InputError(f"{INDEX}: {e} (is PyPI reachable?)") from e
    for f in json.loads(body)["files"]:
        if f["filename"] == WHEEL:
            if f.get("hashes", {}).get("sha256") != WHEEL_SHA256:
                raise InputError(f"{WHEEL}: PyPI lists sha256 {f.get('hashes')}, not the pinned {WHEEL_SHA256}")
            return f["url"].split("#", 1)[0], int(f["size"])
    raise InputError(f"{INDEX}: no {WHEEL}")


def cached_tree(cache):
    """Where the package's Python files go, and the file whose content says they are all there."""
    top = os.path.join(cache, f"vllm-{VERSION}")
    return os.path.join(top, "vllm"), os.path.join(top, "complete")


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def record_entries(record):
    """RECORD's `path,sha256=<urlsafe base64>,size` lines for Python files: path -> (hex sha256, size)."""
    out = {}
    for row in csv.reader(io.StringIO(record.decode("utf-8"))):
        if len(row) == 3 and row[0].endswith(".py") and row[1].startswith("sha256="):
            digest = base64.urlsafe_b64decode(row[1][len("sha256="):] + "==")
            out[row[0]] = (digest.hex(), int(row[2]))
    return out


def unpack_python_files(remote, staging):
    """Every Python file of the wheel into staging, each checked against RECORD; returns how many."""
    with zipfile.ZipFile(io.BufferedReader(remote, buffer_size=1 << 16)) as wheel:
        record = wheel.read(RECORD)
        if sha256(record) != RECORD_SHA256:
            raise InputError(f"{WHEEL}:{RECORD}: sha256 {sha256(record)}, not the pinned {RECORD_SHA256}")
        expected = record_entries(record)
        members = sorted((i for i in wheel.infolist() if i.filename in expected), key=lambda i: i.header_offset)
        for info in members:
            data = wheel.read(info)
            if (sha256(data), len(data)) != expected[info.filename]:
                raise InputError(f"{WHEEL}:{info.filename}: not the sha256 and size its RECORD gives")
            path = os.path.join(staging, info.filename)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
    if len(members) != len(expected):
        raise InputError(f"{WHEEL}: RECORD lists {len(expected)} Python files, the zip holds {len(members)}")
    return len(members)


def download(cache):
    tree, complete = cached_tree(cache)
    if os.path.exists(complete):
        with open(complete, encoding="utf-8") as f:
            if f.read().strip() == RECORD_SHA256:
                print(f"vllm {VERSION}: Python files cached in {tree}")
                return
    url, size = wheel_listing()
    remote = RangeFile(url, size)
    top = os.path.dirname(tree)
    os.makedirs(top, exist_ok=True)
    staging = tempfile.mkdtemp(dir=top, prefix="partial-")
    try:
        count = unpack_python_files(remote, staging)
        shutil.rmtree(tree, ignore_errors=True)
        os.replace(os.path.join(staging, "vllm"), tree)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    with open(complete, "w", encoding="utf-8") as f:
        f.write(RECORD_SHA256 + "\n")
    print(f"vllm {VERSION}: {count} Python files read from the {size}-byte wheel in {remote.requests} range "
          "requests")


def check(cache, kvpatch):
    tree, complete = cached_tree(cache)
    if not os.path.exists(complete):
        raise InputError(f"{tree}: missing; run `check_vllm.py download --cache {cache}` first")
    failures = []
    for form in FORMS:
        def run(*args, form=form):
            command = [kvpatch, *args, "--isolated", "--kv-dtype-form", form, "vllm"]
            return subprocess.run(command, cwd=os.path.dirname(tree), capture_output=True, text=True, check=False)

        def expect(ok, what, form=form):
            if not ok:
                failures.append(f"--kv-dtype-form {form}: {what}")

        text, report, diff = run("check"), run("check", "--format", "json"), run("diff")
        expect(text.returncode == 0, f"check exited {text.returncode}:\n{text.stdout}{text.stderr}")
        expect(diff.returncode == 0 and diff.stdout == "", f"diff exited {diff.returncode}:\n{diff.stdout}")
        try:
            data = json.loads(report.stdout)
        except json.JSONDecodeError:
            expect(False, f"no JSON report:\n{report.stderr}")
            continue
        sites = data["plan_sites"]
        expect(len(sites) == 1, f"{len(sites)} plan sites, expected 1")
        for site in sites:
            expect((site["file"], site["line"]) == SITE, f"a plan site at {site['file']}:{site['line']}")
            expect(site["status"] == "threaded", f"plan site at {site['line']} is {site['status']}")
            expect((site["class"], site["method"]) == ("_SM90State", "_plan"),
                   f"plan site in {site['class']}.{site['method']}, expected _SM90State._plan")
            expect(site["kv_data_type"] == {"expr": "self.kv_dtype", "role": "kv_cache"},
                   f"kv_data_type read as {site['kv_data_type']}")
        # No class there assigns self.data_type, so no field rule applies; its one run() passes its scales already.
        for key in ("fields", "casts", "run_inputs", "errors"):
            expect(data[key] == [], f"{key}: {data[key]}")
        expect(data["summary"]["edits"] == 0, f"{data['summary']['edits']} edits, expected none")
    for failure in failures:
        print(f"FAIL vllm {VERSION}: {failure}")
    if not failures:
        print(f"vllm {VERSION}: 1 plan site threaded, no edits, under {', '.join(FORMS)}")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["download", "check"])
    parser.add_argument("--cache", required=True)
    parser.add_argument("--kvpatch")
    args = parser.parse_args()
    try:
        if args.command == "download":
            download(args.cache)
            return 0
        if not args.kvpatch:
            raise InputError("check needs --kvpatch BIN")
        return check(args.cache, args.kvpatch)
    except InputError as e:
        print(f"check_vllm: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
