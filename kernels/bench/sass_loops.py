#!/usr/bin/env python3
"""The decode kernel's hot loops in SASS, and how far a change moved them (no GPU needed).

ptxas schedules the score warps' QK loop differently after changes elsewhere in the kernel, and the
schedule alone has moved the kernel's time by up to 12% (kernels/bench/NOTES.md, thirteenth
session). So before timing a change on the GPU, check whether its loops still match the base's.
Each loop's "stall cycles" sums the fixed issue delays ptxas wrote into its instructions' control
bits (bits 41-44 of the second 64-bit word on SM70-SM90): a lower bound on one warp's cycles per
pass, ignoring waits on loads and barriers. In the thirteenth session's builds the QK loop's sum
ranked the measured kernel times: 977 (12% slower than shipped), 724 (5% slower), 687 (the same),
678 (as shipped), 646 (0.2-0.7% faster in an A/B run: not kept). A longer QK loop costs time; a
shorter one buys little (the score warps wait on the value warps' loads). The fourteenth session
found the sums a poor guide otherwise: a value loop reordered at a lower sum (961 against 966,
order 0.711) was 1.5-3% slower, and a QK loop at 685 (order 0.930, value loop unchanged) 5-6%
slower, while others at 619-650 cost nothing. Only loops at order 1.000 are safe to assume
unchanged; anything else needs a GPU A/B (kernels/bench/ab.sh).

Usage:
  sass_loops.py KERNEL.sass|KERNEL.cubin                  the loops that hold mma instructions
  sass_loops.py BASE.sass|.cubin CHANGED.sass|.cubin      and, per loop of BASE, how similar the
                                                          CHANGED loop with the same mma and
                                                          conversion counts is (1.0: the same
                                                          instruction order; registers and
                                                          addresses are ignored)
  --kernel REGEX   which function (default: the FP8, 4-stage, narrow instance)
A .cubin is disassembled with cuobjdump ($CUOBJDUMP, else on PATH; where the toolkit has none,
`source kernels/bench/sass_tools.sh` fetches it and nvdisasm from PyPI). Make one with e.g.
  nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -Ikernels/include -Ikernels/src \\
    -cubin kernels/src/mla_decode_launch.cu -o /tmp/k.cubin
"""
import argparse
import collections
import difflib
import os
import re
import subprocess
import sys

DEFAULT_KERNEL = r"mla_decode_kernelILNS0_7KvDtypeE0ELi4ELi1E"  # FP8, 4 stages, one m-tile
LINE = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*/\* 0x[0-9a-f]+ \*/")
CONTROL = re.compile(r"\s*/\* (0x[0-9a-f]+) \*/\s*$")  # the instruction's second 64-bit word


def sass_text(path):
    if not path.endswith(".cubin"):
        try:
            with open(path) as f:
                return f.read()
        except OSError as err:
            sys.exit(f"{path}: cannot read ({err.strerror}); give a cuobjdump -sass listing or a .cubin")
    tool = os.environ.get("CUOBJDUMP", "cuobjdump")
    try:
        return subprocess.run([tool, "-sass", path], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        sys.exit(f"{path}: cannot disassemble with {tool} ({err}); set CUOBJDUMP or pass a .sass file")


def instructions(text, kernel):
    """(address, opcode, text, stall cycles) of the first function whose name matches `kernel`."""
    out, inside, pending = [], False, None
    for line in text.splitlines():
        if "Function : " in line:
            if inside:
                break
            inside = re.search(kernel, line) is not None
            continue
        if not inside:
            continue
        match = LINE.match(line)
        if match:
            body = match.group(2)
            opcode = re.sub(r"^@!?U?P[T0-9]+\s+", "", body).split()[0]
            pending = (int(match.group(1), 16), opcode, body)
            continue
        control = CONTROL.match(line)
        if control and pending:
            out.append((*pending, (int(control.group(1), 16) >> 41) & 0xF))
            pending = None
    return out


def mma_loops(code):
    """Backward branches whose body holds mma: {(mma count, conversion count): (start, end, body)},
    the smallest body per key (the innermost loop of that shape)."""
    loops = {}
    for address, opcode, body, _ in code:
        target = re.search(r"BRA\s+0x([0-9a-f]+)", body) if opcode == "BRA" else None
        if not target or int(target.group(1), 16) >= address:
            continue
        start = int(target.group(1), 16)
        seg = [ins for ins in code if start <= ins[0] <= address]
        counts = collections.Counter(ins[1] for ins in seg)
        mma = sum(n for o, n in counts.items() if o.startswith(("HMMA", "QMMA")))
        if mma == 0:
            continue
        key = (mma, sum(n for o, n in counts.items() if o.startswith("F2FP")))
        if key not in loops or len(seg) < len(loops[key][2]):
            loops[key] = (start, address, seg)
    return loops


def shape(seg):
    """The loop's instruction order with registers, predicates and addresses left out."""
    return [re.sub(r"\bU?[RP]\d+\b|0x[0-9a-f]+", "_", ins[2]) for ins in seg]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base")
    ap.add_argument("changed", nargs="?")
    ap.add_argument("--kernel", default=DEFAULT_KERNEL)
    args = ap.parse_args()
    base = instructions(sass_text(args.base), args.kernel)
    if not base:
        sys.exit(f"{args.base}: no function matches {args.kernel!r}")
    changed = instructions(sass_text(args.changed), args.kernel) if args.changed else None
    if args.changed and not changed:
        sys.exit(f"{args.changed}: no function matches {args.kernel!r}")
    base_loops = mma_loops(base)
    changed_loops = mma_loops(changed) if changed else {}
    print(f"{args.kernel}: {len(base)} instructions" + (f", changed {len(changed)}" if changed else ""))
    for key in sorted(base_loops, reverse=True):
        start, end, seg = base_loops[key]
        ops = collections.Counter(ins[1].split(".")[0] for ins in seg)
        line = (f"  loop {start:#x}-{end:#x}: {len(seg)} instructions, {sum(ins[3] for ins in seg)} stall cycles, "
                f"mma {key[0]}, F2FP {key[1]}, "
                f"LDS {ops['LDS']}, LDSM {ops['LDSM']}, LDGSTS {ops['LDGSTS']}, NOP {ops['NOP']}, LDL {ops['LDL']}")
        if changed is not None:
            if key in changed_loops:
                other = changed_loops[key][2]
                ratio = difflib.SequenceMatcher(None, shape(seg), shape(other), autojunk=False).ratio()
                line += (f"  | changed: {len(other)} instructions, {sum(ins[3] for ins in other)} stall cycles, "
                         f"same order {ratio:.3f}")
            else:
                line += "  | changed: no loop with these counts"
        print(line)


if __name__ == "__main__":
    main()
