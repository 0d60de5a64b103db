"""Extract again the messages whose extraction spent its attempts (`deferred.exhausted_events_retry`).

An event is tried MAX_EXTRACTION_ATTEMPTS times (inline, then by the worker's sweeps) and then left alone, with
its last error, so a message that always fails does not cost every sweep. Once the cause is fixed (an upgrade),
run this: the messages are in the ledger, only their memories are missing. `--dry-run` counts them."""

from argparse import ArgumentParser
from typing import Any

from tqdm import tqdm

from apps.core.commands import DatabaseCommand
from apps.memories.lifecycle.deferred import MAX_EXTRACTION_ATTEMPTS, exhausted_events_retry
from apps.memories.models import ContextEvent
from apps.tenants.commands import tenant_named

CHUNK = 100


class Command(DatabaseCommand):
    help = "Extract again the messages whose extraction spent its attempts (one tenant, or all)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--tenant", help="tenant slug (default: every tenant)")
        parser.add_argument("--dry-run", action="store_true", help="only count them")

    def handle(self, *args: Any, **options: Any) -> None:
        events = ContextEvent.objects.filter(extracted_at__isnull=True, attempts__gte=MAX_EXTRACTION_ATTEMPTS)
        if options["tenant"]:
            events = events.filter(tenant=tenant_named(options["tenant"]))
        ids = list(events.order_by("created_at", "pk").values_list("pk", flat=True))
        self.stdout.write(f"{len(ids)} events spent their {MAX_EXTRACTION_ATTEMPTS} attempts")
        if options["dry_run"] or not ids:
            return
        extracted = 0
        with tqdm(total=len(ids), unit="event", file=self.stdout) as bar:
            for start in range(0, len(ids), CHUNK):
                chunk = list(ContextEvent.objects.filter(pk__in=ids[start : start + CHUNK]))
                extracted += exhausted_events_retry(events=chunk)
                bar.update(len(chunk))
        failed = len(ids) - extracted
        self.stdout.write(f"{extracted} extracted, {failed} failed again (their error: the admin's Context events)")
        if failed:
            self.stdout.write(self.style.WARNING("some failed again"))
        else:
            self.stdout.write(self.style.SUCCESS("done"))
