"""Ingest throughput through the real API (DRF view, PostgreSQL, Redis, embeddings), single and batch."""

from __future__ import annotations

import statistics
import time
from argparse import ArgumentParser
from typing import Any

import numpy as np
from django.utils import timezone
from rest_framework.test import APIClient

from apps.core.commands import DatabaseCommand
from apps.memories.benchmarks import as_in_production
from apps.memories.benchmarks.corpus import messages
from apps.tenants.services import api_key_create, tenant_create, tenant_delete


class Command(DatabaseCommand):
    help = "Benchmark: POST /api/v1/ingest latency and throughput, and /ingest/batch throughput."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--messages", type=int, default=300)
        parser.add_argument("--batch", type=int, default=500)

    def handle(self, *args: Any, **options: Any) -> None:
        run = timezone.now().strftime("%Y%m%d%H%M%S")
        tenant = tenant_create(name=f"bench ingest {run}", slug=f"bench-ingest-{run}")
        try:
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_create(tenant=tenant, name='bench').plaintext}")
            with as_in_production():
                self._single(client, options["messages"])
                self._batch(client, options["batch"])
        finally:
            tenant_delete(tenant=tenant)

    def _single(self, client: APIClient, count: int) -> None:
        timings = []
        started = time.perf_counter()
        for index, text in enumerate(messages(count, seed=3)):
            body = {
                "contact_id": f"c{index % 20}",
                "conversation_id": f"conv{index % 20}",
                "message": text,
                "role": "user",
            }
            began = time.perf_counter()
            response = client.post("/api/v1/ingest", body, format="json")
            timings.append((time.perf_counter() - began) * 1000)
            assert response.status_code == 202, response.content
        elapsed = time.perf_counter() - started
        self.stdout.write(
            f"POST /ingest, {count} messages one by one (20 contacts): {count / elapsed:.1f} messages/s; "
            f"latency p50 {statistics.median(timings):.1f} ms, p95 {np.percentile(timings, 95):.1f} ms"
        )

    def _batch(self, client: APIClient, count: int) -> None:
        items = [
            {"contact_id": "importer", "conversation_id": f"import-{index // 50}", "message": text, "role": "user"}
            for index, text in enumerate(messages(count, seed=5))
        ]
        began = time.perf_counter()
        response = client.post("/api/v1/ingest/batch", {"messages": items}, format="json")
        elapsed = time.perf_counter() - began
        assert response.status_code == 202, response.content
        self.stdout.write(f"POST /ingest/batch, {count} messages in one call: {count / elapsed:.1f} messages/s")
