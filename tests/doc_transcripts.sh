#!/usr/bin/env bash
# Keeps the docs' CLI transcripts true: every fenced block line of the given Markdown files
# that starts with `$ build/tools/reshard` is a command (continued by a trailing `\`), and the
# lines after it, up to the next `$ ` line or the end of the block, are its expected output
# (stdout and stderr together). Each command runs with build/tools/ replaced by TOOLS_DIR;
# any difference fails the test with a diff.
#
#   bash tests/doc_transcripts.sh TOOLS_DIR FILE.md...
set -uo pipefail

if [ $# -lt 2 ] || [ ! -d "$1" ]; then
  echo "usage: doc_transcripts.sh TOOLS_DIR FILE.md..." >&2
  exit 2
fi
tools=$(cd "$1" && pwd)
shift

failures=0
checked=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# check FILE LINE COMMAND EXPECTED_FILE: runs COMMAND, compares with the expected output.
check() {
  local file=$1 line=$2 command=$3 expected=$4
  local actual="$work/actual"
  (cd "$work" && eval "${command//build\/tools\//$tools/}") >"$actual" 2>&1
  checked=$((checked + 1))
  if diff -u "$expected" "$actual" >"$work/diff"; then
    echo "ok    $file:$line"
  else
    failures=$((failures + 1))
    echo "FAIL  $file:$line: $command"
    sed 's/^/      /' "$work/diff"
  fi
}

# flush: checks the transcript collected so far (if any) and starts a new one.
flush() {
  if [ -n "$command" ]; then check "$file" "$start" "$command" "$work/expected"; fi
  command=""
  : >"$work/expected"
}

for file in "$@"; do
  in_block=0 command="" start=0 continued=0 n=0
  : >"$work/expected"
  while IFS= read -r text || [ -n "$text" ]; do
    n=$((n + 1))
    if [[ "$text" == '```'* ]]; then
      [ "$in_block" = 1 ] && flush
      in_block=$((1 - in_block))
      continue
    fi
    [ "$in_block" = 1 ] || continue
    if [ "$continued" = 1 ]; then
      command="${command%\\} ${text#"${text%%[![:space:]]*}"}"
      [[ "$text" == *\\ ]] && continued=1 || continued=0
    elif [[ "$text" == '$ build/tools/reshard'* ]]; then
      flush
      command=${text#\$ }
      start=$n
      [[ "$text" == *\\ ]] && continued=1 || continued=0
    elif [ -n "$command" ]; then
      printf '%s\n' "$text" >>"$work/expected"
    fi
  done <"$file"
done

echo "# $((checked - failures))/$checked transcripts match"
[ "$checked" -gt 0 ] || { echo "no transcripts found" >&2; exit 1; }
[ "$failures" = 0 ]
