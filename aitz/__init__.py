"""Android in the Zoo (AITZ): the released episodes, the CoAT paper's action matching, and a
teacher-forced run of any agent over them (``regionfocus aitz``)."""

from .episodes import AitzEpisode, AitzError, AitzStep, GoldAction, coat_history, load_aitz
from .scoring import (
    AitzScores,
    Prediction,
    from_action,
    levenshtein_ratio,
    match_step,
    read_predictions,
    score,
)

__all__ = [
    "AitzEpisode",
    "AitzError",
    "AitzScores",
    "AitzStep",
    "GoldAction",
    "Prediction",
    "coat_history",
    "from_action",
    "levenshtein_ratio",
    "load_aitz",
    "match_step",
    "read_predictions",
    "score",
]
