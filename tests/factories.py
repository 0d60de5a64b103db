from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import factory
from django.contrib.auth import get_user_model
from django.utils import timezone

from apps.contacts.models import Contact
from apps.core.embeddings import content_hash, get_embedder
from apps.memories.models import Memory
from apps.tenants.models import ApiKey, Membership, Tenant
from apps.tenants.services import api_key_create


class TenantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Tenant

    name = factory.Sequence(lambda n: f"Tenant {n}")
    slug = factory.Sequence(lambda n: f"tenant-{n}")


class ApiKeyFactory(factory.Factory):
    """Issues a key through the service, so tests hold the plaintext exactly as a client would."""

    class Meta:
        model = ApiKey

    tenant = factory.SubFactory(TenantFactory)
    name = "test"
    scopes = ("read", "write")

    @classmethod
    def _create(cls, model_class, *, tenant, name, scopes):
        issued = api_key_create(tenant=tenant, name=name, scopes=list(scopes))
        issued.api_key.plaintext = issued.plaintext
        return issued.api_key

    _build = _create


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pw-for-tests")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    tenant = factory.SubFactory(TenantFactory)
    role = Membership.ROLE_OWNER


class ContactFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Contact

    tenant = factory.SubFactory(TenantFactory)
    external_id = factory.Sequence(lambda n: f"contact-{n}")
    display_name = factory.Sequence(lambda n: f"Contact {n}")


class MemoryFactory(factory.django.DjangoModelFactory):
    """A memory row as the write path leaves one (its content's embedding and hash, a fact's importance and
    decay), written directly: for tests about what happens to stored memories — retrieval, budgets, decay,
    lexicons — not about writing them (those go through the services)."""

    class Meta:
        model = Memory

    tenant = factory.SubFactory(TenantFactory)
    contact = None
    memory_type = "fact"
    content = factory.Sequence(lambda n: f"memory number {n}")
    content_hash = factory.LazyAttribute(lambda memory: content_hash(memory.content))
    embedding = factory.LazyAttribute(lambda memory: get_embedder().embed_batch([memory.content])[0].tolist())
    importance = 0.7
    base_importance = factory.SelfAttribute("importance")
    decay_rate = 0.003
    accessed_at = factory.LazyFunction(timezone.now)
    occurred_at = factory.SelfAttribute("accessed_at")
    valid_from = factory.SelfAttribute("accessed_at")

    @classmethod
    def bulk(cls, contents: Sequence[str], *, vectors: Sequence[Any] | None = None, **fields: Any) -> list[Memory]:
        """Many distinct memories in one INSERT (no dedup), their contents embedded in one batch unless
        `vectors` are given."""
        if vectors is None:
            vectors = [vector.tolist() for vector in get_embedder().embed_batch(list(contents))]
        rows = [
            cls.build(content=content, embedding=vector, **fields)
            for content, vector in zip(contents, vectors, strict=True)
        ]
        return Memory.objects.bulk_create(rows)


# distinct, plausible memory texts for tests that need many of them
GARDEN_TOPICS = [
    "the tomato plants need staking before the storm",
    "compost heap smells after rain",
    "bought neem oil for aphids",
    "the mango sapling finally flowered",
    "drip irrigation timer set to six am",
    "neighbour's cat digs the herb bed",
    "chilli seedlings moved to bigger pots",
    "rainwater barrel overflowed in June",
    "pruned the bougainvillea hard",
    "marigolds keep nematodes away from the beans",
    "soil test showed low nitrogen",
    "garden shed roof leaks",
    "planted curry leaf near the gate",
    "bees love the basil flowers",
    "lost the okra to fungus",
]
