"""The words that carry a line's content, for the rules that compare or index lines: English function words
out, lower-cased, a plural or third-person `s` off, negation kept as the marker `not`. Shared by extraction (the
words of a question a reply answers, extraction/answers.py) and by retrieval and context assembly (does one line
say what another already says, retrieval/overlap.py).

Pure (no Django).
"""

from __future__ import annotations

import re

STOPWORDS = frozenset(  # English function words (also the summariser's)
    [
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "also",
        "and",
        "any",
        "are",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "can",
        "could",
        "did",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "into",
        "its",
        "itself",
        "just",
        "like",
        "more",
        "most",
        "much",
        "myself",
        "nor",
        "not",
        "now",
        "off",
        "once",
        "only",
        "other",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "really",
        "same",
        "she",
        "should",
        "some",
        "still",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "too",
        "under",
        "until",
        "very",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yeah",
        "okay",
        "today",
        "yesterday",
        "tomorrow",
        "thing",
        "things",
        "think",
        "know",
        "going",
        "get",
        "got",
        "went",
        "said",
        "told",
        "want",
        "wanted",
        "lot",
        "lots",
        "maybe",
        "something",
        "anything",
        "well",
        "good",
        "great",
        "thanks",
        "thank",
        "sure",
        "right",
        "gonna",
        "one",
        "two",
        "time",
        "day",
        "days",
        "week",
        "year",
    ]
)

_WORD = re.compile(r"[a-z0-9][a-z0-9'.-]*")
_NEGATION = frozenset({"not", "never", "no", "nor", "without"})
_EXTRA_STOPWORDS = frozenset(
    {"i'm", "i've", "i'd", "i'll", "got", "get", "really", "just", "now", "also", "named", "called"}
)


def _base(word: str) -> str:
    word = word.strip("'-")
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def content_words(text: str) -> frozenset[str]:
    """The words that carry a line's content: lower-cased, stop words out, a plural or third-person `s` off;
    negation kept as the marker `not`."""
    words: set[str] = set()
    for word in (found.rstrip(".-'") for found in _WORD.findall(text.lower())):
        if not word:
            continue
        if word in _NEGATION or word.endswith("n't"):
            words.add("not")
        elif word[0].isdigit():
            words.add(word)  # numbers are content: 500 visits is not 800 visits
        elif word not in STOPWORDS and word not in _EXTRA_STOPWORDS and len(word) > 2:
            words.add(_base(word))
    return frozenset(words)
