"""Model clients: any OpenAI-compatible endpoint, the embedded local model, and a record/replay cache."""

from __future__ import annotations

from ..config import Options
from .base import ChatModel, ChatRequest, ChatResponse, Message, messages
from .cache import RecordingChatModel, request_key
from .local import CONTEXT_TOKENS, LocalChatModel, LocalServer, embedded_chat_model
from .models import MODELS, LocalModelSpec, install_model, model_home
from .openai_client import OpenAIChatModel

DEFAULT_REMOTE_MODEL = "gpt-4o-mini"


def chat_model_for(options: Options) -> ChatModel:
    """The model ``options`` ask for: the configured endpoint, else the embedded local model.

    With ``cache_mode`` other than ``"off"`` the model is wrapped in a ``RecordingChatModel``. In
    ``"replay"`` mode with the embedded default, the local model is neither installed nor started,
    so replayed runs need no model at all.
    """
    settings = options.llm
    inner: ChatModel | None
    if not settings.uses_embedded_model:
        name = settings.model or DEFAULT_REMOTE_MODEL
        inner = OpenAIChatModel(settings.base_url, name, settings.api_key, settings.timeout_s,
                                settings.max_retries)
    elif options.cache_mode == "replay":
        inner, name = None, MODELS[settings.local_model].alias
    else:
        inner = embedded_chat_model(settings)
        name = inner.name
    if options.cache_mode == "off" or options.cache_path is None:
        assert inner is not None
        return inner
    window = CONTEXT_TOKENS if settings.uses_embedded_model else None
    return RecordingChatModel(inner, options.cache_path, options.cache_mode, model_name=name, context_tokens=window)


__all__ = [
    "ChatModel", "ChatRequest", "ChatResponse", "LocalChatModel", "LocalModelSpec", "LocalServer", "MODELS", "Message",
    "OpenAIChatModel", "RecordingChatModel", "chat_model_for", "embedded_chat_model", "install_model",
    "messages", "model_home", "request_key",
]
