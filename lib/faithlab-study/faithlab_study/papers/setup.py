"""A chapter's set-up table, paper against ours: each paper module lists its :class:`Setting` rows in ``SETUP``.

The book's generator (:mod:`faithlab_study.book.pages`) fills the "ours" column from the effective parameters of the
executed notebook (papermill records them in the notebook's metadata), so the table shows what this build ran, never a
typed number; the "paper" column is the paper's own set-up, as its text or code states it (spec section named in the
module).
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    """One row of a set-up table.

    setting: what is set (``"images per task"``); paper: the paper's value as the paper states it; notebook:
    ``"<paper>/<experiment>"`` whose parameters give ours; ours: a :meth:`str.format` template over that notebook's
    effective parameters (``"{n_images} per task"``) or a function of the parameter dict returning the text.
    """

    setting: str
    paper: str
    notebook: str
    ours: str | Callable[[Mapping], str]

    def names(self) -> set[str]:
        """The parameter names a template reads (empty for a function)."""
        if callable(self.ours):
            return set()
        return {field.split(".")[0].split("[")[0] for _, field, _, _ in string.Formatter().parse(self.ours) if field}

    def render(self, params: Mapping) -> str:
        """Ours, from the notebook's effective parameters; a missing parameter raises KeyError naming it."""
        if callable(self.ours):
            return str(self.ours(params))
        missing = sorted(self.names() - set(params))
        if missing:
            raise KeyError(f"{self.notebook} has no parameter {missing} (set-up row {self.setting!r})")
        return self.ours.format(**params)
