"""Management commands that use the database refuse to run on one that is not migrated, with a message that says
what to run, instead of a traceback on their first statement."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db.migrations.recorder import MigrationRecorder

from apps.core.commands import DatabaseCommand, unapplied_migrations
from apps.tenants.models import Tenant


@pytest.mark.django_db
def test_a_migrated_database_has_nothing_to_apply_and_the_command_runs():
    assert unapplied_migrations() == []
    out = io.StringIO()
    call_command("tenant_create", "Acme", "--slug", "acme-commands", stdout=out)
    assert "api key" in out.getvalue() and Tenant.objects.filter(slug="acme-commands").exists()


@pytest.mark.django_db
def test_a_database_missing_a_migration_is_refused_with_the_command_to_run():
    """The test database forgets it applied the newest tenants migration (the row is removed inside the test's
    transaction, rolled back after it): the command stops before touching a table and names `migrate`."""
    latest = MigrationRecorder.Migration.objects.filter(app="tenants").order_by("-name").first()
    assert latest is not None
    latest.delete()
    assert unapplied_migrations() == [f"tenants.{latest.name}"]
    with pytest.raises(CommandError, match=r"not migrated \(1 migration to apply: tenants\..*python manage.py migrate"):
        call_command("tenant_create", "Acme", "--slug", "acme-unmigrated", stdout=io.StringIO())
    assert not Tenant.objects.filter(slug="acme-unmigrated").exists()


def test_every_command_that_reads_the_database_checks_its_migrations():
    from django.core.management import get_commands, load_command_class

    database_commands = {
        "bench_ingest", "bench_latency", "bench_load", "bench_retrieval", "fit_ranker", "reembed",
        "run_consolidation", "seed_synthetic", "api_key_create", "seed_demo", "tenant_create", "simulate_year",
    }  # fmt: skip
    commands = get_commands()
    for name in database_commands:
        assert isinstance(load_command_class(commands[name], name), DatabaseCommand), name


@pytest.mark.django_db
@pytest.mark.parametrize(
    "arguments",
    [
        ["reembed", "--tenant", "nope"],
        ["reindex_words", "--tenant", "nope"],
        ["retry_extraction", "--tenant", "nope"],
        ["relearn_aliases", "--tenant", "nope"],
        ["run_consolidation", "nope"],
        ["api_key_create", "nope"],
    ],
    ids=lambda arguments: arguments[0],
)
def test_a_command_given_a_tenant_that_does_not_exist_says_so(arguments):
    with pytest.raises(CommandError, match=r"^No tenant with slug 'nope'\.$"):
        call_command(*arguments, stdout=io.StringIO())
