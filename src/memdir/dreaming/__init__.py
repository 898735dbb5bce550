"""Dreaming (docs/design.md#dreaming): recall tracking and the promotion of daily notes into
MEMORY.md.

The data path, one module each: every search records what it recalled from the daily logs
(:mod:`~memdir.dreaming.store`); ``memdir dream`` runs the light, REM and deep phases
(:mod:`~memdir.dreaming.phases`), scores entries (:mod:`~memdir.dreaming.scoring`), promotes the
ones that pass the gates after re-reading the live notes (:mod:`~memdir.dreaming.promotion`),
and keeps MEMORY.md within its budget (:mod:`~memdir.dreaming.budget`).

The names below are imported on first use: a search records recalls without loading the phases.
"""

from typing import TYPE_CHECKING

from memdir._lazy import lazy_exports

_EXPORTS = {
    "MANUAL_GATES": "memdir.dreaming.scoring",
    "MEMORY_BUDGET_CHARS": "memdir.dreaming.budget",
    "RECALL_NAME": "memdir.dreaming.store",
    "SCHEDULE_GATES": "memdir.dreaming.scoring",
    "PromotionCandidate": "memdir.dreaming.phases",
    "DreamReport": "memdir.dreaming.phases",
    "Factors": "memdir.dreaming.scoring",
    "Gates": "memdir.dreaming.scoring",
    "RecallEntry": "memdir.dreaming.store",
    "RecallStore": "memdir.dreaming.store",
    "record_recalls": "memdir.dreaming.store",
    "run_dream": "memdir.dreaming.phases",
}
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

if TYPE_CHECKING:
    from memdir.dreaming.budget import MEMORY_BUDGET_CHARS
    from memdir.dreaming.phases import DreamReport, PromotionCandidate, run_dream
    from memdir.dreaming.scoring import MANUAL_GATES, SCHEDULE_GATES, Factors, Gates
    from memdir.dreaming.store import RECALL_NAME, RecallEntry, RecallStore, record_recalls

__all__ = [
    "MANUAL_GATES",
    "MEMORY_BUDGET_CHARS",
    "RECALL_NAME",
    "SCHEDULE_GATES",
    "DreamReport",
    "Factors",
    "Gates",
    "PromotionCandidate",
    "RecallEntry",
    "RecallStore",
    "record_recalls",
    "run_dream",
]
