"""``memdir ui``: a local web inspector of what the agent remembers and why.

Pages (each with a JSON twin under ``/api/``): search with each score's parts, the workspace's
files with line anchors, the index's state, dreaming (recall counts, factor scores, gates, the
MEMORY.md budget, a preview and, when allowed, a confirmed apply) and the history of automatic
writes. Built on Starlette, uvicorn and Jinja2 (all in the default install), over the same
:class:`~memdir.memory.facade.Memory` as the CLI and the MCP server. Every request needs a session
opened by the one-time sign-in link ``memdir ui`` prints (:mod:`memdir.ui.access`,
:mod:`memdir.ui.security`).
"""

from memdir.ui.app import create_app
from memdir.ui.inspector import UIOptions
from memdir.ui.server import serve

__all__ = ["UIOptions", "create_app", "serve"]
