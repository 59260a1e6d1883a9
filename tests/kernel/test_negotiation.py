"""The API's content negotiation answers every Accept header as DRF's own does
(the renderer and media type, or 406), on a JSON route and on a route with
other renderers too."""

import pytest
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from bankapi.http.negotiation import JsonNegotiation

ACCEPTS = [
    None,
    "",
    "*/*",
    "application/json",
    "application/json; indent=4",
    "application/*",
    "text/html",
    "text/html, application/json;q=0.9",
    "application/xml",
    "image/png, */*;q=0.1",
]


def answer(negotiation, accept, renderers, format_suffix=None):
    headers = {} if accept is None else {"HTTP_ACCEPT": accept}
    request = Request(APIRequestFactory().get("/v1/anything", **headers))
    try:
        renderer, media_type = negotiation.select_renderer(request, renderers, format_suffix)
    except NotAcceptable:
        return "406"
    return type(renderer), media_type


@pytest.mark.parametrize("accept", ACCEPTS)
@pytest.mark.parametrize("renderers", [[JSONRenderer()], [JSONRenderer(), BrowsableAPIRenderer()]])
def test_every_accept_header_is_answered_as_drf_answers_it(accept, renderers):
    assert answer(JsonNegotiation(), accept, renderers) == answer(
        DefaultContentNegotiation(), accept, renderers
    )


def test_a_format_suffix_is_drf_s_to_answer():
    renderers = [JSONRenderer()]
    assert answer(JsonNegotiation(), None, renderers, "json") == answer(
        DefaultContentNegotiation(), None, renderers, "json"
    )
