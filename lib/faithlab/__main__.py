"""``python -m faithlab``: the ``faithlab`` command (:func:`faithlab.cli.main`), e.g. ``python -m faithlab evaluate
--model torchvision:resnet18 --weights my.pt --images my_images/``."""

import sys

from faithlab.cli import main

sys.exit(main())
