#!/usr/bin/env bash
# kvpatch's JSON report as kvverify reads it, end to end: the real `kvpatch check --format json` of a
# fixture, before and after `kvpatch apply`, with each --kv-dtype-form, with a FlashInfer too old to
# build the patched plan, and patched by hand with run() calls left wrong, fed to `kvverify --from
# --cpu`. The checked-in reports under data/ pin kvverify's reader; this test pins that the two tools
# still agree on what the patcher writes today.
#
#   check_report_pipeline_test.sh KVPATCH KVVERIFY FIXTURES_DIR
set -euo pipefail

kvpatch=$1 kvverify=$2 fixtures=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# summary_field REPORT.json KEY: one value of kvverify's JSON summary.
summary_field() {
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["summary"][sys.argv[2]])' "$1" "$2"
}

# from_report_pairs REPORT.json: the verified (q, kv) pairs, "q x kv" sorted and comma-joined.
from_report_pairs() {
  python3 -c '
import json, sys
pairs = json.load(open(sys.argv[1]))["from_report"]["pairs"]
print(",".join(sorted(p["q_dtype"] + " x " + p["kv_dtype"] for p in pairs)))' "$1"
}

# verify NAME EXPECTED_EXIT [kvverify flags...]: kvverify over $work/NAME.json; its JSON in $work/NAME.out.json.
verify() {
  local name=$1 expected=$2
  shift 2
  local status=0
  "$kvverify" --cpu --tp 8 --batch-sizes 2 --context-lengths 20 --format json --from "$work/$name.json" "$@" \
    >"$work/$name.out.json" 2>"$work/$name.err" || status=$?
  if [[ $status -ne $expected ]]; then
    fail "$name: kvverify exited $status, expected $expected"
    cat "$work/$name.err" >&2
  fi
}

# report NAME SOURCE_DIR [kvpatch flags...]: kvpatch's JSON report of SOURCE_DIR into $work/NAME.json.
report() {
  local name=$1 dir=$2
  shift 2
  local status=0
  "$kvpatch" check --isolated --format json "$@" "$dir" >"$work/$name.json" || status=$?
  [[ $status -le 1 ]] || fail "$name: kvpatch check exited $status"
}

expect_equal() {  # WHAT ACTUAL EXPECTED
  [[ $2 == "$3" ]] || fail "$1: got '$2', expected '$3'"
}

cp -R "$fixtures/gen-b-unpatched" "$work/original"
cp -R "$fixtures/gen-b-unpatched" "$work/sm90"

echo "== before apply: the three plan sites are missing kv_data_type, so the run fails"
report before "$work/original"
verify before 1
expect_equal "before: missing_sites" "$(summary_field "$work/before.out.json" missing_sites)" 3
expect_equal "before: result" "$(summary_field "$work/before.out.json" result)" FAIL

echo "== after apply (original form): one BF16 x FP8 pair, verified, PASS"
"$kvpatch" apply --isolated "$work/original" >/dev/null 2>&1 || fail "apply (original form) failed"
report original "$work/original"
verify original 0
expect_equal "original: pairs" "$(from_report_pairs "$work/original.out.json")" "bf16 x fp8_e4m3"
expect_equal "original: unbuildable_sites" "$(summary_field "$work/original.out.json" unbuildable_sites)" 0

echo "== the same, piped: kvpatch check --format json DIR | kvverify --from -"
status=0
"$kvpatch" check --isolated --format json "$work/original" 2>/dev/null |
  "$kvverify" --cpu --tp 8 --batch-sizes 2 --context-lengths 20 --format json --from - >"$work/piped.out.json" ||
  status=$?
expect_equal "piped: exit" "$status" 0
expect_equal "piped: pairs" "$(from_report_pairs "$work/piped.out.json")" "bf16 x fp8_e4m3"
expect_equal "piped: path" "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["from_report"]["path"])' \
  "$work/piped.out.json")" "<stdin>"
status=0
printf '{"tool": "kvpatch",\n' | "$kvverify" --cpu --from - >/dev/null 2>"$work/piped_bad.err" || status=$?
expect_equal "piped, cut short: exit" "$status" 2
grep -q "^kvverify: <stdin>:2:1: not valid JSON" "$work/piped_bad.err" || fail "piped, cut short: the error does not name <stdin>:2:1"

