"""python -m sdc.cli: the command line without the console script."""

from sdc.cli import main

raise SystemExit(main())
