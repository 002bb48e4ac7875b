"""The two keys of an Ultralytics `data.yaml` the evaluation needs: `names` and `kpt_shape`.

Not a YAML parser: the forms Ultralytics and the labelling tools write are read, namely
`names: [a, b]`, a block list (`- a`), a block mapping (`0: a`), `kpt_shape: [6, 3]`; quoted
names keep their quotes' content; anything else is a ValueError naming the line.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from app.system.bounded_read import MAX_SMALL_FILE_BYTES, read_text

_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:\s*(.*)$")


def _strip_comment(line: str) -> str:
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def _scalar(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _flow_list(text: str, where: str) -> list[str]:
    inner = text.strip()[1:-1]
    items: list[str] = []
    for match in re.finditer(r"""\s*('(?:[^']|'')*'|"(?:[^"\\]|\\.)*"|[^,]+)\s*(?:,|$)""", inner):
        item = match.group(1).strip()
        if item:
            items.append(_scalar(item))
    if not items and inner.strip():
        raise ValueError(f"{where}: cannot read the list {text.strip()}")
    return items


def read_data_yaml(path: Path) -> tuple[list[str] | None, tuple[int, int] | None]:
    """(names by class id, kpt_shape) of a data.yaml; None for a key it does not have."""
    lines = [_strip_comment(line) for line in read_text(path, MAX_SMALL_FILE_BYTES).splitlines()]
    names: list[str] | None = None
    kpt_shape: tuple[int, int] | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        match = _KEY.match(line)
        i += 1
        if match is None or line[:1].isspace():
            continue
        key, value = match.group(1), match.group(2).strip()
        where = f"{path} (line {i})"
        if key == "kpt_shape":
            try:
                k, d = ast.literal_eval(value)
                kpt_shape = (int(k), int(d))
            except (ValueError, SyntaxError, TypeError):
                raise ValueError(f"{where}: kpt_shape must be [K, D], got {value!r}") from None
        elif key == "names":
            if value.startswith("[") and value.endswith("]"):
                names = _flow_list(value, where)
            elif value.startswith("{") and value.endswith("}"):
                names = _block(_flow_list("[" + value[1:-1] + "]", where), where)
            elif value:
                raise ValueError(f"{where}: names must be a list or a mapping of class ids to names")
            else:
                block: list[str] = []
                while i < len(lines) and (not lines[i].strip() or lines[i][:1].isspace()):
                    if lines[i].strip():
                        block.append(lines[i].strip())
                    i += 1
                names = _block(block, where)
    return names, kpt_shape


def _block(block: list[str], where: str) -> list[str]:
    if all(item.startswith("-") for item in block):
        return [_scalar(item[1:]) for item in block]
    pairs: dict[str, str] = {}
    for item in block:
        key, sep, value = item.partition(":")
        if not sep:
            raise ValueError(f"{where}: cannot read the names entry {item!r}")
        pairs[key.strip()] = _scalar(value)
    return _by_index(pairs, where)


def _by_index(pairs: dict[str, str], where: str) -> list[str]:
    try:
        numbered = {int(k): _scalar(v) for k, v in pairs.items()}
    except ValueError:
        raise ValueError(f"{where}: names mapping keys must be class ids (0, 1, ...)") from None
    top = max(numbered, default=-1)
    return [numbered.get(i, f"class {i}") for i in range(top + 1)]
