"""A standing instruction goes first when the question meets its condition.

"Always use split-screen mode for editing when I ask about draft revisions" is stored as a preference with its
condition, what the user talks about when it applies ("draft revisions", `extraction.rules.instruction_condition`),
whose embedding is the memory's context embedding (`store.writing.with_conditions`). A question about drafts
("How should I approach editing my draft?") is close to the condition (cosine 0.68), not to the instruction's own
text, which is about what the assistant is to do (docs/benchmarks.md, "Session 29", for BEAM's instruction
questions).

The candidate statement finds the scope's instructions closest to the query by their condition (the
`condition` source, a partial index on the few memories that have one), and the cosine of the query with the
condition is the memory's `context_cosine`. Where it reaches CONDITION_MET the condition is met: the
instruction's score is raised to the best score of the query's candidates, so it is among the first results and
the context (which puts preferences first) hands it to the LLM whenever it applies. An instruction whose
condition is not met keeps its score. A memory without a condition is never touched: a scope without standing
instructions ranks exactly as before.

CONDITION_MET was set before measuring, at the cosine where all-MiniLM-L6-v2 puts two short texts on one topic
(the condition is a few words); the end-to-end figures at 0.4 and 0.6 are in docs/benchmarks.md beside it.

Pure (no Django).
"""

from __future__ import annotations

from collections.abc import Sequence

CONDITION_MET = 0.5
CONDITION_CANDIDATES = 5  # the scope's instructions read per query, closest condition first


def is_met(condition: str, condition_cosine: float) -> bool:
    """Whether a memory is a standing instruction whose condition the query meets."""
    return bool(condition) and condition_cosine >= CONDITION_MET


def raised(scores: Sequence[float], met: Sequence[bool]) -> list[float]:
    """Each candidate's score, an instruction whose condition is met raised to the best score of the query's
    candidates (it ties with the first and the rank order's next key, the relevance, orders the tie)."""
    if not any(met):
        return list(scores)
    best = max(scores)
    return [max(score, best) if is_on else score for score, is_on in zip(scores, met, strict=True)]
