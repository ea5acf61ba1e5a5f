"""Where models saved by roboppo 0.1.0 name their schedules (``roboppo.common.hparams.LinearSchedule``).

The zoo's loader is :mod:`roboppo.zoo.loader`; schedules live in :mod:`roboppo.common.schedules`.
"""

from roboppo.common.schedules import LinearSchedule

__all__ = ["LinearSchedule"]
