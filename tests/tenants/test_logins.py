"""People's sign-ins (apps/tenants/login_throttle.py): failures counted in the real Redis per username and
address, a lock with a clear message on /accounts/login/ and /admin/login/; Django's password validators;
seed_demo's users with random passwords printed once."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.test import Client

from apps.core.redis import get_redis
from apps.tenants.login_throttle import KEY_PREFIX
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"
LOCKED = "Too many failed sign-ins for this username from your address. Try again in 15 minutes."
PAGES = {"inspector": ("/accounts/login/", "/inspector/"), "admin": ("/admin/login/", "/admin/")}


@pytest.fixture
def operator(tenant):
    user = UserFactory(username="olga", is_staff=True, is_superuser=True)
    MembershipFactory(tenant=tenant, user=user)
    user.set_password(PASSWORD)
    user.save()
    return user


def _sign_in(page: str, password: str, address: str = "203.0.113.7") -> tuple[Client, str]:
    login_url, next_url = PAGES[page]
    client = Client(REMOTE_ADDR=address)
    response = client.post(login_url, {"username": "olga", "password": password, "next": next_url})
    return client, response.content.decode() if response.status_code == 200 else ""


def _failure_keys() -> list[str]:
    return list(get_redis().scan_iter(match=f"{KEY_PREFIX}*"))


def _signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.mark.parametrize("page", PAGES, ids=PAGES.keys())
def test_five_failures_lock_the_username_from_that_address_with_a_clear_message(operator, page):
    for attempt in range(4):
        client, html = _sign_in(page, f"wrong-{attempt}")
        assert not _signed_in(client) and LOCKED not in html
    client, html = _sign_in(page, "wrong-4")
    assert LOCKED in html  # the fifth failure says so at once
    client, html = _sign_in(page, PASSWORD)  # even the right password, while locked
    assert not _signed_in(client) and LOCKED in html
    (key,) = _failure_keys()
    assert "olga" not in key and 0 < get_redis().ttl(key) <= 900

    # another address may still sign in with the same username; the lock ends with its window
    client, _ = _sign_in(page, PASSWORD, address="198.51.100.9")
    assert _signed_in(client)
    get_redis().delete(key)
    client, _ = _sign_in(page, PASSWORD)
    assert _signed_in(client)


def test_a_success_clears_the_failures(operator):
    for attempt in range(4):
        _sign_in("inspector", f"wrong-{attempt}")
    client, _ = _sign_in("inspector", PASSWORD)
    assert _signed_in(client) and _failure_keys() == []
    for attempt in range(4):  # four more failures lock nothing: the count started again
        _sign_in("inspector", f"wrong-{attempt}")
    client, _ = _sign_in("inspector", PASSWORD)
    assert _signed_in(client)


@pytest.mark.parametrize("password", ["password123", "12345678901", "qwertyuiop"], ids=["common", "numeric", "keys"])
def test_common_and_numeric_passwords_are_refused(password):
    with pytest.raises(ValidationError):
        validate_password(password, get_user_model()(username="olga"))
    validate_password("7-tabby-cats-on-a-Tuesday", get_user_model()(username="olga"))


def test_seed_demo_prints_random_passwords_once_and_they_sign_in(settings):
    first = StringIO()
    call_command("seed_demo", stdout=first)
    printed = dict(re.findall(r"(admin|owner) / (\S+)", first.getvalue()))
    assert set(printed) == {"admin", "owner"} and printed["admin"] != printed["owner"]
    assert "engram-admin" not in first.getvalue() and all(len(value) >= 16 for value in printed.values())
    for username, password in printed.items():
        validate_password(password)
        assert Client().login(username=username, password=password)
    again = StringIO()
    call_command("seed_demo", stdout=again)
    assert not any(password in again.getvalue() for password in printed.values())
    assert "manage.py changepassword admin" in again.getvalue()
