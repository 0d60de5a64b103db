"""Ingest: the orchestrator (`services`: ledger and events first, contact state, inline extraction, the
write path, deferred work on commit) and its endpoints (`apis`)."""
