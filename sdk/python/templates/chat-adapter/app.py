"""A Talaria chat adapter in Python for a plain-text line chat over TCP: a
small, working adapter to start from
(`talaria plugin new NAME --kind adapter --lang python`).

componentize-py generates the `wit_world` bindings from `wit/` at build
time. The world exports `chat-adapter`: its `platform` function is the class
`ChatAdapter` here, its `connection` resource the class `Connection` in
`chat_adapter.py` (componentize-py finds a resource's class in the module
named after its interface). The wire format is in `protocol.py`, the socket
in `connection.py`.
"""

from protocol import PLATFORM
from wit_world import exports


class ChatAdapter(exports.ChatAdapter):
    def platform(self) -> str:
        """The platform's name: its key in config.yaml."""
        return PLATFORM
