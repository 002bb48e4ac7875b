"""Text an export format cannot hold, written so that the file stays readable.

XML 1.0 has no way at all to carry most control characters (not even as `&#11;`): a label
with \\x0b in it made VOC XML that no parser reads. Line-based files (YOLO's classes.txt)
cannot hold a name with a line break in it: readers split at \\r, \\x0b, \\x0c, \\x1c-\\x1e,
\\x85, U+2028 and U+2029 (Python's splitlines), and a class's id is its line. Such characters
are written as a visible escape (`\\x0b`, `\\u2028`), so the name stays recognisable and the
file well-formed. (JSON exports need nothing: json escapes every control character.)
"""

from __future__ import annotations

import re

# Characters XML 1.0 does not allow (https://www.w3.org/TR/xml/#charsets): C0 controls other
# than tab, LF and CR; surrogates; U+FFFE and U+FFFF. (CR is allowed but a parser turns it
# into LF: escaped too, so that a name reads back as it was.)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0d\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# Characters that end a line for some reader (str.splitlines' list), and other C0 controls.
_NOT_ONE_LINE = re.compile("[\x00-\x1f\x7f\x85\u2028\u2029\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def xml_text(text: str) -> str:
    """`text` with what XML 1.0 cannot hold written as `\\xNN` / `\\uNNNN`."""
    return _NOT_XML.sub(_escape, text)


def one_line(text: str) -> str:
    """`text` as one line of a line-based file (line breaks and control characters escaped)."""
    return _NOT_ONE_LINE.sub(_escape, text)
