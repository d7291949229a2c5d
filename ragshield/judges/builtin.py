"""The judges this version ships, by name: every judge but the trained ones (trained:NAME,
judges/trained.py, which read these). Adding a judge: its module and one line in JUDGES; the
registry (judges/registry.py) makes judges by name from this table and the trained ones."""

from __future__ import annotations

from ragshield.judges.base import Judge
from ragshield.judges.calibration import CalibrationJudge
from ragshield.judges.cot_hybrid import CoTHybridJudge
from ragshield.judges.counterfactual import CounterfactualJudge
from ragshield.judges.dual_generation import DualGenerationJudge
from ragshield.judges.intrinsic import IntrinsicJudge
from ragshield.judges.ioe import IfOrElseJudge
from ragshield.judges.nli import ClassifierNLIJudge, LLMNLIJudge
from ragshield.judges.p_true import PTrueJudge
from ragshield.judges.pre_answer import PreAnswerJudge
from ragshield.judges.priori import PrioriJudge
from ragshield.judges.self_consistency import SelfConsistencyJudge
from ragshield.judges.support import SupportJudge
from ragshield.judges.token_prob import TokenProbJudge
from ragshield.judges.trivial import TrivialJudge

JUDGES: dict[str, type[Judge]] = {
    cls.name: cls
    for cls in (
        TrivialJudge, IntrinsicJudge, CoTHybridJudge, PreAnswerJudge, ClassifierNLIJudge,
        LLMNLIJudge, CounterfactualJudge, IfOrElseJudge, CalibrationJudge, PrioriJudge,
        DualGenerationJudge, TokenProbJudge, SelfConsistencyJudge, PTrueJudge, SupportJudge,
    )
}
