from __future__ import annotations

import factory
from django.contrib.auth import get_user_model

from apps.contacts.models import Contact
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
