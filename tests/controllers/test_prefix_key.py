from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from specgate.controllers.prefix_key import PrefixKeySettings, chat_key, completion_key

SETTINGS = PrefixKeySettings(min_chars=100, max_chars=10_000, completion_chars=300)
SYSTEM = ("system", "You are a careful assistant. " * 3)
text = st.text(min_size=0, max_size=200)


def _conversation(user: list[str], assistant: list[str]) -> list[tuple[str, str]]:
    messages = [SYSTEM]
    for u, a in zip(user, assistant, strict=False):
        messages += [("user", u), ("assistant", a)]
    return messages


@given(st.lists(text, min_size=2, max_size=6), st.lists(text, min_size=6, max_size=6))
def test_every_turn_of_a_conversation_has_the_first_keyed_turns_key(user: list[str], assistant: list[str]) -> None:
    """Each turn repeats the earlier ones, so once a turn has a key every later turn has the same one."""
    keys = []
    for turn in range(1, len(user) + 1):
        messages = _conversation(user[:turn], assistant)[: 2 * turn]  # ends with the turn's user message
        keys.append(chat_key("", messages, SETTINGS))
    keyed = [k for k in keys if k is not None]
    assert len(set(keyed)) <= 1
    # Once keyed, never unkeyed again (the conversation only grows).
    if keyed:
        first = keys.index(keyed[0])
        assert all(k is not None for k in keys[first:])


def test_conversations_with_different_first_questions_differ() -> None:
    a = chat_key("", [SYSTEM, ("user", "What is a monad?")], SETTINGS)
    b = chat_key("", [SYSTEM, ("user", "What is a functor?")], SETTINGS)
    assert a is not None and b is not None and a != b


def test_the_first_user_message_is_part_of_the_key_even_past_min_chars() -> None:
    long_system = ("system", "x" * 500)
    assert chat_key("", [long_system, ("user", "a")], SETTINGS) != chat_key("", [long_system, ("user", "b")], SETTINGS)


def test_tools_are_part_of_the_key() -> None:
    messages = [SYSTEM, ("user", "hello")]
    assert chat_key('[{"type":"function"}]', messages, SETTINGS) != chat_key("", messages, SETTINGS)


def test_role_boundaries_count() -> None:
    """Moving text between messages changes the prefix the engine sees (the chat template differs)."""
    a = chat_key("", [("system", "s" * 60), ("user", "u" * 60)], SETTINGS)
    b = chat_key("", [("system", "s" * 59), ("user", "s" + "u" * 60)], SETTINGS)
    assert a != b


def test_short_prompts_have_no_key() -> None:
    assert chat_key("", [("user", "hi")], SETTINGS) is None
    assert completion_key("hi", SETTINGS) is None


def test_very_long_prefixes_are_keyed_by_their_head() -> None:
    settings = PrefixKeySettings(min_chars=10, max_chars=50, completion_chars=50)
    head = "h" * 60
    assert chat_key("", [("system", head + "a")], settings) == chat_key("", [("system", head + "b")], settings)


@given(st.text(min_size=300, max_size=400), st.text(max_size=50), st.text(max_size=50))
def test_completions_are_keyed_by_their_first_chars(head: str, tail_a: str, tail_b: str) -> None:
    assert completion_key(head + tail_a, SETTINGS) == completion_key(head + tail_b, SETTINGS)


def test_completions_with_different_heads_differ() -> None:
    assert completion_key("a" * 200, SETTINGS) != completion_key("b" * 200, SETTINGS)
