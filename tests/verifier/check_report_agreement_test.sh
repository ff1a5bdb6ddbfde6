#!/usr/bin/env bash
# kvpatch and kvverify must agree on whether a tree is done. For every fixture, as written, after
# `kvpatch apply` (with the fixture's own options), and patched by hand with one hunk of kvpatch's diff
# left out (the way the first manual fix missed the prefill path), `kvverify --from --cpu` over the JSON
# report must pass exactly when `kvpatch check` passes: a finding kvverify does not read would let it
# PASS a tree that kvpatch fails, and a report kvverify misreads would fail one that kvpatch passes.
# Reports without plan sites are left out (kvverify has nothing to verify there and fails by design;
# the fa3 fixture has none).
#
#   check_report_agreement_test.sh KVPATCH KVVERIFY FIXTURES_DIR
set -euo pipefail

kvpatch=$1 kvverify=$2 fixtures=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0 compared=0

# cfg_value FIXTURE KEY: one `key = value` of the fixture's fixture.cfg, or nothing.
cfg_value() {
  sed -n "s/^$2[[:space:]]*=[[:space:]]*//p" "$1/fixture.cfg"
}

# without_hunk K < DIFF: the unified diff with its K-th hunk (1-based, counted over all files) left out.
without_hunk() {
  awk -v k="$1" '/^@@/ { hunk++ } !(hunk == k && /^(@@|[ +\\-])/ && !/^(---|[+][+][+]) /)'
}

for fixture in "$fixtures"/*/; do
  fixture=${fixture%/}
  name=$(basename "$fixture")
  read -r -a options <<<"$(cfg_value "$fixture" options)"
  pristine=$work/$name.pristine
  cp -R "$fixture" "$pristine"
  # A fixture may take its backend file from another one (input_from), as the golden tests do.
  if source_fixture=$(cfg_value "$fixture" input_from) && [[ -n $source_fixture ]]; then
    cp "$fixtures/$source_fixture/$(cfg_value "$fixture" input)" "$pristine/"
  fi
  "$kvpatch" diff --isolated --color never "${options[@]}" "$pristine" >"$pristine.diff" 2>/dev/null || true
  hunks=$(grep -c '^@@' "$pristine.diff" || true)
  stages=(as-written applied)
  # With a single hunk, leaving it out is the fixture as written.
  if [[ $hunks -gt 1 ]]; then
    for ((k = 1; k <= hunks; k++)); do stages+=("without-hunk-$k"); done
  fi
  for stage in "${stages[@]}"; do
    tree=$work/$name-$stage
    cp -R "$pristine" "$tree"
    case $stage in
      applied) "$kvpatch" apply --isolated "${options[@]}" "$tree" >/dev/null 2>&1 || true ;;
      without-hunk-*)
        without_hunk "${stage#without-hunk-}" <"$pristine.diff" >"$tree.diff"
        (cd "$tree" && git apply --unsafe-paths "$tree.diff") || {
          echo "FAIL: $name ($stage): git apply refused kvpatch's diff less one hunk" >&2
          failures=$((failures + 1))
          continue
        } ;;
    esac
    check_status=0
    "$kvpatch" check --isolated "${options[@]}" --format json "$tree" >"$tree.json" 2>/dev/null || check_status=$?
    plan_sites=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["plan_sites"]))' "$tree.json")
    [[ $plan_sites -gt 0 ]] || continue
    verify_status=0
    "$kvverify" --cpu --tp 8 --batch-sizes 2 --context-lengths 20 --from "$tree.json" >"$tree.txt" 2>&1 ||
      verify_status=$?
    compared=$((compared + 1))
    if (((check_status == 0) != (verify_status == 0))); then
      echo "FAIL: $name ($stage): kvpatch check exited $check_status, kvverify --from exited $verify_status" >&2
      sed -n '/^from /,/^$/p;/^summary/p' "$tree.txt" >&2
      failures=$((failures + 1))
    else
      echo "ok: $name ($stage): kvpatch check $check_status, kvverify $verify_status"
    fi
  done
done

# Guard against a test that compares nothing (a renamed fixtures folder, say).
if [[ $compared -lt 60 ]]; then
  echo "FAIL: only $compared reports with plan sites were compared" >&2
  failures=$((failures + 1))
fi
if [[ $failures -ne 0 ]]; then
  echo "$failures disagreement(s)" >&2
  exit 1
fi
echo "kvpatch and kvverify agree on all $compared reports"
