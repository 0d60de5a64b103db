"""A request for advice gets the asker's preferences that fit it first.

"I'm planning my editing schedule for the week. How would you suggest breaking up my work sessions?" is
answered well only with "Prefers editing in short bursts, 30 minutes at a time" in the context. The question
shares few words with the preference and its cosine to it (0.53) is below that of the many turns in which the user
talked about their schedule, so the preference ranked 47th; the context, which puts preferences first, never
saw it. A question that asks the assistant for a suggestion, a recommendation, advice, tips, ideas or options,
or how the asker should do something (`asks_for_advice`), is where what the user prefers matters most: the
`preference` candidate source reads the scope's ADVICE_PREFERENCES preferences closest to the query, and each
whose cosine reaches ADVICE_FIT is raised to the best score of the query's candidates (`fitting`), as a
standing instruction whose condition is met is (signals/condition.py, whose `raised` both use).

Only a request addressed to the assistant counts: it names the asker or the assistant (I, me, my, we, us, our, you) and
does not report advice already given ("What did you recommend…", "What advice did Tim give John?"): a question
about what someone suggested is answered by the turn where they did, not by a preference. No LoCoMo question
is such a request (they ask about two people in the third person), so LoCoMo ranks as before by construction.
Instructions with a condition are left to signals/condition.py.

ADVICE_FIT was set before measuring, on made-up pairs of a request and a preference (docs/benchmarks.md,
"Session 30"): a request and a preference on its topic ("Can you recommend a laptop for me?", "Prefers
lightweight laptops with long battery life") had cosine 0.30–0.61, median 0.39, a request and an unrelated
preference median 0.12. ADVICE_PREFERENCES (2) was chosen on BEAM's chats 1–10 and reported on 11–20, the
split session 22 used for the chunk share.

Pure (no Django).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

ADVICE_FIT = 0.35
ADVICE_PREFERENCES = 2  # the scope's preferences read per request for advice, closest first; at most this many raised

_ADVICE = re.compile(
    r"\b(?:suggest|suggestions?|recommend|recommendations?|advice|advise|tips|ideas|options"
    r"|how\s+(?:should|would|could|can|do)\s+(?:i|we)|what\s+(?:should|would|could)\s+(?:i|we)"
    r"|help\s+me\s+(?:plan|choose|pick|find|decide|organi[sz]e|set\s+up|figure\s+out|structure|prepare|create"
    r"|build|select))\b",
    re.IGNORECASE,
)
# the asker or the assistant is named: the request is theirs, not a question about what someone advised
_ASKER = re.compile(r"\b(?:i|me|my|we|us|our|you)\b", re.IGNORECASE)
# advice already given: "How did you recommend …", "what you suggested"
_REPORTED = re.compile(r"\b(?:did|had)\s+you\b|\byou\s+(?:suggested|recommended|advised|gave)\b", re.IGNORECASE)


def asks_for_advice(query: str) -> bool:
    """Does the query ask the assistant for a suggestion, a recommendation, advice or how to do something?"""
    return bool(_ADVICE.search(query)) and bool(_ASKER.search(query)) and not _REPORTED.search(query)


def fitting(cosines: Sequence[float], preference: Sequence[bool], *, advice: bool) -> list[bool]:
    """Which candidates are raised for a request for advice: the ADVICE_PREFERENCES preferences closest to the
    query (`preference`: a preference without a condition) whose cosine reaches ADVICE_FIT; none when the
    query does not ask for advice."""
    fits = [False] * len(cosines)
    if not advice:
        return fits
    preferences = [index for index, is_preference in enumerate(preference) if is_preference]
    closest = sorted(preferences, key=lambda index: -cosines[index])
    for index in closest[:ADVICE_PREFERENCES]:
        fits[index] = cosines[index] >= ADVICE_FIT
    return fits
