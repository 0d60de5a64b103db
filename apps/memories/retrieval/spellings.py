"""The other spellings of a word in chat: abbreviations ("bday", "tmrw", "pic", "bf", "fave", "convo") and
British and American spellings ("favourite", "colour", "theatre", "organise").

People type a chat the way they type: "had the best bday ever", "my bf", "fave movie", "sent u a pic". A question
about it is asked in full words ("What did Mel do for her birthday?"), and neither PostgreSQL's `english` stemmer
nor the embedder joins the two: "bday" and "birthday" share no lexeme (BM25 and the keyword source miss the
turn), and the embedder's cosine drops by 0.01–0.13 for such a pair (docs/benchmarks.md, Session 34). The same
holds between British and American spellings, in either direction.

A query that holds one spelling of such a word also searches the others, and all the spellings of one word count
as one term — the treatment an irregular verb's forms get (retrieval/inflections.py, term_groups.py). General
English chat usage, not a dataset's phrasing. Left out: abbreviations that are mostly another word ("def", "doc",
"vet", "bro", "min", "mo", "sec"), stop words ("cuz", "b4", "pls") and synonyms ("photo" for "picture", "mother"
for "mom"), which are other words, not other spellings.

Pure (no Django).
"""

from __future__ import annotations

from apps.memories.retrieval import term_groups

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


SPELLINGS = term_groups.table(_SPELLINGS)


def spelling_forms(query: str) -> list[tuple[str, ...]]:
    """The words of the query that have other spellings, each as all of them ("her bday?" → [("birthday",
    "bday")]), in the order met."""
    return term_groups.groups_met(query, SPELLINGS)
