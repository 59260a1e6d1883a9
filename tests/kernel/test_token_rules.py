"""Every route protected by TokenRequired declares its token rules, so a view
without them fails here (or at import), never with a 500 in production."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIRequestFactory
from rest_framework.views import APIView

from bankapi.http.api import ScopedAPIView
from bankapi.http.permissions import TokenRequired, TokenRules
from bankapi.roles import Role


def view_classes(patterns=None, prefix: str = ""):
    for entry in patterns if patterns is not None else get_resolver().url_patterns:
        if isinstance(entry, URLResolver):
            yield from view_classes(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            view_class = getattr(entry.callback, "cls", None)
            if view_class is not None and issubclass(view_class, APIView):
                yield prefix + str(entry.pattern), view_class


def test_every_token_protected_route_declares_its_roles_and_token():
    protected = [(route, cls) for route, cls in view_classes() if TokenRequired in cls.permission_classes]
    known = {role for role, _ in Role.CHOICES}

    lacking = [route for route, cls in protected if not isinstance(cls(), TokenRules)]
    assert lacking == []
    for route, cls in protected:
        assert isinstance(cls.roles, tuple) and cls.roles and set(cls.roles) <= known, route
        assert callable(cls.required_token_use), route
    assert len(protected) >= 15


def test_a_view_missing_its_rules_is_a_configuration_error_not_a_request_error():
    class Forgetful(APIView):
        def get(self, request):
            raise AssertionError("never reached")

    request = APIRequestFactory().get("/")
    request.auth = {"token_use": "access", "role": Role.CUSTOMER}

    with pytest.raises(ImproperlyConfigured, match="Forgetful is protected by TokenRequired"):
        TokenRequired().has_permission(request, Forgetful())


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        ({"token_use": "acess"}, "token_use must be 'access' or 'id'"),
        ({"roles": ("customer", "admin")}, "roles must be a non-empty tuple"),
        ({"roles": "customer"}, "roles must be a non-empty tuple"),
        ({"roles": ()}, "roles must be a non-empty tuple"),
    ],
)
def test_a_scoped_view_with_wrong_rules_fails_when_it_is_defined(attributes, message):
    with pytest.raises(TypeError, match=message):
        type("Misdeclared", (ScopedAPIView,), attributes)
