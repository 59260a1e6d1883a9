"""Progress bars for operator commands: tqdm writing to the command's stdout (so
`call_command(..., stdout=...)` and redirections get it too)."""

from typing import Any

from django.core.management.base import OutputWrapper
from tqdm import tqdm


class _Unbuffered:
    """The command's stdout as tqdm needs it: text written exactly as given
    (Django's wrapper would end each bar refresh with a newline)."""

    def __init__(self, out: OutputWrapper) -> None:
        self.out = out

    def write(self, text: str) -> None:
        self.out.write(text, ending="")

    def flush(self) -> None:
        self.out.flush()


def progress(out: OutputWrapper, *, total: int | None, desc: str, unit: str = "row") -> Any:
    """A progress bar over `total` items on the command's output."""
    return tqdm(total=total, desc=desc, unit=unit, file=_Unbuffered(out), dynamic_ncols=True, mininterval=0.5)
