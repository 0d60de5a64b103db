from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView

from apps.core.apis import healthz
from apps.mcp_server.http import McpApi
from apps.tenants.login_throttle import ThrottledAdminAuthenticationForm, ThrottledAuthenticationForm

admin.site.login_form = ThrottledAdminAuthenticationForm  # sign-ins throttled there too

urlpatterns = [
    path("", RedirectView.as_view(url="/inspector/", permanent=False)),
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path(
        "accounts/login/", auth_views.LoginView.as_view(authentication_form=ThrottledAuthenticationForm), name="login"
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/schema/", SpectacularAPIView.as_view(authentication_classes=[], permission_classes=[]), name="schema"),
    path(
        "api/v1/docs/",
        SpectacularRedocView.as_view(
            url_name="schema", template_name="api/redoc.html", authentication_classes=[], permission_classes=[]
        ),
        name="api-docs",
    ),
    path("api/v1/", include("config.api_urls")),
    path("mcp", McpApi.as_view(), name="mcp"),  # the MCP server, streamable HTTP (docs/agents.md)
    path("inspector/", include("apps.inspector.urls")),
]

handler404 = "apps.core.exception_handler.json_not_found"
handler500 = "apps.core.exception_handler.json_server_error"
