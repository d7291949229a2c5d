"""The model-choosing flags every command that calls an LLM shares:
--backend, --base-url, --model, --no-llm-cache."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from pydantic import ValidationError

from ragshield.config import Settings
from ragshield.errors import OptionError
from ragshield.services.settings_check import check_settings

Backend = Annotated[Optional[str], typer.Option(
    "--backend", help="embedded | openai | transformers (default: RAGSHIELD_BACKEND or embedded).")]
BaseUrl = Annotated[Optional[str], typer.Option(
    "--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1.")]
Model = Annotated[Optional[str], typer.Option(
    "--model", help="Embedded: qwen-1.5b (default where its package is installed, else "
             "qwen-0.5b), qwen-0.5b, smollm2-135m or a GGUF path; openai: the served model "
             "name; transformers: an HF name or path.")]
JudgeModel = Annotated[Optional[str], typer.Option(
    "--judge-model", help="The model every judge reads its probabilities from "
                          "(RAGSHIELD_JUDGE_MODEL): qwen-1.5b, qwen-0.5b, smollm2-135m, a GGUF "
                          "path, a served model's name, or self (the answering model). "
                          "Default: where qwen-0.5b answers, pre_answer and p_true read from "
                          "qwen-1.5b and the rest from the answering model.")]
NoLLMCache = Annotated[bool, typer.Option(
    "--no-llm-cache", help="Call the model even when an identical call is cached.")]


def settings_with(backend: str | None, base_url: str | None, model: str | None,
                  no_llm_cache: bool, judge_model: str | None = None) -> Settings:
    """Settings from the environment, overridden by the flags that were given; OptionError
    naming the settings at fault (a flag or a RAGSHIELD_* variable)."""
    overrides: dict[str, str | bool] = {key: value for key, value in
                 {"backend": backend, "openai_base_url": base_url, "model": model,
                  "judge_model": judge_model}.items()
                 if value is not None}
    if no_llm_cache:
        overrides["llm_cache"] = False
    return load_settings(**overrides)


def load_settings(**overrides: object) -> Settings:
    """Settings from the environment and `overrides`; OptionError in one line naming each
    setting at fault by its variable (RAGSHIELD_GUARD_ON_BUDGET), not a traceback."""
    try:
        settings = Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        prefix = Settings.model_config.get("env_prefix", "")
        problems = "; ".join(
            f"{prefix}{'.'.join(map(str, error['loc'])).upper()}: {error['msg']}"
            if error["loc"] and error["loc"][0] not in overrides
            else f"{'.'.join(map(str, error['loc']))}: {error['msg']}"
            for error in exc.errors())
        raise OptionError(f"settings: {problems}") from None
    check_settings(settings)
    return settings
