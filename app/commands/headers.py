"""gRPC metadata for remote servers, from three places (later wins):

1. the environment variable TRITON_VIEWER_HEADERS (KEY=VALUE entries, one per line),
2. `--header-file FILE` (KEY=VALUE lines; blank lines and `#` comments ignored),
3. `--header KEY=VALUE` (repeatable).

The first two keep tokens out of the process list (`ps` shows the command line).

Restricted headers go on Triton's admin calls only (shared memory, model config, repository,
statistics, trace), for a server started with restricted protocols
(`--grpc-restricted-protocol=shared-memory,...:KEY=VALUE`, `--http-restricted-api`): given with
`--restricted-header KEY=VALUE`, or as a `restricted KEY=VALUE` line in the file or the
variable (later wins, as above).
A key ending in `-bin` is gRPC binary metadata: gRPC sends it as bytes, so its value is
given in base64 (the way gRPC itself writes binary metadata as text) and decoded here.
Messages name the key and where it came from, never the value (it may be a token).
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from app.system.bounded_read import MAX_SMALL_FILE_BYTES, BoundedReadError, read_text

HEADERS_ENV = "TRITON_VIEWER_HEADERS"
BINARY_SUFFIX = "-bin"


class HeaderError(ValueError):
    """A header that cannot be sent: the message names its key and origin, never its value."""


def parse_header(item: str, origin: str) -> tuple[str, str | bytes]:
    """`KEY=VALUE` -> (lower-case key, value); bytes for a `-bin` key (base64 decoded)."""
    key, sep, value = item.partition("=")
    key = key.strip().lower()
    if not sep or not key:
        # Not echoed: an entry without '=' may well be the token itself.
        raise HeaderError(f"{origin} expects KEY=VALUE; this entry has no key or no '='")
    if any(c.isspace() for c in key):
        raise HeaderError(f"{origin}: the header name {key!r} contains a space")
    if not key.endswith(BINARY_SUFFIX):
        return key, value
    try:
        text = value.strip()
        # Padding is optional in gRPC's text form; URL-safe characters are accepted too.
        return key, base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise HeaderError(
            f"{origin}: {key!r} is binary metadata (its name ends in -bin): give its value in base64"
        ) from None


RESTRICTED_PREFIX = "restricted "  # a header-file line for the admin calls only


def parse_lines(lines: Iterable[str], origin: str, *, restricted: bool = False) -> dict[str, str | bytes]:
    """The KEY=VALUE lines (`restricted`: only the `restricted KEY=VALUE` ones, else only the
    others)."""
    headers: dict[str, str | bytes] = {}
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        is_restricted = stripped[: len(RESTRICTED_PREFIX)].lower() == RESTRICTED_PREFIX
        if is_restricted != restricted:
            continue
        entry = stripped[len(RESTRICTED_PREFIX) :] if is_restricted else stripped
        key, value = parse_header(entry.strip(), f"{origin} line {number}")
        headers[key] = value
    return headers


def read_header_file(path: str | Path, *, restricted: bool = False) -> dict[str, str | bytes]:
    p = Path(path)
    try:
        text = read_text(p, MAX_SMALL_FILE_BYTES, f"--header-file {p}", "utf-8-sig")
    except BoundedReadError as exc:
        raise HeaderError(str(exc)) from None
    return parse_lines(text.splitlines(), f"--header-file {p}", restricted=restricted)


def collect_headers(
    items: Iterable[str], header_file: str | None, environ: Mapping[str, str] | None = None
) -> dict[str, str | bytes]:
    """The headers from the environment, the file and the command line (later wins)."""
    env = os.environ if environ is None else environ
    headers = parse_lines(env.get(HEADERS_ENV, "").splitlines(), HEADERS_ENV)
    if header_file:
        headers.update(read_header_file(header_file))
    for item in items:
        key, value = parse_header(item, "--header")
        headers[key] = value
    return headers


def collect_restricted_headers(
    items: Iterable[str], header_file: str | None, environ: Mapping[str, str] | None = None
) -> dict[str, str | bytes]:
    """The restricted headers (admin calls only): `restricted KEY=VALUE` lines of the
    environment and the file, then --restricted-header (later wins)."""
    env = os.environ if environ is None else environ
    headers = parse_lines(env.get(HEADERS_ENV, "").splitlines(), HEADERS_ENV, restricted=True)
    if header_file:
        headers.update(read_header_file(header_file, restricted=True))
    for item in items:
        key, value = parse_header(item, "--restricted-header")
        headers[key] = value
    return headers
