"""Importing modules on a helper thread, so a command's slow imports overlap its other work (pure).

`assay run` imports aiohttp while it checks the golden file: aiohttp loads two CA bundles as it is
imported, and OpenSSL reads them with the interpreter lock released, so that part runs beside the
checks on a second core. The report's modules (numpy) are imported while the requests are in flight,
when the event loop mostly waits for replies.
"""

from __future__ import annotations

import importlib
import threading


def import_in_background(*modules: str) -> threading.Thread:
    """Start importing `modules` on a daemon thread; `join()` it before relying on them.

    Nothing is lost when an import fails there: a module that failed to import is not kept, so the
    caller's own `import` fails again with the error and its traceback where it matters.
    """

    def load() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except BaseException:
                return

    thread = threading.Thread(target=load, name=f"import {', '.join(modules)}", daemon=True)
    thread.start()
    return thread
