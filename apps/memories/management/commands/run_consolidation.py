from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from tqdm import tqdm

from apps.contacts.models import Contact
from apps.conversations.models import Conversation
from apps.core.commands import DatabaseCommand
from apps.memories.lifecycle import deferred, processor, session_flush
from apps.memories.lifecycle.periodic import tenant_consolidate
from apps.tenants.commands import tenant_named

JOBS = ("periodic", "deferred", "processor", "flush")


class Command(DatabaseCommand):
    help = (
        "Run a memory lifecycle job now for one tenant "
        "(periodic: decay, compression, pruning; deferred; processor; flush)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("tenant", help="tenant slug")
        parser.add_argument("--job", choices=JOBS, default="periodic")
        parser.add_argument("--contact", help="only this contact_id (periodic)")
        parser.add_argument("--now", help="ISO datetime to run as (a controlled clock), default: now")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_named(options["tenant"])
        now = parse_datetime(options["now"]) if options["now"] else timezone.now()
        if now is None:
            raise CommandError("--now must be an ISO datetime, e.g. 2026-01-31T12:00:00Z")
        job = options["job"]
        if job == "periodic":
            contact = None
            if options["contact"]:
                contact = Contact.objects.filter(tenant=tenant, external_id=options["contact"]).first()
                if contact is None:
                    raise CommandError(f"No contact '{options['contact']}' in {tenant.slug}.")
            with tqdm(unit="scope", file=self.stdout) as bar:

                def progress(done: int, total: int) -> None:
                    bar.total = total
                    bar.update(1)

                stats = tenant_consolidate(tenant=tenant, now=now, contact=contact, progress=progress)
        elif job == "deferred":
            conversations = list(Conversation.objects.filter(tenant=tenant).values_list("pk", flat=True))
            stats = {}
            for conversation_id in tqdm(conversations, unit="conversation", file=self.stdout):
                for key, value in deferred.conversation_consolidate(conversation_id=str(conversation_id)).items():
                    stats[key] = stats.get(key, 0) + value
        elif job == "processor":
            stats = processor.events_process(now=now)
        else:
            stats = {"flushed": session_flush.idle_conversations_flush(now=now)}
        self.stdout.write(self.style.SUCCESS(f"{job}: {stats}"))
