from typing import Any

from rest_framework.response import Response


def ok(data: Any = None, *, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """The success envelope `{"success": true, "data": ...}`."""
    return Response({"success": True, "data": data}, status=status, headers=headers)


def ok_flat(body: dict[str, Any], *, status: int = 200) -> Response:
    """The success envelope for the routes whose payload sits beside `success`."""
    return Response({"success": True, **body}, status=status)
