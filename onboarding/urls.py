from django.urls import path

from onboarding import views, views_documents, views_legal, views_public, views_verification

APPLICATION = "applications/<str:applicationId>"

urlpatterns = [
    path("applications", views.ApplicationCreateView.as_view()),
    path(APPLICATION, views.ApplicationView.as_view()),
    path(f"{APPLICATION}/documents/legal", views_legal.LegalDocumentsView.as_view()),
    path(f"{APPLICATION}/agreements/legal/docs", views_legal.LegalDocumentsAliasView.as_view()),
    path(f"{APPLICATION}/documents/legal/accept", views_legal.LegalAcceptView.as_view()),
    path(
        f"{APPLICATION}/documents/legal/<str:documentId>/content",
        views_legal.LegalDocumentContentView.as_view(),
    ),
    path(f"{APPLICATION}/ubos/actions", views_verification.UboActionsView.as_view()),
    path(f"{APPLICATION}/verification/status", views_verification.VerificationStatusView.as_view()),
    path("kyc/schema", views_documents.KycSchemaView.as_view()),
    path("customers/<str:customerId>/documents/presign", views_documents.PresignView.as_view()),
    path("documents/local", views_public.LocalDocumentView.as_view()),
    path("ubo-verification/<str:token>", views_public.UboLinkView.as_view()),
    path("sandbox/ubo-verification/<str:token>", views_public.SandboxUboFlowView.as_view()),
]
