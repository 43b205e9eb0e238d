"""``baremetal-alloc complete``: cliff's bash completion, plus values.

cliff's script completes command names and options. The function added
here completes values too: allocation names and UUIDs (asked of the
server with ``baremetal-alloc list``, in the shell's own ``OS_*``
environment) for the verbs that take an allocation, and the allocation
states after ``--state``. Anything else goes to cliff's function.
"""

from __future__ import annotations

import argparse
from typing import Any

from cliff import complete

#: Verbs whose first argument is an allocation (name or UUID).
TAKES_ALLOCATION: tuple[str, ...] = (
    "show", "get", "delete", "set", "unset", "renew")

_VALUES = """
_{name}_values()
{{
  local cur="${{COMP_WORDS[COMP_CWORD]}}"
  local prev="${{COMP_WORDS[COMP_CWORD-1]}}"
  local verb="" word
  for word in "${{COMP_WORDS[@]:1:COMP_CWORD-1}}"; do
    case "${{word}}" in
      {verbs}) verb="${{word}}"; break;;
    esac
  done
  if [[ ${{prev}} == --state ]]; then
    COMPREPLY=( $(compgen -W "{states}" -- "${{cur}}") )
    return 0
  fi
  local first=0
  [[ ${{prev}} == "${{verb}}" ]] && first=1
  [[ ${{verb}} == delete && ${{prev}} != -* ]] && first=1
  if [[ -n ${{verb}} && ${{cur}} != -* && ${{first}} == 1 ]]; then
    local names
    names=$({command} list -f value -c name -c uuid 2>/dev/null)
    COMPREPLY=( $(compgen -W "${{names}} " -- "${{cur}}") )
    return 0
  fi
  _{name}
}}
complete -F _{name}_values {command}
"""


def values_script(command: str, verbs: tuple[str, ...]) -> str:
    """The bash function completing values for ``command`` (pure)."""
    from baremetal_allocclient.v1.resources import ALLOCATION_STATES

    return _VALUES.format(
        name=command.replace("-", "_"),
        command=command,
        verbs="|".join(verbs),
        states=" ".join(ALLOCATION_STATES),
    )


class CompleteCommand(complete.CompleteCommand):
    """Print a bash completion script (commands, options and values)."""

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        result: Any = super().take_action(parsed_args)
        if (parsed_args.shell or "bash") == "bash":
            name = getattr(parsed_args, "name", None) or self.app.NAME
            self.app.stdout.write(values_script(name, TAKES_ALLOCATION))
        return int(result or 0)
