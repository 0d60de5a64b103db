import uuid
from decimal import Decimal

import pytest
from django.conf import settings
from django.test import override_settings

from apps.core.llm import LLMUnavailable, llm_complete_json, llm_is_configured
from apps.core.models import LlmCall
from tests.fake_openai import fake_openai_fixture, llm_settings  # noqa: F401 - the fake_openai fixture

SYSTEM = "You classify the mood of a message. Answer with JSON."
USER = "I am so happy today"
REQUEST_WORDS = len(SYSTEM.split()) + len(USER.split())  # the fake server's prompt token count


def complete(**options):
    return llm_complete_json(system=SYSTEM, user=USER, purpose="mood", **options)


@pytest.mark.django_db
def test_success_returns_data_and_records_usage(fake_openai):
    fake_openai.enqueue_chat('{"mood": "happy", "confidence": 0.9}', prompt_tokens=120, completion_tokens=7)
    tenant_id = uuid.uuid4()

    with llm_settings(fake_openai):
        result = complete(tenant_id=str(tenant_id))

    assert result.data == {"mood": "happy", "confidence": 0.9}
    assert (result.model, result.prompt_tokens, result.completion_tokens) == ("fake-model", 120, 7)
    assert result.latency_ms > 0
    [request] = fake_openai.chat_requests
    assert request.body["model"] == "fake-model"
    assert request.body["response_format"] == {"type": "json_object"}
    assert request.body["temperature"] == 0
    assert request.body["max_tokens"] == 800
    assert request.body["messages"] == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]
    [call] = LlmCall.objects.all()
    assert (call.tenant_id, call.purpose, call.model, call.success, call.error) == (
        tenant_id,
        "mood",
        "fake-model",
        True,
        "",
    )
    assert (call.prompt_tokens, call.completion_tokens, call.cost_usd) == (120, 7, Decimal("0"))


@pytest.mark.django_db
def test_cost_comes_from_the_price_table(fake_openai):
    fake_openai.enqueue_chat('{"mood": "happy"}', prompt_tokens=2000, completion_tokens=1000)
    prices = {"fake-model": {"input": "0.15", "output": "0.60"}}  # USD per 1M tokens

    with llm_settings(fake_openai), override_settings(ENGRAM={**settings.ENGRAM, "LLM_PRICES": prices}):
        complete()

    assert LlmCall.objects.get().cost_usd == Decimal("0.000900")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "bad_reply",
    ["Sure! Here is the JSON you asked for: {oops", '["a", "list"]', '"a string"', ""],
    ids=["not-json", "json-list", "json-string", "empty"],
)
def test_reply_that_is_not_a_json_object_is_retried(fake_openai, bad_reply):
    fake_openai.enqueue_malformed(bad_reply)
    fake_openai.enqueue_chat('{"mood": "happy"}')

    with llm_settings(fake_openai):
        result = complete()

    assert result.data == {"mood": "happy"}
    assert len(fake_openai.chat_requests) == 2
    # both attempts were billed
    assert result.prompt_tokens == 2 * REQUEST_WORDS
    [call] = LlmCall.objects.all()
    assert (call.success, call.prompt_tokens, call.completion_tokens) == (
        True,
        2 * REQUEST_WORDS,
        len(bad_reply.split()) + 2,  # the good reply is two words
    )


@pytest.mark.django_db
@pytest.mark.parametrize("status", [500, 503, 429])
def test_server_errors_are_retried(fake_openai, status):
    fake_openai.enqueue_status(status)
    fake_openai.enqueue_chat('{"mood": "calm"}')

    with llm_settings(fake_openai):
        result = complete()

    assert result.data == {"mood": "calm"}
    assert len(fake_openai.chat_requests) == 2


@pytest.mark.django_db
def test_repeated_500_raises_after_retries_and_records_failure(fake_openai):
    fake_openai.enqueue_status(500)
    fake_openai.enqueue_status(500)
    fake_openai.enqueue_chat('{"mood": "never reached"}')

    with llm_settings(fake_openai), pytest.raises(LLMUnavailable, match="HTTP 500"):
        complete(max_retries=1)

    assert len(fake_openai.chat_requests) == 2
    [call] = LlmCall.objects.all()
    assert (call.success, call.purpose, call.prompt_tokens, call.completion_tokens) == (False, "mood", 0, 0)
    assert call.error.startswith("HTTP 500")


@pytest.mark.django_db
def test_client_error_is_not_retried(fake_openai):
    fake_openai.enqueue_status(400, "bad request")
    fake_openai.enqueue_chat('{"mood": "never reached"}')

    with llm_settings(fake_openai), pytest.raises(LLMUnavailable, match="HTTP 400"):
        complete()

    assert len(fake_openai.chat_requests) == 1
    assert LlmCall.objects.get().success is False


@pytest.mark.django_db
def test_reply_slower_than_the_budget_is_unavailable(fake_openai):
    fake_openai.enqueue_delay(3.0, then='{"mood": "too late"}')

    with llm_settings(fake_openai), pytest.raises(LLMUnavailable, match="Timeout"):
        complete(timeout=0.2)

    # the budget is spent by the first attempt: no retry is started past it
    assert len(fake_openai.chat_requests) == 1
    [call] = LlmCall.objects.all()
    assert call.success is False
    assert "Timeout" in call.error


@pytest.mark.django_db
@pytest.mark.parametrize(
    "content",
    ['```json\n{"mood": "happy"}\n```', '```\n{"mood": "happy"}\n```', '  ```JSON {"mood": "happy"}```  '],
    ids=["json-fence", "bare-fence", "inline-fence"],
)
def test_fenced_json_is_parsed(fake_openai, content):
    fake_openai.enqueue_chat(content)

    with llm_settings(fake_openai):
        result = complete()

    assert result.data == {"mood": "happy"}
    assert len(fake_openai.chat_requests) == 1


def test_accounting_failure_does_not_break_the_caller(fake_openai):
    # no django_db mark: writing the LlmCall row fails, the caller still gets its answer
    fake_openai.enqueue_chat('{"mood": "happy"}')

    with llm_settings(fake_openai):
        result = complete()

    assert result.data == {"mood": "happy"}


@pytest.mark.django_db
def test_not_configured(fake_openai):
    with override_settings(LLM_BASE_URL=""):
        assert llm_is_configured() is False
        with pytest.raises(LLMUnavailable, match="LLM_BASE_URL"):
            complete()

    assert LlmCall.objects.count() == 0
    assert fake_openai.requests == []


def test_configured(fake_openai):
    with llm_settings(fake_openai):
        assert llm_is_configured() is True
