"""Content negotiation of the API, whose every route answers JSON."""

from collections.abc import Iterable
from typing import Any

from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer

# What clients send when they take JSON (or send no Accept header at all).
_TAKES_JSON = frozenset({None, "*/*", "application/json"})


class JsonNegotiation(DefaultContentNegotiation):
    """DRF's negotiation, with its answer to the Accept headers nearly every
    request carries known in advance: no header, `*/*` or `application/json`,
    on a route that renders JSON, is answered by that renderer and its media
    type, as DRF's own matching answers it. Any other Accept header, a format
    suffix or a route with other renderers goes through DRF's matching (which
    answers 406 to an Accept nothing here renders)."""

    def select_renderer(
        self, request: Any, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderers = list(renderers)
        if (
            format_suffix is None
            and self.settings.URL_FORMAT_OVERRIDE is None
            and len(renderers) == 1
            and renderers[0].media_type == "application/json"
            and request.META.get("HTTP_ACCEPT") in _TAKES_JSON
        ):
            return renderers[0], renderers[0].media_type
        chosen: tuple[BaseRenderer, str] = super().select_renderer(request, renderers, format_suffix)
        return chosen
