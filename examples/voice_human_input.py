"""A voice model asks the caller mid-call; the caller answers; the model gets the answer.

- MockRealtimeProvider plays the speech-to-speech model: it calls AskUserQuestion.
- RealtimeVoiceChannel serves the call with the HumanInputToolHandler, on the
  realtime_voice door, with the caller as the person to ask.
- The ON_USER_INPUT_REQUIRED hook announces the question (here: puts it on a queue that a
  "phone UI" task reads), without holding up the wait.
- The phone UI answers with human.handler.resolve(); the channel submits the answer to the
  model as the call's result.

Run: python examples/voice_human_input.py
"""

from __future__ import annotations

import asyncio
import json

from roomkit import (
    AITool,
    HookExecution,
    HookTrigger,
    HumanInputToolHandler,
    PendingInputEvent,
    RoomKit,
)
from roomkit.channels.realtime_voice import RealtimeVoiceChannel
from roomkit.voice.realtime.mock import MockRealtimeProvider, MockRealtimeTransport

ASK = AITool(
    name="AskUserQuestion",
    description="Ask the caller a question and wait for the answer.",
    parameters={
        "type": "object",
        "properties": {"question": {"type": "string"}},
        "required": ["question"],
    },
)


async def main() -> list[str]:
    kit = RoomKit()
    human = HumanInputToolHandler(
        tool_names={"AskUserQuestion"}, timeout=300, tool_definitions=[ASK]
    )
    provider = MockRealtimeProvider()
    voice = RealtimeVoiceChannel(
        "voice",
        provider=provider,
        transport=MockRealtimeTransport(),
        system_prompt="You book tables. Use AskUserQuestion when you need to know something.",
        human_input_handler=human,
    )
    kit.register_channel(voice)
    await kit.create_room("bookings")
    await kit.attach_channel("bookings", "voice")

    questions: asyncio.Queue[PendingInputEvent] = asyncio.Queue()
    transcript: list[str] = []

    @kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED, execution=HookExecution.SYNC)
    async def notify_caller(event: PendingInputEvent, ctx: object) -> None:
        # Show the question on the caller's screen; here, a queue the phone UI reads.
        await questions.put(event)

    async def phone_ui() -> None:
        event = await questions.get()
        question = event.arguments["question"]
        transcript.append(f"[{event.channel_type} asks {event.actor_id}] {question}")
        answer = json.dumps({"answer": "four people"})
        transcript.append(f"[{event.actor_id} answers] {answer}")
        human.handler.resolve(event.pending_id, answer)

    session = await voice.start_session("bookings", "alice", connection="alice-phone")
    caller = asyncio.create_task(phone_ui())
    await provider.simulate_transcription(session, "A table for tonight, please.", role="user")
    transcript.append("[alice] A table for tonight, please.")
    await provider.simulate_tool_call(
        session, "call-1", "AskUserQuestion", {"question": "For how many people?"}
    )
    result = await provider.wait_for_tool_result("call-1")
    transcript.append(f"[model reads call-1] {result}")
    await caller
    await voice.end_session(session)
    await kit.close()
    return transcript


if __name__ == "__main__":
    for line in asyncio.run(main()):
        print(line)
