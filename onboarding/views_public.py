"""Routes that take no bearer: the signed URL is the credential.

- `GET /v1/ubo-verification/{token}`: a UBO's e-mailed link; checks signature,
  expiry and that no reset happened since, then redirects to the provider's
  hosted flow.
- `GET|POST /v1/sandbox/ubo-verification/{token}`: the sandbox provider's hosted
  flow, a page where the UBO (or a tester) approves or rejects.
- `PUT|GET /v1/documents/local?key=...`: the embedded storage's presigned URLs,
  behaving like S3's: expired, tampered or wrong Content-Type 403, over the size
  limit 413; a file that is not of its declared type 400; a download is always
  an attachment.

Any failed check answers 403 FORBIDDEN without saying which check failed.
"""

import html
from collections.abc import Callable

from django.conf import settings
from django.http import FileResponse, HttpResponse, HttpResponseRedirect
from django.utils.functional import classproperty
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.parsers import BaseParser, FormParser, MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.views import APIView

from bankapi.errors import ApiError, ErrorCode
from bankapi.http.responses import served_as_attachment
from bankapi.http.schema import error_responses
from onboarding.document_formats import DOCUMENT_CONTENT_TYPES, OPAQUE_CONTENT_TYPE
from onboarding.links import LinkRefused, UboLink, document_url_check, sandbox_flow_open, ubo_link_open
from onboarding.models import Ubo
from onboarding.providers import provider_named
from onboarding.services.documents import document_open, document_store, upload_content_type
from onboarding.services.ubos import ubo_link_resolve, ubo_verification_finished, ubo_verification_started

S413 = "PAYLOAD_TOO_LARGE: a body over the request size limit."
REFUSED_LINK = "This link is invalid or has expired."
REFUSED_URL = (
    "The URL's signature does not match, it has expired, or the request differs from what was signed."
)


class PublicView(APIView):
    """A route without a bearer. Its body limit (and chunked bodies) are applied
    at the door like every route's (`bankapi.http.middleware.BodyLimitMiddleware`)."""

    authentication_classes: list = []
    permission_classes = [AllowAny]


def _linked_ubo(token: str, opener: Callable[[str], UboLink]) -> tuple[Ubo, UboLink]:
    try:
        link = opener(token)
    except LinkRefused:
        raise ApiError(ErrorCode.FORBIDDEN, REFUSED_LINK)
    ubo = ubo_link_resolve(link)
    if ubo is None:
        raise ApiError(ErrorCode.FORBIDDEN, REFUSED_LINK)
    return ubo, link


class UboLinkView(PublicView):
    @extend_schema(
        tags=["onboarding"],
        summary="A UBO's verification link (no bearer)",
        description=(
            "The link e-mailed to a UBO. When its signature holds, it has not expired and the UBO's "
            "verification was not reset since it was sent, it redirects (302) to the verification "
            "provider's hosted flow; otherwise 403."
        ),
        auth=[],
        responses={
            (302, "text/html"): OpenApiResponse(description="Redirect to the provider's hosted flow."),
            **error_responses(
                403, 413, s403="FORBIDDEN: the link is tampered with, expired or reset.", s413=S413
            ),
        },
    )
    def get(self, request, token: str):
        ubo, link = _linked_ubo(token, ubo_link_open)
        provider = provider_named(ubo.application.verification_provider)
        return HttpResponseRedirect(
            provider.hosted_flow_url(
                request,
                ubo,
                success_url=link.success_url,
                reject_url=link.reject_url,
                expires_at=link.expires_at,
            )
        )


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Identity verification (sandbox)</title></head>
<body>
<h1>Identity verification (sandbox)</h1>
<p>{body}</p>
{form}
</body></html>
"""
_FORM = """<form method="post">
<button type="submit" name="outcome" value="approve">Approve</button>
<button type="submit" name="outcome" value="reject">Reject</button>
</form>"""


# The page is the service's own, with every provided value escaped; it runs no
# script and loads nothing, and says so to the browser.
_PAGE_HEADERS = {"Content-Security-Policy": "default-src 'none'", "X-Content-Type-Options": "nosniff"}


def _page(body: str, form: str = "", status: int = 200) -> HttpResponse:
    return HttpResponse(
        _PAGE.format(body=body, form=form),
        status=status,
        content_type="text/html; charset=utf-8",
        headers=_PAGE_HEADERS,
    )


class SandboxUboFlowView(PublicView):
    parser_classes = [FormParser, MultiPartParser]

    @extend_schema(
        tags=["sandbox"],
        summary="The sandbox provider's hosted UBO verification page (no bearer)",
        description=(
            "Where a UBO's verification link leads with the sandbox provider. Opening it moves the UBO "
            "to IN_PROGRESS; the page offers Approve and Reject."
        ),
        auth=[],
        responses={
            (200, "text/html"): OpenApiResponse(OpenApiTypes.STR, description="The page."),
            **error_responses(
                403, 413, s403="FORBIDDEN: the link is tampered with, expired or reset.", s413=S413
            ),
        },
    )
    def get(self, request, token: str):
        ubo, _ = _linked_ubo(token, sandbox_flow_open)
        ubo_verification_started(ubo=ubo)
        name = html.escape(f"{ubo.first_name} {ubo.last_name}")
        company = html.escape(ubo.application.customer.name)
        return _page(f"{name}, confirm your identity as a beneficial owner of {company}.", _FORM)

    @extend_schema(
        tags=["sandbox"],
        summary="Finish the sandbox UBO verification (no bearer)",
        description=(
            "Form field `outcome`: `approve` (the UBO is VERIFIED) or `reject` (REJECTED, a final "
            "identity failure). Redirects (303) to the success or reject URL the link carried, else "
            "shows the outcome."
        ),
        auth=[],
        request={
            "application/x-www-form-urlencoded": {
                "type": "object",
                "properties": {"outcome": {"type": "string", "enum": ["approve", "reject"]}},
            }
        },
        responses={
            (200, "text/html"): OpenApiResponse(OpenApiTypes.STR, description="The outcome."),
            (303, "text/html"): OpenApiResponse(description="Redirect to the success or reject URL."),
            **error_responses(
                400,
                403,
                413,
                s400="Neither approve nor reject was chosen (the page again).",
                s403="FORBIDDEN: the link is tampered with, expired or reset.",
                s413=S413,
            ),
        },
    )
    def post(self, request, token: str):
        ubo, link = _linked_ubo(token, sandbox_flow_open)
        outcome = request.data.get("outcome")
        if outcome not in ("approve", "reject"):
            return _page("Choose Approve or Reject.", _FORM, status=400)
        verified = outcome == "approve"
        ubo_verification_finished(ubo=ubo, verified=verified)
        target = link.success_url if verified else link.reject_url
        if target:
            return HttpResponseRedirect(target, status=303)
        return _page(
            "Thank you: your identity is verified." if verified else "Your verification was rejected."
        )


class RawBodyParser(BaseParser):
    """The document PUT's body is the file itself, whatever its type: read by the view."""

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        return None


