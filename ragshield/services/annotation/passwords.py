"""Passwords of the logins added in the app, kept as salted scrypt hashes (hashlib: no
extra dependency). A hash names its parameters ("scrypt$n$r$p$salt$digest", hex), so
that stronger ones can be chosen later without breaking the hashes already stored."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from ragshield.errors import UserError

# scrypt's cost: 16 MiB of memory and some 50 ms of one core per hash (RFC 7914's
# interactive-login setting); the login throttle bounds how many a client may ask for.
N, R, P = 2**14, 8, 1
SALT_BYTES, DIGEST_BYTES = 16, 32
MAX_MEMORY = 64 * 2**20  # a stored hash asking for more is refused, not computed
MIN_LENGTH, MAX_LENGTH = 8, 1024
SCHEME = "scrypt"


class PasswordError(UserError, ValueError):
    """A new password is too short or too long."""


def check_password(password: object) -> str:
    """The password as given, or an error saying what a password needs."""
    if not isinstance(password, str) or len(password) < MIN_LENGTH:
        raise PasswordError(f"A password needs at least {MIN_LENGTH} characters.")
    if len(password) > MAX_LENGTH:
        raise PasswordError(f"A password may have at most {MAX_LENGTH} characters.")
    return password


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p,
                          maxmem=MAX_MEMORY, dklen=DIGEST_BYTES)


def hash_password(password: str) -> str:
    """A new hash of `password`, with a random salt: two hashes of one password differ."""
    salt = secrets.token_bytes(SALT_BYTES)
    return f"{SCHEME}${N}${R}${P}${salt.hex()}${_scrypt(password, salt, N, R, P).hex()}"


_DUMMY_SALT = secrets.token_bytes(SALT_BYTES)


def spend_like_a_check(password: str) -> None:
    """The work of one `password_matches`, for a name that has no password to check: a
    login then takes as long whether or not the name exists (timing told names apart)."""
    _scrypt(password, _DUMMY_SALT, N, R, P)


def password_matches(password: str, stored: str) -> bool:
    """Whether `password` is the one `stored` was made from; the digests are compared in
    constant time. A hash that cannot be read, or asks for too much memory, matches
    nothing."""
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != SCHEME:
            return False
        expected = bytes.fromhex(digest)
        found = _scrypt(password, bytes.fromhex(salt), int(n), int(r), int(p))
    except ValueError:
        return False
    return hmac.compare_digest(found, expected)