echo "== the same files against FlashInfer 0.6.13: the pair still verifies, but the sites are unbuildable: FAIL"
report old_flashinfer "$work/original" --flashinfer-version 0.6.13
verify old_flashinfer 1
expect_equal "old FlashInfer: unbuildable_sites" "$(summary_field "$work/old_flashinfer.out.json" unbuildable_sites)" 3
expect_equal "old FlashInfer: passed shapes" "$(summary_field "$work/old_flashinfer.out.json" passed)" 2
expect_equal "old FlashInfer: result" "$(summary_field "$work/old_flashinfer.out.json" result)" FAIL
"$kvverify" --cpu --tp 8 --batch-sizes 2 --context-lengths 20 --from "$work/old_flashinfer.json" \
  >"$work/old_flashinfer.txt" 2>&1 || true
grep -q "UNBUILDABLE flashinfer_mla_backend.py:[0-9]*:[0-9]*: kvpatch: FlashInfer 0.6.13" "$work/old_flashinfer.txt" ||
  fail "old FlashInfer: the text report does not name the unbuildable sites"
grep -q "3 unbuildable sites: FAIL" "$work/old_flashinfer.txt" || fail "old FlashInfer: the summary line does not count them"

echo "== a BF16 cache with that FlashInfer: every site plans BF16 x BF16, which it builds: PASS"
cp "$work/old_flashinfer.json" "$work/old_flashinfer_bf16_cache.json"
verify old_flashinfer_bf16_cache 0 --kv-cache-dtype bf16
expect_equal "BF16 cache: pairs" "$(from_report_pairs "$work/old_flashinfer_bf16_cache.out.json")" "bf16 x bf16"

# The sm90 form's field names the KV-cache dtype where FlashInfer serves it and the model dtype elsewhere
# (with the cast kept there); kvpatch reports its sites with role kv_cache, so the FP8 pair is what is verified.
echo "== after apply --kv-dtype-form sm90: the BF16 x FP8 pair verified, PASS"
"$kvpatch" apply --isolated --kv-dtype-form sm90 "$work/sm90" >/dev/null 2>&1 || fail "apply (sm90 form) failed"
report sm90 "$work/sm90" --kv-dtype-form sm90
verify sm90 0
expect_equal "sm90: pairs" "$(from_report_pairs "$work/sm90.out.json")" "bf16 x fp8_e4m3"

# A file patched by hand the way the first manual fix went wrong: plans threaded, but one run() still handed
# the cast and the other without the FP8 scales FlashInfer 0.6.14+ requires. The plans verify; the run()
# calls would not run them, so kvverify fails as kvpatch check does.
echo "== hand-patched: plans threaded, a cast left and scales missing: the pair verifies, two patch gaps: FAIL"
cp -R "$work/original" "$work/hand"
python3 - "$work/hand/flashinfer_mla_backend.py" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
text, casts = re.subn(r"(k_buffer = forward_batch\.token_to_kv_pool\.get_key_buffer\(layer\.layer_id\))\n",
                      r"\1.to(q.dtype)\n", text, count=1)
lines = text.split("\n")
scales = [i for i, line in enumerate(lines) if '"ckv_scale": 1.0' in line and "k_buf.dtype" in line]
assert casts == 1 and len(scales) == 1, (casts, scales)
del lines[scales[0]]
open(path, "w").write("\n".join(lines))
PY
report hand "$work/hand"
verify hand 1
expect_equal "hand: pairs" "$(from_report_pairs "$work/hand.out.json")" "bf16 x fp8_e4m3"
expect_equal "hand: passed shapes" "$(summary_field "$work/hand.out.json" passed)" 2
expect_equal "hand: patch_gaps" "$(summary_field "$work/hand.out.json" patch_gaps)" 2
expect_equal "hand: finding kinds" "$(python3 -c '
import json, sys
print(",".join(sorted(f["kind"] for f in json.load(open(sys.argv[1]))["from_report"]["patch_gaps"])))' "$work/hand.out.json")" \
  "redundant_cast,scales_missing"
"$kvverify" --cpu --tp 8 --batch-sizes 2 --context-lengths 20 --from "$work/hand.json" >"$work/hand.txt" 2>&1 || true
grep -q "PATCH GAP flashinfer_mla_backend.py:[0-9]*:[0-9]*: kvpatch: redundant cast" "$work/hand.txt" ||
  fail "hand: the text report does not name the cast left"
grep -q "PATCH GAP flashinfer_mla_backend.py:[0-9]*:[0-9]*: kvpatch: prefill_wrapper_paged.run passes no ckv_scale" \
  "$work/hand.txt" || fail "hand: the text report does not name the run() without scales"
