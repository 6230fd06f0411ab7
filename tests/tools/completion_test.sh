#!/usr/bin/env bash
# ctest bash-completion: tools/completion/coact.bash completes subcommands,
# each subcommand's own options (from its --help), and the program after `--`.
# Usage: completion_test.sh COACT_BASH COACT_PROFILE COACT_PLOT_PY
set -euo pipefail
script=$(realpath "$1") profile=$(realpath "$2") plot_py=$(realpath "$3")
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
ln -s "$profile" "$bin/coact-profile"
printf '#!/bin/sh\nexec /usr/bin/python3 %s "$@"\n' "$plot_py" >"$bin/coact-plot"
chmod +x "$bin/coact-plot"
PATH=$bin:$PATH
coact-profile --help >/dev/null || { echo "FAIL: $profile --help" >&2; exit 1; }
# shellcheck source=/dev/null
source "$script"
set +e  # a completion function runs in an interactive shell: no errexit
fails=0
expect() {  # expect "WORDS..." "wanted reply words" [absent word]
  local want=$2 absent=${3:-} w
  read -r -a COMP_WORDS <<<"$1"
  [[ $1 == *" " ]] && COMP_WORDS+=("")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _coact_complete
  for w in $want; do
    if ! printf '%s\n' "${COMPREPLY[@]}" | grep -qx -- "$w"; then
      echo "FAIL: '$1' -> [${COMPREPLY[*]}] lacks $w" >&2; fails=$((fails + 1))
    fi
  done
  if [[ -n $absent ]] && printf '%s\n' "${COMPREPLY[@]}" | grep -qx -- "$absent"; then
    echo "FAIL: '$1' -> [${COMPREPLY[*]}] offers $absent" >&2; fails=$((fails + 1))
  fi
}
expect "coact-profile " "run validate"
expect "coact-profile run --fix" "--fixed-region --fixed-speedup"
expect "coact-profile validate --dedup-s" "--dedup-stage --dedup-sweep-s" "--fixed-region"
expect "coact-profile run --sampling -- coact-profil" "coact-profile"
expect "coact-plot " "profile estimate compare trace"
expect "coact-plot profile --" "--help"
((fails == 0)) || exit 1
echo "bash completion: subcommands, options per subcommand, the program after --"
