#!/usr/bin/env bash
# Inside the Debian 13 root, as root, from a copy of the checkout (test-root.sh runs it): the whole
# product on the root's own Python, stage by stage, as a user on such a machine runs it. Each stage's
# output goes to results/debian13/STAGE.log and its time to results/debian13/timings.json. A failed
# install ends the run; after it every stage runs, and the run ends with one line naming each stage
# that failed and why.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=results/debian13
mkdir -p "$OUT"
PY=.venv/bin/python
TIMINGS=""

# Interrupted (test-root.sh passes Ctrl-C and SIGTERM on): the stage running ends, and no other starts.
trap 'echo "make test-debian13: interrupted in the Debian 13 root" >&2; exit 130' INT TERM

FAILED=()
fail() {
    echo "make test-debian13: $1 failed in the Debian 13 root: $2 (log: $OUT/$1.log)" >&2
    FAILED+=("$1 ($2)")
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

# judge check|demo [ARG]: its saved JSON object against tests/platform_verdict.py, the problems to its log
judge() {
    local problems
    problems=$($PY tests/platform_verdict.py "$1" "$OUT/$1.json" "${@:2}")
    local status=$?
    echo "$problems" >> "$OUT/$1.log"
    [ $status = 0 ] || fail "$1" "$(echo "$problems" | head -1) ($(echo "$problems" | wc -l) problem(s))"
    return $status
}

# The root is minimal (no Python): make install installs Python with the rest, at the first try.
stage install make install || { fail install "$(last_words "$OUT/install.log")"; exit 1; }
# Seconds per policy of the demo (as the lab VM's test runs it): tests/platform_verdict.py
DEMO_DURATION_S=$($PY -c 'import sys; sys.path.insert(0, "tests"); import platform_verdict as v; print(v.DEMO_DURATION_S)')
stage unit make unit || fail unit "$(grep -E '^(FAILED|ERROR)|[0-9]+ (passed|failed)' "$OUT/unit.log" | tail -1)"
# check and demo print their JSON object whether or not they pass: the verdict reads it for the reasons
stage check sh -c ".venv/bin/shiftbed check --json > $OUT/check.json"
if [ -s "$OUT/check.json" ]; then judge check os-ken   # the controller on os-ken: Ryu does not run on this Python
else fail check "$(last_words "$OUT/check.log")"; fi
stage lab1 $PY -m pytest -q -rfEs --strict-skips -p no:cacheprovider tests/labs/test_labs_root.py::test_lab1_fabric \
    || fail lab1 "$(grep -E '^(FAILED|ERROR|SKIPPED)|[0-9]+ (passed|failed)' "$OUT/lab1.log" | tail -1)"
# the demo's run folders are kept with the logs (windows, bursts, captures): a broken promise can be read
stage demo sh -c ".venv/bin/shiftbed demo --duration $DEMO_DURATION_S --out $OUT/demo --json > $OUT/demo.json"
if [ -s "$OUT/demo.json" ]; then judge demo; else fail demo "$(last_words "$OUT/demo.log")"; fi

controller=$($PY -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))["controller"]))' "$OUT/check.json" \
    2>/dev/null || echo null)   # the framework, its version and hub, the Python it runs on
echo "{${TIMINGS%, }, \"controller\": $controller}" > "$OUT/timings.json"
if [ ${#FAILED[@]} -gt 0 ]; then
    echo "make test-debian13: failed in the Debian 13 root: $(printf '%s; ' "${FAILED[@]}" | sed 's/; $//')" >&2
    exit 1
fi
echo "make test-debian13: install, unit tests, check, lab 1 and the demo passed in the Debian 13 root ($(cat "$OUT/timings.json"))" >&2
