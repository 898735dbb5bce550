"""Dreaming (SPEC §8): recall tracking and the promotion of daily notes into MEMORY.md.

The data path, one module each: every search records what it recalled from the daily logs
(:mod:`~memdir.dreaming.store`); ``memdir dream`` runs the light, REM and deep phases
(:mod:`~memdir.dreaming.phases`), scores entries (:mod:`~memdir.dreaming.scoring`), promotes the
ones that pass the gates after re-reading the live notes (:mod:`~memdir.dreaming.promotion`),
and keeps MEMORY.md within its budget (:mod:`~memdir.dreaming.budget`).
"""

from memdir.dreaming.budget import MEMORY_BUDGET_CHARS
from memdir.dreaming.phases import Candidate, DreamReport, run_dream
from memdir.dreaming.scoring import MANUAL_GATES, SCHEDULE_GATES, Factors, Gates
from memdir.dreaming.store import RECALL_NAME, RecallEntry, RecallStore, record_recalls

__all__ = [
    "MANUAL_GATES",
    "MEMORY_BUDGET_CHARS",
    "RECALL_NAME",
    "SCHEDULE_GATES",
    "Candidate",
    "DreamReport",
    "Factors",
    "Gates",
    "RecallEntry",
    "RecallStore",
    "record_recalls",
    "run_dream",
]
