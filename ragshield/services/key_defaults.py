"""What an API key may promise its caller (api/keys.py reads it from the keys file): the
judges and the rule of the calls whose body names none. Checked once, when the server starts,
so that a typo is an error naming its line rather than a 400 on every call the key makes."""

from __future__ import annotations

from collections.abc import Sequence

from ragshield.judges.registry import JUDGES, judge_names
from ragshield.judging import choose_rule


def key_judges(spec: str) -> tuple[str, ...]:
    """The judges of `judges=a,b` ("all": every registered judge); OptionError naming an
    unknown one."""
    return tuple(judge_names(spec))


def check_key_rule(rule: str, judges: Sequence[str] | None) -> None:
    """OptionError unless `rule` is majority, all, `policy:NAME[@VERSION]` or a judge's name
    (one of `judges` when the key names them). Whether the policy exists is the call's
    question: it may be fitted after the server starts."""
    choose_rule(rule, judges if judges is not None else tuple(JUDGES))
