"""Reading a GET /context answer's `context_text` as a test does."""

from __future__ import annotations


def memory_block(context_text: str) -> str:
    """The lines of a context's `<memory>` block (empty when it has none)."""
    _, opened, rest = context_text.partition("<memory>\n")
    return rest.partition("</memory>")[0] if opened else ""
