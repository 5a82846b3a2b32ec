"""Fitting a rendered state into a token budget: a pure function from sections to sections.

Sections keep their reading order in the output. The required ones (the goal and the next
step: without them a fresh context cannot go on) are always there whole; a budget too small
for them is refused, naming the smallest that works, rather than printing nothing. The others
are admitted by priority (invariants, then the last log entry, ...): each one whole if it fits,
else its first lines (or its last lines, for an append-only file whose newest entries matter
most) with a marker, else not at all; the header goes before any of them. A closing note names
what was trimmed. The whole rendered text is counted every time (token counts do not add up
across joins), and the result never exceeds the budget.
"""

from __future__ import annotations

from ipse._plain import Plain
from ipse.errors import UsageError

TYPE_CHECKING = False  # (no `typing` on the SessionStart hook's path: docs/development.md)
if TYPE_CHECKING:
    from collections.abc import Callable

TRIM_MARK = "[... trimmed by ipse to fit the token budget ...]"


class Section(Plain):
    """One titled block of output; lower ``priority`` is admitted first."""

    __slots__ = ("body", "keep_tail", "order", "priority", "required", "title")

    def __init__(
        self,
        title: str,
        body: str,
        priority: int,
        order: int,
        keep_tail: bool = False,
        required: bool = False,
    ) -> None:
        self.title = title
        self.body = body
        self.priority = priority
        self.order = order
        self.keep_tail = keep_tail  # trim from the start (keep the newest lines), not the end
        self.required = required  # always kept whole; a budget without room for it is refused

    def with_body(self, body: str) -> Section:
        """The same section holding ``body``."""
        return Section(self.title, body, self.priority, self.order, self.keep_tail, self.required)


def render(header: str, sections: list[Section], note: str = "") -> str:
    """The output text: the header, then the sections in reading order, then the note."""
    parts = [header] if header else []
    for section in sorted(sections, key=lambda s: s.order):
        parts.append(f"=== {section.title} ===\n{section.body.rstrip()}\n")
    if note:
        parts.append(note + "\n")
    return "\n".join(parts)


def _note(budget: int, trimmed: list[str], dropped: list[str]) -> str:
    bits = []
    if trimmed:
        bits.append("trimmed " + ", ".join(trimmed))
    if dropped:
        bits.append("left out " + ", ".join(dropped))
    return f"[ipse: output kept within {budget} tokens: {'; '.join(bits)}]"


def _head(section: Section, lines: int) -> Section:
    """The section cut to ``lines`` lines (its first, or its last with ``keep_tail``)."""
    all_lines = section.body.splitlines()
    if section.keep_tail:
        return section.with_body("\n".join([TRIM_MARK, *all_lines[len(all_lines) - lines :]]))
    return section.with_body("\n".join([*all_lines[:lines], TRIM_MARK]))


def fit(
    header: str, sections: list[Section], budget: int, count: Callable[[str], int]
) -> tuple[str, list[str]]:
    """Render within ``budget`` tokens; returns the text and the titles trimmed or left out.

    Raises `UsageError` when the required sections alone do not fit.
    """
    full = render(header, sections)
    if count(full) <= budget:
        return full, []
    fitting = _Fitting(header, sections, budget, count)
    kept = [s for s in sections if s.required]
    if not fitting.fits(kept, []):
        fitting.header = ""
        if not kept and not fitting.fits(kept, []):
            return "", [s.title for s in sections]
        needed = fitting.needed(kept)
        if needed > budget:
            names = " and ".join(s.title for s in kept)
            raise UsageError(
                f"a budget of {budget} tokens is too small: {names} alone take {needed}"
                f" (use a budget of at least {needed})"
            )
    trimmed: list[str] = []
    optional = [s for s in sections if not s.required]
    for section in sorted(optional, key=lambda s: (s.priority, s.order)):
        trimmed = fitting.admit(kept, section, trimmed)
    text, trimmed = fitting.within_budget(kept, trimmed)
    kept_titles = {k.title for k in kept}
    return text, [*trimmed, *(s.title for s in sections if s.title not in kept_titles)]


class _Fitting:
    """The sections being fitted into a budget, and the header they go under."""

    def __init__(
        self, header: str, sections: list[Section], budget: int, count: Callable[[str], int]
    ) -> None:
        self.header, self.sections, self.budget, self.count = header, sections, budget, count

    def attempt(self, candidate: list[Section], trimmed: list[str], within: int = 0) -> str:
        """The text of ``candidate`` with the note (naming ``within``, else the budget)."""
        titles = {c.title for c in candidate}
        dropped = [s.title for s in self.sections if s.title not in titles]
        return render(self.header, candidate, _note(within or self.budget, trimmed, dropped))

    def fits(self, candidate: list[Section], trimmed: list[str]) -> bool:
        return self.count(self.attempt(candidate, trimmed)) <= self.budget

    def needed(self, kept: list[Section]) -> int:
        """The tokens the required sections take with their note."""
        needed = self.count(self.attempt(kept, []))
        while needed > self.budget and self.count(self.attempt(kept, [], needed)) > needed:
            needed += 1  # the note names the budget: a longer number can take a token more
        return needed

    def admit(self, kept: list[Section], section: Section, trimmed: list[str]) -> list[str]:
        """Add ``section`` to ``kept``: whole if it fits, else as many of its lines as fit,
        else not at all; the titles trimmed since."""
        if self.fits([*kept, section], trimmed):
            kept.append(section)
            return trimmed
        with_it = [*trimmed, section.title]
        low, high = 0, len(section.body.splitlines()) - 1  # most head lines that still fit
        while low < high:
            mid = (low + high + 1) // 2
            if self.fits([*kept, _head(section, mid)], with_it):
                low = mid
            else:
                high = mid - 1
        if low > 0 and self.fits([*kept, _head(section, low)], with_it):
            kept.append(_head(section, low))
            return with_it
        return trimmed

    def within_budget(self, kept: list[Section], trimmed: list[str]) -> tuple[str, list[str]]:
        """The text of ``kept``, the optional sections of least priority left out until it
        fits (the note can tip it over); the titles trimmed."""
        text = self.attempt(kept, trimmed)
        while self.count(text) > self.budget:
            worst = max((s for s in kept if not s.required), key=lambda s: (s.priority, s.order))
            kept.remove(worst)
            trimmed = [t for t in trimmed if t != worst.title]
            text = self.attempt(kept, trimmed)
        return text, trimmed
