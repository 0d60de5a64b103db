from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from django.db.models import F, Q
from django.utils import timezone

from apps.contacts.models import Contact
from apps.entities.models import NOT_A_NAME, Entity
from apps.tenants.models import Tenant


class EntityLike(Protocol):
    @property
    def entity_type(self) -> str: ...
    @property
    def slug(self) -> str: ...
    @property
    def display_name(self) -> str: ...
    @property
    def metadata(self) -> Mapping[str, Any]: ...


GENERIC_TYPE = "name"  # a capitalised name whose kind is not known yet


def _is_not_a_name(entity: Entity) -> bool:
    return entity.entity_type == GENERIC_TYPE and NOT_A_NAME in entity.metadata


def entity_upsert_many(
    *, tenant: Tenant, contact: Contact | None, entities: Sequence[EntityLike], at: datetime
) -> dict[str, Entity]:
    """Link mentions to the scope's existing entities, creating the missing ones. Returns {mention key: Entity}.

    A bare name ("Bruno") resolves to the typed entity with the same slug (`pet:bruno`) when one exists;
    a typed mention upgrades an earlier bare `name:` entity in place, so its links are kept. Metadata learned
    later (a species, a relation) is merged in. Each mention counts (a batch of memories naming an entity
    three times adds three). A few queries whatever the number of mentions.
    """
    wanted: dict[str, EntityLike] = {}
    mentions: Counter[str] = Counter()
    for entity in entities:
        key = f"{entity.entity_type}:{entity.slug}"
        wanted.setdefault(key, entity)
        mentions[key] += 1
    if not wanted:
        return {}
    # a bare name and a typed mention of the same slug in one call: the name is the typed entity (as when
    # the typed mention had come first)
    typed_wanted = {ref.slug: key for key, ref in wanted.items() if ref.entity_type != GENERIC_TYPE}
    slugs = {entity.slug for entity in wanted.values()}
    by_slug: dict[str, list[Entity]] = {}
    for entity in Entity.objects.filter(tenant=tenant, contact=contact, slug__in=slugs):
        by_slug.setdefault(entity.slug, []).append(entity)

    resolved: dict[str, Entity] = {}
    to_create: dict[str, Entity] = {}
    for key, ref in wanted.items():
        existing = by_slug.get(ref.slug, [])
        exact = next((entity for entity in existing if entity.entity_type == ref.entity_type), None)
        typed = next((entity for entity in existing if entity.entity_type != GENERIC_TYPE), None)
        generic = next((entity for entity in existing if entity.entity_type == GENERIC_TYPE), None)
        if exact is not None:
            resolved[key] = exact
        elif ref.entity_type == GENERIC_TYPE and typed is not None:
            resolved[key] = typed
        elif ref.entity_type == GENERIC_TYPE and ref.slug in typed_wanted:
            continue  # resolved below, once the typed entity exists
        elif ref.entity_type != GENERIC_TYPE and generic is not None:
            generic.entity_type = ref.entity_type  # the bare name turned out to be a pet, a person, ...
            generic.metadata.pop(NOT_A_NAME, None)  # a typed mention says it is a name after all
            generic.save(update_fields=["entity_type", "metadata", "updated_at"])
            resolved[key] = generic
        else:
            to_create[key] = Entity(
                tenant=tenant,
                contact=contact,
                entity_type=ref.entity_type,
                slug=ref.slug,
                display_name=ref.display_name[:200],
                metadata=dict(ref.metadata),
                last_seen_at=at,
                mention_count=0,
            )
    if to_create:
        Entity.objects.bulk_create(list(to_create.values()), ignore_conflicts=True)
        created = Entity.objects.filter(tenant=tenant, contact=contact, slug__in={e.slug for e in to_create.values()})
        by_key = {entity.key: entity for entity in created}
        resolved.update({key: by_key[key] for key in to_create if key in by_key})
    for key, ref in wanted.items():
        if key not in resolved and typed_wanted.get(ref.slug) in resolved:
            resolved[key] = resolved[typed_wanted[ref.slug]]
    resolved = {key: entity for key, entity in resolved.items() if not _is_not_a_name(entity)}

    counts: Counter[Any] = Counter()
    for key, entity in resolved.items():
        counts[entity.pk] += mentions[key]
    by_count: dict[int, list[Any]] = {}
    for entity_id, count in counts.items():
        by_count.setdefault(count, []).append(entity_id)
    for count, entity_ids in by_count.items():
        Entity.objects.filter(pk__in=entity_ids).update(mention_count=F("mention_count") + count, last_seen_at=at)
    for key, entity in resolved.items():
        new_metadata = dict(wanted[key].metadata)
        if new_metadata and any(entity.metadata.get(k) != v for k, v in new_metadata.items()):
            entity.metadata = {**entity.metadata, **new_metadata}
            entity.save(update_fields=["metadata", "updated_at"])
    return resolved


# A name becomes an alias once it has addressed its person this many times: one "Ttyl, Bye!" or "my home
# country, Sweden." read as a vocative must not make "bye" or "sweden" name a speaker (docs/retrieval.md, aliases)
ALIAS_MIN_ADDRESSED = 2


