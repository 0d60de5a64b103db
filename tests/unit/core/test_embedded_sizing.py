"""The development server's shared buffers (config/embedded.py): a quarter of the RAM, at most 4 GB, at least
PostgreSQL's default 128 MB. 4 GB holds a 1M-memory tenant's HNSW index and table (1.1 + 2.1 GB): at 1 GB each
GET /context of its large contact read ~220 pages from outside PostgreSQL's buffers (docs/benchmarks.md,
"Session 20")."""

from __future__ import annotations

import pytest

from config.embedded import shared_buffers_mb

GB = 2**30


@pytest.mark.parametrize(
    ("ram", "expected_mb"),
    [
        (24 * GB, 4096),  # this machine: a quarter would be 6 GB
        (16 * GB, 4096),
        (8 * GB, 2048),
        (4 * GB, 1024),
        (2 * GB, 512),
        (256 * 2**20, 128),  # never below PostgreSQL's default
    ],
)
def test_shared_buffers_are_a_quarter_of_the_ram_at_most_4_gb(ram: int, expected_mb: int) -> None:
    assert shared_buffers_mb(ram) == expected_mb


def test_a_1m_memory_tenants_index_and_table_fit_on_a_machine_of_16_gb() -> None:
    # the kept 1M tenant of docs/benchmarks.md: memory_embedding_hnsw 1,130 MB, memories_memory 2,127 MB
    assert shared_buffers_mb(16 * GB) >= 1130 + 2127
