"""Plain value types shared by the engine's modules (no behaviour, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

#: Evaluation cells without a verdict that are not errors either (kinds of the sandbox's cell errors): a check that
#: needs a model and has none, and a check that does not apply to the example (it reads an input the example
#: lacks). Rates leave them out and neither counts as a failure; here, not in the sandbox, so that the language
#: server's read path can use it without loading the sandbox.
NOT_ERROR_KINDS: Final = frozenset({"needs_model", "not_applicable"})


@dataclass(frozen=True, slots=True, order=True)
class Position:
    """Zero-based line and character, the character counted in UTF-16 code units as LSP does."""

    line: int
    character: int


@dataclass(frozen=True, slots=True)
class Range:
    start: Position
    end: Position


class UnitKind(StrEnum):
    """What kind of text unit the splitter produced; code and quoted examples stay whole."""

    SENTENCE = "sentence"
    BULLET = "bullet"
    HEADING = "heading"
    CODE = "code"
    QUOTE = "quote"


@dataclass(frozen=True, slots=True)
class Sentence:
    """One unit of a prompt: a sentence, a list item, a heading, or a whole code fence / quoted block.

    ``start``/``end`` are character offsets into the prompt text (Python str indices);
    ``range`` is the same span in LSP coordinates.
    """

    text: str
    start: int
    end: int
    range: Range
    kind: UnitKind = UnitKind.SENTENCE


class ChangeKind(StrEnum):
    ADDED = "added"
    REMOVED = "removed"
    MODIFIED = "modified"


@dataclass(frozen=True, slots=True)
class SentenceChange:
    """One changed unit between two versions.

    ``new`` is set for added and modified units (its range is in the newer version), ``old`` for removed
    and modified ones; ``similarity`` in [0, 1] is how alike old and new are (1.0 for pure adds/removes).
    """

    kind: ChangeKind
    old: Sentence | None
    new: Sentence | None
    similarity: float = 1.0


@dataclass(frozen=True, slots=True)
class Delta:
    """The sentence-level difference between two consecutive versions of a prompt."""

    changes: tuple[SentenceChange, ...]
    labels: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True, slots=True)
class VersionInfo:
    """One recorded version of a prompt; ``number`` is its 1-based position in the history, oldest first."""

    id: int
    number: int
    content_hash: str
    created_at: str
    origin: str
    commit_sha: str | None = None
    commit_message: str | None = None
    author: str | None = None
    authored_at: str | None = None

    @property
    def written_at(self) -> str:
        """When its text was written, as ``git log`` shows it: a commit's author date (with the author's UTC
        offset); the time it was recorded otherwise, and for commits recorded before author dates were kept.
        ``created_at`` (UTC, the committer date for commits) orders the history."""
        return self.authored_at or self.created_at

    @property
    def short_sha(self) -> str | None:
        return self.commit_sha[:10] if self.commit_sha else None

    @property
    def subject(self) -> str | None:
        """The commit message's first line."""
        if not self.commit_message:
            return None
        lines = self.commit_message.strip().splitlines()
        return lines[0] if lines else None
