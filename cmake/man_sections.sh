#!/usr/bin/env bash
# cmake/man_sections.sh TOOL OUT: writes a help2man include file for TOOL
# whose SUBCOMMANDS section holds each subcommand's own --help, verbatim
# (roff no-fill), so `man coact-profile` documents every option of every
# subcommand, from the same text `coact-profile SUB --help` prints.
# Called by the build (cmake/CoactManPages.cmake); a tool without
# subcommands gets an empty include file.
set -euo pipefail
tool=$1 out=$2
# CLI11 lists them under "Subcommands:", one per line; argparse as "  {a,b,c}".
subs=$("$tool" --help | awk '/^Subcommands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{on=0}
                             !seen && /^  \{[a-z,]+\}$/{seen=1; gsub(/[{} ]/, ""); n=split($0, a, ","); for (i = 1; i <= n; i++) print a[i]}')
{
  if [[ -n $subs ]]; then
    echo "[SUBCOMMANDS]"
    for s in $subs; do
      echo ".SS $s"
      echo ".nf"
      # roff: a backslash is \e; a line starting with . or ' is protected by \&
      "$tool" "$s" --help | sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
      echo ".fi"
    done
  fi
  echo "[SEE ALSO]"
  echo "coact-profile(1), coact-trace(1), coact-calibrate(1), coact-plot(1), coact-perf-compare(1);"
  echo "the README and docs/ of the coact sources."
} >"$out"
