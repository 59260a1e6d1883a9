from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = "Audit"

    def ready(self) -> None:
        from audit.services import connect_recorders, staff_acting, staff_list_view_record, staff_view_record
        from bankapi.backoffice.admin_site import Audit, audit_register

        connect_recorders()
        # The back-office site runs every view under this audit (the kernel imports no app).
        audit_register(
            Audit(acting=staff_acting, view_record=staff_view_record, list_view_record=staff_list_view_record)
        )
