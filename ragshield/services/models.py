"""The packaged models and the health checks, for the faces: which models ship, whether
their packages are installed, assembling them, and `doctor`'s checks."""

from __future__ import annotations

from typing import Any

from ragshield.config import Settings
from ragshield.doctor import doctor_parts, run_doctor
from ragshield.llm.packaged_models import PACKAGED_MODELS, ensure_model, installed


def packaged_models() -> list[dict[str, Any]]:
    """Each packaged model: the name --model and --judge-model take, the model, its file,
    and whether its packages are installed."""
    return [{"name": name, "model": model.name, "file": model.filename,
             "installed": installed(model)} for name, model in PACKAGED_MODELS.items()]


def prepare_models(settings: Settings) -> dict[str, dict[str, Any]]:
    """Assemble and verify every packaged model in the cache: per model, ok and its path or
    the error."""
    report: dict[str, dict[str, Any]] = {}
    for model in PACKAGED_MODELS.values():
        try:
            report[model.name] = {"ok": True, "path": str(ensure_model(model, settings.cache_dir))}
        except Exception as exc:  # noqa: BLE001 - reported per model; the caller says it
            report[model.name] = {"ok": False, "error": str(exc)}
    return report


def check_health(settings: Settings, only: str | None = None) -> dict[str, Any]:
    """`doctor`'s checks, all of them or the comma-separated `only` (OptionError for an
    unknown part)."""
    return run_doctor(settings, doctor_parts(only))
