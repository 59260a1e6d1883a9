from django.urls import path

from authn import views, views_passkeys

urlpatterns = [
    path("login", views.LoginView.as_view()),
    path("verify-2fa", views.Verify2faView.as_view()),
    path("change-password", views.ChangePasswordView.as_view()),
    path("verify-email", views.VerifyEmailView.as_view()),
    path("mfa/setup", views.MfaSetupView.as_view()),
    path("mfa/verify-setup", views.MfaVerifySetupView.as_view()),
    path("passkey/register/start", views_passkeys.PasskeyRegisterStartView.as_view()),
    path("passkey/register/complete", views_passkeys.PasskeyRegisterCompleteView.as_view()),
    path("verify-passkey", views_passkeys.VerifyPasskeyView.as_view()),
    path("refresh", views.RefreshView.as_view()),
    path("logout", views.LogoutView.as_view()),
]
