"""The ISO 20022 routes of batch payments: a pain.001 file becomes a draft (as
verify makes one), and any draft or batch is reported as a pain.002.

Both ride on the batch routes' views: the same callers, scope and not-found rules.
"""

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.parsers import BaseParser
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from bankapi.approval_gate import exempt
from bankapi.errors import ApiError, ErrorCode
from bankapi.http.responses import ok_flat, served_as_attachment
from bankapi.http.schema import error_responses
from bankapi.roles import Role
from batches.iso20022.reading import MAX_NAMES
from batches.iso20022.schemas import PAIN002_VERSIONS
from batches.iso20022.stream import MAX_ATTRIBUTES, MAX_DEPTH, MAX_ELEMENTS, MAX_NAMESPACES
from batches.presenters import draft_status
from batches.rules import MAX_PAYMENTS
from batches.serializers import VerifyAnswerSerializer
from batches.services.files import file_draft_create, status_report
from batches.views import MAX_BODY_BYTES, PROGRAM_ID, BatchRouteView, CustomerBatchRouteView


class XmlDocumentParser(BaseParser):
    """A pain.001 document: read whole by the view (`request_body`), never by DRF.

    Declared so the body limit is applied at the door (bankapi.http.middleware), as for JSON.
    """

    media_type = "application/xml"

    def parse(self, stream, media_type=None, parser_context=None) -> dict:
        return {}


class TextXmlDocumentParser(XmlDocumentParser):
    """`text/xml`, the other standard name of XML: taken as `application/xml`."""

    media_type = "text/xml"


class BinaryDocumentParser(XmlDocumentParser):
    """`application/octet-stream`: the document as bytes, as generated clients send files."""

    media_type = "application/octet-stream"


FILE_DESCRIPTION = f"""A batch as an ISO 20022 customer credit transfer initiation: the body is a
`pain.001.001.03` or `pain.001.001.09` document (the namespace decides), `Content-Type:
application/xml` (`text/xml` and `application/octet-stream` are taken as the same), at most
{MAX_BODY_BYTES} bytes (16 MiB) and {MAX_PAYMENTS} transactions.

The answer is `action: verify`'s: `{{success, requestId, status}}`, `requestId` being the draft's id;
the draft's payments are checked in the background with the batch rules. Then `initiate`,
`passkey-challenge` and `submit` on POST /v1/batch-payments with `batchId` (that id) and without
`payments`: the file's payments are what the confirmation authorises and what is paid.

Mapping, per `PmtInf` and each of its `CdtTrfTxInf`: payer `DbtrAcct/Id/IBAN`, or `DbtrAcct/Id/Othr/Id`
of 14 digits (sort code then account number) with `SchmeNm/Cd` `BBAN` or `SchmeNm/Prtry` `SCAN`;
payee `Cdtr/Nm` and `CdtrAcct` (IBAN, with `CdtrAgt/FinInstnId/BICFI` (`BIC` in .03) as its BIC, or the
same 14-digit form); amount `Amt/InstdAmt` in its `Ccy`, which must be the payer account's currency,
with at most 2 decimals; reference the first `RmtInf/Ustrd`, else `PmtId/EndToEndId`. Each draft
entry's `payment` adds the transaction's `endToEndId` and `currency`; items keep `endToEndId`, and
`ReqdExctnDt` as their `scheduledDate` (the batch is paid when submitted). `PmtId/EndToEndId` must
be a SEPA identifier: letters a-z and A-Z, digits, space and `/ - ? : ( ) . , ' +`, not starting or
ending with `/`, without `//` (ids may repeat within a file); `Cdtr/Nm` and `Ustrd` are single-line
text. A transaction breaking a rule is reported invalid with its reasons, as in a JSON batch.

Refused with 400 VALIDATION_ERROR before any draft exists: XML that is not well-formed; any DTD
(so any entity declaration or external reference); another namespace; a body holding more than
its limits allow, field `Document` (content such as `SplmtryData/Envlp` may hold anything, but
reading costs bounded memory): more than {MAX_NAMES} distinct element and attribute names, more
than {MAX_ELEMENTS} elements, more than {MAX_DEPTH} levels of nested elements, more than
{MAX_ATTRIBUTES} attributes on one element, or more than {MAX_NAMESPACES} namespace declarations;
a violation of the message's XSD (`errors[]`: up to 50 `{{field: element path such as
CstmrCdtTrfInitn/PmtInf[1]/CdtTrfTxInf[3]/Amt/InstdAmt, counted from 1, message}}`, the path of
the element being read when the schema refused it); more than
{MAX_PAYMENTS} transactions (field `CstmrCdtTrfInitn/GrpHdr/NbOfTxs`); a `NbOfTxs` or `CtrlSum` of the
group header, or of a payment instruction that states them, other than its transactions' count or
amount sum (the field names the element). `GrpHdr/MsgId` is unique per owner (this custodian, or
this customer) and environment: a file whose MsgId was seen answers 409 DUPLICATE_MESSAGE with
`batchId`, the draft or batch it made, and makes nothing."""

