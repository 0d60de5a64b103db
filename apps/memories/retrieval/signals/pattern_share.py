"""A pattern answers a query after its episodes: a pattern memory's score × PATTERN_FACTOR, unless the query asks
for a summary.

Consolidation sums five or more episodes of one theme up in a pattern ("Calvin & Dave repeatedly talk about
music, stage, guitar: 52 mentions in 18 conversations…", `lifecycle/compression.py`), whose sources are all of
theirs. A query that asks something specific ("In what order did I set up the invitations?") is answered by
the episodes, which stay searchable; the pattern matches the same words and, ranked among them, takes a slot
with the sources of every episode it sums up — on BEAM's settled store a pattern was in the top 10 of 165 of
the 80 event-ordering and multi-session questions' 800 slots. Halving its score lets the episodes go first and
keeps the pattern where nothing else matches as well. A request for a summary (`chunk_share.asks_for_summary`)
is what a pattern is for: it keeps its whole score.

A session's summary is the same kind of memory (session 38): compression writes one for each of the oldest
sessions past the newest ten (`sessions_compress`, half of the excess at each 6-hourly run, so a contact with
30 sessions reaches its steady state after five runs), a fact whose sources are every turn of its session, and
its episodes stay searchable. Counted whole, the summaries of a LoCoMo store at that steady state ranked among
the episodes they sum up and R@10 fell from 0.8487 (one run, what the end-to-end "settled" measured) to 0.8414;
counted as a pattern, see docs/benchmarks.md "Session 38".

How it was set (docs/benchmarks.md, "Session 27"): in process on the settled stores of an end-to-end run, 0.5,
0.25 and 0 gave the same LoCoMo tune half (0.8382 → 0.8367 from 1.0: a question and a half) and the same report
half (0.8239 → 0.8303); BEAM 0.7268 → 0.7718 / 0.7746 / 0.7746. The mildest was taken.

Pure (no Django).
"""

from __future__ import annotations

from apps.memories.scoring import PATTERN

PATTERN_FACTOR = 0.5


def factor(memory_type: str, *, summary: bool = False, session_summary: bool = False) -> float:
    """What a memory's score is multiplied by for summing others up — a pattern, or a session's summary
    (`session_summary`) — 1.0 for any other memory, or for a request for a summary."""
    return PATTERN_FACTOR if (memory_type == PATTERN or session_summary) and not summary else 1.0
