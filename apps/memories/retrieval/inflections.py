"""The forms of an English irregular verb, which no stemmer joins: a question says "Where did she go?", "What
did he buy?", "Has she ever won?"; the turn that answers says "I went", "I bought", "we won". PostgreSQL's
`english` stemmer (Snowball) reduces "painted" to "paint" but leaves "went", "bought" and "won" apart from
"go", "buy" and "win", so keyword relevance (BM25) and the keyword source missed the answer's verb.

A query that holds one form of such a verb also searches its other forms (`verb_forms`), and all the forms of
one verb count as one term: each takes the document frequency of the whole group (`term_groups.grouped_df`), so "went"
weighs what "go" does and a turn that says either matches the question's verb alike. English grammar, not a
dataset's phrasing: the question's "did" + base form against the answer's past tense is how English asks
about the past. Measured in docs/benchmarks.md ("Session 26").

Forms that are mostly another word are left out ("saw", "fell": AMBIGUOUS), and so are verbs whose
distinctive form is one ("find"/"found", "leave"/"left", "feel"/"felt", "rise"/"rose", "bite"/"bit", "lie"/"lay":
"a bit of a snag" is no form of "bite"), verbs whose forms are stop words ("be", "have", "do") and verbs whose
forms are all alike ("put", "cut", "read").

Pure (no Django).
"""

from __future__ import annotations

from apps.memories.retrieval import term_groups

# base, past, past participle
_IRREGULAR = """
awake awoke awoken | beat beat beaten | become became become | begin began begun | bend bent bent
bleed bled bled | blow blew blown | break broke broken | breed bred bred | bring brought brought
build built built | burn burnt burnt | buy bought bought | catch caught caught | choose chose chosen
come came come | creep crept crept | deal dealt dealt | dig dug dug | draw drew drawn | dream dreamt dreamt
drink drank drunk | drive drove driven | eat ate eaten | fall fell fallen | fight fought fought
flee fled fled | forbid forbade forbidden | forget forgot forgotten
forgive forgave forgiven | freeze froze frozen | get got gotten | give gave given | go went gone
grow grew grown | hear heard heard | hide hid hidden | hold held held | keep kept kept | kneel knelt knelt
know knew known | leap leapt leapt | learn learnt learnt | lend lent lent | lose lost lost
make made made | meet met met | pay paid paid | prove proved proven | ride rode ridden | run ran run
say said said | see saw seen | seek sought sought | sell sold sold | send sent sent | shake shook shaken
shine shone shone | show showed shown | shrink shrank shrunk | sing sang sung | sit sat sat | sleep slept slept
slide slid slid | speak spoke spoken | spend spent spent | spin spun spun | stand stood stood
sting stung stung | stink stank stunk | strive strove striven | swear swore sworn | sweep swept swept
swim swam swum | swing swung swung | take took taken | teach taught taught | tell told told
think thought thought | throw threw thrown | understand understood understood | wake woke woken | wear wore worn
weep wept wept | win won won | withdraw withdrew withdrawn | write wrote written
"""

# forms that are mostly another word in conversation (a noun, an adjective, a direction, another verb's form)
AMBIGUOUS = frozenset({"fell", "saw"})


FORMS = term_groups.table(_IRREGULAR, left_out=AMBIGUOUS)


def verb_forms(query: str) -> list[tuple[str, ...]]:
    """The irregular verbs the query uses, each as all its forms ("Where did she go?" → [("go", "went",
    "gone")]), in the order met."""
    return term_groups.groups_met(query, FORMS)
