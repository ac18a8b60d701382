"""``python -m faithlab_study``: the study runner's command line (see :mod:`faithlab_study`)."""

import sys

from faithlab_study.runner import main

sys.exit(main())
