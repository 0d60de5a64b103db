"""The inspector in real headless Chromium (Debian's, driven by Playwright) against pytest-django's live server.

The story the inspector exists for: a tenant owner finds why the AI said something (which memory, from which
message, with what score), corrects or deletes it, and the next GET /context reflects that.

Screenshots of the main pages are written to docs/screenshots/ only when ENGRAM_SCREENSHOTS=1.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from apps.contacts.models import Contact, ContactState
from apps.conversations.models import Conversation
from apps.knowledge.models import KnowledgeDocument
from apps.knowledge.services import document_create
from apps.memories.ingest.services import IngestItem, ingest_messages, memory_add
from apps.memories.lifecycle.processor import events_process
from tests.factories import ApiKeyFactory, ContactFactory, MembershipFactory, TenantFactory, UserFactory
from tests.inspector.conftest import PASSWORD, seed_contact
from tests.knowledge.uploads import processed

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]
DESKTOP = {"width": 1280, "height": 860}
PHONE = {"width": 390, "height": 844}
WORK = "Works at Infosys in Chennai"
# Ids as real clients send them: up to the API's 255 characters and without a space (a URN, a hash, a CRM key;
# a contact id has no "/": it is part of URLs).
LONG_CONTACT_ID = ("urn:crm.example.com:contact:sha256:" + "9f86d081884c7d65" * 16)[:255]
LONG_CONVERSATION_ID = ("conv:" + "a3f1c2e4b5d6" * 22)[:255]
LONG_MESSAGE_ID = ("msg:" + "0123456789abcdef" * 16)[:255]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed: run `make browser`"),
]

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    # Playwright's sync API runs an event loop in this thread; the ORM calls the tests make between page
    # actions are ordinary blocking calls, so Django's "async context" guard is lifted for these tests only.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with playwright_api.sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            yield chromium
            chromium.close()


@pytest.fixture
def page(browser):
    """A page that fails its test when the site's Content-Security-Policy refused anything on it (Chromium
    reports each refusal on the console): the inspector, admin and API docs must work under the policy."""
    context = browser.new_context(viewport=DESKTOP, locale="en-GB")
    context.set_default_timeout(15_000)
    page = context.new_page()
    refused: list[str] = []
    page.on(
        "console", lambda message: refused.append(message.text) if "Content Security Policy" in message.text else None
    )
    yield page
    context.close()
    # Redoc's "API docs by Redocly" logo is an image on its CDN: refused, as it should be (nothing leaves for
    # another origin); the page works without it
    assert [text for text in refused if "https://cdn.redoc.ly/redoc/logo-mini.svg" not in text] == []


def screenshot(page, name: str, *, full_page: bool = True) -> None:
    if os.environ.get("ENGRAM_SCREENSHOTS") == "1":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / name), full_page=full_page, animations="disabled")


@pytest.fixture
def world(transactional_db):
    """Two tenants. Ours: Arjun (a real ingested conversation), Meera (quiet, at risk), a business memory and a
    knowledge document. Theirs: Zed, who our owner must never reach."""
    tenant = TenantFactory(name="Sunrise Bakery", slug="sunrise")
    owner = MembershipFactory(tenant=tenant, user=UserFactory(username="olivia")).user
    arjun = seed_contact(tenant)
    events_process()  # the memory processor (offline rules here) writes Arjun's narrative and scaffold
    meera = ContactFactory(tenant=tenant, external_id="wa:+91-98200", display_name="Meera", channel="whatsapp")
    ContactState.objects.create(contact=meera, tenant=tenant, mood="sad", relationship_stage="fading", churn_risk=0.71)
    memory_add(tenant=tenant, contact=None, memory_type="fact", content="We close at 9pm on Sundays", actor="test")
    memory_add(
        tenant=tenant, contact=None, memory_type="preference", content="Customers prefer eggless cakes", actor="test"
    )
    processed(
        document_create(
            tenant=tenant,
            title="Refund policy",
            content="# Refunds\n\nCakes can be refunded within 24 hours of delivery if they arrive damaged.",
            actor="user:olivia",
        )
    )
    other = TenantFactory(name="Other Co", slug="other")
    zed = seed_contact(other, external_id="zed", display_name="Zed", texts=["I work at Wipro in Pune."], stage=None)
    return {
        "tenant": tenant,
        "owner": owner,
        "arjun": arjun,
        "zed": zed,
        "api_key": ApiKeyFactory(tenant=tenant).plaintext,
    }


def log_in(page, base_url: str, username: str) -> None:
    page.goto(f"{base_url}/accounts/login/?next=/inspector/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button:has-text('Log in')")
    expect(page.locator("h1")).to_have_text("Contacts")


def context_contents(page, base_url: str, api_key: str, query: str) -> list[str]:
    """What the next GET /api/v1/context would hand the AI (a real HTTP call to the live server)."""
    response = page.request.get(
        f"{base_url}/api/v1/context/arjun",
        params={"query": query},
        headers={"Authorization": f"Bearer {api_key}"},
    )
    assert response.status == 200
    return [row["content"] for row in response.json()["memories"]]


def test_owner_finds_why_the_ai_said_something_edits_and_deletes_it(page, live_server, world):
    base = live_server.url
    log_in(page, base, "olivia")

    # contacts: both of ours, none of theirs; htmx search narrows the list as you type
    results = page.locator("#contact-results")
    expect(results).to_contain_text("Arjun")
    expect(results).to_contain_text("Meera")
    expect(results).not_to_contain_text("Zed")
    screenshot(page, "contacts.png")
    page.fill("#id_q", "arj")
    expect(results).not_to_contain_text("Meera")
    expect(results).to_contain_text("Arjun")
    assert parse_qs(urlparse(page.url).query)["q"] == ["arj"]  # the filtered list has a shareable URL
    page.select_option("select[name=stage]", "fading")
    expect(results).to_contain_text("No contacts match these filters.")
    page.fill("#id_q", "")
    expect(results).to_contain_text("Meera")
    page.select_option("select[name=stage]", "")

    # the contact page: state, memories grouped by type, the entity graph, the charts
    page.click("#contact-results a:has-text('Arjun')")
    expect(page.locator("h1")).to_have_text("Arjun")
    expect(page.locator("#memories")).to_contain_text(WORK)
    expect(page.locator(".tree")).to_contain_text("Has a dog named Bruno")
    expect(page.locator("svg[aria-label^='Mood timeline'] .mood-dot")).to_have_count(10)
    screenshot(page, "contact.png")

    # context preview: the memory, its score breakdown and the message it came from
    page.click("a:has-text('Context preview')")
    page.fill("input[name=query]", "where does he work")
    page.click("button:has-text('Preview')")
    item = page.locator(".why-item", has_text=WORK)
    expect(item).to_be_visible()
    expect(item.locator(".score")).to_have_text(re.compile(r"^0\.\d{3}$"))
    # the shipped fitted ranker scores it: each feature's contribution, then how relevance makes the score
    expect(page.locator("[data-testid=legend-fitted]")).to_contain_text("Fitted ranker")
    expect(item.locator(".signals")).to_contain_text("cosine")
    expect(item.locator("[data-testid=score-composition]")).to_contain_text("relevance")
    expect(item.locator(".sources")).to_contain_text("Hi, I'm Arjun. I work at Infosys in Chennai.")
    expect(page.locator("[data-testid=context-text]")).to_contain_text(f"[FACT] {WORK}")
    assert parse_qs(urlparse(page.url).query)["query"] == ["where does he work"]  # a shareable URL
    page.set_viewport_size({"width": DESKTOP["width"], "height": 1100})
    screenshot(page, "context-preview.png", full_page=False)  # the top: budget, the first memories, the JSON
    page.set_viewport_size(DESKTOP)

    # follow the source to the conversation: the message is highlighted
    item.locator(".sources a").first.click()
    expect(page.locator(".bubble.highlight")).to_contain_text("I work at Infosys in Chennai")
    page.go_back()

    # the memory: sources and history; edit it (htmx swaps the page section in place)
    page.locator(".why-item", has_text=WORK).locator("a.memory-content").click()
    expect(page.locator("[data-testid=memory-content]")).to_have_text(WORK)
    expect(page.locator("#sources-h + .source-list")).to_contain_text("I work at Infosys in Chennai")
    page.fill("#id_content", "Works at Infosys in Bangalore")
    page.fill("#id_importance", "0.95")
    page.click("button:has-text('Save changes')")
    expect(page.locator(".flash")).to_have_text("Memory updated.")
    expect(page.locator("[data-testid=memory-content]")).to_have_text("Works at Infosys in Bangalore")
    edited = page.locator("tr.action-edited")
    expect(edited).to_contain_text("user:olivia")
    expect(edited).to_contain_text(WORK)  # before → after
    page.click("button:has-text('Pin')")
    expect(page.locator("tr.action-pinned")).to_contain_text("user:olivia")
    screenshot(page, "memory.png")
    assert "Works at Infosys in Bangalore" in context_contents(page, base, world["api_key"], "where does he work")

    # delete, with a confirmation first
    page.click("a:has-text('Delete…')")
    expect(page.locator("h1")).to_have_text("Delete this memory?")
    page.click("button:has-text('Yes, delete it')")
    expect(page.locator("h1")).to_have_text("Arjun")
    expect(page.locator(".flash")).to_contain_text("It no longer reaches the AI.")
    expect(page.locator("#memories .memory-list").first).not_to_contain_text("Works at Infosys in Bangalore")

    # the next GET /context no longer contains it, and neither does the preview
    assert "Works at Infosys in Bangalore" not in context_contents(page, base, world["api_key"], "where does he work")
    page.goto(f"{base}/inspector/contacts/{world['arjun'].contact.pk}/context/?query=where+does+he+work")
    expect(page.locator("[data-testid=context-text]")).not_to_contain_text("Works at Infosys in Bangalore")
    expect(page.locator(".why-list")).not_to_contain_text("Works at Infosys in Bangalore")

    # the deleted memory keeps its history, with who deleted it, and not its text (scrubbed at once)
    page.goto(f"{base}/inspector/contacts/{world['arjun'].contact.pk}/")
    page.click("summary:has-text('History:')")
    expect(page.locator(".past")).not_to_contain_text("Works at Infosys in Bangalore")
    page.click(".past a:has-text('(text deleted)')")
    expect(page.locator("[data-testid=memory-status]")).to_have_text("deleted")
    expect(page.locator("[data-testid=memory-content]")).to_have_text("(text deleted)")
    expect(page.locator("tr.action-deleted")).to_contain_text("user:olivia")
    expect(page.locator("body")).not_to_contain_text("Works at Infosys in Bangalore")


def test_owner_corrects_a_memory_and_context_follows(page, live_server, world):
    base = live_server.url
    log_in(page, base, "olivia")
    page.goto(f"{base}/inspector/contacts/{world['arjun'].contact.pk}/")
    page.click("#memories a:has-text('Lives in Bangalore')")
    page.fill("#correct_content", "Lives in Mysore")
    page.click("button:has-text('Correct')")
    expect(page.locator(".flash")).to_contain_text("the new memory supersedes the old one")
    expect(page.locator("[data-testid=memory-content]")).to_have_text("Lives in Mysore")
    expect(page.locator("#sources-h ~ ul.plain-list")).to_contain_text("Lives in Bangalore")  # replaced
    contents = context_contents(page, base, world["api_key"], "where does he live")
    assert "Lives in Mysore" in contents and "Lives in Bangalore" not in contents


def test_an_owner_cannot_reach_another_tenants_pages(page, live_server, world):
    base = live_server.url
    log_in(page, base, "olivia")
    zed = world["zed"]
    zed_memory = zed.contact.memories.first()
    for path in (
        f"/inspector/contacts/{zed.contact.pk}/",
        f"/inspector/contacts/{zed.contact.pk}/context/?query=work",
        f"/inspector/memories/{zed_memory.pk}/",
        f"/inspector/memories/{zed_memory.pk}/delete/",
    ):
        response = page.goto(base + path)
        assert response is not None and response.status == 404, path
        expect(page.locator("h1")).to_have_text("Not found")
        expect(page.locator("main")).not_to_contain_text("Zed")
        expect(page.locator("main")).not_to_contain_text("Wipro")
    # nor by searching for it
    page.goto(f"{base}/inspector/contacts/?q=zed")
    expect(page.locator("#contact-results")).to_contain_text("No contacts match these filters.")


def test_brain_knowledge_upload_search_and_phone_layout(page, live_server, world):
    base = live_server.url
    log_in(page, base, "olivia")
    page.click("nav.mainnav a:has-text('Brain')")
    expect(page.locator("h1")).to_have_text("Tenant brain")
    expect(page.locator("main")).to_contain_text("We close at 9pm on Sundays")
    page.click("summary:has-text('Add a document')")
    page.fill("#id_title", "Delivery areas")
    page.fill("#id_content", "We deliver across Pune and Pimpri-Chinchwad between 10am and 8pm, every day.")
    page.click("button:has-text('Add to the knowledge base')")
    expect(page.locator(".flash")).to_contain_text("Added “Delivery areas”: the worker chunks and embeds it")
    row = page.locator("#documents tr", has_text="Delivery areas")
    # processing until a worker runs its task: the session's real worker, when an earlier test started one,
    # may already have (the run's order decides), so either state is right here
    expect(row.locator(".badge")).to_have_text(re.compile(r"^\s*(Processing|Ready)\s*$"))
    processed(KnowledgeDocument.objects.get(title="Delivery areas"))  # what the worker's task runs (idempotent)
    page.reload()
    expect(page.locator("#documents tr", has_text="Delivery areas").locator(".badge")).to_have_text("Ready")
    page.fill("#ks-h ~ form input[name=q]", "do you deliver to Pimpri?")
    page.click("#ks-h ~ form button")
    expect(page.locator("#knowledge-results li").first).to_contain_text("Delivery areas")
    screenshot(page, "brain.png")

    # a phone: the contacts table becomes cards, nothing overflows sideways
    page.set_viewport_size(PHONE)
    page.goto(f"{base}/inspector/contacts/")
    expect(page.locator("#contact-results")).to_contain_text("Arjun")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    screenshot(page, "contacts-phone.png")
    page.goto(f"{base}/inspector/contacts/{world['arjun'].contact.pk}/")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    screenshot(page, "contact-phone.png")


def sideways_overflow(page) -> list[str]:
    """Nothing when the page does not scroll sideways (document.documentElement.scrollWidth <= clientWidth);
    otherwise what sticks out past the viewport (elements, and the parents of text runs), to say why."""
    return page.evaluate(
        """() => {
            const root = document.documentElement;
            if (root.scrollWidth <= root.clientWidth) return [];
            const past = rect => rect.right > root.clientWidth;
            const texts = [...document.querySelectorAll('body *')].flatMap(element => [...element.childNodes])
                .filter(node => node.nodeType === Node.TEXT_NODE && node.textContent.trim())
                .filter(node => { const range = document.createRange(); range.selectNodeContents(node);
                                  return past(range.getBoundingClientRect()); })
                .map(node => node.parentElement);
            const culprits = [...document.querySelectorAll('body *')]
                .filter(element => past(element.getBoundingClientRect())).concat(texts)
                .map(element => `${element.tagName.toLowerCase()}.${element.className}`);
            return [`scrollWidth ${root.scrollWidth} > clientWidth ${root.clientWidth}`, ...new Set(culprits)];
        }"""
    )


def off_screen(page, selector: str) -> list[str]:
    """The texts of the visible elements matching `selector` whose right edge is past the viewport."""
    return page.evaluate(
        """selector => [...document.querySelectorAll(selector)]
            .filter(element => element.getClientRects().length)
            .filter(element => element.getBoundingClientRect().right > document.documentElement.clientWidth)
            .map(element => element.textContent.trim())""",
        selector,
    )


def test_long_ids_keep_the_pages_on_screen(page, live_server, world):
    """A 255-character contact id without a space (and conversation and message ids as long) at 1280 px: no page
    scrolls sideways, every column of the contacts table and the contact page's buttons stay on screen, the id is
    cut with its whole value in the tooltip, and Copy puts the whole id on the clipboard. Then on a phone."""
    tenant = world["tenant"]
    ingest_messages(
        tenant=tenant,
        items=[
            IngestItem(
                contact_id=LONG_CONTACT_ID,
                conversation_id=LONG_CONVERSATION_ID,
                message="I work at Infosys in Chennai.",
                message_id=LONG_MESSAGE_ID,
                channel="whatsapp",
            )
        ],
        actor="test",
    )
    events_process()
    contact = Contact.objects.get(tenant=tenant, external_id=LONG_CONTACT_ID)
    conversation = Conversation.objects.get(tenant=tenant, external_id=LONG_CONVERSATION_ID)
    ContactState.objects.filter(contact=contact).update(relationship_stage="established")
    memory = contact.memories.get(content=WORK)
    base = live_server.url
    log_in(page, base, "olivia")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)

    # the contacts list: the id is the row's name (no display name) and its id line
    results = page.locator("#contact-results")
    expect(results).to_contain_text(LONG_CONTACT_ID[:40])
    assert sideways_overflow(page) == []
    assert off_screen(page, ".contacts-table th") == []
    assert off_screen(page, ".contacts-table td") == []
    assert page.locator(".contacts-table th").count() == 7
    row_id = results.locator(f".long-id[title='{LONG_CONTACT_ID}']")
    expect(row_id).to_be_visible()
    assert row_id.locator(".long-id-text").evaluate("element => element.scrollWidth > element.clientWidth")  # cut
    expect(results.locator("a.strong", has_text=LONG_CONTACT_ID[:40])).to_have_attribute("title", LONG_CONTACT_ID)
    row_id.locator("button.copy-id").click()
    expect(row_id.locator("button.copy-id")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == LONG_CONTACT_ID
    screenshot(page, "contacts-long-id.png")

    # the contact page: header, buttons and cards on screen
    results.locator("a.strong", has_text=LONG_CONTACT_ID[:40]).click()
    expect(page.locator(".page-head .long-id")).to_have_attribute("title", LONG_CONTACT_ID)
    expect(page.locator("#memories")).to_contain_text(WORK)
    assert sideways_overflow(page) == []
    assert off_screen(page, ".page-head .actions a, .card, .page-head .id-line > *") == []
    expect(page.locator(".plain-list a.one-line")).to_have_attribute("title", LONG_CONVERSATION_ID)
    screenshot(page, "contact-long-id.png")

    # every other page that shows these ids
    pages = {
        "context preview": f"/inspector/contacts/{contact.pk}/context/?query=where+does+he+work",
        "memory": f"/inspector/memories/{memory.pk}/",
        "conversation": f"/inspector/conversations/{conversation.pk}/",
    }
    for name, path in pages.items():
        page.goto(base + path)
        expect(page.locator("main")).to_contain_text(LONG_CONTACT_ID[:40] if name != "conversation" else "Infosys")
        assert sideways_overflow(page) == [], name
    expect(page.locator(".bubble .long-id")).to_have_attribute("title", LONG_MESSAGE_ID)
    expect(page.locator(".page-head .long-id")).to_have_attribute("title", LONG_CONVERSATION_ID)

    page.set_viewport_size(PHONE)
    for path in ("/inspector/contacts/", f"/inspector/contacts/{contact.pk}/", *pages.values()):
        page.goto(base + path)
        assert sideways_overflow(page) == [], path
    page.goto(f"{base}/inspector/contacts/")
    assert off_screen(page, ".contacts-table td, .contacts-table td > *") == []  # the card clips what would overflow
    long_row = page.locator(".contacts-table tr", has_text=LONG_CONTACT_ID[:40])
    expect(long_row.locator("td[data-label=Stage]")).to_be_visible()


def test_the_context_preview_opens_from_its_url_and_keeps_it_current(page, live_server, world):
    """A preview can be linked and bookmarked: `query` and `token_budget` in the URL fill the form and assemble
    the context; as the user types, the URL follows (replaced, not one history entry per keystroke), so a reload
    or a copied link shows the same preview."""
    base = live_server.url
    log_in(page, base, "olivia")
    preview = f"{base}/inspector/contacts/{world['arjun'].contact.pk}/context/"
    page.goto(f"{preview}?query=where+does+he+work&token_budget=300")
    expect(page.locator("#id_query")).to_have_value("where does he work")
    expect(page.locator("#id_token_budget")).to_have_value("300")
    expect(page.locator(".why-list")).to_contain_text("I work at Infosys in Chennai.")
    expect(page.locator(".budget")).to_contain_text("of 300 memory tokens used (budget set here")
    entries = page.evaluate("history.length")

    page.fill("#id_query", "what is the name of his dog")
    page.wait_for_url(lambda url: parse_qs(urlparse(url).query).get("query") == ["what is the name of his dog"])
    expect(page.locator(".why-list")).to_contain_text("Bruno")
    page.fill("#id_token_budget", "12")
    page.wait_for_url(lambda url: parse_qs(urlparse(url).query).get("token_budget") == ["12"])
    expect(page.locator(".budget")).to_contain_text("of 12 memory tokens used")
    assert parse_qs(urlparse(page.url).query)["query"] == ["what is the name of his dog"]
    assert page.evaluate("history.length") == entries

    page.goto(f"{preview}?query=what+is+the+name+of+his+dog&token_budget=12")  # the link a colleague was sent
    expect(page.locator("#id_query")).to_have_value("what is the name of his dog")
    expect(page.locator("#id_token_budget")).to_have_value("12")
    expect(page.locator(".budget")).to_contain_text("of 12 memory tokens used")


def test_the_api_docs_and_the_admin_work_under_the_content_security_policy(page, live_server, world):
    """Redoc from the static files renders the schema; the admin signs in and lists memories; the policy is on
    every page and refuses nothing (the page fixture)."""
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_superuser("ops", "", PASSWORD)
    response = page.goto(f"{live_server.url}/api/v1/docs/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    expect(page.locator("h1").first).to_contain_text("Engram API")  # drawn by Redoc from /api/v1/schema/
    expect(page.get_by_text("/api/v1/ingest").first).to_be_attached()
    scripts = page.eval_on_selector_all("script", "nodes => nodes.map(node => node.src)")
    assert scripts == [f"{live_server.url}/static/drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"]

    page.goto(f"{live_server.url}/admin/login/?next=/admin/memories/memory/")
    page.fill("#id_username", "ops")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    expect(page.locator("#changelist")).to_be_visible()
    page.goto(f"{live_server.url}/admin/memories/memory/{world['arjun'].contact.memories.first().pk}/change/")
    expect(page.locator("#memory_form")).to_be_visible()
