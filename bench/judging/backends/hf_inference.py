"""Hugging Face inference (serverless providers, Inference Endpoints, or any TGI server) through
``huggingface_hub.AsyncInferenceClient.chat_completion``.

``model`` is the hub model id (or an endpoint URL); ``params.base_url`` points at an endpoint
instead; ``params.provider`` picks an inference provider. The token is read only from the
environment variable named by ``params.api_key_env`` (default ``HF_TOKEN``). HTTP 429 and 5xx
and timeouts raise ``RetryableError`` (with the server's Retry-After), so the runner retries;
other errors are recorded for the decision. Greedy decoding (temperature 0).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from bench.core.errors import ConfigError
from bench.core.secrets import check_env_name
from bench.judging.backends import backend
from bench.judging.protocol import JudgeInput, JudgeSpec, RawOutput, RetryableError, SkipJudge

PARAMS: dict[str, type | tuple[type, ...]] = {
    "base_url": str,
    "provider": str,
    "api_key_env": str,
    "max_new_tokens": int,
    "timeout_s": float,
    "prompt_budget": int,
    "require_key": bool,
}
"""Declared params (``require_key = false`` lets a local TGI server run without a token)."""


def _retry_after(resp: Any) -> float | None:
    try:
        value = resp.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, TypeError, ValueError):
        return None


class HfInferenceJudge:
    """Chat completion through AsyncInferenceClient (AsyncBackend)."""

    def __init__(self, client: Any, model: str | None, max_new_tokens: int) -> None:
        self.client = client
        self.model = model
        self.max_new_tokens = max_new_tokens

    async def adecide(self, item: JudgeInput) -> RawOutput:
        """One chat completion."""
        from huggingface_hub.errors import HfHubHTTPError, InferenceTimeoutError

        try:
            out = await self.client.chat_completion(
                [dict(m) for m in item.messages],
                model=self.model,
                max_tokens=self.max_new_tokens,
                temperature=0.0,
            )
        except InferenceTimeoutError as e:
            raise RetryableError(f"timeout: {e}") from e
        except HfHubHTTPError as e:
            status = getattr(e.response, "status_code", None)
            if status == 429 or (status is not None and status >= 500):
                raise RetryableError(f"HTTP {status}", _retry_after(e.response)) from e
            raise
        except (TimeoutError, ConnectionError) as e:
            raise RetryableError(f"{type(e).__name__}: {e}") from e
        choice = out.choices[0]
        usage = getattr(out, "usage", None)
        return RawOutput(
            text=choice.message.content or "",
            tokens_in=getattr(usage, "prompt_tokens", None),
            tokens_out=getattr(usage, "completion_tokens", None),
            extra={"finish_reason": choice.finish_reason},
        )


def check(judge_id: str, params: Mapping[str, Any]) -> None:
    """Value checks run by ``decide.py --check``."""
    check_env_name(judge_id, "api_key_env", str(params.get("api_key_env", "HF_TOKEN")))
    base_url = params.get("base_url")
    if base_url is not None:
        u = urlsplit(str(base_url))
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ConfigError(
                f"judge {judge_id!r}: params.base_url {base_url!r} must be an http(s) URL"
            )
    if float(params.get("timeout_s", 120.0)) <= 0:
        raise ConfigError(f"judge {judge_id!r}: params.timeout_s must be positive")
    if int(params.get("max_new_tokens", 1024)) < 1:
        raise ConfigError(f"judge {judge_id!r}: params.max_new_tokens must be at least 1")


@backend("hf-inference", params=PARAMS, check=check)
def make(judge: JudgeSpec) -> HfInferenceJudge:
    """Build the client for a judge row; SkipJudge when the token variable is unset."""
    try:
        from huggingface_hub import AsyncInferenceClient
    except ImportError as e:
        raise SkipJudge("huggingface_hub is not installed: pip install huggingface-hub") from e
    p = judge.params
    check(judge.id, p)  # the variable's name is a name, never a pasted token
    env = p.get("api_key_env", "HF_TOKEN")
    token = os.environ.get(env)
    if not token and p.get("require_key", True):
        raise SkipJudge(f"set {env} to a Hugging Face token to run this judge")
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        raise SkipJudge(
            "HF_HUB_OFFLINE is set, and huggingface_hub then refuses every request: unset it"
        )
    base_url = p.get("base_url")
    client = AsyncInferenceClient(
        model=None if base_url else judge.model or None,
        base_url=base_url,
        provider=p.get("provider") if not base_url else None,
        token=token or False,  # type: ignore[arg-type]  # False: send no token at all
        timeout=float(p.get("timeout_s", 120.0)),
    )
    return HfInferenceJudge(
        client, None if base_url else judge.model or None, int(p.get("max_new_tokens", 1024))
    )
