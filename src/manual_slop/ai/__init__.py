"""The multi-provider AI client.

- :mod:`~manual_slop.ai.client` — ``AIClient`` and the singleton ``ai_client``
- :mod:`~manual_slop.ai.providers` — one module per provider (loaded on first use)
- :mod:`~manual_slop.ai.tool_loop` — the one tool loop every provider shares
- :mod:`~manual_slop.ai.messages` — provider-neutral messages, replies and usage
- :mod:`~manual_slop.ai.transcript` — repair, compaction and trimming of a conversation
- :mod:`~manual_slop.ai.xml_protocol` — ``<execute>`` tool calls for models without function calling
- :mod:`~manual_slop.ai.errors` — ``ProviderError`` and its kinds; :mod:`~manual_slop.ai.retry`
- :mod:`~manual_slop.ai.comms` — the comms log and the thread-local tier tag
- :mod:`~manual_slop.ai.refresh`, :mod:`~manual_slop.ai.rag` — context refresh and retrieval

Importing this package imports no provider SDK.
"""

from __future__ import annotations

from manual_slop.ai.client import AIClient, ClientSettings, ai_client
from manual_slop.ai.comms import CommsLog, get_current_tier, set_current_tier
from manual_slop.ai.errors import AIError, ConfigurationError, ErrorKind, ProviderError, WireError
from manual_slop.ai.messages import Message, ModelReply, ModelRequest, Role, ToolOutput, Usage
from manual_slop.ai.retry import RetryPolicy
from manual_slop.ai.tool_loop import GRACE_ROUNDS, MAX_TOOL_OUTPUT_BYTES, MAX_TOOL_ROUNDS

__all__ = [
    "GRACE_ROUNDS",
    "MAX_TOOL_OUTPUT_BYTES",
    "MAX_TOOL_ROUNDS",
    "AIClient",
    "AIError",
    "ClientSettings",
    "CommsLog",
    "ConfigurationError",
    "ErrorKind",
    "Message",
    "ModelReply",
    "ModelRequest",
    "ProviderError",
    "RetryPolicy",
    "Role",
    "ToolOutput",
    "Usage",
    "WireError",
    "ai_client",
    "get_current_tier",
    "set_current_tier",
]
