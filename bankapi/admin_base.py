from django.contrib import admin


class ReadOnlyModelAdmin(admin.ModelAdmin):
    """An admin screen to look at records that change only through services.

    Money records (payments, schedules, quotes) must move through the services that
    lock, post and record; a form edit would bypass all of that.
    """

    show_full_result_count = False

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