grep -q "2 patch gaps: FAIL" "$work/hand.txt" || fail "hand: the summary line does not count them"
echo "== the same report with a BF16 cache: a cast to BF16 and no scales are what a BF16 cache needs: PASS"
cp "$work/hand.json" "$work/hand_bf16_cache.json"
verify hand_bf16_cache 0 --kv-cache-dtype bf16
echo "== after kvpatch apply of the hand-patched file: PASS"
"$kvpatch" apply --isolated "$work/hand" >/dev/null 2>&1 || fail "apply (hand-patched) failed"
report hand_applied "$work/hand"
verify hand_applied 0

# The plans read self.kv_data_type, but the decode updater no longer sets it: the first plan() would raise
# AttributeError, whatever the cache holds.
echo "== a KV dtype field deleted after apply: a patch gap with an FP8 and with a BF16 cache: FAIL"
cp -R "$work/original" "$work/no_field"
python3 - "$work/no_field/flashinfer_mla_backend.py" <<'PY'
import sys
path = sys.argv[1]
lines = open(path).read().split("\n")
fields = [i for i, line in enumerate(lines) if line.strip().startswith("self.kv_data_type = ")]
assert len(fields) == 2, fields
del lines[fields[0]]
open(path, "w").write("\n".join(lines))
PY
report no_field "$work/no_field"
verify no_field 1
cp "$work/no_field.json" "$work/no_field_bf16_cache.json"
verify no_field_bf16_cache 1 --kv-cache-dtype bf16
expect_equal "no field: gap kinds" "$(python3 -c '
import json, sys
print(",".join(f["kind"] for f in json.load(open(sys.argv[1]))["from_report"]["patch_gaps"]))' \
  "$work/no_field_bf16_cache.out.json")" "field_missing"

# The fork fixture after apply: one plan site apply leaves, because the run() it feeds is handed a cast that
# another consumer needs. kvverify relays kvpatch's reason instead of "the report predates apply".
echo "== fork after apply: a site apply leaves and the converted run() input that holds it back: FAIL"
cp -R "$fixtures/fork" "$work/fork"
"$kvpatch" apply --isolated "$work/fork" >/dev/null 2>&1 || true
report fork "$work/fork"
verify fork 1
"$kvverify" --cpu --tp 8 --batch-sizes 2 --context-lengths 20 --from "$work/fork.json" >"$work/fork.txt" 2>&1 || true
grep -q "UNVERIFIABLE flashinfer_mla_backend.py:[0-9]*:[0-9]*: site is missing kv_data_type, and \`kvpatch apply\` leaves it" \
  "$work/fork.txt" || fail "fork: the site apply leaves is not told apart from a report taken before apply"
grep -q "PATCH GAP flashinfer_mla_backend.py:[0-9]*:[0-9]*: kvpatch: run-input-converted" "$work/fork.txt" ||
  fail "fork: the converted run() input is not listed"

# Two backends, one kvpatch cannot parse: the other's plans verify, but the unread file may hold plan
# sites, so kvverify fails as kvpatch check does (exit 2 there).
echo "== a patched file beside one kvpatch cannot read: the pair verifies, the unread file fails the run"
mkdir "$work/two"
cp "$work/original/flashinfer_mla_backend.py" "$work/two/a_backend.py"
cp "$work/original/pyproject.toml" "$work/two/"
cp "$fixtures/syntax-error/flashinfer_mla_backend.py" "$work/two/b_backend.py"
status=0
"$kvpatch" check --isolated --format json "$work/two" >"$work/two.json" 2>/dev/null || status=$?
expect_equal "two: kvpatch check exit" "$status" 2
verify two 1
expect_equal "two: pairs" "$(from_report_pairs "$work/two.out.json")" "bf16 x fp8_e4m3"
expect_equal "two: unread_files" "$(summary_field "$work/two.out.json" unread_files)" 1
"$kvverify" --cpu --tp 8 --batch-sizes 2 --context-lengths 20 --from "$work/two.json" >"$work/two.txt" 2>&1 || true
grep -q "UNREAD b_backend.py:[0-9]*: syntax error" "$work/two.txt" || fail "two: the text report does not name the unread file"
grep -q "1 file kvpatch could not read: FAIL" "$work/two.txt" || fail "two: the summary line does not count it"

if [[ $failures -ne 0 ]]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all checks passed"
