"""`python -m proxy` runs the `toolwire` command."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
