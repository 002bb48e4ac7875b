"""Secrets never appear in what the app shows or writes: every header value (tokens, keys) and a
URL's password are masked in any text that came from a server or an exception.

Masked by value, not by exact echo: a server that answers "invalid token BEARER T" (case
changed), the decoded bytes of a `-bin` header, their base64 text, the base64-decoded part of a
`Basic` credential, or the token part alone of "Bearer T", anywhere in the text. A URL's
`user:password@` keeps the user and loses the password.

Why a process-wide set: the text is shown in places that do not know the connection it came
from (the viewer's banners, the command line's last-resort messages), and a secret stays one
for the whole process. Every `ConnectionOptions` registers its header values here.
"""

from __future__ import annotations

import base64
import binascii
import functools
import logging
import re
import threading
from collections.abc import Iterable

MASK = "***"
MIN_SECRET_CHARS = 3  # shorter values would mask ordinary words ("a", "ok")
# The scheme word of an Authorization value ("Bearer T"): not secret, and masking it alone
# would hide ordinary words; the rest of the value is masked part by part.
_AUTH_SCHEMES = frozenset({"bearer", "basic", "digest", "token", "apikey", "api-key", "negotiate", "hmac"})
# `scheme://user:password@host`: the password up to the '@' (no spaces or slashes in it).
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^\s/@:]*):[^\s/@]*@")

_lock = threading.Lock()
_known: set[str] = set()  # the forms of every secret registered so far


def remember_secrets(values: Iterable[str | bytes]) -> None:
    """Mask these values (header values) in every text redacted from now on in this process."""
    forms = {form for value in values for form in secret_forms(value)}
    if forms:
        with _lock:
            _known.update(forms)


def forget_secrets() -> None:
    """Forget every registered secret (tests: each starts without the last one's headers)."""
    with _lock:
        _known.clear()


def secret_forms(value: str | bytes) -> set[str]:
    """The texts under which `value` may come back in a message: as given, its base64 (for
    bytes: also the bytes decoded, or escaped as Python and gRPC print them), the
    whitespace-separated parts of a credential ("Bearer T" -> "T") and their base64 decoding
    ("Basic dXNlcjpwYXNz" -> "user:pass", and the password alone)."""
    forms: set[str] = set()
    if isinstance(value, bytes):
        forms.update(_base64_forms(value))
        forms.add(value.decode("utf-8", "replace"))
        forms.add(repr(value)[2:-1])  # b'\x00\x01' printed: \x00\x01
        forms.add(value.hex())
        text = value.decode("utf-8", "ignore")
    else:
        text = value
        forms.add(text)
        forms.update(_base64_forms(text.encode("utf-8", "surrogateescape")))
    for part in text.split():
        if part.lower() in _AUTH_SCHEMES:
            continue
        forms.add(part)
        decoded = _base64_text(part)
        if decoded is not None:
            forms.add(decoded)
            _user, colon, password = decoded.partition(":")  # Basic: user:password
            if colon:
                forms.add(password)
    return {f.strip() for f in forms if len(f.strip()) >= MIN_SECRET_CHARS}


def redact(text: str, secrets: Iterable[str | bytes] = ()) -> str:
    """`text` with every registered secret, every one of `secrets` (in any of their forms, in any
    letter case) and every URL password replaced by ***."""
    forms = {form for value in secrets for form in secret_forms(value)}
    with _lock:
        forms |= _known
    if forms:
        text = _pattern(frozenset(forms)).sub(MASK, text)
    return _URL_PASSWORD.sub(rf"\g<head>:{MASK}@", text)


def url_without_password(url: str) -> str:
    """`scheme://user:password@host...` -> `scheme://user:***@host...` (for messages and reports)."""
    return _URL_PASSWORD.sub(rf"\g<head>:{MASK}@", url)


@functools.lru_cache(maxsize=64)
def _pattern(forms: frozenset[str]) -> re.Pattern[str]:
    # Longest first, so that a secret containing another is masked whole.
    alternatives = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
    return re.compile(alternatives, re.IGNORECASE)


def _base64_forms(data: bytes) -> set[str]:
    standard = base64.b64encode(data).decode("ascii")
    urlsafe = base64.urlsafe_b64encode(data).decode("ascii")
    return {standard, standard.rstrip("="), urlsafe, urlsafe.rstrip("=")}


def _base64_text(part: str) -> str | None:
    """`part` decoded from base64 when it is base64 of printable text ("dXNlcjpwYXNz" ->
    "user:pass"), else None."""
    if len(part) < 4 or not re.fullmatch(r"[A-Za-z0-9+/_-]+=*", part):
        return None
    try:
        raw = base64.b64decode(part + "=" * (-len(part) % 4), altchars=b"-_", validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    return text if text.isprintable() and len(text) >= MIN_SECRET_CHARS else None


class RedactingFilter(logging.Filter):
    """Masks secrets in a log record's message and traceback before any handler formats it."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact(record.getMessage()), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


def redact_logs() -> None:
    """Every record logged through Python's last-resort handler (the app configures no other:
    what a logger says goes to stderr) has its secrets masked. Idempotent."""
    handler = logging.lastResort
    if handler is not None and not any(isinstance(f, RedactingFilter) for f in handler.filters):
        handler.addFilter(RedactingFilter())
