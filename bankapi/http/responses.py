from typing import Any

from django.http.response import HttpResponseBase
from django.utils.http import content_disposition_header
from rest_framework.response import Response


def ok(data: Any = None, *, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """The success envelope `{"success": true, "data": ...}`."""
    return Response({"success": True, "data": data}, status=status, headers=headers)


def ok_flat(body: dict[str, Any], *, status: int = 200) -> Response:
    """The success envelope for the routes whose payload sits beside `success`."""
    return Response({"success": True, **body}, status=status)


# Bytes someone else provided (a customer's upload, an operator's document) are
# saved by the browser, never rendered: on this origin, which also serves the back
# office, a rendered HTML or SVG file could run script with a staff member's session.
SERVED_BYTES_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
}


def attachment_disposition(filename: str) -> str:
    """`attachment; filename=...`, quoted (or RFC 5987-encoded) as the name needs."""
    header = content_disposition_header(as_attachment=True, filename=filename)
    assert header is not None  # always set for an attachment
    return header


def served_as_attachment(response: HttpResponseBase, filename: str) -> HttpResponseBase:
    """`response`, carrying provided bytes, marked to be downloaded and never run."""
    response["Content-Disposition"] = attachment_disposition(filename)
    for name, value in SERVED_BYTES_HEADERS.items():
        response[name] = value
    return response
