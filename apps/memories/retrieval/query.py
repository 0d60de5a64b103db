"""What a search knows before its candidates: the scope it searches, the query's terms, the scope's statistics.

- `Scope`: the memories searched (a contact's or the tenant's brain, some memory types, keyed records under a
  prefix) as SQL with named parameters, and its match against the scoped full-text index.
- `query_terms` — one statement: the query's lexemes (PostgreSQL's own `english` parser and stemmer) and the
  scope's entities the query names (every word and word pair is a possible slug, `query_slugs`), each with a
  capped count of its memory links.
- `scope_stats` — the document frequencies BM25 needs: the scope's lexicon in Redis (one HMGET,
  retrieval/lexicon.py), or counted exactly in one SQL aggregate for a small scope.
- `discriminating`: the named entities minus the ubiquitous ones (the ubiquity rule below), the ones the
  entity source searches and the entity signal counts.

The candidate statement (candidates.py) reads all of them; search.py assembles the search.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.utils.text import slugify

from apps.contacts.models import Contact
from apps.core.rows import CUSTOM_PLAN, bound_cursor
from apps.memories.models.memory import scope_token
from apps.memories.retrieval import inflections, spellings, term_groups
from apps.memories.retrieval.lexicon import (
    LEXICON_FROM,
    Stats,
    current_scope_sql,
    scope_lexicon_get,
    scope_lexicon_refresh_queue,
)
from apps.memories.retrieval.types import EntityRef
from apps.tenants.models import Tenant

# An entity named in the query that is linked to more than a quarter of a scope of 40+ memories, or to
# UBIQUITY_LINK_CAP of them (where counting stops), is ignored like a stop word: the contact's own name, the
# two speakers of a long chat, a friend named in hundreds of memories. The cap bounds the heap visits of the
# link count and of the entity source (top 50 by importance of all linked memories). 300 against 2,000, one
# A/B run at 100k (entities linked as ingest links them): GET /context p50 27.1 -> 20.3 ms, p95 34.0 -> 25.0
# ms. LoCoMo cannot change: its scopes hold < 1,200 memories, where 300 links are over a quarter anyway.
UBIQUITOUS_ENTITY_SHARE = 0.25
UBIQUITY_MIN_SCOPE = 40
UBIQUITY_LINK_CAP = 300


_WORD = re.compile(r"[\w'-]+", re.UNICODE)


def query_slugs(query: str) -> set[str]:
    """Slugs an entity named in the query could have: every word and every pair of adjacent words."""
    words = [re.sub(r"['’]s$", "", word).strip("'-") for word in _WORD.findall(query.replace("’", "'"))]
    words = [word for word in words if len(word) > 1]
    slugs = {slugify(word) for word in words}
    slugs |= {slugify(f"{first} {second}") for first, second in itertools.pairwise(words)}
    return {slug for slug in slugs if slug}


@dataclass(frozen=True)
class Scope:
    tenant: Tenant
    contact: Contact | None
    memory_types: tuple[str, ...]
    include_compressed: bool
    key_prefix: str | None = None  # None: every memory; a string: only keyed records whose key starts with it

    @property
    def contact_id(self) -> Any | None:
        return self.contact.pk if self.contact is not None else None

    @property
    def narrowed(self) -> bool:
        """Some of its owner's memories only (some types, or keyed records): how many it holds says little of
        how many its owner holds, which is what a statement's plan must weigh."""
        return bool(self.memory_types) or self.key_prefix is not None

    def sql(self, alias: str = "m", *, owner: bool = True) -> tuple[str, dict[str, Any]]:
        """The scope as SQL with named parameters (one set of values however often a statement repeats it);
        `owner=False` for a statement whose full-text match names the scope itself (`matching`)."""
        sql, params = current_scope_sql(tenant_id=self.tenant.pk, contact_id=self.contact_id, alias=alias, owner=owner)
        if not self.include_compressed:
            sql += f" AND NOT {alias}.is_compressed"
        if self.memory_types:
            sql += f" AND {alias}.memory_type = ANY(%(scope_types)s)"
            params["scope_types"] = list(self.memory_types)
        if self.key_prefix is not None:
            sql += f" AND {alias}.key <> '' AND starts_with({alias}.key, %(scope_key_prefix)s)"
            params["scope_key_prefix"] = self.key_prefix
        params["scope_token"] = scope_token(tenant_id=self.tenant.pk, contact_id=self.contact_id)
        return sql, params

    def matching(self, tsquery: str) -> str:
        """Memory `m` belongs to this scope and its words match `tsquery` (SQL of a tsquery): one scan of the
        scoped full-text index, the scope's own token (`%(scope_token)s`, in `sql()`'s parameters) AND-ed
        with the words."""
        return f"m.scoped_search_vector @@ (%(scope_token)s::tsquery && {tsquery})"


