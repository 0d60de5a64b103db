"""The API docs page (Redoc) is served from this site's static files under the strict Content-Security-Policy
every page carries (apps/core/headers.py); no CDN, no inline script. The browser half (Redoc renders, the
admin and inspector work, nothing refused) is tests/inspector/test_browser.py."""

from __future__ import annotations

import re

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

REDOC = "/static/drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"


def test_the_docs_page_loads_redoc_from_static_files_and_no_inline_script():
    response = Client().get("/api/v1/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert re.findall(r"<script[^>]*>", html) == [f'<script src="{REDOC}">']
    assert "</script>" in html and "Redoc.init" not in html
    assert "http://" not in html and "https://" not in html  # no CDN, no web fonts
    bundle = Client().get(REDOC)
    assert bundle.status_code == 200 and len(b"".join(bundle.streaming_content)) > 500_000


@pytest.mark.parametrize(
    "path", ["/api/v1/docs/", "/api/v1/schema/", "/accounts/login/", "/admin/login/", "/inspector/", "/healthz"]
)
def test_every_page_carries_the_strict_policy(path):
    policy = Client().get(path)["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
    assert directives["script-src"] == "'self'"  # no inline script, no eval, no other origin
    assert directives["default-src"] == "'self'" and directives["object-src"] == "'none'"
    assert directives["frame-ancestors"] == "'none'" and directives["base-uri"] == "'none'"
