from django.http import JsonResponse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.views import APIView

from authn.keys import jwks


class JsonWebKeySerializer(serializers.Serializer):
    kty = serializers.ChoiceField(choices=["RSA"])
    use = serializers.ChoiceField(choices=["sig"])
    alg = serializers.ChoiceField(choices=["RS256"])
    kid = serializers.CharField(help_text="Matches the `kid` header of the tokens it signed.")
    n = serializers.CharField(help_text="Modulus, base64url without padding.")
    e = serializers.CharField(help_text="Exponent, base64url without padding.")


class JwksSerializer(serializers.Serializer):
    keys = JsonWebKeySerializer(many=True)


class JwksView(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(
        tags=["service"],
        operation_id="jwks_retrieve",
        summary="Token signing keys (JWKS)",
        description=(
            "The public keys that verify the RS256 access and id tokens, as a JSON Web Key Set "
            "(RFC 7517). Public: no bearer. During a key rotation the previous key is listed too."
        ),
        auth=[],
        responses={200: JwksSerializer},
    )
    def get(self, request):
        return JsonResponse(jwks())
