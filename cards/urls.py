from django.urls import path

from cards.views import (
    CardCardholderInviteView,
    CardholderCreateView,
    CardPasskeyChallengeView,
    CardSecureDetailsView,
)
from cards.views_authorizations import (
    CardAuthorizationListView,
    CardAuthorizationView,
    SandboxAuthorizationClearView,
    SandboxAuthorizationCreateView,
    SandboxAuthorizationReverseView,
    SandboxCardFreezeView,
    SandboxCardUnfreezeView,
)

ACCOUNT = "customers/<str:customerId>/accounts/<str:accountId>"
CARD = f"{ACCOUNT}/cards/<str:cardId>"

urlpatterns = [
    path(f"{ACCOUNT}/cardholders", CardholderCreateView.as_view()),
    path(f"{CARD}/secure/passkey-challenge", CardPasskeyChallengeView.as_view()),
    path(f"{CARD}/secure", CardSecureDetailsView.as_view()),
    path(f"{CARD}/cardholders", CardCardholderInviteView.as_view()),
    path(f"{CARD}/authorizations", CardAuthorizationListView.as_view()),
    path(f"{CARD}/authorizations/<str:authorizationId>", CardAuthorizationView.as_view()),
    path("sandbox/cards/<str:cardId>/authorizations", SandboxAuthorizationCreateView.as_view()),
    path("sandbox/cards/<str:cardId>/freeze", SandboxCardFreezeView.as_view()),
    path("sandbox/cards/<str:cardId>/unfreeze", SandboxCardUnfreezeView.as_view()),
    path("sandbox/card-authorizations/<str:authorizationId>/clear", SandboxAuthorizationClearView.as_view()),
    path(
        "sandbox/card-authorizations/<str:authorizationId>/reverse", SandboxAuthorizationReverseView.as_view()
    ),
]
