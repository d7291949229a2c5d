"""Settings checked as a command starts, beyond their types and ranges (config.py): a value
that would break, or silently change, every call stops the start with one line instead."""

from __future__ import annotations

from ragshield.config import Settings
from ragshield.errors import OptionError
from ragshield.judging import check_rule_name


def check_settings(settings: Settings) -> None:
    """OptionError naming the variable of a setting that names nothing: a decision rule no
    judge, pooled rule or policy goes by would decide every call by majority."""
    try:
        check_rule_name(settings.decision_rule)
    except OptionError as error:
        raise OptionError(f"settings: RAGSHIELD_DECISION_RULE: {error}") from None
