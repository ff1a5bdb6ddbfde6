"""The share of its generated cases a test script runs (stdlib only).

KVPATCH_CASE_SHARE=N in the environment makes mutation_test.py and metamorphic_test.py run one in N of the
cases they would run (mutation_test.py: the first seed and every N-th after it; metamorphic_test.py: the same of
each kind of rewrite, so that no kind is left out); unset or 1, all of them. scripts/test.sh sets it for the
second, sanitized pass only: the plain pass has already run every case for behaviour, and there each kvpatch run
costs ~5 times as much. The cases a share keeps are the same on every run, and a failure names its seed (or file,
line and kind), which reproduces without the variable.
"""
import os
import sys

VARIABLE = "KVPATCH_CASE_SHARE"


def case_share():
    """N from the environment (1 when unset); exits 2, naming the variable, when it is not a whole number >= 1."""
    text = os.environ.get(VARIABLE, "1")
    if not text.isdigit() or int(text) < 1:
        print(f"{VARIABLE} is {text!r}: set it to a whole number >= 1 (1 runs every case)", file=sys.stderr)
        sys.exit(2)
    return int(text)


def every_nth_of_each(cases, share, kind_of=lambda case: None):
    """The first and every N-th case of each kind (kind_of(case) names it; one kind by default). A suite that
    lists its kinds in turn line by line would lose whole kinds to a plain every-N-th cut (one in two of the
    try-block kinds did)."""
    seen = {}
    for case in cases:
        kind = kind_of(case)
        seen[kind] = seen.get(kind, 0) + 1
        if (seen[kind] - 1) % share == 0:
            yield case


def described(share):
    """What a summary line adds when a share is in force ('' for all cases)."""
    return f" (one case in {share}: {VARIABLE}={share})" if share > 1 else ""
