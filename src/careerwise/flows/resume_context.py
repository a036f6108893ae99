"""The user's stored resume as context for a deep answer (the practice coach of the parallel flow).

The engine gives each turn of a logged-in user a loader bound to that user (:func:`stored_resume_loader`),
so a flow can read that user's latest resume and nobody else's, and never touches the database itself.
:func:`for_prompt` prepares the text: contact details masked again (as the resume flow does before
anything is stored; a resume stored before masking existed is covered too), the fence markers the prompt
uses taken out of it, and the length capped, so a long resume cannot crowd the passages out of a small
model's context window.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from careerwise.flows.base import ResumeLoader
from careerwise.resume.contact import mask_contact

if TYPE_CHECKING:
    from careerwise.store import Database

RESUME_MAX_CHARS = 1500  # about 1,000-1,500 tokens: with the passages it fits the embedded model's 4,096
_FENCES = ("<<<", ">>>")


def stored_resume_loader(db: Database, user_id: str | None) -> ResumeLoader | None:
    """A loader of ``user_id``'s latest stored resume, or None without a logged-in user."""
    if not user_id:
        return None

    async def load() -> str | None:
        from careerwise.resume.store import latest_resume_text  # the resume package imports the flows

        return await latest_resume_text(db, user_id=user_id)

    return load


@dataclass(frozen=True)
class PromptResume:
    text: str
    chars: int  # of the stored (masked) resume, before the cap
    cut: bool


def for_prompt(stored: str, *, limit: int = RESUME_MAX_CHARS) -> PromptResume | None:
    """The resume as prompt data: contact details masked, fence markers removed, at most ``limit``
    characters (cut at a line break when one is near). None for an empty resume."""
    masked, _ = mask_contact(stored.strip())
    for fence in _FENCES:
        masked = masked.replace(fence, fence[0])
    if not masked.strip():
        return None
    if len(masked) <= limit:
        return PromptResume(masked, len(masked), cut=False)
    head = masked[:limit]
    end = head.rfind("\n")
    text = (head[:end] if end > limit // 2 else head).rstrip()
    return PromptResume(text + "\n…", len(masked), cut=True)
