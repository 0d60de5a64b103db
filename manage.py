#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys

# Commands that serve tenants start their connections bound to no tenant, like the web and the worker; every
# other command is the operator's (migrate, seed_demo, bench_*, run_consolidation, ...) and works across tenants
# (row-level security, apps/core/tenancy.py).
SERVING_COMMANDS = {"runserver", "mcp_stdio"}


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    serving = command in SERVING_COMMANDS
    os.environ.setdefault("ENGRAM_TENANT_SCOPE_DEFAULT", "none" if serving else "all")
    # ... as the role that owns the tables (DATABASE_MAINTENANCE_URL): only its `all` takes effect
    os.environ.setdefault("ENGRAM_DATABASE_LOGIN", "app" if serving else "maintenance")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
