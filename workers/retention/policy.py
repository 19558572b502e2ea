"""How much of a stream to keep: the settings, as one value (pure: no I/O)."""

from __future__ import annotations

from dataclasses import dataclass

from workers.core.config import EngineConfig

DAY_S = 86_400


@dataclass(frozen=True, slots=True)
class Retention:
    """Keep entries ``retention_s`` seconds (0: for ever), and at most ``max_len`` of them
    (0: no cap); either way never an entry a consumer group still needs."""

    retention_s: int
    max_len: int = 0

    @classmethod
    def of(cls, config: EngineConfig) -> Retention:
        return cls(config.retention_s, config.max_len)

    @property
    def off(self) -> bool:
        """Nothing to trim by: the stream keeps everything."""
        return self.retention_s <= 0 and self.max_len <= 0

    def describe(self) -> str:
        """``keeps 7 d, at most 1,000,000 entries`` / ``keeps everything``."""
        if self.off:
            return "keeps everything (no retention, no length cap)"
        parts = [f"keeps {span(self.retention_s)}" if self.retention_s else "keeps any age"]
        if self.max_len:
            parts.append(f"at most {self.max_len:,} entries")
        return ", ".join(parts)


def span(seconds: int) -> str:
    """A retention for people: ``7 d``, ``36 h``, ``90 min``, ``45 s``."""
    for unit, size in (("d", DAY_S), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size} {unit}"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds} s"


def age_text(seconds: float) -> str:
    """An age for people, in its two largest units: ``6 d 3 h``, ``4 h 12 min``, ``35 s``."""
    s = max(int(seconds), 0)
    for unit, size, small, small_size in (("d", DAY_S, "h", 3600), ("h", 3600, "min", 60)):
        if s >= size:
            return f"{s // size} {unit} {s % size // small_size} {small}"
    return f"{s // 60} min {s % 60} s" if s >= 60 else f"{s} s"
