"""Redaction leaks found by the third hostile round (not in the proxy's own tests): a `;`
separated query, a password holding "@", a rate-limit header that carries a credential, and a
token in the URL's fragment. Each secret below must be gone from what is logged; what is not a
secret stays byte for byte."""

from __future__ import annotations

import pytest

from clawviz.ingest.exchange import REDACTED, is_secret_header, redact_url

SECRET = "sk-live-Zq9"


@pytest.mark.parametrize(
    "url",
    [
        f"https://h/v1/messages?a=1;key={SECRET}",
        f"https://h/v1/messages?a=1;b=2&api_key={SECRET};c=3",
        f"https://u:{SECRET}@ss@h/v1/messages",
        f"https://u:p@{SECRET}@h/v1/messages",
        f"https://h/cb#access_token={SECRET}&token_type=bearer",
        f"https://h/cb?x=1#state=s;id_token={SECRET}",
    ],
)
def test_the_secret_is_not_in_the_logged_url(url):
    logged = redact_url(url)
    assert SECRET not in logged
    assert REDACTED in logged


@pytest.mark.parametrize(
    ("url", "want"),
    [
        ("https://h/v1/messages?a=1;b=2", "https://h/v1/messages?a=1;b=2"),
        ("https://h/v1/messages#section-2", "https://h/v1/messages#section-2"),
        (
            "https://u:pw@h/p?model=x;key=s#frag",
            f"https://{REDACTED}@h/p?model=x;key={REDACTED}#frag",
        ),
        ("https://h/p?q=a@b", "https://h/p?q=a@b"),  # an "@" after the authority is not userinfo
    ],
)
def test_everything_else_stays_as_it_was(url, want):
    assert redact_url(url) == want


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("X-RateLimit-Auth", True),
        ("x-ratelimit-api-key", True),
        ("x-ratelimit-remaining-tokens", False),
        ("anthropic-ratelimit-output-tokens-limit", False),
        ("X-Auth-Token", True),
    ],
)
def test_rate_limit_counters_are_kept_and_rate_limit_credentials_are_not(name, secret):
    assert is_secret_header(name) is secret
