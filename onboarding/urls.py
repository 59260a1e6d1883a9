from django.urls import path

from onboarding import views, views_public

APPLICATION = "applications/<str:applicationId>"

urlpatterns = [
    path("applications", views.ApplicationCreateView.as_view()),
    path(APPLICATION, views.ApplicationView.as_view()),
    path(f"{APPLICATION}/documents/legal", views.LegalDocumentsView.as_view()),
    path(f"{APPLICATION}/agreements/legal/docs", views.LegalDocumentsAliasView.as_view()),
    path(f"{APPLICATION}/documents/legal/accept", views.LegalAcceptView.as_view()),
    path(f"{APPLICATION}/documents/legal/<str:documentId>/content", views.LegalDocumentContentView.as_view()),
    path(f"{APPLICATION}/ubos/actions", views.UboActionsView.as_view()),
    path(f"{APPLICATION}/verification/status", views.VerificationStatusView.as_view()),
    path("kyc/schema", views.KycSchemaView.as_view()),
    path("customers/<str:customerId>/documents/presign", views.PresignView.as_view()),
    path("documents/local", views_public.LocalDocumentView.as_view()),
    path("ubo-verification/<str:token>", views_public.UboLinkView.as_view()),
    path("sandbox/ubo-verification/<str:token>", views_public.SandboxUboFlowView.as_view()),
]
