"""The other spellings of a word in chat: abbreviations ("bday", "tmrw", "pic", "bf", "fave", "convo") and
British and American spellings ("favourite", "colour", "theatre", "organise").

People type a chat the way they type: "had the best bday ever", "my bf", "fave movie", "sent u a pic". A question
about it is asked in full words ("What did Mel do for her birthday?"), and neither PostgreSQL's `english` stemmer
nor the embedder joins the two: "bday" and "birthday" share no lexeme (BM25 and the keyword source miss the
turn), and the embedder's cosine drops by 0.01–0.13 for such a pair (docs/benchmarks.md, Session 34). The same
holds between British and American spellings, in either direction.

A query that holds one spelling of such a word also searches the others, and all the spellings of one word count
as one term — the treatment an irregular verb's forms get (retrieval/inflections.py: `grouped_df`). General
English chat usage, not a dataset's phrasing. Left out: abbreviations that are mostly another word ("def", "doc",
"vet", "bro", "min", "mo", "sec"), stop words ("cuz", "b4", "pls") and synonyms ("photo" for "picture", "mother"
for "mom"), which are other words, not other spellings.

Pure (no Django).
"""

from __future__ import annotations

import re

# one word's spellings, the full word first
_SPELLINGS = """
birthday bday | tomorrow tmrw tmr tmw tmrow | tonight tonite | picture pic pics | video vid vids
boyfriend bf | girlfriend gf | favorite favourite fave fav | people ppl | weekend wknd | week wk wks
year yr yrs | hour hours hr hrs | minutes mins | university uni | conversation convo | vacation vacay
holiday holidays hols | message msg | text txt | appointment appt | meeting mtg | homework hw
probably prolly | definitely defo | mom mum mommy
color colour | theater theatre | center centre | neighbor neighbour | gray grey | jewelry jewellery
cozy cosy | pajamas pyjamas | organize organise | realize realise | apologize apologise | practice practise
"""


def _table() -> dict[str, tuple[str, ...]]:
    spellings_of: dict[str, tuple[str, ...]] = {}
    for entry in re.split(r"[|\n]", _SPELLINGS):
        words = tuple(dict.fromkeys(entry.split()))
        if len(words) < 2:
            continue
        for word in words:
            spellings_of[word] = words
    return spellings_of


SPELLINGS = _table()
_WORD = re.compile(r"[a-z]+")


def spelling_forms(query: str) -> list[tuple[str, ...]]:
    """The words of the query that have other spellings, each as all of them ("her bday?" → [("birthday",
    "bday")]), in the order met."""
    seen: dict[tuple[str, ...], None] = {}
    for word in _WORD.findall(query.lower()):
        spellings = SPELLINGS.get(word)
        if spellings is not None:
            seen.setdefault(spellings, None)
    return list(seen)
