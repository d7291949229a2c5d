"""Building a registered class from user-given options, with errors that list what is valid."""

from __future__ import annotations

import inspect
from typing import Any, Mapping, TypeVar

from ragshield.errors import OptionError

T = TypeVar("T")


def construct(kind: str, registry: Mapping[str, type[T]], name: str,
              options: Mapping[str, Any]) -> T:
    """`registry[name](**options)`; an unknown name or option raises OptionError naming the
    valid ones (a config typo should fail before a run starts, not mid-run)."""
    cls = registry.get(name.strip().lower())
    if cls is None:
        raise OptionError(f"unknown {kind} {name!r}; valid names: {', '.join(registry)}")
    signature = inspect.signature(cls)
    try:
        signature.bind(**options)
    except TypeError:
        raise OptionError(
            f"{kind} {name!r} does not accept the options {sorted(options)}; it accepts: "
            f"{', '.join(signature.parameters) or 'none'}"
        ) from None
    return cls(**options)
