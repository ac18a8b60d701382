"""The order the test files run in: the files that hold a ``slow`` test first (tests/conftest.py applies it).

``make test`` runs ``--dist loadfile --no-loadscope-reorder``: each file goes whole to one worker, in collection order
(without the second flag pytest-xdist hands out the files with the most tests first, whatever this order). A long
file collected late (the runner's, under tests/faithlab_study/, sorts after most folders) kept one worker busy while
the other had run out of files; longest first, the small files fill both workers to the end."""

from __future__ import annotations


def slow_files_first(items: list) -> None:
    """Reorder ``items`` (pytest items) in place: every item of a file that holds a ``slow``-marked test before the
    others, each group in its collection order (a stable sort)."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)
