"""Whether the library's progress bars are shown: one rule for every function with a ``progress`` argument.

``progress=True`` / ``False`` is obeyed as given; ``progress=None`` (the default) shows the bar unless the environment
variable ``FAITHLAB_PROGRESS`` is ``0`` (or ``false``, ``no``, ``off``). The study runner sets it to ``0`` for the
kernels it starts: an executed notebook is a page of the book, where a progress bar is only noise on stderr, while
the same notebook opened in Jupyter (or a script) still shows its bars.
"""

from __future__ import annotations

import os

ENV = "FAITHLAB_PROGRESS"
_OFF = {"0", "false", "no", "off"}


def enabled(progress: bool | None) -> bool:
    """``progress`` if it is a bool, else (None) whether ``FAITHLAB_PROGRESS`` leaves progress bars on."""
    if progress is None:
        return os.environ.get(ENV, "1").strip().lower() not in _OFF
    if not isinstance(progress, bool):
        raise TypeError(f"progress must be True, False or None (the environment's FAITHLAB_PROGRESS), got {progress!r}")
    return progress
