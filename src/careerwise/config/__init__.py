"""The one settings object (:class:`Settings`, read from ``CAREERWISE_*``) and its cached instance.

Nothing else in the package reads a ``CAREERWISE_*`` variable (config/settings.py lists the other uses of
``os.environ``). The fields are declared once each, grouped by what
they configure in this package's modules; callers import :class:`Settings` and :func:`get_settings`
from here.
"""

from careerwise.config.settings import Settings, get_settings

__all__ = ["Settings", "get_settings"]
