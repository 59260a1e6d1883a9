from django.urls import path

from cards.views import (
    CardCardholderInviteView,
    CardholderCreateView,
    CardPasskeyChallengeView,
    CardSecureDetailsView,
)

ACCOUNT = "customers/<str:customerId>/accounts/<str:accountId>"
CARD = f"{ACCOUNT}/cards/<str:cardId>"

urlpatterns = [
    path(f"{ACCOUNT}/cardholders", CardholderCreateView.as_view()),
    path(f"{CARD}/secure/passkey-challenge", CardPasskeyChallengeView.as_view()),
    path(f"{CARD}/secure", CardSecureDetailsView.as_view()),
    path(f"{CARD}/cardholders", CardCardholderInviteView.as_view()),
]
