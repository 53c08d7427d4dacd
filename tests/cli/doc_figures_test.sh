#!/usr/bin/env bash
# tools/doc_figures.py on a throw-away repository (docs/tools.md#doc-figures): a matching figure
# passes, a differing one is exit 1 naming file, line and both values, --update rewrites it, and
# bad input (unregistered or unclosed marker, malformed registry, failing command, no match,
# unknown --only name) is exit 2 with a message. Commands are shell one-liners, no hcsim.
set -u
SCRIPT="$1"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/tools" "$T/docs"
echo '# r' > "$T/README.md"
fail=0
ok() { echo "ok $1"; }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
registry() {
  cat > "$T/tools/doc_figures.json" <<EOF
{"format": "hcsim-doc-figures", "version": 1, "figures": {
  "a": {"command": "echo simulated 42.4567 us", "regex": "simulated ([0-9.]+) us", "format": "{:.2f}", "fast": true},
  "n": {"command": "echo 1234567 events", "regex": "([0-9]+) events", "format": "{:,d}", "thousands": " "},
  "m": {"command": "echo peak 1000", "regex": "peak ([0-9]+)", "format": "{:d}", "tolerance": 0.1}
  $1
}}
EOF
}
# run NAME EXPECTED_EXIT PATTERN -- ARGS: the script's exit code and combined output.
run() {
  local name=$1 want=$2 pat=$3; shift 4
  out=$(python3 "$SCRIPT" --root "$T" "$@" 2>&1); rc=$?
  if [ "$rc" = "$want" ] && grep -qE -- "$pat" <<<"$out"; then ok "$name"; else bad "$name (exit $rc, want $want): $out"; fi
}
registry ""
printf 'A <!-- fig:a -->42.46<!-- /fig --> µs, N <!-- fig:n -->1 234 567<!-- /fig -->, M <!-- fig:m -->1050<!-- /fig -->.\nA marker in code is an example: `<!-- fig:zz -->1<!-- /fig -->`.\n' > "$T/docs/p.md"
run match 0 "3 figures from 3 commands .*all match" -- --check
run fast-only 0 "1 figures from 1 commands" -- --check --fast
sed -i 's/42.46</42.50</' "$T/docs/p.md"
run differ 1 "docs/p.md:1: figure a: the doc says 42.50, measured 42.46" -- --check
sed -i 's/>1050</>1200</' "$T/docs/p.md"
run tolerance 1 "figure m: the doc says 1200, measured 1000 \(tolerance 10%\)" -- --check --only m
run update 0 "2 figures measured, 1 files rewritten" -- --update --only a m
if grep -q 'fig:a -->42.46<' "$T/docs/p.md" && grep -q 'fig:m -->1000<' "$T/docs/p.md" && grep -q 'fig:zz -->1<' "$T/docs/p.md"; then ok update-wrote; else bad "update-wrote: $(cat "$T/docs/p.md")"; fi
run list 0 "^a \[fast\] echo simulated" -- --list
run unknown-only 2 "unknown figure\(s\): nope" -- --check --only nope
echo 'X <!-- fig:x -->1<!-- /fig -->' >> "$T/docs/p.md"
run unregistered 2 "docs/p.md:3: figure x is not in tools/doc_figures.json" -- --check
sed -i '$d' "$T/docs/p.md"; echo 'X <!-- fig:a -->1' >> "$T/docs/p.md"
run unclosed 2 "docs/p.md:3: a figure marker without its" -- --check
sed -i '$d' "$T/docs/p.md"
registry ', "f": {"command": "sh -c \"echo oops; exit 3\"", "regex": "(x)"}'
echo 'F <!-- fig:f -->1<!-- /fig -->' >> "$T/docs/p.md"
run command-fails 2 "figure f: .*exit 3 \(expected \[0\]\):" -- --check --only f
registry ', "f": {"command": "echo nothing", "regex": "v=([0-9]+)"}'
run no-match 2 "figure f: /v=\(\[0-9\]\+\)/ matches nothing" -- --check --only f
registry ', "f": {"command": "echo 1", "regex": "[0-9]+"}'
run no-group 2 "/figures/f/regex: expected exactly one group, found 0" -- --check
registry ', "f": {"command": "echo 1", "regex": "([0-9]+)", "bogus": 1}'
run unknown-key 2 "/figures/f: unknown key\(s\) bogus" -- --check
registry ', "f": {"command": "echo 1", "measure": "wall_s"}'
run wall-needs-tolerance 2 "/figures/f: a machine-dependent measure needs a tolerance" -- --check
registry ', "f": {"command": "build/tools/hcsim run", "regex": "([0-9]+)"}'
run not-built 2 "figure f: build/tools/hcsim: no such program" -- --check --only f
echo '{nope' > "$T/tools/doc_figures.json"
run not-json 2 "doc_figures.json: not JSON" -- --check
run usage 2 "one of the arguments --check --update --list is required"
echo "$fail failed"
[ "$fail" = 0 ]
