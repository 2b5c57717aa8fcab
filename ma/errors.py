"""The SDK's exceptions, for programs that catch them: ``except ma.errors.MAError``.

The classes live in :mod:`ma_core.errors` (where the tree is drawn), a module that starts nothing of the
runtime, so that analysis code can raise and catch them without importing ``ma``.
"""

from ma_core.errors import *  # noqa: F403
