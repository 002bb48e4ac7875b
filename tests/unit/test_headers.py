"""Header parsing: text and binary (-bin, base64) values, files, the environment, precedence."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.commands.headers import HEADERS_ENV, HeaderError, collect_headers, parse_header


def test_binary_values_are_base64_with_or_without_padding_and_url_safe() -> None:
    assert parse_header("X-Trace-Bin=AAH/", "--header") == ("x-trace-bin", b"\x00\x01\xff")
    assert parse_header("x-trace-bin=AAH_", "--header") == ("x-trace-bin", b"\x00\x01\xff")
    assert parse_header("x-bin=AAE", "--header") == ("x-bin", b"\x00\x01")
    assert parse_header("authorization=Bearer a=b", "--header") == ("authorization", "Bearer a=b")


def test_errors_never_show_the_value() -> None:
    with pytest.raises(HeaderError) as caught:
        parse_header("x-bin=s3cret!!", "--header")
    assert "s3cret" not in str(caught.value) and "'x-bin'" in str(caught.value)
    with pytest.raises(HeaderError) as caught:
        parse_header("Bearer-s3cret", "--header")
    assert "s3cret" not in str(caught.value)


def test_precedence_environment_then_file_then_command_line(tmp_path: Path) -> None:
    f = tmp_path / "h"
    f.write_text("a=file\nb=file\n# c=comment\n")
    env = {HEADERS_ENV: "a=env\nb=env\nc=env"}
    assert collect_headers(["b=cli"], str(f), env) == {"a": "file", "b": "cli", "c": "env"}
    assert collect_headers([], None, {}) == {}


def test_restricted_headers_come_from_their_option_and_restricted_lines(tmp_path: Path) -> None:
    from app.commands.headers import collect_restricted_headers

    path = tmp_path / "headers"
    path.write_text("x-tenant=blue\nrestricted admin-key=from-file\nRESTRICTED other=2\n")
    env = {HEADERS_ENV: "restricted admin-key=from-env\nx-env=1"}
    assert collect_headers([], str(path), env) == {"x-tenant": "blue", "x-env": "1"}
    assert collect_restricted_headers([], str(path), env) == {"admin-key": "from-file", "other": "2"}
    assert collect_restricted_headers(["admin-key=flag"], None, env) == {"admin-key": "flag"}
    with pytest.raises(HeaderError, match="--restricted-header expects KEY=VALUE"):
        collect_restricted_headers(["no-equals-sign"], None, {})


def test_restricted_headers_go_on_admin_calls_only() -> None:
    from app.inference.transports.channel import ConnectionOptions

    options = ConnectionOptions(headers={"x": "1"}, restricted_headers={"admin-key": "k"})
    assert options.admin_headers(options.headers) == {"x": "1", "admin-key": "k"}
    assert "admin-key" not in options.headers
