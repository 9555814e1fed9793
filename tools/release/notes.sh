#!/usr/bin/env bash
# notes.sh VERSION [CHANGELOG]: print the release notes of VERSION, the body of
# CHANGELOG.md's "## [VERSION]" section (Keep a Changelog), up to the next
# "## [" heading. Leading and trailing blank lines and link reference
# definitions ("[1.2.0]: https://...") are left out. Exits 1 with a message
# when there is no such section or it is empty. A leading "v" is accepted
# (v1.2.3 = 1.2.3), so the tag can be passed as is. The release workflow
# (.github/workflows/release.yml) writes its output to bin/release/notes.md.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ] || [ -z "$1" ]; then
  echo "usage: $0 VERSION [CHANGELOG]  (CHANGELOG defaults to CHANGELOG.md at the repository root)" >&2
  exit 2
fi
version=${1#v}
changelog=${2:-$(cd "$(dirname "$0")/../.." && pwd)/CHANGELOG.md}
if [ ! -f "$changelog" ]; then
  echo "notes.sh: $changelog not found" >&2
  exit 1
fi

# found: 0 no heading, 1 heading but empty body, 2 body printed.
body=$(awk -v heading="## [$version]" '
  index($0, "## [") == 1 { if (insec) exit; if (index($0, heading) == 1) { insec = 1; found = 1; next } }
  insec && /^\[[^]]+\]: / { next }
  insec { lines[++n] = $0 }
  END {
    if (!found) exit 3
    first = 1; while (first <= n && lines[first] ~ /^[ \t\r]*$/) first++
    last = n;  while (last >= first && lines[last] ~ /^[ \t\r]*$/) last--
    for (i = first; i <= last; i++) print lines[i]
  }' "$changelog") || {
  rc=$?
  if [ "$rc" = 3 ]; then
    echo "notes.sh: no \"## [$version]\" section in $changelog" >&2
  else
    echo "notes.sh: awk failed on $changelog (exit $rc)" >&2
  fi
  exit 1
}
if [ -z "$body" ]; then
  echo "notes.sh: the \"## [$version]\" section of $changelog is empty" >&2
  exit 1
fi
printf '%s\n' "$body"
