"""The official SDKs through the proxy against the real llama.cpp server (SmolLM2): messages
create, stream and count_tokens; chat completions create and stream; responses create and stream.
The proxy passes every byte through, keeps the provider's headers, and logs the cache use the
server reports next to the cache model's prediction."""

from __future__ import annotations

from typing import Any

import anthropic
import openai

from tests.proxy.conftest import ProxyFactory

SYSTEM = "You are a terse assistant. Answer in at most five words."


def test_anthropic_sdk(llama: str, proxy_factory: ProxyFactory) -> None:
    with proxy_factory(llama) as proxy:
        client: Any = anthropic.Anthropic(base_url=proxy.url, api_key="sk-ant-test", max_retries=0)
        messages = [{"role": "user", "content": "Say hello."}]
        made = client.messages.create(
            model="smollm2", max_tokens=16, system=SYSTEM, messages=messages
        )
        assert made.type == "message" and made.content[0].text
        with client.messages.stream(
            model="smollm2", max_tokens=16, system=SYSTEM, messages=messages
        ) as stream:
            events = [event.type for event in stream]
            final = stream.get_final_message()
        assert events[0] == "message_start" and "message_stop" in events
        assert final.usage.input_tokens + (final.usage.cache_read_input_tokens or 0) > 0
        counted = client.messages.count_tokens(model="smollm2", system=SYSTEM, messages=messages)
        assert counted.input_tokens > 0
        proxy.settle()
        records = proxy.records()
        log = proxy.log.getvalue()
    assert [r["request"]["url"] for r in records] == [
        "/v1/messages",
        "/v1/messages",
        "/v1/messages/count_tokens",
    ]
    # the second identical request reads its prefix from the server's cache
    second = records[1]["ipse"]["analysis"]
    assert second["actual"]["cache_read"] > 0
    assert "cache read" in log and "predicted" in log


def test_openai_sdk_chat(llama: str, proxy_factory: ProxyFactory) -> None:
    with proxy_factory(openai=llama) as proxy:
        client: Any = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="sk-test", max_retries=0)
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Hi."}]
        made = client.chat.completions.create(model="smollm2", messages=messages, max_tokens=16)
        assert made.choices[0].message.content
        chunks = list(
            client.chat.completions.create(
                model="smollm2",
                messages=messages,
                max_tokens=16,
                stream=True,
                stream_options={"include_usage": True},
            )
        )
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text
        assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens > 0
        proxy.settle()
        assert len(proxy.records()) == 2


def test_openai_sdk_responses(llama: str, proxy_factory: ProxyFactory) -> None:
    with proxy_factory(openai=llama) as proxy:
        client: Any = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="sk-test", max_retries=0)
        made = client.responses.create(
            model="smollm2", instructions=SYSTEM, input="Hi.", max_output_tokens=16
        )
        assert made.output_text
        # (the SDK's stream helper wants content indices llama-server leaves out: iterate raw)
        stream = client.responses.create(
            model="smollm2", instructions=SYSTEM, input="Hi.", max_output_tokens=16, stream=True
        )
        kinds = [event.type for event in stream]
        assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
        proxy.settle()
        records = proxy.records()
    assert len(records) == 2 and all(r["response"]["status"] == 200 for r in records)
