from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "apps.core"
    label = "core"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from apps.core import checks, schema  # noqa: F401  (register the database checks, the API key's OpenAPI scheme)
        from apps.core.grants import app_role_grant

        # the app role gets data-only privileges on every table the migration role owns (apps/core/grants.py)
        post_migrate.connect(app_role_grant, sender=self, dispatch_uid="engram-app-role-grant")