def entity_aliases_add(
    *, tenant: Tenant, contact: Contact | None, aliases: Mapping[str, Mapping[str, tuple[str, int]]], at: datetime
) -> int:
    """Record other names of the scope's person entities: {person slug: {alias slug: (how it was written, how
    many times it was used)}}.

    An alias is how someone is addressed ("Thanks, Mel!" said to the speaker labelled Melanie): a query
    naming it finds the entity (search's entity terms) and the speaker. Every name seen is recorded in
    `metadata["aliases"][alias]` (how it was written, when it was first and last seen, how often); it joins
    `Entity.aliases`, what queries match, once it has addressed the person ALIAS_MIN_ADDRESSED times. A name
    that is another person of the scope is never an alias; a name used for two people of the scope is
    neither's ("Yup!" said by both speakers of a chat): it is marked `shared` on both and leaves their
    aliases. Returns how many aliases were new. One read, then one write per entity that changed."""
    wanted = {slug: names for slug, names in aliases.items() if names}
    if not wanted:
        return 0
    every_alias = sorted({alias for names in wanted.values() for alias in names})
    people = {
        entity.slug: entity
        for entity in Entity.objects.filter(tenant=tenant, contact=contact, entity_type="person").filter(
            Q(slug__in=[*wanted, *every_alias]) | Q(metadata__aliases__has_any_keys=every_alias)
        )
    }
    known = {slug: dict(entity.metadata.get("aliases") or {}) for slug, entity in people.items()}
    stamp = at.isoformat()
    changed: set[str] = set()
    for slug, names in wanted.items():
        if slug not in people:
            continue
        for alias, (written, count) in names.items():
            if alias == slug or alias in people:
                continue
            record = dict(known[slug].get(alias) or {"name": written, "first_seen": stamp, "addressed": 0})
            record["addressed"] = int(record.get("addressed", 0)) + count
            record["last_seen"] = stamp
            known[slug][alias] = record
            changed.add(slug)
    for alias in every_alias:
        holders = [slug for slug in known if alias in known[slug]]
        if len(holders) > 1:
            for slug in holders:
                if not known[slug][alias].get("shared"):
                    known[slug][alias] = {**known[slug][alias], "shared": True}
                    changed.add(slug)
    added = 0
    for slug in sorted(changed):
        entity = people[slug]
        current = [alias for alias in entity.aliases if not (known[slug].get(alias) or {}).get("shared")]
        for alias in sorted(known[slug]):
            record = known[slug][alias]
            if (
                alias not in current
                and not record.get("shared")
                and int(record.get("addressed", 0)) >= ALIAS_MIN_ADDRESSED
            ):
                current.append(alias)
                added += 1
        entity.aliases = current
        entity.metadata = {**entity.metadata, "aliases": known[slug]}
        entity.save(update_fields=["aliases", "metadata", "updated_at"])
    return added


def entity_aliases_reset(*, tenant: Tenant, contact: Contact | None) -> int:
    """Forget the aliases the scope's person entities learned, and how (before they are learned again from the
    ledger: ingest's `speaker_aliases_relearn`). Returns how many entities had some."""
    reset = 0
    for entity in Entity.objects.filter(tenant=tenant, contact=contact, entity_type="person"):
        if entity.aliases or (entity.metadata or {}).get("aliases"):
            entity.aliases = []
            entity.metadata = {key: value for key, value in entity.metadata.items() if key != "aliases"}
            entity.save(update_fields=["aliases", "metadata", "updated_at"])
            reset += 1
    return reset


def entities_not_names_mark(
    *, entities: Sequence[Entity], uses: Mapping[str, tuple[int, int]], not_names: set[str]
) -> tuple[list[Entity], list[Entity]]:
    """Of a scope's single-word `name:` `entities`, those whose slug is in `not_names` are marked as not names,
    with their `uses` (lower case, capitalised inside a sentence); marked ones no longer in it are unmarked (the
    scope has since written the word as a name). Returns (newly marked, unmarked). One UPDATE per 500 changed
    rows."""
    now = timezone.now()
    marked: list[Entity] = []
    unmarked: list[Entity] = []
    changed: list[Entity] = []
    for entity in entities:
        lower, capitalised = uses[entity.slug]
        if entity.slug in not_names:
            record = {"lower": lower, "capitalised": capitalised}
            if entity.metadata.get(NOT_A_NAME) == record:
                continue
            if NOT_A_NAME not in entity.metadata:
                marked.append(entity)
            entity.metadata = {**entity.metadata, NOT_A_NAME: record}
        elif NOT_A_NAME in entity.metadata:
            entity.metadata = {key: value for key, value in entity.metadata.items() if key != NOT_A_NAME}
            unmarked.append(entity)
        else:
            continue
        entity.updated_at = now
        changed.append(entity)
    Entity.objects.bulk_update(changed, ["metadata", "updated_at"], batch_size=500)
    return marked, unmarked
