from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularSwaggerView

from authn.views_service import JwksView
from bankapi.http.openapi import OpenApiJsonView
from bankapi.http.views import CapabilitiesView, HealthView, IndexView, ReadyView
from bankapi.ops.metrics import MetricsView

handler400 = "bankapi.http.handlers.handler400"
handler403 = "bankapi.http.handlers.handler403"
handler404 = "bankapi.http.handlers.handler404"
handler500 = "bankapi.http.handlers.handler500"

urlpatterns = [
    path("", IndexView.as_view()),
    path("admin/", admin.site.urls),
    path("healthz", HealthView.as_view()),
    path("readyz", ReadyView.as_view()),
    path("metrics", MetricsView.as_view()),
    path(".well-known/jwks.json", JwksView.as_view()),
    path("v1/openapi.json", OpenApiJsonView.as_view(), name="openapi"),
    path("v1/docs", SpectacularSwaggerView.as_view(url_name="openapi"), name="docs"),
    path("v1/capabilities", CapabilitiesView.as_view()),
    path("v1/auth/", include("authn.urls")),
    path("v1/", include("payments.urls")),
    path("v1/", include("batches.urls")),
    path("v1/", include("cards.urls")),
    path("v1/", include("onboarding.urls")),
    path("v1/", include("events.urls")),
    path("v1/", include("approvals.urls")),
    path("v1/", include("sandbox.urls")),
]
