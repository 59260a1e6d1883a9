from django.urls import path

from onboarding import views

APPLICATION = "applications/<str:applicationId>"

urlpatterns = [
    path("applications", views.ApplicationCreateView.as_view()),
    path(APPLICATION, views.ApplicationView.as_view()),
    path(f"{APPLICATION}/documents/legal", views.LegalDocumentsView.as_view()),
    path(f"{APPLICATION}/agreements/legal/docs", views.LegalDocumentsAliasView.as_view()),
    path(f"{APPLICATION}/documents/legal/accept", views.LegalAcceptView.as_view()),
    path(f"{APPLICATION}/documents/legal/<str:documentId>/content", views.LegalDocumentContentView.as_view()),
    path("kyc/schema", views.KycSchemaView.as_view()),
]
