"""The characters single-line free text refuses, as the tests of every field kind
send them: controls (tab, newline, U+0085), bidi override and isolate, line and
paragraph separators, a zero-width space and the byte order mark."""

LINE_BREAKING = {
    "tab": "\t",
    "newline": "\n",
    "right-to-left override": "\u202e",
    "left-to-right isolate": "\u2066",
    "line separator": "\u2028",
    "paragraph separator": "\u2029",
    "next line": "\u0085",
    "zero-width space": "\u200b",
    "byte order mark": "\ufeff",
}


def with_inside(text: str, character: str) -> str:
    """`text` with `character` in its middle, where no trimming could take it off."""
    middle = len(text) // 2
    return text[:middle] + character + text[middle:]
