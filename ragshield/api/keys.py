"""API keys: bearer tokens that callers of the guard API present. They come from
RAGSHIELD_API_KEYS (comma-separated) and from a file of one key per line (blank lines and
lines starting with # are ignored). Without keys the API is open, which is allowed only on a
loopback address: a server reachable from other machines must ask for a key.

A line of the file may give the key settings after it, so that applications sharing one
server get different promises: `KEY name=NAME judges=a,b rule=RULE fixed=yes` (each optional;
RULE may pin a policy version, `policy:NAME@VERSION`). The name is stored with every call the
key makes; the judges, rule and on_unsupported apply where a call's body names none, and
with fixed=yes a call may not name others (the promise is the key's, not the application's).
A key without a name (and every key of RAGSHIELD_API_KEYS) is `key-N`, N its place among all
the keys.

A key may be written as its SHA-256 digest, `sha256:<64 hex digits>`, so that the keys file
does not hold the secret callers present (`ragshield keys new` makes a key and its line)."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ragshield.config import Settings
from ragshield.services.guarding.key_defaults import (HASHED, HASHED_KEY, ApiKey, ApiKeyError,
                                                      key_settings, sha256_digest)
from ragshield.web.secret_files import read_secret_text

MIN_KEY_CHARS = 16


@dataclass(frozen=True)
class KeyEntry:
    """A configured key as written (the secret a request carries, or its `sha256:` digest),
    and whose it is."""

    secret: str = field(repr=False)
    key: ApiKey

    @property
    def digest(self) -> bytes:
        """The SHA-256 of the secret: what a request's key is compared with."""
        if self.secret.startswith(HASHED):
            return bytes.fromhex(self.secret[len(HASHED):])
        return sha256_digest(self.secret.encode())


def read_keys(settings: Settings) -> list[KeyEntry]:
    """Every configured key with its settings; errors name the file and line of a key that
    is too short or that no request could carry (an HTTP header reaches the server as ASCII:
    a key with other characters would never match), and the field at fault."""
    lines: list[tuple[list[str], str]] = []  # (the key and its fields, where)
    if settings.api_keys is not None:
        lines += [([key.strip()], "RAGSHIELD_API_KEYS")
                  for key in settings.api_keys.get_secret_value().split(",") if key.strip()]
    if settings.api_keys_file is not None:
        path: Path = settings.api_keys_file
        for number, line in enumerate(read_secret_text(path, "API key file").splitlines(), 1):
            if line.strip() and not line.strip().startswith("#"):
                lines.append((line.split(), f"{path}:{number}"))
    configured = [source for source, given in (
        ("RAGSHIELD_API_KEYS", settings.api_keys is not None),
        (str(settings.api_keys_file), settings.api_keys_file is not None)) if given]
    if configured and not lines:  # keys were asked for: an open server is not what was meant
        raise ApiKeyError(f"{' and '.join(configured)}: no API key (blank lines and lines "
                          "starting with # are skipped); write one key per line")
    entries: list[KeyEntry] = []
    named: dict[str, str] = {}  # name -> where it was given
    digests: dict[bytes, str] = {}  # the key's digest -> where it was given
    for number, ([secret, *fields], where) in enumerate(lines, 1):
        _check_secret(secret, where)
        entry = KeyEntry(secret, key_settings(fields, where, f"key-{number}", settings))
        if entry.digest in digests:  # the first would always match, and the second never
            raise ApiKeyError(f"{where}: the same key as at {digests[entry.digest]}; each "
                              "caller needs a key of its own")
        digests[entry.digest] = where
        if entry.key.name in named:
            raise ApiKeyError(f"{where}: field 'name': {entry.key.name!r} is the name of the "
                              f"key at {named[entry.key.name]} too; names tell callers apart")
        named[entry.key.name] = where
        entries.append(entry)
    return entries


def _check_secret(secret: str, where: str) -> None:
    if secret.startswith(HASHED):
        if not HASHED_KEY.fullmatch(secret):
            raise ApiKeyError(f"{where}: a key written as its digest is sha256: and 64 hex "
                              "digits (ragshield keys new writes one)")
        return
    if len(secret) < MIN_KEY_CHARS:
        raise ApiKeyError(f"{where}: an API key must have at least {MIN_KEY_CHARS} "
                          "characters")
    if not (secret.isascii() and secret.isprintable()):
        raise ApiKeyError(f"{where}: an API key must be printable ASCII (letters, digits, "
                          "punctuation): a request cannot carry other characters")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, keys: Sequence[KeyEntry]) -> None:
    """ApiKeyError when the API would be open to other machines."""
    if not keys and not is_loopback(host):
        raise ApiKeyError(f"the guard API on {host} would be open to other machines: give it "
                          "keys (--api-keys FILE or RAGSHIELD_API_KEYS), or serve on 127.0.0.1")


class KeyCheck:
    """Which key an Authorization header carries, compared in constant time with every
    key. A key given as its bare secret (tests, callers of build_api) is `key-N`."""

    def __init__(self, keys: Sequence[KeyEntry | str]) -> None:
        self.keys = [(entry.digest, entry.key) if isinstance(entry, KeyEntry)
                     else (sha256_digest(entry.encode()), ApiKey(f"key-{number}"))
                     for number, entry in enumerate(keys, 1)]

    @property
    def required(self) -> bool:
        return bool(self.keys)

    def match(self, authorization: str | None) -> ApiKey | None:
        """The key the header carries; None when it carries none of them (or the server
        has none: then every call is let in, and made by nobody in particular)."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        given = sha256_digest(token.strip().encode())
        matched = [key for digest, key in self.keys  # every key is compared
                   if hmac.compare_digest(given, digest)]
        return matched[0] if matched else None
