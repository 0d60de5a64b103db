"""Specificity: how much a match on a term the query names is worth, by how rare the term is in the scope.

A name that half of a contact's memories carry (the other speaker of a long chat, who is greeted by name in
every other turn) tells nothing about which memory answers "what did Alex do on Friday?"; a name on three
memories tells a lot. The weight of an entity the query names is its inverse document frequency over the
scope's memories — BM25's IDF, the keyword signal's own — divided by the IDF of a term on a single memory,
so it lies in (0, 1]: ~1 for a rare entity, ~0.1 for one on half the memories. A memory that links several
of the named entities gets the noisy-or of their weights (two rare matches count more than one).

Pure (no Django): `search.py` passes each named entity's link count and the scope's size.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def idf(df: int, total: int) -> float:
    """BM25's inverse document frequency (the Lucene form: never negative)."""
    total = max(total, 1)
    df = min(max(df, 0), total)
    return math.log(1 + (total - df + 0.5) / (df + 0.5))


def weight(*, linked: int, total: int) -> float:
    """An entity's specificity in (0, 1]: its IDF over the scope relative to a term on one memory."""
    rarest = idf(1, total)
    return round(min(1.0, idf(max(linked, 1), total) / rarest), 4) if rarest > 0 else 1.0


def combined(weights: Iterable[float]) -> float:
    """The entity match of a memory linking entities of these weights: their noisy-or, in [0, 1]."""
    miss = 1.0
    for value in weights:
        miss *= 1.0 - min(max(value, 0.0), 1.0)
    return round(1.0 - miss, 4)
