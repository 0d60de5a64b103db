"""Text cleaning (memory-logic §1.2), shared by ingest (messages) and the knowledge base (documents).

Pure: no ORM, no I/O.
"""

from __future__ import annotations

import re
import unicodedata

_LINE_BREAKS = re.compile(r"\r\n?|[\u0085\u2028\u2029]")
# Three or more line breaks, counting whitespace-only lines as blank. The indentation of the next
# non-blank line is kept, so code blocks keep their shape.
_BLANK_LINES = re.compile(r"\n(?:[ \t]*\n){2,}")


def clean_text(text: str) -> str:
    """Strip, normalise to NFC, unify line breaks to ``\\n`` and collapse runs of blank lines to one.

    Formatting markers, code and inner whitespace are left untouched.
    """
    text = unicodedata.normalize("NFC", text).lstrip("\ufeff")
    text = _LINE_BREAKS.sub("\n", text)
    text = _BLANK_LINES.sub("\n\n", text)
    return text.strip()
