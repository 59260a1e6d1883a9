"""Cardholder and card routes. Views parse and authorise; services decide."""

from drf_spectacular.utils import extend_schema

from authn.serializers import StepUpPasskeyChallengeSerializer, confirmation_of, passkey_step_up_data
from bankapi.http.api import AccountScopedView
from bankapi.http.responses import ok, ok_flat
from bankapi.http.schema import envelope, error_responses
from bankapi.http.serializers import validated_body
from cards import serializers as io
from cards.selectors import card_of, cardholder_of
from cards.services import (
    CardholderAddress,
    card_cardholder_invite,
    card_passkey_challenge,
    card_secure_details_reveal,
    cardholder_create,
    cardholders_required,
)

TAGS = ["cards"]
S404_CARD = (
    "RESOURCE_NOT_FOUND: the customer or account is not one the caller may see. CARD_NOT_FOUND: no "
    "such card on that account (another customer's card included)."
)
S401_CONFIRMATION = (
    "UNAUTHORIZED: missing, malformed, expired or wrong-use token. INVALID_CREDENTIALS: a wrong code "
    "or PIN, an assertion that does not verify, or a passkeySession that is spent, expired, another "
    "user's or opened for another card."
)


class CardholderCreateView(AccountScopedView):
    @extend_schema(
        tags=TAGS,
        summary="Create a cardholder",
        description=(
            "Adds a person who can hold cards on the account without owning it. Only on programs "
            "whose card provider supports cardholders (`program.cardholders` in GET /v1/capabilities); "
            "elsewhere 422 NOT_SUPPORTED. The answer carries `cardholderId` and `message` beside "
            "`success`, with no `data`."
        ),
        request=io.CardholderCreateSerializer,
        responses={
            200: io.CardholderCreatedSerializer,
            **error_responses(
                400,
                401,
                403,
                404,
                422,
                s404="RESOURCE_NOT_FOUND: the customer or account is not one the caller may see.",
                s422="NOT_SUPPORTED: the program's card provider has no cardholders.",
            ),
        },
    )
    def post(self, request, customerId: str, accountId: str):
        account = self.account
        cardholders_required(account.program)
        data = validated_body(io.CardholderCreateSerializer, request, program=account.program)
        address = data.get("address")
        cardholder = cardholder_create(
            account=account,
            first_name=data.get("firstName", ""),
            last_name=data.get("lastName", ""),
            email=data.get("email", ""),
            date_of_birth=data.get("dateOfBirth"),
            address=None
            if address is None
            else CardholderAddress(
                address_line1=address["addressLine1"],
                address_line2=address.get("addressLine2", ""),
                city=address["city"],
                state=address.get("state", ""),
                postal_code=address["postalCode"],
                country=address["country"],
            ),
        )
        return ok_flat({"cardholderId": str(cardholder.id), "message": "Cardholder created"})


class CardPasskeyChallengeView(AccountScopedView):
    @extend_schema(
        tags=TAGS,
        summary="Open a passkey step-up for the card's secure details",
        description=(
            "No body. Answers a `passkeySession` and the `fido2options` to hand to "
            "navigator.credentials.get() (allowCredentials lists every passkey of the user). Send "
            "the session and the assertion back as a passkey confirmation to the card's secure "
            "route. The session is single-use, valid 5 minutes, and good only for this card and "
            "this user. Not needed to confirm with a TOTP code or a PIN."
        ),
        request=None,
        responses={
            200: envelope("CardPasskeyChallengeResponse", StepUpPasskeyChallengeSerializer()),
            **error_responses(
                401, 403, 404, 422, s404=S404_CARD, s422="NOT_SUPPORTED: the user has no passkey."
            ),
        },
    )
    def post(self, request, customerId: str, accountId: str, cardId: str):
        card = card_of(self.scope, self.account, cardId)
        return ok(passkey_step_up_data(card_passkey_challenge(user=request.user, card=card)))


class CardSecureDetailsView(AccountScopedView):
    @extend_schema(
        tags=TAGS,
        summary="Reveal the card's number, CVV and expiry",
        description=(
            "Takes a step-up `confirmation`: `{method: passkey, passkeySession, assertion}` (open "
            "the session with the card's secure/passkey-challenge), `{method: totp, code}` (a "
            "code is accepted once), or `{method: pin, pin}` on programs offering PIN "
            "confirmation. Five wrong codes or PINs within 15 minutes (here, in other "
            "confirmations or at sign-in) lock the user's codes for 15 minutes: 429 with "
            "`Retry-After`; so does a PIN while too many password and PIN checks are under way "
            "(not counted: try again). A failed passkey assertion is refused and not counted. The answer "
            "is sent with `Cache-Control: no-store`."
        ),
        request=io.CardSecureInputSerializer,
        responses={
            200: envelope("CardSecureDetailsResponse", io.CardSecureDetailsSerializer()),
            **error_responses(
                400,
                401,
                403,
                404,
                422,
                429,
                s401=S401_CONFIRMATION,
                s404=S404_CARD,
                s422="NOT_SUPPORTED: a PIN on a program without PIN confirmation, or a method the "
                "user has not set up (no authenticator app, no PIN). Checked before the credential.",
            ),
        },
    )
    def post(self, request, customerId: str, accountId: str, cardId: str):
        card = card_of(self.scope, self.account, cardId)
        data = validated_body(io.CardSecureInputSerializer, request)
        details = card_secure_details_reveal(
            user=request.user, card=card, confirmation=confirmation_of(data["confirmation"])
        )
        body = {
            "pan": details.pan,
            "cvv": details.cvv,
            "expiryMonth": details.expiry_month,
            "expiryYear": details.expiry_year,
            "nameOnCard": details.name_on_card,
        }
        return ok(body, headers={"Cache-Control": "no-store"})


class CardCardholderInviteView(AccountScopedView):
    @extend_schema(
        tags=TAGS,
        summary="Invite a cardholder to the card",
        description=(
            "Adds a cardholder of the card's account to the card. A card may have several "
            "cardholders; inviting one already on the card answers 200 again. Only on programs "
            "whose card provider supports cardholders (422 NOT_SUPPORTED, checked once the card "
            "is found, before the cardholder is looked up)."
        ),
        request=io.CardholderInviteSerializer,
        responses={
            200: envelope("CardCardholdersResponse", io.CardCardholdersSerializer()),
            **error_responses(
                400,
                401,
                403,
                404,
                422,
                s404=S404_CARD + " RESOURCE_NOT_FOUND also for a cardholder not of the card's account.",
                s422="NOT_SUPPORTED: the program's card provider has no cardholders.",
            ),
        },
    )
    def post(self, request, customerId: str, accountId: str, cardId: str):
        card = card_of(self.scope, self.account, cardId)
        cardholders_required(card.program)
        data = validated_body(io.CardholderInviteSerializer, request)
        cardholder = cardholder_of(self.scope, card.account, data["cardholderId"])
        cardholder_ids = card_cardholder_invite(card=card, cardholder=cardholder)
        return ok({"cardId": str(card.id), "cardholderIds": cardholder_ids})
