"""A strict JSON parser for the tests: NaN, Infinity and -Infinity are refused, as strict
parsers (browsers' JSON.parse, jq with --seq off, Go, Rust's serde) refuse them."""

from __future__ import annotations

import json
from typing import Any


def _refuse(constant: str) -> Any:
    raise ValueError(f"not strict JSON: {constant}")


def strict_loads(text: str | bytes) -> Any:
    return json.loads(text, parse_constant=_refuse)
