"""API keys: bearer tokens that callers of the guard API present. They come from
RAGSHIELD_API_KEYS (comma-separated) and from a file of one key per line (blank lines and
lines starting with # are ignored). Without keys the API is open, which is allowed only on a
loopback address: a server reachable from other machines must ask for a key."""

from __future__ import annotations

import hmac
import ipaddress
from pathlib import Path

from ragshield.config import Settings
from ragshield.errors import UserError
from ragshield.web.secret_files import read_secret_text

MIN_KEY_CHARS = 16


class ApiKeyError(UserError, ValueError):
    pass


def read_keys(settings: Settings) -> list[str]:
    """Every configured key; errors name the file and line of a key that is too short or
    that no request could carry (an HTTP header reaches the server as ASCII: a key with
    other characters would never match)."""
    keys: list[tuple[str, str]] = []
    if settings.api_keys is not None:
        keys += [(key.strip(), "RAGSHIELD_API_KEYS")
                 for key in settings.api_keys.get_secret_value().split(",") if key.strip()]
    if settings.api_keys_file is not None:
        path: Path = settings.api_keys_file
        for number, line in enumerate(read_secret_text(path, "API key file").splitlines(), 1):
            if line.strip() and not line.strip().startswith("#"):
                keys.append((line.strip(), f"{path}:{number}"))
    for key, where in keys:
        if len(key) < MIN_KEY_CHARS:
            raise ApiKeyError(f"{where}: an API key must have at least {MIN_KEY_CHARS} "
                              "characters")
        if not (key.isascii() and key.isprintable()):
            raise ApiKeyError(f"{where}: an API key must be printable ASCII (letters, digits, "
                              "punctuation): a request cannot carry other characters")
    return [key for key, _ in keys]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, keys: list[str]) -> None:
    """ApiKeyError when the API would be open to other machines."""
    if not keys and not is_loopback(host):
        raise ApiKeyError(f"the guard API on {host} would be open to other machines: give it "
                          "keys (--api-keys FILE or RAGSHIELD_API_KEYS), or serve on 127.0.0.1")


class KeyCheck:
    """Whether an Authorization header carries one of the keys (compared in constant time)."""

    def __init__(self, keys: list[str]) -> None:
        self.keys = [key.encode() for key in keys]

    @property
    def required(self) -> bool:
        return bool(self.keys)

    def accepts(self, authorization: str | None) -> bool:
        if not self.keys:
            return True
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return False
        given = token.strip().encode()
        return sum(hmac.compare_digest(given, key) for key in self.keys) > 0  # try every key
