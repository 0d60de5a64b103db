"""Vectors to and from PostgreSQL, fast: every stored memory sends two 384-float vectors and every ingest batch
reads the scope's recent ones back (issue 29 item 2: the text round trip was ~3 ms of each message's 70).

- `vector_text`: pgvector's text form with 9 significant digits, one C-level format call — exact for float32
  (9 digits round-trip any float32) and 4× faster than pgvector's `str(float(v))` per element;
- `VectorField`: pgvector's Django field with that text form (it deconstructs as pgvector's own field, so
  migrations see no change); `HalfVectorField` the same for `halfvec`, what embeddings are stored as (2 bytes
  a dimension: issue 29 item 5, docs/benchmarks.md) — PostgreSQL rounds the text to float16;
- `vector_from_send`: a vector read as `vector_send(column)` (bytea: dimension, unused, big-endian float4s) —
  no text printing in PostgreSQL, no parsing here. A `halfvec` column is read as `vector_send(column::vector)`
  (the float16s widened exactly);
- `halfvec_binary`: a `halfvec` in PostgreSQL's binary form, for a statement whose parameters travel apart from
  its text (`apps/core/rows.py`, `instances_insert`): no text printed here or parsed there. The float32s are
  rounded to float16 here as PostgreSQL rounds their text (to nearest, ties to even), so the stored values are
  the same (tests/core/test_rows_insert.py)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
from pgvector.django import HalfVectorField as PgHalfVectorField
from pgvector.django import VectorField as PgVectorField


@lru_cache(maxsize=8)
def _template(dimensions: int) -> str:
    return "[" + ",".join(["%.9g"] * dimensions) + "]"


def vector_text(values: Any) -> str:
    """'[0.1,0.2,…]' for a list or array of floats."""
    floats = values.tolist() if isinstance(values, np.ndarray) else list(values)
    return _template(len(floats)) % tuple(floats)


class Halfvec(bytes):
    """A `halfvec` in PostgreSQL's binary form: int16 dimensions, int16 unused, big-endian float16 values."""


def halfvec_binary(values: Any) -> Halfvec:
    floats = np.asarray(values, dtype=np.float32)
    return Halfvec(np.array([len(floats), 0], dtype=">u2").tobytes() + floats.astype(">f2").tobytes())


def vector_from_send(value: bytes | memoryview) -> np.ndarray:
    return np.frombuffer(value, dtype=">f4", offset=4).astype(np.float32)


class _SentAsText:
    """A pgvector field sent in `vector_text`'s form, deconstructed as pgvector's own field (so migrations see
    no change); `_pgvector` is that field."""

    _pgvector: type[Any]

    def get_prep_value(self, value: Any) -> str | None:
        if isinstance(value, list | np.ndarray) and len(value):
            return vector_text(value)
        return super().get_prep_value(value)  # type: ignore[misc]

    def deconstruct(self) -> tuple[Any, Any, Any, Any]:
        name, _, args, kwargs = super().deconstruct()  # type: ignore[misc]
        return name, f"{self._pgvector.__module__}.{self._pgvector.__qualname__}", args, kwargs


class VectorField(_SentAsText, PgVectorField):
    _pgvector = PgVectorField


class HalfVectorField(_SentAsText, PgHalfVectorField):
    _pgvector = PgHalfVectorField
