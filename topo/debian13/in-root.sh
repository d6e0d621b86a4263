#!/usr/bin/env bash
# Inside the Debian 13 root, as root, from a copy of the checkout (test-root.sh runs it): the whole
# product on the root's own Python, stage by stage, as a user on such a machine runs it. Each stage's
# output goes to results/debian13/STAGE.log and its time to results/debian13/timings.json; the first
# stage that fails ends the run with one line saying which and why.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=results/debian13
mkdir -p "$OUT"
PY=.venv/bin/python
# Seconds per policy of the demo (as the lab VM's test runs it): tests/platform_verdict.py
DEMO_DURATION_S=$(python3 -c 'import sys; sys.path.insert(0, "tests"); import platform_verdict as v; print(v.DEMO_DURATION_S)')
TIMINGS=""

fail() {
    echo "make test-debian13: $1 failed in the Debian 13 root: $2 (log: $OUT/$1.log)" >&2
    exit 1
}

# stage NAME COMMAND...: run it, its output to NAME.log, its time recorded
stage() {
    local name=$1 started=$SECONDS
    shift
    echo "make test-debian13: $name ..." >&2
    "$@" >"$OUT/$name.log" 2>&1
    local status=$?
    TIMINGS+="\"${name}_s\": $((SECONDS - started)), "
    echo "{${TIMINGS%, }}" > "$OUT/timings.json"
    return $status
}

# The last line of a log that says something (make's own closing line names only the target).
last_words() { grep -v -E -e '^make(\[[0-9]+\])?: (\*\*\*|Entering|Leaving)' -e '^\s*$' "$1" | tail -1; }

# judge check|demo: its saved JSON object against tests/platform_verdict.py, the problems to its log
judge() {
    local problems
    problems=$($PY tests/platform_verdict.py "$1" "$OUT/$1.json")
    local status=$?
    echo "$problems" >> "$OUT/$1.log"
    [ $status = 0 ] || fail "$1" "$(echo "$problems" | head -1) ($(echo "$problems" | wc -l) problem(s))"
}

stage install make install || fail install "$(last_words "$OUT/install.log")"
stage unit make unit || fail unit "$(grep -E '^(FAILED|ERROR)|[0-9]+ (passed|failed)' "$OUT/unit.log" | tail -1)"
stage check sh -c ".venv/bin/shiftbed check --json > $OUT/check.json" || fail check "$(last_words "$OUT/check.log")"
judge check
stage lab1 $PY -m pytest -q -rfEs --strict-skips -p no:cacheprovider tests/labs/test_labs_root.py::test_lab1_fabric \
    || fail lab1 "$(grep -E '^(FAILED|ERROR|SKIPPED)|[0-9]+ (passed|failed)' "$OUT/lab1.log" | tail -1)"
# exit status 3: it measured, and lost fidelity (the verdict says where)
stage demo sh -c ".venv/bin/shiftbed demo --duration $DEMO_DURATION_S --json > $OUT/demo.json; s=\$?; [ \$s = 0 ] || [ \$s = 3 ]" \
    || fail demo "$(last_words "$OUT/demo.log")"
judge demo

versions=$($PY -c 'import json, platform, importlib.metadata as m
print(json.dumps({"python": platform.python_version(), "os_ken": m.version("os-ken")}))' 2>/dev/null || echo '{}')
echo "{${TIMINGS%, }, \"versions\": $versions}" > "$OUT/timings.json"
echo "make test-debian13: install, unit tests, check, lab 1 and the demo passed in the Debian 13 root ($(cat "$OUT/timings.json"))" >&2
