"""Text from traces and file names, printed as one line: a site id, a path or a message may hold any
character, and what the tools print (validation lines, notes, comments of generated code) must keep one line
per record, so that no name can end a line, a comment or a docstring and forge what follows."""

from __future__ import annotations


def one_line(text: str) -> str:
    """``text`` with every character that is not printable (line breaks of every kind, other control
    characters, the lone surrogates of undecodable file names) written as its Python escape (``\\n``,
    ``\\x1b``, ``\\udcff``) and backslashes doubled, so the escapes read back unambiguously."""
    if text.isprintable() and "\\" not in text:
        return text
    return "".join(ch if ch.isprintable() and ch != "\\" else ch.encode("unicode_escape").decode("ascii")
                   for ch in text)
