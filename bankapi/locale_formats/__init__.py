"""Date and time formats of the back office (`FORMAT_MODULE_PATH`): every time an
operator reads says its zone ("2 Dec 2026, 00:55 UTC"), on a 24-hour clock, so a
time on a list, a record page or the audit is never read as local."""
