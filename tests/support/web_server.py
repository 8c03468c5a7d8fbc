"""The project served as a deployment serves it: `python -m tests.support.web_server PORT` reads its settings
from the environment (DATABASE_URL, ASSAY_...), serves on loopback PORT (0: any free one) with Django's
threaded server and announces `listening on URL` (tests.support.processes.serving)."""

from __future__ import annotations

import os
import sys


def serve(port: int) -> None:
    """Serve the project (set up already) on loopback `port` until killed, announcing its address."""
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
    from django.core.wsgi import get_wsgi_application

    server = ThreadedWSGIServer(("127.0.0.1", port), WSGIRequestHandler)
    server.set_app(get_wsgi_application())
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    serve(int(sys.argv[1]))
