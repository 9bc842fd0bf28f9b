"""Talk to Toolwire with the official OpenAI SDK: one answer whole, one streamed.

.venv/bin/toolwire serve            # in one terminal (the demo model by default)
.venv/bin/python examples/client.py # in another
"""

from __future__ import annotations

import os

from openai import OpenAI

client = OpenAI(
    base_url=os.environ.get("TOOLWIRE_URL", "http://127.0.0.1:8000/v1"),
    api_key=os.environ.get("OPENAI_API_KEY", "unused"),
)
MODEL = os.environ.get("TOOLWIRE_MODEL", "toolwire-demo")


def main() -> None:
    answer = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "What's the weather in Paris and Berlin?"}],
    )
    print(answer.choices[0].message.content)

    stream = client.chat.completions.create(
        model=MODEL,
        stream=True,
        stream_options={"include_usage": True},
        messages=[{"role": "user", "content": "Calculate 17 * 23, then convert 100 USD to EUR"}],
        # Narrow the tools this request may use (never wider than the server allows).
        extra_body={"toolwire": {"tags": ["read_only"]}},
    )
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            print(chunk.choices[0].delta.content, end="", flush=True)
        if chunk.usage:
            print(f"\n(tokens over every upstream call: {chunk.usage.total_tokens})")


if __name__ == "__main__":
    main()
