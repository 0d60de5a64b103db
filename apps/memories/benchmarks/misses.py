"""What a missed evidence turn holds of the answer (`bench_misses`): a miss of the answer, or of a label only?

LoCoMo's R@k counts the turns its annotators marked as evidence. A list question ("What pets does Nate have?")
is answered by many turns, and the top k can hold the answer from turns nobody marked. This module reads the
reference answer's content words (those the question does not already say) and sorts each evidence turn the
top k misses into one of three:

- **covered**: it holds answer words, and every one of them is already in a top-k turn (the label is missed, the
  answer's words are not);
- **real**: it holds an answer word that no top-k turn holds (the answer is missed too);
- **inferential**: it holds no answer word (the answer is inferred from it: no verdict).

Word overlap is a proxy (a common answer word, "dog", can sit in a top-k turn that says something else), so the
same sorting over k random turns of the conversation is reported beside it as the proxy's floor. Evidence ids
the conversation does not hold (five in LoCoMo, e.g. `D30:05`) are left out, so R@k here can differ from
`bench_retrieval`'s in the third decimal. Pure: no database, no Django.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from apps.memories.benchmarks import datasets
from apps.memories.extraction.words import content_words

VERDICTS = ("covered", "real", "inferential")


def answer_words(question: datasets.Question) -> frozenset[str]:
    """The reference answer's content words that the question does not already say."""
    return content_words(question.answer) - content_words(question.text)


def top_turns(ranked: Sequence[str], k: int) -> list[str]:
    """The first k distinct turns of a ranking (a shared photo's `~media` message counts as its turn)."""
    top: list[str] = []
    for turn in ranked:
        base = turn.split("~", 1)[0]
        if base not in top:
            top.append(base)
            if len(top) == k:
                break
    return top


def judge(
    evidence: Sequence[str], pool: set[str], words_of: Mapping[str, frozenset[str]], answer: frozenset[str]
) -> dict[str, int]:
    """Each evidence turn outside `pool`, sorted by what it holds of the answer's words (see the module)."""
    held: set[str] = set()
    for turn in pool:
        held |= words_of.get(turn, frozenset()) & answer
    counts = dict.fromkeys(("missed", *VERDICTS), 0)
    for turn in evidence:
        if turn in pool:
            continue
        mine = words_of.get(turn, frozenset()) & answer
        counts["missed"] += 1
        counts["inferential" if not mine else "covered" if mine <= held else "real"] += 1
    return counts


@dataclass
class Row:
    questions: int = 0
    recall: float = 0.0  # summed over questions: R@k as the set scores it
    recall_covered: float = 0.0  # summed: R@k with the covered misses counted as found
    found: dict[str, float] = field(default_factory=lambda: dict.fromkeys(("missed", *VERDICTS), 0.0))
    chance: dict[str, float] = field(default_factory=lambda: dict.fromkeys(("missed", *VERDICTS), 0.0))


def table(
    dataset: datasets.Dataset, lines: Sequence[Mapping[str, Any]], *, k: int = 10, draws: int = 20, seed: int = 0
) -> dict[str, Row]:
    """Per category (and "overall"): R@k, R@k with covered misses counted, the misses sorted, and the same
    sorting for `draws` sets of k random turns of the conversation (mean). `lines`: one phase of a `--details`
    file (questions with evidence; those without score 1 and are left out, as they hold no miss)."""
    words_of = {
        f"{conversation.id}:{turn.id}": content_words(turn.text)
        for conversation in dataset.conversations
        for turn in conversation.turns
    }
    turn_ids = {
        conversation.id: sorted({turn.id for turn in conversation.turns}) for conversation in dataset.conversations
    }
    pending: dict[tuple[str, str], list[datasets.Question]] = {}
    for question in dataset.questions:
        pending.setdefault((question.conversation, question.text), []).append(question)
    rng = random.Random(seed)
    rows: dict[str, Row] = {}
    for line in lines:
        same = pending.get((line["conversation"], line["question"]))
        if not same:
            raise ValueError(f"the details name a question the set does not hold: {line['question']!r}")
        question = same.pop(0) if len(same) > 1 else same[0]
        conversation = question.conversation
        evidence = [f"{conversation}:{turn}" for turn in question.evidence if f"{conversation}:{turn}" in words_of]
        if not evidence:
            continue
        answer = answer_words(question)
        pool = {f"{conversation}:{turn}" for turn in top_turns(line["ranked"], k)}
        found = judge(evidence, pool, words_of, answer)
        for row in (rows.setdefault(question.category, Row()), rows.setdefault("overall", Row())):
            row.questions += 1
            row.recall += 1 - found["missed"] / len(evidence)
            row.recall_covered += 1 - (found["missed"] - found["covered"]) / len(evidence)
            for key, value in found.items():
                row.found[key] += value
        for _ in range(draws):
            chance_pool = {
                f"{conversation}:{turn}"
                for turn in rng.sample(turn_ids[conversation], min(k, len(turn_ids[conversation])))
            }
            for key, value in judge(evidence, chance_pool, words_of, answer).items():
                for row in (rows[question.category], rows["overall"]):
                    row.chance[key] += value / draws
    order = [category for category in dataset.categories if category in rows] + ["overall"]
    return {category: rows[category] for category in order}


def format_table(rows: Mapping[str, Row], *, k: int) -> list[str]:
    lines = [
        f"{'category':<14}{'n':>5}{f'R@{k}':>8}{'+covered':>10}{'missed':>8}{'covered':>9}{'real':>7}"
        f"{'inferential':>13}   chance: {'missed':>7}{'covered':>9}{'real':>7}{'inferential':>13}"
    ]
    for category, row in rows.items():
        n = row.questions
        lines.append(
            f"{category:<14}{n:>5}{row.recall / n:>8.3f}{row.recall_covered / n:>10.3f}"
            + "".join(
                f"{row.found[key]:>{width}.0f}"
                for key, width in (("missed", 8), ("covered", 9), ("real", 7), ("inferential", 13))
            )
            + "           "
            + "".join(
                f"{row.chance[key]:>{width}.0f}"
                for key, width in (("missed", 7), ("covered", 9), ("real", 7), ("inferential", 13))
            )
        )
    return lines
