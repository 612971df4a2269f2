"""Names a package exports, loaded on first use: ``import mechanism`` (or one of its
subpackages) costs nothing until a name is asked for, and a process that needs one module
never imports the rest."""
from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str], modules: Mapping[str, str] | None = None
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's module-level ``__getattr__`` and ``__dir__`` (PEP 562) for its exports.

    Parameters
    ----------
    package
        The package's ``__name__``.
    exports
        Each exported name and the module that defines it.
    modules
        Names that are modules themselves (a subpackage reachable as an attribute), and the
        module each stands for.

    Returns
    -------
    getattr, dir
        ``getattr(name)`` imports the defining module, keeps the value in the package (so the
        next lookup is a plain attribute) and returns it, or raises :class:`AttributeError`
        naming the package; ``dir()`` lists the package's globals and its ``__all__``.

    Examples
    --------
    >>> get, _ = lazy_exports("mechanism.core", {"library_seed": "mechanism.core.resample"})
    >>> get("library_seed").__name__
    'library_seed'
    """
    modules = dict(modules or {})

    def __getattr__(name: str) -> Any:
        if name in modules:
            value = importlib.import_module(modules[name])
        elif name in exports:
            value = getattr(importlib.import_module(exports[name]), name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        vars(sys.modules[package])[name] = value
        return value

    def __dir__() -> list[str]:
        namespace = vars(sys.modules[package])
        return sorted(set(namespace) | set(namespace.get("__all__", ())))

    return __getattr__, __dir__
