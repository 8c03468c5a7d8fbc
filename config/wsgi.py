from __future__ import annotations

import os
from importlib import import_module

from django.conf import settings
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# Import the URLconf, and with it every view, now: they pull in DRF, numpy and scikit-learn (about a
# second here), which Django would otherwise do on a worker's first request. gunicorn loads this module
# in each worker before it accepts connections, so no request pays for it.
import_module(settings.ROOT_URLCONF)
