from drf_spectacular.renderers import OpenApiJsonRenderer
from drf_spectacular.views import SpectacularAPIView


class OpenApiJsonView(SpectacularAPIView):
    """The OpenAPI 3 document, always as JSON (GET /v1/openapi.json)."""

    renderer_classes = [OpenApiJsonRenderer]
