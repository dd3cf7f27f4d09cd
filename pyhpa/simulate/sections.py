"""How ``pyhpa simulate`` shows the source sections of the API it has no code of its own for (prediction has:
``pyhpa.simulate.prediction``): their ``timeline.csv`` columns, their summary.json keys, declared here per section.

A source section of the API (``pyhpa.api.sections.SOURCE_SECTIONS``) listed in ``SHOWN`` gets, with no other
change to ``pyhpa/simulate``: its columns in timeline.csv, its ``summary.json`` section (``SourceRecord.summary``),
its row among the extensions (``report.EXTENSIONS``) and its panel in the plot.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..api.sections import SOURCE_SECTIONS, SourceSection


@dataclass(frozen=True, slots=True, kw_only=True)
class Shown:
    """How simulate shows one source section: ``section`` (the API's), ``timeline`` its ``timeline.csv`` columns as
    (column, the core status's attribute), the replicas it asked for first; ``summary`` the core spec's fields that
    summary.json's ``<field>`` repeats; ``active_key`` the word of the summary's ``<word>_syncs`` and
    ``<word>_episodes`` (syncs, and runs of syncs, it was active)."""

    section: SourceSection
    timeline: tuple[tuple[str, str], ...]
    summary: tuple[str, ...]
    active_key: str

    @property
    def field(self) -> str:
        """``spec.<field>``, ``status.<field>``, summary.json's key: the section's."""
        return self.section.field


#: The source sections simulate shows by these declarations, by field, in the API's order.
SHOWN: dict[str, Shown] = {s.field: s for s in (
    Shown(section=SOURCE_SECTIONS["saturation"],
          timeline=(("saturation_replicas", "replicas"), ("cpu_percent_of_limit", "usage_percent")),
          summary=("pinned_percent", "demand_factor", "mode"), active_key="pinned"),
)}
