"""Figures the deployment test measures, printed at the end of the run (with or
without -s), so CI logs keep them."""

import pytest

_SECTIONS: list[tuple[str, str]] = []


def report_figures(title: str, text: str) -> None:
    _SECTIONS.append((title, text))


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter):
    for title, text in _SECTIONS:
        terminalreporter.write_sep("=", title)
        terminalreporter.write_line(text)
