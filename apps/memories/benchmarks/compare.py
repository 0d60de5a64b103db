"""Two runs of `bench_retrieval --details`, question by question (`bench_compare`): what a change won and lost.

A set's mean R@10 can rise while its answers sink: a change that lifts three questions' evidence into the top 10
and pushes dozens of others' first evidence down a few places gains recall and loses what the first lines of a
context hold (docs/benchmarks.md, "Session 61": a session-size weight gained BEAM 0.008 any@10, 9 questions won
and 6 lost, with the first evidence lower in 37 questions and higher in 26). For each dataset and phase both
files hold, per group (the whole set, then each split: LoCoMo's tune and report halves) and category, it prints

- the set's metric at k before and after (R@k for LoCoMo and chats, any@k for BEAM, as `bench_retrieval`);
- the questions won and lost at k (their metric changed);
- the questions whose first evidence turn moved up or down, counted where it is within the top k in either run;
- MRR@k of the first evidence turn (1/rank, 0 past k) before and after.

Questions are matched by conversation and text (a repeated question by its order). Pure: no database, no Django.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from apps.memories.benchmarks import datasets, locomo

# a set's metric by the name its details carry (`bench_retrieval`'s datasets); any other: R
METRIC_OF = {"BEAM": "any"}
SPLITS = {"LoCoMo": {"tune half": locomo.TUNE_HALF, "report half": locomo.REPORT_HALF}}


@dataclass(frozen=True)
class Asked:
    """One question's line of a details file."""

    conversation: str
    question: str
    category: str
    evidence: tuple[str, ...]
    ranked: tuple[str, ...]


@dataclass(frozen=True)
class Row:
    label: str  # a category, or "overall"
    n: int
    before: float  # the metric at k
    after: float
    won: int
    lost: int
    up: int  # first evidence higher (within the top k in either run)
    down: int
    mrr_before: float
    mrr_after: float


def parse(lines: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str, int], Asked]:
    """A phase's lines keyed by (conversation, question, its order among repeats of it); questions without
    evidence are left out (nothing to find)."""
    seen: Counter[tuple[str, str]] = Counter()
    out: dict[tuple[str, str, int], Asked] = {}
    for line in lines:
        asked = Asked(
            conversation=str(line["conversation"]),
            question=str(line["question"]),
            category=str(line["category"]),
            evidence=tuple(str(item) for item in line["evidence"]),
            ranked=tuple(str(item) for item in line["ranked"]),
        )
        key = (asked.conversation, asked.question)
        seen[key] += 1
        if asked.evidence:
            out[(*key, seen[key])] = asked
    return out


def score(asked: Asked, *, metric: str, k: int) -> float:
    return datasets.metric_at(asked.ranked, asked.evidence, metric, k)


def first_rank(asked: Asked) -> int | None:
    """The rank (from 1) of the first evidence turn among the ranked ones, or None when none is there."""
    evidence = set(asked.evidence)
    return next((index for index, turn in enumerate(asked.ranked, start=1) if turn in evidence), None)


def reciprocal(rank: int | None, k: int) -> float:
    return 1.0 / rank if rank is not None and rank <= k else 0.0


def row(label: str, pairs: Sequence[tuple[Asked, Asked]], *, metric: str, k: int) -> Row:
    before = [score(old, metric=metric, k=k) for old, _ in pairs]
    after = [score(new, metric=metric, k=k) for _, new in pairs]
    up = down = 0
    mrr_before = mrr_after = 0.0
    for old, new in pairs:
        rank_old, rank_new = first_rank(old), first_rank(new)
        mrr_before += reciprocal(rank_old, k)
        mrr_after += reciprocal(rank_new, k)
        old_at, new_at = rank_old or k + 1_000, rank_new or k + 1_000
        if min(old_at, new_at) <= k:
            up += new_at < old_at
            down += new_at > old_at
    n = len(pairs)
    return Row(
        label=label,
        n=n,
        before=round(sum(before) / n, 4),
        after=round(sum(after) / n, 4),
        won=sum(new > old for old, new in zip(before, after, strict=True)),
        lost=sum(new < old for old, new in zip(before, after, strict=True)),
        up=up,
        down=down,
        mrr_before=round(mrr_before / n, 4),
        mrr_after=round(mrr_after / n, 4),
    )


def table(
    name: str, before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]], *, k: int = 10
) -> dict[str, list[Row]]:
    """{group: rows (a category each, then "overall")} for one dataset's phase in two runs; `name` is the
    details' dataset key ("LoCoMo session", "BEAM session"): it picks the metric and the splits."""
    prefix = name.split(" ", 1)[0]
    metric = METRIC_OF.get(prefix, "R")
    old, new = parse(before), parse(after)
    shared = [key for key in old if key in new]
    groups: dict[str, frozenset[str] | None] = {"all": None, **SPLITS.get(prefix, {})}
    out: dict[str, list[Row]] = {}
    for group, conversations in groups.items():
        keys = [key for key in shared if conversations is None or key[0] in conversations]
        if not keys:
            continue
        categories = sorted({old[key].category for key in keys})
        rows = [
            row(category, [(old[key], new[key]) for key in keys if old[key].category == category], metric=metric, k=k)
            for category in categories
        ]
        out[group] = [*rows, row("overall", [(old[key], new[key]) for key in keys], metric=metric, k=k)]
    return out


def render(name: str, phase: str, groups: Mapping[str, Sequence[Row]], *, k: int) -> str:
    metric = METRIC_OF.get(name.split(" ", 1)[0], "R")
    lines = [
        f"{name} · {phase}: {metric}@{k} before → after; questions won / lost at {k}; first evidence up / down "
        f"(within the top {k} in either run); MRR@{k} of the first evidence"
    ]
    for group, rows in groups.items():
        lines.append(
            f"  [{group}]".ljust(24)
            + "n".rjust(5)
            + "before".rjust(9)
            + "after".rjust(8)
            + "won".rjust(6)
            + "lost".rjust(6)
            + "up".rjust(6)
            + "down".rjust(6)
            + "MRR before".rjust(12)
            + "after".rjust(8)
        )
        for item in rows:
            lines.append(
                f"    {item.label}".ljust(24)
                + str(item.n).rjust(5)
                + f"{item.before:.3f}".rjust(9)
                + f"{item.after:.3f}".rjust(8)
                + str(item.won).rjust(6)
                + str(item.lost).rjust(6)
                + str(item.up).rjust(6)
                + str(item.down).rjust(6)
                + f"{item.mrr_before:.3f}".rjust(12)
                + f"{item.mrr_after:.3f}".rjust(8)
            )
    return "\n".join(lines)
