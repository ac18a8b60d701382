"""The book's side of the study: its chapters (:mod:`~faithlab_study.book.chapters`), the study's figures
(:mod:`~faithlab_study.book.figures`), the pages' parts (:mod:`~faithlab_study.book.pages`), each notebook's page
(:mod:`~faithlab_study.book.notebook_page`), the scorecard (:mod:`~faithlab_study.book.scorecard`) and the generated
folder's locks and messages (:mod:`~faithlab_study.book.generated`).

The runner (:mod:`faithlab_study.runner`) imports the book to write its pages and scorecard; the book imports nothing
of the runner (tests/project/test_study_layers.py)."""
