"""What an API key may promise its caller (api/keys.py reads it from the keys file): the
judges and the rule of the calls whose body names none, fixed or not. Checked once, when the
server starts, so that a typo is an error naming its line rather than a 400 on every call the
key makes. `new_key` makes a random key and its line, which holds the key's SHA-256 only."""

from __future__ import annotations

import hashlib
import re
import secrets as random_secrets
from collections.abc import Sequence
from dataclasses import dataclass

from ragshield.config import Settings
from ragshield.errors import OptionError, UserError
from ragshield.judges.builtin import JUDGES
from ragshield.judges.registry import judge_names
from ragshield.judges.trained import PREFIX as TRAINED
from ragshield.judges.trained import judges_dir, read_card
from ragshield.judging import choose_rule
from ragshield.services.questions.redaction import ON_UNSUPPORTED

HASHED = "sha256:"  # a key written as its digest
HASHED_KEY = re.compile(r"sha256:[0-9a-fA-F]{64}")
KEY_FIELDS = ("name", "judges", "rule", "fixed", "on_unsupported")
YES_NO = {"yes": True, "no": False}
KEY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@:-]{0,99}")  # no blanks: fields split on them


class ApiKeyError(UserError, ValueError):
    pass


@dataclass(frozen=True)
class ApiKey:
    """Who holds a key (the name stored with their calls) and what their calls get when
    the body leaves it out: judges and a decision rule (None: the server's defaults)."""

    name: str
    judges: tuple[str, ...] | None = None
    rule: str | None = None
    fixed: bool = False  # a call may not name judges or a rule other than these
    on_unsupported: str | None = None  # for calls whose body names none (redaction.py)


def key_judges(spec: str) -> tuple[str, ...]:
    """The judges of `judges=a,b` ("all": every registered judge); OptionError naming an
    unknown one, or an empty place between commas (a name left out by mistake)."""
    if any(not name.strip() for name in spec.split(",")):
        raise OptionError(f"{spec!r} has an empty name between commas")
    return tuple(judge_names(spec))


def check_trained(judges: Sequence[str], settings: Settings) -> None:
    """TrainedJudgeError for a trained judge that is not in the settings' cache: a key
    naming one would fail every call it makes."""
    for name in judges:
        if name.startswith(TRAINED):
            read_card(judges_dir(settings.cache_dir) / name[len(TRAINED):],
                      check_weights=False)


def missing_trained(spec: str | None, settings: Settings) -> str | None:
    """What check_trained would refuse in the judges `spec` on this machine, else None (for
    `keys new`, whose key may be meant for a server elsewhere)."""
    if not spec:
        return None
    try:
        check_trained(key_judges(spec), settings)
    except UserError as error:
        return str(error)
    return None


def check_key_rule(rule: str, judges: Sequence[str] | None) -> None:
    """OptionError unless `rule` is majority, all, grounded, `policy:NAME[@VERSION]` or a
    judge's name (one of `judges`, or grounded's two among them, when the key names them).
    Whether the policy exists is the call's question: it may be fitted after the server
    starts."""
    choose_rule(rule, judges if judges is not None else tuple(JUDGES))


def rule_fits(rule: str, judges: Sequence[str]) -> bool:
    """Whether a key's `rule` can decide from a body's own `judges` (a policy's are checked
    when it is read); where it cannot, the body's judges win and the default rule follows
    them."""
    try:
        check_key_rule(rule, key_judges(",".join(judges)))
    except UserError:
        return False
    return True


def key_settings(fields: list[str], where: str, default_name: str,
                 settings: Settings | None = None) -> ApiKey:
    """The settings written after a key: NAME=VALUE fields, each at most once; with the
    server's `settings`, its trained judges must be there."""
    given: dict[str, str] = {}
    for text in fields:
        name, equals, value = text.partition("=")
        if name not in KEY_FIELDS:
            raise ApiKeyError(f"{where}: unknown field {name!r} after the key; the fields "
                              f"are {', '.join(f'{n}=...' for n in KEY_FIELDS)}")
        if not equals or not value:
            raise ApiKeyError(f"{where}: field {name!r} has no value: write {name}=VALUE")
        if name in given:
            raise ApiKeyError(f"{where}: field {name!r} is given twice")
        given[name] = value
    name = given.get("name", default_name)
    if not KEY_NAME.fullmatch(name):
        raise ApiKeyError(f"{where}: field 'name': {name!r} must be 1 to 100 letters, digits "
                          "or . _ @ : - (starting with a letter or digit)")
    try:
        judges = key_judges(given["judges"]) if "judges" in given else None
        if judges is not None and settings is not None:
            check_trained(judges, settings)
    except UserError as error:
        raise ApiKeyError(f"{where}: field 'judges': {error}") from None
    rule = given.get("rule")
    if rule is not None:
        try:
            check_key_rule(rule, judges)
        except UserError as error:
            raise ApiKeyError(f"{where}: field 'rule': {error}") from None
    fixed = YES_NO.get(given.get("fixed", "no").lower())
    if fixed is None:
        raise ApiKeyError(f"{where}: field 'fixed' must be yes or no")
    if fixed and judges is None and rule is None:
        raise ApiKeyError(f"{where}: field 'fixed': the key gives no judges or rule to fix")
    on_unsupported = given.get("on_unsupported")
    if on_unsupported is not None and on_unsupported not in ON_UNSUPPORTED:
        raise ApiKeyError(f"{where}: field 'on_unsupported' must be "
                          f"{' or '.join(ON_UNSUPPORTED)}")
    return ApiKey(name, judges, rule, fixed, on_unsupported)


def sha256_digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def new_key(fields: Sequence[str] = ()) -> tuple[str, str]:
    """A new random key, and its line for a keys file: its digest, then `fields` (checked
    as a keys file's are: name=NAME, judges=a,b, rule=RULE)."""
    key_settings(list(fields), "the new key", "key")
    secret = "rs-" + random_secrets.token_urlsafe(32)
    line = " ".join([HASHED + sha256_digest(secret.encode()).hex(), *fields])
    return secret, line