def _refused() -> ApiError:
    return ApiError(ErrorCode.FORBIDDEN, REFUSED_URL)


KEY = OpenApiParameter("key", str, OpenApiParameter.QUERY, description="From the presigned URL.")
EXPIRES = OpenApiParameter("expires", str, OpenApiParameter.QUERY, description="From the presigned URL.")
SIGNATURE = OpenApiParameter("signature", str, OpenApiParameter.QUERY, description="From the presigned URL.")


class LocalDocumentView(PublicView):
    parser_classes = [RawBodyParser]

    @classproperty
    def max_body_bytes(cls) -> int:
        # Read when a request comes, so the setting in force applies.
        return settings.DOCUMENT_UPLOAD_MAX_BYTES

    def _check(self, request, method: str, content_type: str) -> str:
        """The key the URL was signed for, or 403."""
        key = request.query_params.get("key", "")
        try:
            document_url_check(
                method=method,
                key=key,
                content_type=content_type,
                expires=request.query_params.get("expires", ""),
                signature=request.query_params.get("signature", ""),
            )
        except LinkRefused:
            raise _refused()
        return key

    @extend_schema(
        tags=["onboarding"],
        summary="Upload a document to a presigned URL (no bearer)",
        description=(
            "The uploadUrl of the presign route, when files are kept by this service. The body is the "
            "file; Content-Type must be the one presign answered (or `application/octet-stream`, which "
            "stands for it), and the file must be of that type (its "
            "first bytes are checked: a PDF starts with `%PDF-`, a PNG with its signature, and so on), "
            "else 400 and nothing is stored. Send it with Content-Length, or chunked where the server "
            "decodes chunked bodies (else 411); over the size limit, 413."
        ),
        auth=[],
        parameters=[KEY, EXPIRES, SIGNATURE],
        # The types presign accepts, and the generic binary type that stands for the
        # signed one: a generated client (openapi-python-client) sends its files as that.
        request={
            content_type: OpenApiTypes.BINARY
            for content_type in (*DOCUMENT_CONTENT_TYPES, OPAQUE_CONTENT_TYPE)
        },
        responses={
            (200, "text/plain"): OpenApiResponse(description="Stored (empty body)."),
            **error_responses(
                400,
                403,
                411,
                413,
                s400="VALIDATION_ERROR: the file is not of its declared type (nothing is stored), or "
                "Content-Length is not an integer.",
                s403="FORBIDDEN: tampered or expired URL, or another Content-Type than signed.",
                s413="PAYLOAD_TOO_LARGE: the document is over the size limit (10 MiB unless configured).",
            ),
        },
    )
    def put(self, request):
        content_type = upload_content_type(
            request.query_params.get("key", ""), request.META.get("CONTENT_TYPE", "")
        )
        key = self._check(request, "PUT", content_type)
        # Within the limit: longer bodies, with Content-Length or chunked, were
        # refused at the door, and a chunked one was read there, up to limit + 1.
        body = request._request.read()
        document_store(key=key, content_type=content_type, body=body)
        return HttpResponse(b"", status=200, content_type="text/plain")

    @extend_schema(
        tags=["onboarding"],
        summary="Download a document from a presigned URL (no bearer)",
        description=(
            "The downloadUrl of the presign route, when files are kept by this service. The document "
            "comes as an attachment (`Content-Disposition: attachment`, `X-Content-Type-Options: "
            "nosniff`, `Content-Security-Policy: default-src 'none'; sandbox`) of its declared type."
        ),
        auth=[],
        parameters=[KEY, EXPIRES, SIGNATURE],
        responses={
            **{
                (200, content_type): OpenApiResponse(
                    OpenApiTypes.BINARY, description="The document as uploaded, as an attachment."
                )
                for content_type in (*DOCUMENT_CONTENT_TYPES, OPAQUE_CONTENT_TYPE)
            },
            **error_responses(
                403,
                404,
                s403="FORBIDDEN: tampered or expired URL.",
                s404="RESOURCE_NOT_FOUND: nothing uploaded yet.",
            ),
        },
    )
    def get(self, request):
        key = self._check(request, "GET", "")
        stored, content_type, filename = document_open(key)
        return served_as_attachment(FileResponse(stored, content_type=content_type), filename)
