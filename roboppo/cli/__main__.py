"""``python -m roboppo.cli``: the ``roboppo-zoo`` command."""

from roboppo.cli import entry_point

entry_point()
