from __future__ import annotations

from csp.constants import UNSAFE_INLINE
from csp.decorators import csp_update
from django.contrib import admin
from django.contrib.auth.decorators import login_not_required, login_required
from django.urls import include, path
from drf_spectacular.views import SpectacularSwaggerSplitView

from config import docs_pages, metrics, sso_views, views
from config.schema import SchemaView

# Swagger UI's script is served as a file by the split view (the Content-Security-Policy allows no inline
# script); it styles elements inline, so this one page allows inline style.
swagger_ui = csp_update({"style-src": [UNSAFE_INLINE]})(
    SpectacularSwaggerSplitView.as_view(url_name="api-schema")
)

# Django's refusals of a request it cannot read (a body too large, too many fields), in words; the error
# pages in the app's layout (the API's error shape under /api/), also under DEBUG for everyone but a
# superuser (config.middleware.HideTechnicalPages).
handler400 = "config.views.bad_request"
handler403 = "config.views.permission_denied"
handler404 = "config.views.page_not_found"
handler500 = "config.views.server_error"

urlpatterns = [
    path("", views.home, name="home"),
    path("health/", views.health, name="health"),
    # Prometheus' default path; a 404 unless enabled, then its own token or address check (config/metrics.py).
    path("metrics", metrics.metrics, name="metrics"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("accounts/login/", sso_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", sso_views.LogoutView.as_view(), name="logout"),
    # Single sign-on (docs/deployment.md, "Single sign-on"): a 404 while it is off. The callback is the
    # redirect URI to register at the provider; the names are mozilla-django-oidc's.
    path("oidc/authenticate/", sso_views.SsoStartView.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", sso_views.SsoCallbackView.as_view(), name="oidc_authentication_callback"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("evaluation.api.urls")),
    # The schema answers a token as well as a session (DRF authenticates it: SERVE_PERMISSIONS), built one
    # at a time (config/schema.py); Swagger UI is a page for signed-in users like every other.
    path("api/schema/", login_not_required(SchemaView.as_view()), name="api-schema"),
    path("api/docs/", login_required(swagger_ui), name="api-docs"),
    path("docs/<str:name>/", docs_pages.doc_page, name="doc_page"),
    path("", include("labeling.urls")),
    path("", include("golden_io.urls")),
    path("", include("evaluation.urls")),
    path("", include("evaluation.studies.rater_urls")),  # the rater's side-by-side pages (docs/sxs.md)
]
