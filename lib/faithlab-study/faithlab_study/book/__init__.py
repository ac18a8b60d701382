"""The book's side of the study: its chapters (:mod:`~faithlab.study.book.chapters`), the study's figures
(:mod:`~faithlab.study.book.figures`), the pages' parts (:mod:`~faithlab.study.book.pages`), each notebook's page
(:mod:`~faithlab.study.book.notebook_page`) and the scorecard (:mod:`~faithlab.study.book.scorecard`)."""