@dataclass(frozen=True)
class NamedEntity:
    entity: EntityRef
    linked: int  # memory links (to the scope's memories of the searched types), counted up to UBIQUITY_LINK_CAP
    is_speaker: bool = False  # a speaker of the scope's conversations (ingest marks their entity)
    aliases: tuple[str, ...] = ()  # the other names it goes by (slugs), one of which the query may use


@dataclass(frozen=True)
class Terms:
    lexemes: list[str]  # the query's, and the other forms of its irregular verbs
    named: list[NamedEntity]
    # the lexemes of each irregular verb the query uses, all its forms ("go" → go, went, gone): one term for
    # BM25 (scope_stats gives each the group's document frequency; retrieval/inflections.py)
    verbs: list[tuple[str, ...]] = field(default_factory=list)
    # the lexemes of each word of the query that chat spells other ways ("birthday" → birthday, bday): one term
    # the same way (retrieval/spellings.py)
    spellings: list[tuple[str, ...]] = field(default_factory=list)

    @property
    def groups(self) -> list[tuple[str, ...]]:
        """Every group of lexemes that counts as one term: the verbs' forms and the words' spellings."""
        return [*self.verbs, *self.spellings]


def query_terms(scope: Scope, query: str) -> Terms:
    """The query's lexemes and the scope's entities it names (every word and word pair is a possible slug),
    each with its memory links counted up to UBIQUITY_LINK_CAP: one statement. The links are counted from
    the link table alone (each link's row is read for the tenant its policy tests, migration 0025),
    superseded or deleted memories included: checking each linked memory is current was a visit to the
    memory per link (query terms 2.3 -> 0.9 ms p50 at 100k, same A/B run). The forms of
    the query's irregular verbs and the other spellings of its words are stemmed in the same statement and
    join its lexemes ("go" → "went", "gone": retrieval/inflections.py; "birthday" → "bday":
    retrieval/spellings.py)."""
    verb_words = inflections.verb_forms(query)
    group_words = [*verb_words, *spellings.spelling_forms(query)]
    scope_sql, params = scope.sql()
    contact_clause = "e.contact_id = %(scope_contact)s" if scope.contact is not None else "e.contact_id IS NULL"
    # a search restricted to some memory types counts only the links to those (a few facts among hundreds
    # of episodes must not make an entity look ubiquitous): the exact count, a heap visit per link
    current = f"JOIN memories_memory m ON m.id = me.memory_id WHERE {scope_sql} AND " if scope.narrowed else "WHERE "
    # with the join, how the links are counted depends on the scope's size: planned for its own parameters
    # (a generic plan of it made GET /context 100-300 ms at 100k memories, docs/benchmarks.md "Session 16")
    with bound_cursor(CUSTOM_PLAN if scope.narrowed else None) as cursor:
        cursor.execute(
            "SELECT q.lexemes, v.forms, e.id, e.entity_type, e.slug, e.linked, e.is_speaker, e.aliases "
            "FROM (SELECT coalesce(array_agg(lexeme), '{}') AS lexemes "
            "      FROM unnest(to_tsvector('english', %(query)s))) q "
            # each group's words stemmed (a verb's forms, then a word's spellings), as '<group number> <lexeme>'
            "CROSS JOIN (SELECT coalesce(array_agg(g.number || ' ' || l.lexeme), '{}') AS forms "
            "      FROM unnest(%(verbs)s::text[]) WITH ORDINALITY g(words, number) "
            "      CROSS JOIN LATERAL unnest(to_tsvector('english', g.words)) l) v "
            "LEFT JOIN LATERAL (SELECT e.id, e.entity_type, e.slug, "
            "  (SELECT count(*) FROM (SELECT 1 FROM memories_memoryentity me "
            f"     {current}me.entity_id = e.id LIMIT %(link_cap)s) l) AS linked, "
            "  coalesce(e.metadata->>'role', '') = 'speaker' AS is_speaker, e.aliases "
            f"  FROM entities_entity e WHERE e.tenant_id = %(scope_tenant)s AND {contact_clause} "
            "   AND (e.slug = ANY(%(slugs)s) OR e.aliases && %(slugs)s::varchar[]) "
            "   AND NOT e.metadata ? 'not_a_name') e ON true",  # entities.models.NOT_A_NAME
            {
                **params,
                "query": query,
                "verbs": [" ".join(words) for words in group_words],
                "link_cap": UBIQUITY_LINK_CAP,
                "slugs": sorted(query_slugs(query)),
            },
        )
        rows = cursor.fetchall()
    stemmed: dict[int, list[str]] = {}
    for item in rows[0][1] if rows else []:
        number, lexeme = item.split(" ", 1)
        stemmed.setdefault(int(number), []).append(lexeme)
    # two spellings that stem alike ("hours", "hour") are one lexeme: only a group of two or more is one
    groups = {number: tuple(dict.fromkeys(group)) for number, group in stemmed.items()}
    groups = {number: group for number, group in groups.items() if len(group) > 1}
    verbs = [group for number, group in sorted(groups.items()) if number <= len(verb_words)]
    spelled = [group for number, group in sorted(groups.items()) if number > len(verb_words)]
    lexemes = sorted(
        {lexeme for lexeme in (rows[0][0] if rows else []) if lexeme}
        | {lexeme for group in groups.values() for lexeme in group}
    )
    named = [
        NamedEntity(
            EntityRef(id=row[2], entity_type=row[3], slug=row[4]),
            linked=int(row[5]),
            is_speaker=bool(row[6]),
            aliases=tuple(row[7] or ()),
        )
        for row in rows
        if row[2] is not None
    ]
    return Terms(lexemes=lexemes, named=named, verbs=verbs, spellings=spelled)


