"""Secrets are masked by value, not by exact echo: header values as the server may give them
back (another letter case, a -bin value decoded or in base64, the token of "Bearer T" alone,
the password of a Basic credential, inside other words) and a URL's password. And no secret
in a child's environment."""

from __future__ import annotations

import base64
import contextlib
import io
import logging
import sys

from app.commands.headers import HEADERS_ENV
from app.inference.redaction import (
    RedactingFilter,
    redact,
    redact_logs,
    remember_secrets,
    url_without_password,
)
from app.inference.result import InferenceResult
from app.server.stub_python import clean_environment, is_secret_variable

TOKEN = "Bearer T0kenUnitA"
BINARY = b"\x00bin-secret\xff"


def test_header_values_are_masked_in_every_form_a_server_may_echo() -> None:
    secrets = [TOKEN, BINARY]
    for echoed in (
        "invalid: Bearer T0kenUnitA",
        "invalid: bearer t0kenunita",  # case-folded
        "tokenT0KENUNITArejected",  # the token alone, embedded, upper-cased
        "x-token-bin decoded as '\x00bin-secret\ufffd'",
        f"x-token-bin={base64.b64encode(BINARY).decode()}",
        f"x-token-bin={base64.b64encode(BINARY).decode().rstrip('=')}",
        f"got {BINARY!r}",
    ):
        masked = redact(echoed, secrets)
        assert "T0ken" not in masked and "t0ken" not in masked.lower(), masked
        assert "bin-secret" not in masked and "AGJpbi1zZWNyZXT/" not in masked, masked
        assert "***" in masked
    assert redact("Bearer is the scheme", secrets) == "Bearer is the scheme", "the scheme word stays"


def test_a_basic_credential_is_masked_decoded_too() -> None:
    value = "Basic " + base64.b64encode(b"alice:Pa55wordUnit").decode()
    assert redact("rejected password Pa55wordUnit for alice", [value]) == "rejected password *** for alice"


def test_a_urls_password_is_masked_wherever_it_appears() -> None:
    assert url_without_password("http://alice:s3cretUrl@host:8000/v2") == "http://alice:***@host:8000/v2"
    text = "cannot reach the server at https://bob:pw1234@example:443 (connection refused)"
    assert redact(text) == "cannot reach the server at https://bob:***@example:443 (connection refused)"
    assert redact("http://host:8000 and a@b.c") == "http://host:8000 and a@b.c"


def test_remembered_secrets_are_masked_where_the_connection_is_not_known() -> None:
    remember_secrets(["x-api-RememberedUnit", b"remembered-bytes"])
    assert redact("echo x-api-rememberedunit and remembered-bytes") == "echo *** and ***"
    record = InferenceResult.local_failure("a.jpg", "server said: X-API-REMEMBEREDUNIT").to_record()
    assert record["error"] == "server said: ***"


def test_a_childs_environment_has_no_secret() -> None:
    base = {
        HEADERS_ENV: "authorization=Bearer x",
        "MY_API_TOKEN": "t",
        "HF_TOKEN": "t",
        "DB_PASSWORD": "p",
        "AWS_SECRET_ACCESS_KEY": "k",
        "PATH": "/usr/bin",
        "HOME": "/home/u",
    }
    env = clean_environment(base)
    assert env == {"PATH": "/usr/bin", "HOME": "/home/u"}
    assert is_secret_variable(HEADERS_ENV) and not is_secret_variable("LD_LIBRARY_PATH")


def test_a_logged_error_and_its_traceback_carry_no_secret() -> None:
    remember_secrets(["LoggedT0ken"])
    redact_logs()
    redact_logs()  # idempotent
    handler = logging.lastResort
    assert handler is not None and sum(isinstance(f, RedactingFilter) for f in handler.filters) == 1
    try:
        raise RuntimeError("server said LOGGEDT0KEN is bad")
    except RuntimeError:
        record = logging.getLogger("app.test").makeRecord(
            "app.test",
            logging.ERROR,
            __file__,
            1,
            "connect to %s failed",
            ("http://u:pw99@h",),
            sys.exc_info(),
        )
    stream = io.StringIO()
    # What Python does with a record when the app has configured no handler (pytest has).
    with contextlib.redirect_stderr(stream):
        handler.handle(record)
    text = stream.getvalue()
    assert "connect to http://u:***@h failed" in text and "RuntimeError: server said *** is bad" in text
    assert "pw99" not in text and "loggedt0ken" not in text.lower()