FILE_RESPONSES = {
    200: OpenApiResponse(
        VerifyAnswerSerializer, description="The draft, stored; its payments are being checked."
    ),
    **error_responses(
        400,
        401,
        403,
        404,
        409,
        413,
        415,
        429,
        s400="VALIDATION_ERROR: the document (well-formedness, DTD, namespace, the limits of what a body "
        "may hold, XSD, transaction count, control figures), field errors in `errors`.",
        s404="RESOURCE_NOT_FOUND: the customer (single-customer route).",
        s409="DUPLICATE_MESSAGE: a file with this MsgId was uploaded before; `batchId` names what it made.",
        s413=f"PAYLOAD_TOO_LARGE: the body is over {MAX_BODY_BYTES} bytes.",
        s415="UNSUPPORTED_MEDIA_TYPE: the Content-Type is not application/xml, text/xml or "
        "application/octet-stream.",
    ),
}
FILE_BODY = {
    "type": "string",
    "format": "binary",
    "maxLength": MAX_BODY_BYTES,
    "description": "A pain.001.001.03 or pain.001.001.09 document.",
}
XML_MEDIA_TYPE = "application/xml"
# What a body may be sent as, all read alike: XML's two standard media types,
# and the generic binary type, which generated clients send files as.
XML_MEDIA_TYPES = (XML_MEDIA_TYPE, "text/xml", "application/octet-stream")
FILE_REQUEST = {media_type: FILE_BODY for media_type in XML_MEDIA_TYPES}


def request_body(request) -> bytes:
    """The XML body, after its Content-Type: 415 for any other (the size was checked at the door)."""
    media_type = (request.content_type or "").split(";")[0].strip().lower()
    if media_type not in XML_MEDIA_TYPES:
        raise ApiError(
            ErrorCode.UNSUPPORTED_MEDIA_TYPE,
            f"The body must be an ISO 20022 document sent as {', '.join(XML_MEDIA_TYPES)}, "
            f"not {media_type or 'nothing'}.",
        )
    return request._request.read()


class FileRouteView(BatchRouteView):
    """POST only: a custodian's or customer's access token."""

    roles = (Role.CUSTOMER, Role.CUSTODIAN)
    parser_classes = [XmlDocumentParser, TextXmlDocumentParser, BinaryDocumentParser]
    # Takes no idempotency key: a file is made once by its MsgId (a second upload
    # is 409 DUPLICATE_MESSAGE), which the database's unique constraint enforces.
    idempotency_operation = None

    def required_token_use(self, claims: dict) -> str:
        return "access"

    def _upload(self, request) -> Response:
        draft = file_draft_create(actor=self.actor(), body=request_body(request))
        return ok_flat({"requestId": str(draft.id), "status": draft_status(draft)})


class BatchFileView(FileRouteView):
    approval_policy = exempt("an upload makes a draft; its submit is covered")

    @extend_schema(
        tags=["batch payments"],
        operation_id="batch_payments_file_upload",
        summary="Upload a batch as an ISO 20022 pain.001 file (verify)",
        description=FILE_DESCRIPTION,
        request=FILE_REQUEST,
        responses=FILE_RESPONSES,
    )
    def post(self, request):
        return self._upload(request)


class CustomerBatchFileView(FileRouteView, CustomerBatchRouteView):
    approval_policy = exempt("an upload makes a draft; its submit is covered")

    @extend_schema(
        tags=["batch payments"],
        operation_id="customer_batch_payments_file_upload",
        summary="Upload one customer's batch as an ISO 20022 pain.001 file (verify)",
        description=FILE_DESCRIPTION + "\n\nEvery payer must be an account of the path's customer.",
        request=FILE_REQUEST,
        responses=FILE_RESPONSES,
    )
    def post(self, request, customerId: str):
        return self._upload(request)


