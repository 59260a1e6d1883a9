"""Payment services, one module per concern. Views, tasks, admin actions and
management commands call these; none of them decides anything on its own."""
