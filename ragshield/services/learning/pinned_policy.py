"""The policy version pinned on the Dashboard as the default rule of the Demo, the API and
runs started without a rule. It is kept in the store's app settings, so every process on the
store decides by it, and read on every ask (one small query; no policy body is loaded)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ragshield.errors import OptionError
from ragshield.policies.rules import parse_rule, policy_rule
from ragshield.store.app_settings import read_setting_record, write_setting
from ragshield.store.database import Store
from ragshield.store.policies import policy_body

PIN_KEY = "default_rule"


@dataclass(frozen=True)
class Pin:
    rule: str  # policy:NAME@VERSION
    by: str | None  # who pinned it (None: nobody was signed in)
    at: datetime  # when, UTC

    @property
    def words(self) -> str:
        """"the pinned policy NAME@3, pinned by ann on 2026-01-31"."""
        name, version = parse_rule(self.rule) or (self.rule, None)
        by = f" by {self.by}" if self.by else ""
        return f"the pinned policy {name}@{version}, pinned{by} on {self.at:%Y-%m-%d}"


def pinned(store: Store) -> Pin | None:
    """The pinned policy version, None when none is pinned."""
    record = read_setting_record(store, PIN_KEY)
    if record is None:
        return None
    return Pin(str(record.value["rule"]), record.updated_by, record.updated_at)


def pin_policy(store: Store, rule: str, by: str | None = None) -> Pin:
    """Make the stored version `rule` (policy:NAME@VERSION) the default rule: OptionError
    for another rule, UnknownPolicyError when that version is not stored."""
    parsed = parse_rule(rule or "")
    if parsed is None or parsed[1] is None:
        raise OptionError(f"choose a stored policy version to pin (policy:NAME@VERSION), "
                          f"got {rule!r}")
    policy_body(store, *parsed)
    write_setting(store, PIN_KEY, {"rule": policy_rule(*parsed)}, by=by)
    pin = pinned(store)
    assert pin is not None  # just written
    return pin


def unpin(store: Store) -> None:
    """Let the configured rule (RAGSHIELD_DECISION_RULE) be the default again."""
    write_setting(store, PIN_KEY, None)
