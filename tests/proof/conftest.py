"""Figures the proof tests measure, printed at the end of the run.

Each test appends its table or figures with `report_figures`; the terminal
summary prints them whether or not `-s` was given, so CI logs keep them.
"""

import pytest

from tests.support.factories_kernel import World, world_make

_SECTIONS: list[tuple[str, str]] = []


def report_figures(title: str, text: str) -> None:
    _SECTIONS.append((title, text))


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter):
    for title, text in _SECTIONS:
        terminalreporter.write_sep("=", title)
        terminalreporter.write_line(text)


@pytest.fixture
def world(db, fx_rates) -> World:
    """Every role's users and objects, with the starting FX rates."""
    return world_make()
