from payments import admin_fx  # noqa: F401 - registers the FX admin
