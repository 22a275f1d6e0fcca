"""stagewise: the shared package of the executable book *Learning in Stages*.

``stagewise.start`` and ``stagewise.Run`` are imported lazily so that the command
line (``stagewise list``) starts without loading torch.
"""
from stagewise.core.run.parameters import ParameterError

__version__ = "0.1.0"
__all__ = ["ParameterError", "Run", "start", "__version__"]


def __getattr__(name: str):
    if name in ("Run", "start"):
        from stagewise.core.run import session
        return getattr(session, name)
    raise AttributeError(f"module 'stagewise' has no attribute {name!r}")
