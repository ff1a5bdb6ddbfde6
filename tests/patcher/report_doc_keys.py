#!/usr/bin/env python3
"""Every key the JSON report prints is documented in patcher/REPORT-JSON.md (stdlib only).

  report_doc_keys.py DOC FIXTURES_DIR

Collects the keys of every fixtures/*/expected.json (the top level, each entry of the lists, and the
objects nested in them) and fails, naming them, when one does not appear in DOC as `key`.
Exit codes: 0 all documented, 1 some are not, 2 usage or input error.
"""
import glob
import json
import os
import sys


def keys(value, out):
    if isinstance(value, dict):
        for key, item in value.items():
            out.add(key)
            if key != "parameters":  # rule parameters are data, named by the rule files
                keys(item, out)
    elif isinstance(value, list):
        for item in value:
            keys(item, out)


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    doc_path, fixtures = sys.argv[1], sys.argv[2]
    reports = sorted(glob.glob(os.path.join(fixtures, "*", "expected.json")))
    if not reports:
        print(f"report_doc_keys.py: no expected.json under {fixtures}", file=sys.stderr)
        return 2
    with open(doc_path, encoding="utf-8") as f:
        doc = f.read()
    found = set()
    for path in reports:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        # A golden of a run that failed also records its stderr after the report.
        keys(json.loads(text.split("\n--- stderr ---\n", 1)[0]), found)
    undocumented = sorted(k for k in found if f"`{k}`" not in doc)
    if undocumented:
        print(f"{doc_path}: keys printed by the report but not documented: {', '.join(undocumented)}",
              file=sys.stderr)
        return 1
    print(f"{len(found)} report keys from {len(reports)} fixtures, all documented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
