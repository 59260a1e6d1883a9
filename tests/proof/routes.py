"""Every route of the URL configuration, with the methods its view answers.

Walks Django's resolver, so a route added anywhere is found here without a
test having to name it. Django admin is one entry: its pages take the staff
session, never a bearer, and are checked as a whole (`ADMIN_PREFIX`).
"""

import re
from dataclasses import dataclass

from django.urls import URLPattern, URLResolver, get_resolver

ADMIN_PREFIX = "admin/"
_PARAMETER = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")
_SKIPPED_METHODS = {"options", "head", "trace"}


@dataclass(frozen=True)
class Route:
    pattern: str  # the route as written in urls.py, e.g. "v1/customers/<str:customerId>/..."
    view_class: type
    methods: tuple[str, ...]

    @property
    def parameters(self) -> list[str]:
        return [match.group("name") for match in _PARAMETER.finditer(self.pattern)]

    @property
    def display(self) -> str:
        return "/" + _PARAMETER.sub(lambda match: "{" + match.group("name") + "}", self.pattern)

    def path(self, values: dict[str, str]) -> str:
        return "/" + _PARAMETER.sub(lambda match: str(values[match.group("name")]), self.pattern)


def _methods(view_class: type) -> tuple[str, ...]:
    names = getattr(view_class, "http_method_names", [])
    return tuple(name.upper() for name in names if name not in _SKIPPED_METHODS and hasattr(view_class, name))


def _walk(patterns, prefix: str):
    for entry in patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            if route == ADMIN_PREFIX:
                continue
            yield from _walk(entry.url_patterns, route)
        elif isinstance(entry, URLPattern):
            view_class = getattr(entry.callback, "view_class", None) or getattr(entry.callback, "cls", None)
            if view_class is None:
                raise AssertionError(
                    f"Route {route!r} is a plain function: the matrix cannot read its methods"
                )
            yield Route(pattern=route, view_class=view_class, methods=_methods(view_class))


def all_routes() -> list[Route]:
    """Every route but Django admin's, in urls.py order."""
    return list(_walk(get_resolver().url_patterns, ""))


def has_admin() -> bool:
    return any(str(entry.pattern) == ADMIN_PREFIX for entry in get_resolver().url_patterns)


def idempotent_routes() -> list[Route]:
    """Every route whose view declares the operation its POST makes at most once
    per idempotency key (`ScopedAPIView.idempotency_operation`)."""
    return [
        route
        for route in all_routes()
        if "POST" in route.methods and getattr(route.view_class, "idempotency_operation", None) is not None
    ]
