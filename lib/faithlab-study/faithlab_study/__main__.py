"""``python -m faithlab.study``: the study runner's command line (see :mod:`faithlab.study`)."""

import sys

from faithlab.study import main

sys.exit(main())
