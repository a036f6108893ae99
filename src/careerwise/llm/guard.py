"""The buffer guard of seed 000.

The first N non-blank text chunks of a round are held back. If a tool call shows up while they are
held, they are dropped (the user never sees half-thoughts); otherwise they are released and the rest
streams straight through. Whitespace-only chunks are held but do not count toward N.
"""

from __future__ import annotations


class BufferGuard:
    def __init__(self, size: int) -> None:
        self._size = size
        self._held: list[str] = []
        self._counted = 0
        self.released = size == 0
        self.dropped: list[str] = []

    def push(self, text: str) -> list[str]:
        """Add a chunk; returns the chunks that may now be shown (possibly none)."""
        if self.released:
            return [text]
        self._held.append(text)
        if text.strip():
            self._counted += 1
        if self._counted >= self._size:
            return self.release()
        return []

    def release(self) -> list[str]:
        out, self._held = self._held, []
        self.released = True
        return out

    def drop(self) -> None:
        """A tool call arrived while text was held: discard it (kept for the trace)."""
        self.dropped.extend(self._held)
        self._held = []

    @property
    def holding(self) -> bool:
        return bool(self._held)
