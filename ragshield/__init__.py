"""ragshield: risk control for retrieval-augmented question answering.

    import ragshield
    shield = ragshield.Shield.open()
    decision = shield.judge(question, passages, answer)

`Shield` and `Decision` are the public API (ragshield/services/shield.py); they load on
first use, so `import ragshield` stays light."""

from typing import TYPE_CHECKING, Any

from ragshield.version import __version__

if TYPE_CHECKING:  # what type checkers and editors see; at run time they load on first use
    from ragshield.config import Settings
    from ragshield.errors import UserError
    from ragshield.services.shield import Decision, Shield

__all__ = ["Decision", "Settings", "Shield", "UserError", "__version__"]

_PUBLIC = {"Shield": "ragshield.services.shield", "Decision": "ragshield.services.shield",
           "Settings": "ragshield.config", "UserError": "ragshield.errors"}


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        from importlib import import_module

        return getattr(import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'ragshield' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
