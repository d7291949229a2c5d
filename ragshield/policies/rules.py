"""The `policy:NAME[@VERSION]` decision rule, apart from the policy itself so that the rule
checks (ragshield.judging) can read it without loading policies."""

from __future__ import annotations

from ragshield.errors import OptionError

RULE_PREFIX = "policy:"
MAX_VERSION = 2**31 - 1  # versions are stored as SQL integers, 32 bits on every database


def parse_rule(rule: str) -> tuple[str, int | None] | None:
    """(name, version or None) for a `policy:NAME[@VERSION]` rule, None for other rules."""
    if not rule.startswith(RULE_PREFIX):
        return None
    name, at, version = rule[len(RULE_PREFIX):].partition("@")
    if not name:
        raise OptionError(f"rule {rule!r} names no policy: write policy:NAME")
    if at and not version.isdecimal():  # "policy:p@" too: it would follow every refit
        raise OptionError(f"rule {rule!r}: the version after @ must be a whole number")
    if at and (len(version.lstrip("0")) > len(str(MAX_VERSION))
               or not 1 <= int(version) <= MAX_VERSION):
        raise OptionError(f"rule {rule!r}: the version after @ must be from 1 to "
                          f"{MAX_VERSION:,}")
    return name, int(version) if version else None


def policy_rule(name: str, version: int | None) -> str:
    return f"{RULE_PREFIX}{name}" + (f"@{version}" if version else "")
