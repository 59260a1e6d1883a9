"""Users in the back office: support resets passwords, lifts lockouts and signs
users out everywhere, through the authn services; secrets are never shown."""

from typing import TYPE_CHECKING, TypedDict

from django.contrib import admin, messages
from django.db.models import BooleanField, ExpressionWrapper

from authn.models import AuthChallenge, LoginThrottle, PasskeyCredential, RefreshToken, User
from authn.services.staff import (
    user_locked_condition,
    user_password_reset_temporary,
    user_sign_out_everywhere,
    user_unlock,
)
from bankapi.backoffice.admin_base import (
    CappedCountPaginator,
    ExactSearchMixin,
    ReadOnlyModelAdmin,
    TenancyFixedMixin,
    apply_each,
)

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


class LockedAnnotation(TypedDict):
    is_locked: bool


class LockedFilter(admin.SimpleListFilter):
    title = "locked out"
    parameter_name = "locked"

    def lookups(self, request, model_admin):
        return (("yes", "Locked out now"), ("no", "Not locked"))

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(user_locked_condition())
        if self.value() == "no":
            return queryset.exclude(user_locked_condition())
        return queryset


@admin.register(User)
class UserAdmin(TenancyFixedMixin, ExactSearchMixin, admin.ModelAdmin):
    list_display = (
        "email",
        "program",
        "role",
        "sandbox",
        "is_active",
        "is_staff",
        "totp_confirmed",
        "must_change_password",
        "locked",
    )
    list_filter = ("role", "sandbox", "is_staff", "is_active", LockedFilter, "program")
    exact_search_fields = ("email", "id")
    contains_search_fields = ("email", "first_name", "last_name")
    search_help_text = "Part of a name or e-mail (any case), or an exact user id."
    list_select_related = ("program",)
    raw_id_fields = ("customer", "custodian")
    filter_horizontal = ("groups",)
    exclude = ("password", "totp_secret", "totp_last_step", "step_up_pin", "user_permissions")
    readonly_fields = ("token_version", "last_login", "created_at", "totp_confirmed", "must_change_password")
    paginator = CappedCountPaginator
    show_full_result_count = False
    actions = ["reset_password", "unlock", "sign_out_everywhere"]

    def get_queryset(self, request):
        # One subquery per page, not one lockout query per row.
        locked = ExpressionWrapper(user_locked_condition(), output_field=BooleanField())
        return super().get_queryset(request).annotate(is_locked=locked)

    def get_readonly_fields(self, request, obj=None):
        fields = tuple(super().get_readonly_fields(request, obj))  # its tenancy too, once made
        if request.user.is_superuser:
            return fields
        # Only a superuser makes superusers.
        return (*fields, "is_superuser")

    @admin.display(description="locked out", boolean=True, ordering="is_locked")
    def locked(self, user: "WithAnnotations[User, LockedAnnotation]") -> bool:
        return user.is_locked

    def has_reset_password_permission(self, request) -> bool:
        return request.user.has_perm("authn.reset_password_user")

    def has_unlock_permission(self, request) -> bool:
        return request.user.has_perm("authn.unlock_user")

    def has_sign_out_permission(self, request) -> bool:
        return request.user.has_perm("authn.sign_out_user")

    @admin.action(
        description="Reset password to a temporary one (new password required at next sign-in)",
        permissions=["reset_password"],
    )
    def reset_password(self, request, queryset) -> None:
        issued: list[str] = []

        def reset(user: User) -> str:
            temporary = user_password_reset_temporary(user=user)
            issued.append(f"{user.email}: {temporary.password}")
            return "Password reset to a temporary one; signed out everywhere; lockouts lifted"

        apply_each(self, request, queryset, reset)
        for line in issued:
            # Shown once, to this operator only; never stored in clear or logged.
            self.message_user(
                request, f"Temporary password for {line} (give it to the user; shown once)", messages.INFO
            )

    @admin.action(description="Unlock (lift password and code lockouts)", permissions=["unlock"])
    def unlock(self, request, queryset) -> None:
        apply_each(
            self, request, queryset, lambda user: f"Unlocked ({user_unlock(user=user)} counters cleared)"
        )

    @admin.action(description="Sign out everywhere (end every token and session)", permissions=["sign_out"])
    def sign_out_everywhere(self, request, queryset) -> None:
        def sign_out(user: User) -> str:
            user_sign_out_everywhere(user=user)
            return "Signed out everywhere"

        apply_each(self, request, queryset, sign_out)


@admin.register(PasskeyCredential)
class PasskeyCredentialAdmin(ExactSearchMixin, admin.ModelAdmin):
    list_display = ("user", "friendly_name", "created_at", "last_used_at")
    exact_search_fields = ("user",)
    list_select_related = ("user",)
    raw_id_fields = ("user",)
    fields = ("user", "friendly_name", "sign_count", "transports", "created_at", "last_used_at")
    readonly_fields = ("user", "sign_count", "transports", "created_at", "last_used_at")

    def has_add_permission(self, request) -> bool:
        # Passkeys are registered by their owner's authenticator, never typed in.
        return False


@admin.register(LoginThrottle)
class LoginThrottleAdmin(ExactSearchMixin, ReadOnlyModelAdmin):
    """Lockout counters, to see why someone cannot sign in (lift them with the
    users' "Unlock" action). Client rows are keyed by the client's address."""

    list_display = ("factor", "email", "program", "failures", "window_started_at", "locked_until")
    list_filter = ("factor",)
    exact_search_fields = ("email",)
    search_help_text = "An exact e-mail address (or client address)."
    list_select_related = ("program",)


@admin.register(RefreshToken)
class RefreshTokenAdmin(ExactSearchMixin, ReadOnlyModelAdmin):
    """A user's sign-ins (refresh token families). The token itself is never
    stored, only its hash, and not even that is shown."""

    list_display = ("user", "family", "created_at", "expires_at", "rotated_at", "revoked_at")
    exact_search_fields = ("user", "family")
    search_help_text = "An exact user id or token family."
    list_select_related = ("user",)
    exclude = ("token_hash",)
    ordering = ("-pk",)


@admin.register(AuthChallenge)
class AuthChallengeAdmin(ExactSearchMixin, ReadOnlyModelAdmin):
    """Sign-in and step-up challenges in progress. Their session tokens are
    stored hashed and their secrets (WebAuthn challenges, code digests) are not shown."""

    list_display = ("user", "kind", "created_at", "expires_at", "used_at", "attempts")
    list_filter = ("kind",)
    exact_search_fields = ("user",)
    search_help_text = "An exact user id."
    list_select_related = ("user",)
    exclude = ("token_hash", "secret", "context")
    ordering = ("-expires_at",)