VERSION = OpenApiParameter(
    "version",
    {"type": "string", "enum": list(PAIN002_VERSIONS), "default": PAIN002_VERSIONS[0]},
    OpenApiParameter.QUERY,
    required=False,
    description="The pain.002 version to answer in. Any other value is a 400.",
)
REPORT_DESCRIPTION = """An ISO 20022 customer payment status report (pain.002, `application/xml`, as an
attachment) of a batch or draft, made from a file or from JSON. `OrgnlGrpInfAndSts` echoes the file's
MsgId and message name (for a JSON batch, its id's 32 hex digits and `pain.001.001.09`) with `GrpSts`;
each transaction (grouped under its original payment instruction) has `OrgnlEndToEndId` (for a JSON
batch, the item id's 32 hex digits), `TxSts` and, when refused, one `StsRsnInf` with `Rsn/Cd` and the
reason text in `AddtlInf` (cut to 105 characters).

- A draft: valid payments `ACTC`, invalid ones `RJCT`; the group `ACTC` (all valid), `RJCT` (none)
  or `PART`; while its payments are being checked, `RCVD` and no transaction.
- A batch: SUCCESS items `ACSC`, FAILED `RJCT`, others `PDNG`; the group `ACSC` (all SUCCESS), `RJCT`
  (all FAILED), `PART` (finished with some failed), else `ACCP`.
- Reason codes: `AC01` account number, sort code or IBAN invalid; `RC01` BIC invalid; `AM04`
  insufficient funds; `AM02` over a limit; `AC04` payer account closed or not the caller's; `AM03`
  currency not the payer account's; `NARR` anything else.

The batchId may be sent with or without its hyphens. Errors are JSON, in the error envelope."""
REPORT_RESPONSES = {
    (200, XML_MEDIA_TYPE): OpenApiResponse(
        {
            "type": "string",
            "format": "binary",
            "description": "A pain.002.001.03 or pain.002.001.12 document.",
        },
        description="The status report (`Content-Disposition: attachment`).",
    ),
    # The same bytes, for clients that read the body as a file (a generated client
    # knows no XML type and takes the first one it knows).
    (200, "application/octet-stream"): OpenApiResponse(
        {"type": "string", "format": "binary"},
        description="The status report's bytes, as served with Content-Type application/xml.",
    ),
}


class StatusReportRouteView(BatchRouteView):
    def perform_content_negotiation(self, request, force=False):
        # The report is XML whatever the Accept header says; errors are JSON.
        return JSONRenderer(), JSONRenderer.media_type

    def _report(self, request, batch_id: str) -> HttpResponse:
        document = status_report(
            actor=self.actor(), batch_id=batch_id, version=request.query_params.get("version")
        )
        response = HttpResponse(document, content_type=XML_MEDIA_TYPE)
        served_as_attachment(response, f"status-report-{batch_id}.xml")
        return response


class BatchStatusReportView(StatusReportRouteView):
    @extend_schema(
        tags=["batch payments"],
        operation_id="batch_payments_status_report",
        summary="A batch's or draft's ISO 20022 status report (pain.002)",
        description=REPORT_DESCRIPTION,
        parameters=[VERSION, PROGRAM_ID],
        responses={
            **REPORT_RESPONSES,
            **error_responses(
                400,
                401,
                403,
                404,
                s400="VALIDATION_ERROR: an unknown version; programId missing (management).",
                s404="RESOURCE_NOT_FOUND: no such batch or draft for this caller.",
            ),
        },
    )
    def get(self, request, batchId: str):
        return self._report(request, batchId)


class CustomerBatchStatusReportView(StatusReportRouteView, CustomerBatchRouteView):
    @extend_schema(
        tags=["batch payments"],
        operation_id="customer_batch_payments_status_report",
        summary="One of the customer's batches or drafts as an ISO 20022 status report (pain.002)",
        description=REPORT_DESCRIPTION,
        parameters=[VERSION],
        responses={
            **REPORT_RESPONSES,
            **error_responses(
                400,
                401,
                403,
                404,
                s400="VALIDATION_ERROR: an unknown version.",
                s404="RESOURCE_NOT_FOUND: the customer, or no such batch or draft.",
            ),
        },
    )
    def get(self, request, customerId: str, batchId: str):
        return self._report(request, batchId)
