"""Drives `talaria serve` with the official openai Python SDK and prints what it
saw as one JSON object on stdout (tests/all/api_server.rs asserts on it).

Usage: python api_server_client.py BASE_URL KEY
The scripted model behind the server answers "answer 1", "answer 2", ... in the
order of model calls, which is the order of the calls below.
"""

import json
import sys

import openai

base_url, key = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=60)
out = {}

# Models.
out["models"] = [m.id for m in client.models.list().data]

# Chat, not streamed, with a system message of the client's own.
raw = client.chat.completions.with_raw_response.create(
    model="talaria",
    messages=[
        {"role": "system", "content": "Answer in one line."},
        {"role": "user", "content": "hi"},
    ],
)
first = raw.parse()
out["chat_text"] = first.choices[0].message.content
out["chat_finish"] = first.choices[0].finish_reason
out["chat_usage_total"] = first.usage.total_tokens if first.usage else None
out["chat_session"] = raw.headers.get("x-talaria-session-id")

# Chat, streamed, with usage at the end (a new conversation).
chunks = list(
    client.chat.completions.create(
        model="talaria",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
)
out["stream_text"] = "".join(
    c.choices[0].delta.content or "" for c in chunks if c.choices
)
out["stream_finish"] = [c.choices[0].finish_reason for c in chunks if c.choices][-1]
out["stream_usage_last"] = chunks[-1].usage is not None and not chunks[-1].choices

# The first chat continued: its history resent, one more user message.
raw = client.chat.completions.with_raw_response.create(
    model="talaria",
    messages=[
        {"role": "system", "content": "Answer in one line."},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": out["chat_text"]},
        {"role": "user", "content": "and then?"},
    ],
)
out["continued_text"] = raw.parse().choices[0].message.content
out["continued_session"] = raw.headers.get("x-talaria-session-id")

# Responses, chained, stored, retrieved, deleted.
first = client.responses.create(model="talaria", input="remember 7")
out["response_text"] = first.output_text
out["response_id"] = first.id
second = client.responses.create(
    model="talaria", input="what was it?", previous_response_id=first.id
)
out["chained_text"] = second.output_text
out["retrieved_text"] = client.responses.retrieve(first.id).output_text
client.responses.delete(first.id)
try:
    client.responses.retrieve(first.id)
    out["deleted_gone"] = False
except openai.NotFoundError:
    out["deleted_gone"] = True

# Responses, streamed.
types = []
text = ""
with client.responses.stream(model="talaria", input="stream it") as stream:
    for event in stream:
        types.append(event.type)
        if event.type == "response.output_text.delta":
            text += event.delta
    final = stream.get_final_response()
out["response_stream_types"] = types
out["response_stream_text"] = text
out["response_stream_final"] = final.output_text

# A wrong key.
try:
    openai.OpenAI(base_url=base_url, api_key="wrong-key-0123456789", max_retries=0).models.list()
    out["wrong_key"] = "accepted"
except openai.AuthenticationError as error:
    out["wrong_key"] = error.status_code

print(json.dumps(out))