def quoted_lexemes(lexemes: Sequence[str]) -> list[str]:
    # lexemes come from to_tsvector: quote each so ':' or '&' inside can never change the query
    return ["'" + lexeme.replace("'", "''") + "'" for lexeme in lexemes]


def scope_stats(scope: Scope, lexemes: list[str], *, groups: Sequence[Sequence[str]] = ()) -> Stats:
    """Scope size, average tsvector lengths and the document frequency of each query lexeme: from the
    scope's lexicon when a worker has built one (retrieval.lexicon), else counted in one SQL statement. The
    lexemes of one group (`groups`, Terms.groups: a verb's forms, a word's spellings) each take the frequency
    of all of them: one term."""
    stats = _scope_stats(scope, lexemes)
    if not groups:
        return stats
    return dataclasses.replace(
        stats,
        search_df=term_groups.grouped_df(stats.search_df, groups),
        context_df=term_groups.grouped_df(stats.context_df, groups),
    )


def _scope_stats(scope: Scope, lexemes: list[str]) -> Stats:
    lexicon = scope_lexicon_get(tenant_id=scope.tenant.pk, contact_id=scope.contact_id, lexemes=lexemes)
    if lexicon is not None:
        return lexicon
    # one scan of the scope (already needed for its size and average lengths) counts every lexeme too: a
    # plain aggregate, cheap to plan, where a GIN count per lexeme cost ~1 ms of planning alone. Each row's
    # two tsvectors are read out of TOAST once (`|| ''`, in a subquery OFFSET 0 keeps from being flattened
    # into the filters): each `@@` of the stored column fetched and decompressed it again, once per query
    # word — a scope of long messages (BEAM's chunks of assistant replies) took 19.8 ms, now 11.4 ms (median,
    # same rows and counts; short turns 2.0 -> 1.7 ms; docs/benchmarks.md, "Session 23")
    scope_sql, params = scope.sql()
    params |= {f"lexeme_{index}": lexeme for index, lexeme in enumerate(quoted_lexemes(lexemes))}
    filters = [
        f"count(*) FILTER (WHERE s.{column} @@ %(lexeme_{index})s::tsquery)"
        for column in ("search_vector", "context_vector")
        for index in range(len(lexemes))
    ]
    # a narrowed scope's few rows may sit among many of its owner's: planned for its own parameters, as the
    # candidate statement (retrieval/vector_effort.custom_plan)
    with bound_cursor(CUSTOM_PLAN if scope.narrowed else None) as cursor:
        cursor.execute(
            "SELECT count(*), coalesce(avg(length(s.search_vector)), 0), coalesce(avg(length(s.context_vector)), 0)"
            + "".join(f", {count}" for count in filters)
            + " FROM (SELECT m.search_vector || ''::tsvector AS search_vector, "
            "m.context_vector || ''::tsvector AS context_vector "
            f"FROM memories_memory m WHERE {scope_sql} OFFSET 0) s",
            params,
        )
        row = cursor.fetchone()
    assert row is not None
    total = int(row[0])
    if total >= LEXICON_FROM:  # large enough to be worth a lexicon: a worker builds it for the next searches
        scope_lexicon_refresh_queue(tenant_id=scope.tenant.pk, contact_id=scope.contact_id)
    counts = [int(value) for value in row[3:]]
    return Stats(
        total=total,
        average_search_length=float(row[1]),
        average_context_length=float(row[2]),
        search_df=dict(zip(lexemes, counts[: len(lexemes)], strict=True)),
        context_df=dict(zip(lexemes, counts[len(lexemes) :], strict=True)),
    )


def discriminating(named: list[NamedEntity], *, total: int) -> list[EntityRef]:
    """Entities named in the query, minus the ubiquitous ones: like stop words, they match everything and
    tell nothing about this question."""
    if total < UBIQUITY_MIN_SCOPE:
        return [item.entity for item in named]
    return [
        item.entity
        for item in named
        if item.linked <= UBIQUITOUS_ENTITY_SHARE * total and item.linked < UBIQUITY_LINK_CAP
    ]


def surface_names(query: str, named: NamedEntity) -> list[str]:
    """The words of `query` that name the entity: its slug or one of its aliases."""
    names = {named.entity.slug, *named.aliases}
    return [word for word in _WORD.findall(query.replace("’", "'")) if slugify(re.sub(r"['’]s$", "", word)) in names]
