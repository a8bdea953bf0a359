"""``python -m bench``: see :mod:`bench.run`."""

from .run import main

raise SystemExit(main())
