# bash completion for coact's tools: coact-profile, coact-trace,
# coact-calibrate, coact-plot, coact-perf-compare. Installed as
# share/bash-completion/completions/<tool> (bash-completion loads it on first
# use); or `source` it. The words come from the tool's own --help (and the
# chosen subcommand's), so they follow the options the installed tool parses.
# After `--` the words are a program and its arguments (commands and files).

# _coact_subcommands TOOL: the subcommand names TOOL's --help lists (CLI11's
# "Subcommands:" block, or argparse's "{a,b,c}").
_coact_subcommands() {
  "$1" --help 2>/dev/null | awk '
    /^Subcommands:/ { cli = 1; next }
    cli && /^  [a-z]/ { print $1; next }
    cli && !/^  / { cli = 0 }
    /^usage:.*\{[a-z,-]+\}/ { match($0, /\{[a-z,-]+\}/); s = substr($0, RSTART + 1, RLENGTH - 2); gsub(",", "\n", s); print s }'
}

_coact_complete() {
  local cur=${COMP_WORDS[COMP_CWORD]} tool=${COMP_WORDS[0]} sub="" i w
  local subs
  subs=$(_coact_subcommands "$tool")
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    if [[ $w == -- ]]; then
      # the program under test and its arguments
      if ((i + 1 == COMP_CWORD)); then
        mapfile -t COMPREPLY < <({ compgen -c -- "$cur"; compgen -f -- "$cur"; } | sort -u)
      else
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      fi
      return
    fi
    if [[ -z $sub && $w != -* ]] && grep -qx -- "$w" <<<"$subs"; then sub=$w; fi
  done
  if [[ $cur == -* ]]; then
    local opts
    # shellcheck disable=SC2086  # $sub is one word or none
    opts=$("$tool" $sub --help 2>/dev/null | grep -oE -- '(^|[ ,[])--?[A-Za-z0-9][A-Za-z0-9-]*' |
      sed -E 's/^[ ,[]//' | sort -u)
    mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
  elif [[ -z $sub && -n $subs ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$subs" -- "$cur")
  else
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
  fi
}
complete -F _coact_complete coact-profile coact-trace coact-calibrate coact-plot coact-perf-compare
