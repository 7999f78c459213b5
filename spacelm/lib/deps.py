"""Optional dependencies, imported when first needed, with an error that says what to install."""

from __future__ import annotations

import importlib
from types import ModuleType


class MissingDependency(ImportError):
    """An optional package is not installed; the message names the install command."""


def require(module: str, needed_for: str, install: str = 'pip install -e ".[dev]"') -> ModuleType:
    """Import `module` or raise MissingDependency naming what needs it and how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingDependency(
            f"{needed_for} needs the Python package '{module}' ({e}); install it with `{install}`"
        ) from None
