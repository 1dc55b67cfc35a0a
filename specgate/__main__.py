"""`python -m specgate ...` is the `specgate` command."""

from specgate.gateway.cli import main

raise SystemExit(main())
