from django.http import HttpRequest, JsonResponse

from apps.core.health import health_report


def healthz(request: HttpRequest) -> JsonResponse:
    report = health_report()
    healthy_enough = report["database"]["ok"] and report["redis"]["ok"]
    return JsonResponse(report, status=200 if healthy_enough else 503)
