"""Words that count as one term: a table of groups ("go went gone | buy bought"), the groups a query uses, and
the document frequency a group's lexemes share. What the forms of an irregular verb (inflections.py) and the
chat spellings of a word (spellings.py) have in common.

Pure (no Django).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

_WORD = re.compile(r"[a-z]+")


def table(entries: str, *, left_out: frozenset[str] = frozenset()) -> dict[str, tuple[str, ...]]:
    """{word: its group} from groups of words separated by "|" or line breaks; the words `left_out` are dropped,
    and a group left with one word is none."""
    group_of: dict[str, tuple[str, ...]] = {}
    for entry in re.split(r"[|\n]", entries):
        group = tuple(dict.fromkeys(word for word in entry.split() if word not in left_out))
        if len(group) < 2:
            continue
        for word in group:
            group_of[word] = group
    return group_of


def groups_met(query: str, group_of: Mapping[str, tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The groups of `group_of` the query's words belong to, each once, in the order met (case ignored)."""
    seen: dict[tuple[str, ...], None] = {}
    for word in _WORD.findall(query.lower()):
        group = group_of.get(word)
        if group is not None:
            seen.setdefault(group, None)
    return list(seen)


def grouped_df(df: Mapping[str, int], groups: Iterable[Sequence[str]]) -> dict[str, int]:
    """Document frequencies where each lexeme of a group takes the group's total: the words of one group are one
    term ("went" as rare as "go" + "went" + "gone" together)."""
    grouped = dict(df)
    for group in groups:
        total = sum(df.get(lexeme, 0) for lexeme in group)
        for lexeme in group:
            if lexeme in grouped:
                grouped[lexeme] = total
    return grouped
