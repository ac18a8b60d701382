"""Whether the library's progress bars are shown: one rule for every function with a ``progress`` argument.

``progress=True`` / ``False`` is obeyed as given; ``progress=None`` (the default) shows the bar unless the environment
variable ``FAITHLAB_PROGRESS`` is ``0`` (or ``false``, ``no``, ``off``). The study runner sets it to ``0`` for the
kernels it starts: an executed notebook is a page of the book, where a progress bar is only noise on stderr, while
the same notebook opened in Jupyter (or a script) still shows its bars.
"""

from __future__ import annotations

from faithlab import _validate

ENV = _validate.PROGRESS_ENV


def enabled(progress: bool | None) -> bool:
    """``progress`` if it is a bool, else (None) whether ``FAITHLAB_PROGRESS`` leaves progress bars on (the rule is
    :func:`faithlab._validate.progress`, where the metrics, which import no other helper, read it)."""
    return _validate.progress(progress)
