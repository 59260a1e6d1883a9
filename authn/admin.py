from django.contrib import admin

from authn.models import PasskeyCredential, User


@admin.register(User)
class UserAdmin(admin.ModelAdmin):
    list_display = ("email", "program", "role", "sandbox", "is_active", "is_staff", "totp_confirmed")
    list_filter = ("role", "sandbox", "is_staff", "is_active", "program")
    search_fields = ("email",)
    list_select_related = ("program",)
    raw_id_fields = ("customer", "custodian")
    exclude = ("password", "totp_secret", "totp_last_step", "step_up_pin", "user_permissions")
    readonly_fields = ("token_version", "last_login", "created_at")


@admin.register(PasskeyCredential)
class PasskeyCredentialAdmin(admin.ModelAdmin):
    list_display = ("user", "friendly_name", "created_at", "last_used_at")
    search_fields = ("user__email",)
    readonly_fields = ("credential_id", "public_key", "sign_count", "transports")
