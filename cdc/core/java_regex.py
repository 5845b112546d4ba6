"""Java's regular expressions as Debezium and Kafka Connect apply them (``Pattern``, ``Matcher``),
read with Python's re: topic routing (topic.regex, RegexRouter, the routers' key fields)."""
from __future__ import annotations

import re


def java_regex(pattern: str) -> re.Pattern[str]:
    """A Java regular expression compiled by Python's re: Java's named groups ``(?<name>...)``
    become ``(?P<name>...)`` (lookbehinds ``(?<=`` / ``(?<!`` are left alone)."""
    return re.compile(re.sub(r"\(\?<(?![=!])", "(?P<", pattern))


def java_replace_first(pattern: re.Pattern[str], replacement: str, text: str) -> str | None:
    """Java's ``if (matcher.matches()) matcher.replaceFirst(replacement)``, or None when the whole
    of ``text`` does not match. Java replacements use ``$1`` / ``${name}`` and ``\\`` escapes."""
    if pattern.fullmatch(text) is None:
        return None
    first = pattern.search(text)  # replaceFirst finds the first match again, as Java does
    assert first is not None
    return text[:first.start()] + _expand_java(first, replacement) + text[first.end():]


def _expand_java(match: re.Match[str], replacement: str) -> str:
    out: list[str] = []
    i = 0
    groups = match.re.groups
    while i < len(replacement):
        c = replacement[i]
        if c == "\\" and i + 1 < len(replacement):
            out.append(replacement[i + 1])
            i += 2
        elif c == "$" and i + 1 < len(replacement) and replacement[i + 1] == "{":
            end = replacement.index("}", i)
            out.append(match.group(replacement[i + 2:end]) or "")
            i = end + 1
        elif c == "$" and i + 1 < len(replacement) and replacement[i + 1].isdigit():
            # Java reads as many digits as still name an existing group.
            number = int(replacement[i + 1])
            i += 2
            while i < len(replacement) and replacement[i].isdigit() and number * 10 + int(replacement[i]) <= groups:
                number = number * 10 + int(replacement[i])
                i += 1
            if number > groups:
                raise IndexError(f"no group {number} in {match.re.pattern!r}")
            out.append(match.group(number) or "")
        else:
            out.append(c)
            i += 1
    return "".join(out)
